"""`KnowledgeGraph.import_relations` writes graph.ttl and graph.cache from the graph and the planned triples
without adding them to rdflib's store (kg.triples): the same bytes as rdflib's serializer of the graph with
them added, the view parsed from that graph.ttl, and `rdf` holding them as soon as something reads it;
for an import that only adds, one that also removes (a class replacing kg:Entity, weights and notes
replaced), a re-import that changes nothing and a dry run. The planning and writing run with Python's
cyclic collector paused (kg.collector)."""

from __future__ import annotations

import gc
from pathlib import Path

import pytest
from rdflib.compare import isomorphic
from rdflib.plugins.stores.memory import Memory

import kg.store
from kg.cli.base import DEMO_DIR
from kg.graph import GraphView
from kg.relations import import_relation_table
from kg.store import CACHE_FILE, GRAPH_FILE, KnowledgeGraph
from ontology import Vocabulary, load_rdf

DEMO = DEMO_DIR / "relations.csv"


def _changed_demo(folder: Path) -> Path:
    """The demo table with weights, notes and classes changed: importing it over the demo removes triples."""
    lines = DEMO.read_text(encoding="utf-8").splitlines()
    out = [lines[0]]
    for i, line in enumerate(lines[1:]):
        cells = line.split(",")
        if len(cells) == 9:  # rows without quoted commas are enough
            if i % 3 == 0 and cells[7]:
                cells[7] = str(round(float(cells[7]) / 2, 2))
            if i % 4 == 0:
                cells[8] = "changed note"
            if i % 5 == 0 and not cells[3]:
                cells[3] = "Service"
        out.append(",".join(cells))
    path = folder / "changed.csv"
    path.write_text("\n".join(out) + "\n", encoding="utf-8")
    return path


def _view_content(view: GraphView) -> tuple:
    return (
        [(iri, e.label, e.aliases, e.types) for iri, e in view.entities.items()],
        [(source, view.neighbours(source)) for source in view.entities],
        sorted(view._edges.items()),  # noqa: SLF001
        list(view.link_surfaces()),
        view.stats(),
    )


class _Expected:
    """The same imports the way they were done before: the triples added to the graph in rdflib's store,
    the graph written by rdflib's serializer and its view built from the store."""

    def __init__(self, folder: Path) -> None:
        folder.mkdir()
        self.graph = KnowledgeGraph(folder).rdf

    def after(self, table: Path) -> tuple[bytes, tuple]:
        import_relation_table(self.graph, table, Vocabulary.from_graph(self.graph))
        view = GraphView.from_rdf(self.graph, Vocabulary.from_graph(self.graph))
        return self.graph.serialize(format="turtle", encoding="utf-8"), _view_content(view)


@pytest.fixture
def counted_adds(monkeypatch):
    """How many triples reach rdflib's in-memory store."""
    added = [0]
    original = Memory.add

    def add(self, triple, context, quoted=False):
        added[0] += 1
        return original(self, triple, context, quoted)

    monkeypatch.setattr(Memory, "add", add)
    return added


@pytest.mark.parametrize("second", [None, "same", "changed"])
def test_an_import_writes_rdflibs_bytes_and_the_parsed_view_without_rdflibs_store(tmp_path, counted_adds, second):
    kb = tmp_path / "kb"
    kb.mkdir()
    graph = KnowledgeGraph(kb)
    graph.view  # noqa: B018 - the base ontology parsed, as `kg import` loads the graph first
    tables = [DEMO] + ([] if second is None else [DEMO if second == "same" else _changed_demo(tmp_path)])
    expected = _Expected(tmp_path / "expected")
    for i, table in enumerate(tables):
        before = (kb / GRAPH_FILE).read_bytes() if i else b""
        expected_bytes, expected_view = expected.after(table)

        graph.rdf  # noqa: B018 - the graph as the importing process holds it
        counted_adds[0] = 0
        report = graph.import_relations(table)
        assert counted_adds[0] == 0  # planned, written and derived without rdflib's store

        written = (kb / GRAPH_FILE).read_bytes()
        assert written == expected_bytes
        if i and second == "same":
            assert not report.added_triples and not report.removed_triples
            assert written == before
        if second == "changed" and i:
            assert report.removed_triples > 0 and report.updated_edges > 0
        assert _view_content(graph.view) == expected_view  # read from graph.cache
        assert _view_content(KnowledgeGraph(kb).view) == expected_view  # as the next process reads it
        # Whatever reads the triples afterwards gets them: added to the store then, once.
        counted_adds[0] = 0
        after = graph.rdf
        assert counted_adds[0] == report.added_triples
        parsed = load_rdf(kb / GRAPH_FILE)
        assert isomorphic(after, parsed)  # the axioms' blank nodes are parsed with other names
        assert _view_content(GraphView.from_rdf(parsed, Vocabulary.from_graph(parsed))) == expected_view
        assert graph.rdf.serialize(format="turtle", encoding="utf-8") == written


def test_a_dry_run_writes_nothing_and_leaves_the_store_alone(tmp_path, counted_adds):
    graph = KnowledgeGraph(tmp_path)
    graph.rdf  # noqa: B018
    counted_adds[0] = 0
    report = graph.import_relations(DEMO, dry_run=True)
    assert report.new_edges > 20 and report.added_triples > 0
    assert not (tmp_path / GRAPH_FILE).exists() and not (tmp_path / CACHE_FILE).exists()
    assert counted_adds[0] == 0 and graph._pending is None  # noqa: SLF001


def test_the_import_runs_with_the_cyclic_collector_paused(tmp_path, monkeypatch):
    seen = []
    write = kg.store.serialize_turtle

    def watched(graph):
        seen.append(gc.isenabled())
        return write(graph)

    monkeypatch.setattr(kg.store, "serialize_turtle", watched)
    assert gc.isenabled()
    KnowledgeGraph(tmp_path).import_relations(DEMO)
    assert seen == [False]
    assert gc.isenabled()  # and running again afterwards
