"""Protégé files through a knowledge base: every triple the user wrote survives `kg import` (of the
ontology and of a relation table) into graph.ttl, and edits made to graph.ttl reach the next query."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
import rdflib
from click.testing import CliRunner
from conftest import make_settings
from rdflib import RDFS, SKOS, BNode, Literal
from rdflib.compare import isomorphic, to_isomorphic

from kg.cli import cli
from kg.errors import NotFoundError
from kg.relations import import_relation_table
from ontology import BASE_ONTOLOGY_PATH, ENT, KG, Vocabulary, entity_iri, load_rdf

DATA = Path(__file__).parent / "data"
LAB = rdflib.Namespace("http://example.org/lab#")
SAVE_AS_HINT = (
    'In Protégé, open it and use File > Save as... > "Turtle Syntax" or "RDF/XML Syntax", then '
    "load the saved file."
)

# A relation table that reaches into the Protégé entities by their labels (no weight or note on
# those edges, so no axiom of the importer's lands on them) and brings entities of its own.
RELATIONS = """\
source,relation,target,source_type,target_type,source_aliases,target_aliases,weight,note
Scope 7,runsOn,bench-3,,Host,,,,
Sensor 12,ownedBy,lab-ops,,Team,,,,
probe-rack,partOf,bench-3,Component,,,,0.8,"left side, shelf 2"
bench-3,connectsTo,lab-switch,,Device,bench three,,,
"""


def kg(*args: object):
    return CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)


def user_part(saved: rdflib.Graph, user: rdflib.Graph) -> rdflib.Graph:
    """The triples of `saved` that can be the user's: the user's ground triples, and every group of
    blank-node triples (an axiom annotation, a restriction, a list) whose IRIs and literals all
    occur in the user's graph. The importer's own axioms carry its entities or weights, so they
    stay out; what stays in must then be isomorphic to the user's graph."""
    terms = {term for triple in user for term in triple if not isinstance(term, BNode)}
    part = rdflib.Graph()
    groups: dict[BNode, BNode] = {}  # union-find over blank nodes linked by a triple

    def root(node: BNode) -> BNode:
        while groups.setdefault(node, node) != node:
            node = groups[node]
        return node

    with_blanks = []
    for triple in saved:
        blanks = [t for t in triple if isinstance(t, BNode)]
        if not blanks:
            if triple in user:
                part.add(triple)
            continue
        with_blanks.append((triple, blanks[0]))
        for other in blanks[1:]:
            groups[root(other)] = root(blanks[0])
    members: dict[BNode, list] = {}
    for triple, blank in with_blanks:
        members.setdefault(root(blank), []).append(triple)
    for triples in members.values():
        if all(t in terms for triple in triples for t in triple if not isinstance(t, BNode)):
            for triple in triples:
                part.add(triple)
    return part


@pytest.mark.parametrize("fixture", ["lab.ttl", "lab.owl", "lab-extended.owl"])
def test_every_user_triple_survives_import_and_a_relation_table(
    tmp_path: Path, fixture: str
) -> None:
    data_dir = tmp_path / "kb"
    relations = tmp_path / "relations.csv"
    relations.write_text(RELATIONS, encoding="utf-8")
    result = kg("import", DATA / fixture, "--data-dir", data_dir)
    assert result.exit_code == 0, result.output
    result = kg("import", relations, "--data-dir", data_dir)
    assert result.exit_code == 0, result.output

    saved = load_rdf(data_dir / "graph.ttl")
    user = load_rdf(DATA / fixture)
    assert to_isomorphic(user_part(saved, user)) == to_isomorphic(user)
    # And nothing else changed: graph.ttl is the base ontology + the user's file + the table.
    expected = load_rdf(BASE_ONTOLOGY_PATH)
    expected += user
    import_relation_table(expected, relations, Vocabulary.from_graph(expected))
    assert isomorphic(saved, expected)


def test_the_subgraph_comparison_notices_a_lost_blank_node_triple(tmp_path: Path) -> None:
    user = load_rdf(DATA / "lab-extended.owl")
    saved = load_rdf(BASE_ONTOLOGY_PATH)
    saved += user
    assert to_isomorphic(user_part(saved, user)) == to_isomorphic(user)
    comment = Literal("since the 2024 refit", lang="en")
    saved.remove((None, RDFS.comment, comment))  # the comment of the Protégé axiom annotation
    assert to_isomorphic(user_part(saved, user)) != to_isomorphic(user)


