"""An RDF file imported again adds nothing: blank-node structures (restrictions, owl:Axiom annotations) are compared
by content, not by the identities rdflib gives them at each parse. Before, each import of the same ontology added
another copy of every restriction, and `kg export --format turtle` imported back doubled every edge's weight and
note. The real CLI, real rdflib graphs on disk."""

from __future__ import annotations

from pathlib import Path

import rdflib
from click.testing import CliRunner
from rdflib import OWL, RDF, RDFS, BNode, Literal, URIRef

from kg.cli import cli
from kg.cli.base import DEMO_DIR

ONTOLOGY = """@prefix owl: <http://www.w3.org/2002/07/owl#> .
@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
@prefix kg: <https://kgrag.dev/ontology#> .
@prefix ex: <https://example.org/ops#> .
ex:Gateway a owl:Class ; rdfs:subClassOf kg:Service ; rdfs:label "Gateway" .
ex:Broker a owl:Class ; rdfs:label "Broker" ;
    rdfs:subClassOf [ a owl:Restriction ; owl:onProperty kg:dependsOn ; owl:someValuesFrom ex:Gateway ] .
[] a owl:Axiom ; owl:annotatedSource ex:Gateway ; owl:annotatedProperty rdfs:subClassOf ;
   owl:annotatedTarget kg:Service ; rdfs:comment "NOTE" .
"""


def kg(*args) -> str:
    result = CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.stdout


def _count(kb: Path, kind) -> int:
    graph = rdflib.Graph().parse(kb / "graph.ttl")
    return sum(1 for _ in graph.subjects(RDF.type, kind))


def test_an_ontology_imported_again_adds_no_second_restriction_or_annotation(tmp_path):
    kb, onto = tmp_path / "kb", tmp_path / "ops.ttl"
    onto.write_text(ONTOLOGY.replace("NOTE", "edge devices"), encoding="utf-8")
    assert kg("import", onto, "--data-dir", kb).strip() == "14 new triples"
    for _ in range(2):
        assert kg("import", onto, "--data-dir", kb).strip() == "0 new triples"
    assert _count(kb, OWL.Restriction) == 1 and _count(kb, OWL.Axiom) == 1
    # What changed is added (an import adds; it never removes): the edited note is a second annotation.
    onto.write_text(ONTOLOGY.replace("NOTE", "edge devices, LoRa"), encoding="utf-8")
    assert kg("import", onto, "--data-dir", kb).strip() == "5 new triples"
    assert _count(kb, OWL.Restriction) == 1 and _count(kb, OWL.Axiom) == 2
    assert "no problems found" in kg("ontology", "check", "--data-dir", kb)


def test_the_graph_exported_as_turtle_and_imported_back_is_unchanged(tmp_path):
    kb = tmp_path / "kb"
    kg("import", DEMO_DIR / "relations.csv", "--data-dir", kb)
    axioms = _count(kb, OWL.Axiom)
    assert axioms > 100  # the demo table's weights and notes
    kg("export", "--format", "turtle", "-o", tmp_path / "graph.ttl", "--data-dir", kb)
    assert kg("import", tmp_path / "graph.ttl", "--data-dir", kb).strip() == "0 new triples"
    assert _count(kb, OWL.Axiom) == axioms


def test_a_deleted_row_takes_every_copy_of_its_annotation(tmp_path):
    """A graph an older kgrag merged twice holds two owl:Axioms for one edge: both go with the edge."""
    kb, table = tmp_path / "kb", tmp_path / "relations.csv"
    table.write_text("source,relation,target,weight,note\na-svc,dependsOn,b-db,0.5,cache\nc-svc,dependsOn,b-db,,\n",
                     encoding="utf-8")
    kg("import", table, "--data-dir", kb)
    graph = rdflib.Graph().parse(kb / "graph.ttl")
    (axiom,) = graph.subjects(RDF.type, OWL.Axiom)
    copy = BNode()
    for _, p, o in list(graph.triples((axiom, None, None))):
        graph.add((copy, p, o))
    graph.add((copy, RDFS.comment, Literal("a second note")))
    graph.serialize(kb / "graph.ttl", format="turtle")
    assert _count(kb, OWL.Axiom) == 2
    table.write_text("source,relation,target,weight,note\nc-svc,dependsOn,b-db,,\n", encoding="utf-8")
    assert "1 edge removed" in kg("import", table, "--data-dir", kb)
    assert _count(kb, OWL.Axiom) == 0
    after = rdflib.Graph().parse(kb / "graph.ttl")
    assert not any(isinstance(s, URIRef) and "a-svc" in s for s, _, o in after if isinstance(o, URIRef) and "b-db" in o)
