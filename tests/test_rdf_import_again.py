"""An RDF file imported again adds nothing: blank-node structures (restrictions, owl:Axiom annotations) are compared
by content, not by the identities rdflib gives them at each parse. Before, each import of the same ontology added
another copy of every restriction, and `kg export --format turtle` imported back doubled every edge's weight and
note. And what a file held at its last import and holds no more leaves the graph, unless a relation table or another
file still holds it. The real CLI, real rdflib graphs on disk."""

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
    # An edited note replaces the annotation the file held before (kg/rdf_merge.py: the file's record).
    onto.write_text(ONTOLOGY.replace("NOTE", "edge devices, LoRa"), encoding="utf-8")
    assert kg("import", onto, "--data-dir", kb).strip() == "5 new triples, 5 removed (gone from the file)"
    assert _count(kb, OWL.Restriction) == 1 and _count(kb, OWL.Axiom) == 1
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


def _graph(kb: Path) -> rdflib.Graph:
    return rdflib.Graph().parse(kb / "graph.ttl")


EX = "https://example.org/ops#"


def test_what_is_deleted_from_an_ontology_leaves_the_graph_at_its_next_import(tmp_path):
    kb, onto = tmp_path / "kb", tmp_path / "ops.ttl"
    extra = 'ex:Relay a owl:Class ; rdfs:label "Relay"@en , "中继"@zh .\n'
    onto.write_text(ONTOLOGY.replace("NOTE", "edge devices") + extra, encoding="utf-8")
    kg("import", onto, "--data-dir", kb)
    assert (URIRef(EX + "Relay"), RDFS.label, Literal("中继", lang="zh")) in _graph(kb)
    # In Protégé: the class Relay, the restriction on Broker and the annotation are deleted; the rest is kept.
    kept = ONTOLOGY.split("ex:Broker a owl:Class")[0] + 'ex:Broker a owl:Class ; rdfs:label "Broker" .\n'
    onto.write_text(kept, encoding="utf-8")
    out = kg("import", onto, "--data-dir", kb, "--json")
    assert '"triples_removed": 12' in out  # Relay 3, the restriction 1 + 3, the axiom 5 and '"triples_added": 0' in out
    graph = _graph(kb)
    assert not any(True for _ in graph.triples((URIRef(EX + "Relay"), None, None)))
    assert _count(kb, OWL.Restriction) == 0 and _count(kb, OWL.Axiom) == 0
    assert (URIRef(EX + "Broker"), RDFS.label, Literal("Broker")) in graph
    assert (URIRef(EX + "Gateway"), RDFS.subClassOf, URIRef("https://kgrag.dev/ontology#Service")) in graph
    assert kg("import", onto, "--data-dir", kb).strip() == "0 new triples"
    assert "no problems found" in kg("ontology", "check", "--data-dir", kb)


def test_a_triple_a_relation_table_or_graph_ttl_holds_stays_when_the_file_drops_it(tmp_path):
    kb, table, onto = tmp_path / "kb", tmp_path / "relations.csv", tmp_path / "ops.ttl"
    table.write_text("source,relation,target\norder-service,dependsOn,mysql-core\n", encoding="utf-8")
    kg("import", table, "--data-dir", kb)
    # The whole graph, exported, is the file a user opens in Protégé.
    kg("export", "--format", "turtle", "-o", onto, "--data-dir", kb)
    assert kg("import", onto, "--data-dir", kb).strip() == "0 new triples"
    # A triple added to graph.ttl by hand is in no file's record.
    graph = _graph(kb)
    hand = (URIRef(EX + "Probe"), RDFS.label, Literal("probe"))
    graph.add(hand)
    graph.serialize(kb / "graph.ttl", format="turtle")
    # Deleted from the exported file: the table's edge (the table still holds it) and the entity's label (nothing does).
    exported = rdflib.Graph().parse(onto)
    edge = next(exported.triples((None, URIRef("https://kgrag.dev/ontology#dependsOn"), None)))
    label = (edge[0], RDFS.label, Literal("order-service"))
    assert label in exported
    exported.remove(edge)
    exported.remove(label)
    exported.serialize(onto, format="turtle")
    assert kg("import", onto, "--data-dir", kb).strip() == "0 new triples, 1 removed (gone from the file)"
    graph = _graph(kb)
    assert edge in graph and hand in graph and label not in graph


def test_a_row_deleted_from_its_table_leaves_even_when_an_imported_export_holds_it(tmp_path):
    kb, table, onto = tmp_path / "kb", tmp_path / "relations.csv", tmp_path / "graph-export.ttl"
    table.write_text("source,relation,target\norder-service,dependsOn,mysql-core\nuser-service,dependsOn,redis\n",
                     encoding="utf-8")
    kg("import", table, "--data-dir", kb)
    kg("export", "--format", "turtle", "-o", onto, "--data-dir", kb)
    kg("import", onto, "--data-dir", kb)  # the export is recorded as holding both edges
    table.write_text("source,relation,target\norder-service,dependsOn,mysql-core\n", encoding="utf-8")
    assert "1 edge removed" in kg("import", table, "--data-dir", kb)
    depends = URIRef("https://kgrag.dev/ontology#dependsOn")
    assert [str(o).rsplit("/", 1)[-1] for _, _, o in _graph(kb).triples((None, depends, None))] == ["mysql-core"]


def test_an_uploaded_ontology_is_known_by_its_file_name(tmp_path):
    from conftest import make_settings
    from fastapi.testclient import TestClient

    from api.app import create_app

    extra = 'ex:Relay a owl:Class ; rdfs:label "Relay" .\n'
    with TestClient(create_app(make_settings(tmp_path / "kb"))) as client:
        def upload(text: str) -> dict:
            response = client.post("/import", files={"file": ("ops.ttl", text, "text/turtle")})
            assert response.status_code == 200, response.text
            return response.json()

        assert upload(ONTOLOGY + extra)["triples_added"] == 16
        again = upload(ONTOLOGY)  # the same name: Relay was deleted from it
        assert (again["triples_added"], again["triples_removed"]) == (0, 2)
    assert (URIRef(EX + "Relay"), RDFS.label, Literal("Relay")) not in _graph(tmp_path / "kb")