def test_the_relation_table_reuses_the_protege_individuals(tmp_path: Path) -> None:
    data_dir = tmp_path / "kb"
    relations = tmp_path / "relations.csv"
    relations.write_text(RELATIONS, encoding="utf-8")
    kg("import", DATA / "lab.ttl", "--data-dir", data_dir)
    kg("import", relations, "--data-dir", data_dir)
    saved = load_rdf(data_dir / "graph.ttl")
    assert (LAB["scope-7"], KG.runsOn, entity_iri("bench-3")) in saved
    assert not list(saved.triples((entity_iri("Scope 7"), None, None)))


@pytest.mark.parametrize("fixture", ["lab-owlxml.owl", "lab-functional.ofn", "lab-manchester.omn"])
def test_owl_syntaxes_rdflib_cannot_read_are_refused_with_the_save_as_hint(
    tmp_path: Path, fixture: str
) -> None:
    # Protégé saves every syntax as .owl unless told otherwise.
    as_owl = tmp_path / (Path(fixture).stem + ".owl")
    shutil.copyfile(DATA / fixture, as_owl)
    result = kg("import", as_owl, "--data-dir", tmp_path / "kb")
    assert result.exit_code == 2
    syntax = {
        "lab-owlxml": "OWL/XML syntax",
        "lab-functional": "OWL Functional syntax",
        "lab-manchester": "Manchester syntax",
    }[Path(fixture).stem]
    assert result.stderr == (
        f"error: {as_owl.name}: this ontology is in {syntax}, which kgrag cannot read. "
        f"{SAVE_AS_HINT}\n"
    )
    assert not (tmp_path / "kb" / "graph.ttl").exists() or isomorphic(
        load_rdf(tmp_path / "kb" / "graph.ttl"), load_rdf(BASE_ONTOLOGY_PATH)
    )


@pytest.mark.parametrize("fixture", ["lab-functional.ofn", "lab-manchester.omn"])
def test_protege_extensions_of_unreadable_syntaxes_get_the_hint_too(
    tmp_path: Path, fixture: str
) -> None:
    result = kg("import", DATA / fixture, "--data-dir", tmp_path / "kb")
    assert result.exit_code == 2
    assert SAVE_AS_HINT in result.stderr


# ---------------------------------------------------------------- edits in graph.ttl


NOTES = """\
# Bench notes

示波器七号 的探头在 probe-rack 上，校准前先检查探头补偿。
"""


@pytest.fixture
def lab_kb(tmp_path: Path) -> Iterator:
    from retrieval.pipeline import KnowledgeBase

    relations = tmp_path / "relations.csv"
    relations.write_text(RELATIONS, encoding="utf-8")
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "bench-notes.md").write_text(NOTES, encoding="utf-8")
    kb = KnowledgeBase(make_settings(tmp_path / "kb"), create=True)
    try:
        kb.import_file(DATA / "lab.ttl")
        kb.import_file(relations)
        kb.ingest_paths([docs])
        yield kb
    finally:
        kb.close()


def test_edits_to_graph_ttl_reach_the_next_query_without_reingesting(lab_kb) -> None:
    question = "示波器七号 的探头"
    before = lab_kb.query(question, mode="graph")
    assert [e["label"] for e in before.entities] == []
    documents = lab_kb.store.stats()

    # The edit Protégé (or a script) makes: a new alias, a new relation, a renamed label.
    path = lab_kb.root / "graph.ttl"
    graph = load_rdf(path)
    scope = LAB["scope-7"]
    graph.add((scope, SKOS.altLabel, Literal("示波器七号", lang="zh")))
    graph.add((scope, KG.connectsTo, entity_iri("probe-rack")))
    graph.remove((scope, RDFS.label, Literal("Scope 7", lang="en")))
    graph.add((scope, RDFS.label, Literal("Scope Seven", lang="en")))
    graph.serialize(path, format="turtle")

    after = lab_kb.query(question, mode="graph")
    assert [(e["label"], e["surface"]) for e in after.entities] == [("Scope Seven", "示波器七号")]
    # The notes were linked again (they mention the new alias), not ingested again.
    assert [hit.title for hit in after.hits] == ["Bench notes"]
    assert after.hits[0].why["graph"]["entity"] == "Scope Seven"
    stats = lab_kb.store.stats()
    assert (stats["documents"], stats["chunks"]) == (documents["documents"], documents["chunks"])
    assert stats["mentions"] == documents["mentions"] + 1

    entity = lab_kb.entity("Scope Seven")
    assert entity["id"] == str(scope)
    assert "示波器七号" in entity["aliases"]
    assert [n["label"] for n in entity["neighbours"]["connectsTo"]] == ["probe-rack"]
    assert [n["label"] for n in entity["neighbours"]["runsOn"]] == ["bench-3"]
    with pytest.raises(NotFoundError):
        lab_kb.entity("Scope 7")
    assert ENT["probe-rack"] == entity_iri("probe-rack")
