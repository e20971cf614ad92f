"""graph.cache holds the view as columns (kg.graph_packed): a view read back from it is the view that was
parsed (same entities in the same order, same neighbours in the same order with the same weights, same
asserted edges and counts), a change to a loaded view behaves as on a parsed one, and a cache written in
an older format is parsed again and rewritten instead of being read."""

from __future__ import annotations

import pickle

from kg.cli.base import DEMO_DIR
from kg.graph import GraphView
from kg.graph_types import Edge
from kg.store import CACHE_FILE, KnowledgeGraph


def _demo_graph(tmp_path) -> KnowledgeGraph:
    graph = KnowledgeGraph(tmp_path)
    graph.import_relations(DEMO_DIR / "relations.csv")
    graph.view  # noqa: B018 - parsed, and graph.cache written
    return graph


def _parsed_view(graph: KnowledgeGraph) -> GraphView:
    """The view built from the triples (the graph itself keeps the one read back from graph.cache)."""
    return GraphView.from_rdf(graph.rdf, graph.vocab)


def _everything(view) -> tuple:
    return (
        [(iri, e.label, e.aliases, e.types) for iri, e in view.entities.items()],
        [(source, [vars(e) for e in edges]) for source, edges in view.adjacency.items()],
        list(view._edges.items()),  # noqa: SLF001
        list(view.link_surfaces()),
        view.labels(),
        view.stats(),
    )


def test_a_view_read_from_the_cache_is_the_parsed_view(tmp_path):
    parsed = _parsed_view(_demo_graph(tmp_path))
    loaded = KnowledgeGraph(tmp_path).view
    assert KnowledgeGraph(tmp_path)._rdf is None  # noqa: SLF001 - read from graph.cache, not graph.ttl
    assert parsed.stats()["edges"] > 20

    # The query path asks one node at a time: each list as parsed, before anything else is built.
    for source, edges in parsed.adjacency.items():
        assert loaded.neighbours(source) == edges
        assert all(isinstance(e, Edge) for e in loaded.neighbours(source))
    assert loaded.neighbours("https://kgrag.dev/entity/no-such-thing") == []
    some = next(iter(parsed.entities))
    assert loaded.entities[some] == parsed.entities[some] and some in loaded.entities
    assert "https://kgrag.dev/entity/no-such-thing" not in loaded.entities
    label = parsed.entities[some].label
    assert loaded.resolve(label) == parsed.resolve(label)
    assert loaded.resolve(label.upper()) == parsed.resolve(label.upper())

    assert _everything(loaded) == _everything(parsed)
    again = pickle.loads(pickle.dumps(loaded))  # a loaded view written back is the same view
    assert _everything(again) == _everything(parsed)


def test_a_change_to_a_loaded_view_acts_as_on_a_parsed_one(tmp_path):
    parsed = _parsed_view(_demo_graph(tmp_path))
    loaded = KnowledgeGraph(tmp_path).view
    a, b = list(parsed.entities)[:2]
    relation = sorted(parsed.vocab.properties)[0]
    loaded.neighbours(a)  # a list built before the change is the list the change extends
    for view in (parsed, loaded):
        view.add_edge(a, relation, b, 0.5)
    assert _everything(loaded) == _everything(parsed)
    assert loaded.neighbours(a)[-1] == parsed.neighbours(a)[-1]
    assert loaded.graph.number_of_edges() == parsed.graph.number_of_edges()


def test_a_cache_in_an_older_format_is_parsed_again_and_rewritten(tmp_path):
    graph = _demo_graph(tmp_path)
    expected = _everything(_parsed_view(graph))
    cache = tmp_path / CACHE_FILE
    with cache.open("rb") as fh:
        fmt, digest, stats = pickle.load(fh)  # noqa: S301
    with cache.open("wb") as fh:  # what format 3 held: the view's objects, here replaced by a decoy
        pickle.dump((fmt - 1, digest, stats), fh)
        pickle.dump(("not", "a view"), fh)

    reread = KnowledgeGraph(tmp_path)
    assert _everything(reread.view) == expected
    assert reread._rdf is not None  # noqa: SLF001 - parsed from graph.ttl
    with cache.open("rb") as fh:
        assert pickle.load(fh)[0] == fmt  # noqa: S301 - rewritten in the current format
    assert _everything(KnowledgeGraph(tmp_path).view) == expected


def test_the_process_that_wrote_the_graph_keeps_the_view_as_columns(tmp_path):
    """After an import, the importing process holds the view as graph.cache has it (columns), not the
    entities and edges as objects it was built from (at 100k rows: ~120 MB through relinking)."""
    graph = _demo_graph(tmp_path)
    assert graph.view._packed is not None  # noqa: SLF001
    assert _everything(graph.view) == _everything(_parsed_view(graph))
