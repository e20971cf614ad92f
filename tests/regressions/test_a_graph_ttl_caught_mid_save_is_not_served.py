"""An editor that saves graph.ttl in place truncates it first: a server's follower that read it that instant
swapped in a graph without the ontology, and until its next round every question about a relation 404ed
("no relation 'dependsOn' in the ontology"; the CI run of 91da180 caught it once in
tests/test_web_graph.py). What was read is kept only when the file still stands as it was read."""
from __future__ import annotations

from conftest import build_kb

from api.web.explore import fact_source

FACT = ("order-service", "dependsOn", "mysql-core")


def test_an_emptied_graph_ttl_keeps_the_graph_until_it_is_written_again(tmp_path):
    kb = build_kb(tmp_path)
    try:
        graph_file = kb.graph.path
        text = graph_file.read_text(encoding="utf-8")
        before, graph_before = fact_source(kb, *FACT, "en")["statement"], kb.graph
        graph_file.write_text("", encoding="utf-8")  # the instant between the editor's truncate and its write
        held = fact_source(kb, *FACT, "en")  # reads catch up first (no follower here: in this process)
        assert held["relation"] == "dependsOn" and held["weight"] > 0  # the graph read before, not an empty one
        assert kb.graph is graph_before  # the empty file is read again when the editor's write changes it
        graph_file.write_text("# saved\n" + text, encoding="utf-8")
        after = fact_source(kb, *FACT, "en")["statement"]
        assert not kb.graph.changed_on_disk()
        assert after["line"] == before["line"] + 1
    finally:
        kb.close()


def test_a_graph_ttl_that_moves_while_it_is_read_is_read_again(tmp_path, monkeypatch):
    from kg.store import KnowledgeGraph
    from ontology import Vocabulary

    kb = build_kb(tmp_path)
    try:
        graph_file = kb.graph.path
        text = graph_file.read_text(encoding="utf-8")
        old_graph = kb.graph
        graph_file.write_text("# first save\n" + text, encoding="utf-8")
        real = Vocabulary.from_graph
        saves = iter(["# second save, longer\n" + text])

        def saved_again_while_parsing(graph):  # the editor writes again while the follower parses
            for data in saves:
                graph_file.write_text(data, encoding="utf-8")
            return real(graph)

        monkeypatch.setattr(Vocabulary, "from_graph", staticmethod(saved_again_while_parsing))
        kb.commits.reload()
        assert kb.graph is old_graph  # what was read is not the file as it stands
        kb.commits.reload()
        assert isinstance(kb.graph, KnowledgeGraph) and kb.graph is not old_graph and not kb.graph.changed_on_disk()
        assert "dependsOn" in kb.graph.vocab.properties
    finally:
        kb.close()


def test_a_graph_ttl_saved_with_a_typo_is_said_once_and_the_graph_read_before_serves(tmp_path, caplog):
    """A server's follower read a graph.ttl that does not parse at every round (0.5 s): a traceback each time,
    the whole file parsed again each time. Now one warning per version of the file, and the queries go on."""
    kb = build_kb(tmp_path)
    try:
        graph_file = kb.graph.path
        text = graph_file.read_text(encoding="utf-8")
        graph_file.write_text(text + "\nthis is : not turtle .\n", encoding="utf-8")
        with caplog.at_level("WARNING", logger="kgrag"):
            for _ in range(3):  # three rounds of a follower, or three queries
                assert fact_source(kb, *FACT, "en")["statement"] is not None
        warned = [r for r in caplog.records if "not valid Turtle" in r.getMessage()]
        assert len(warned) == 1 and warned[0].levelname == "WARNING" and warned[0].exc_info is None
        assert "line" in warned[0].getMessage()  # where the typo is
        assert not kb.commits.behind()  # nothing to read again until the file changes
        from api.routes.health import health

        [warning] = health(kb)["warnings"]  # a server says so at /health: the edit is not in force
        assert "not valid Turtle" in warning and "graph read before" in warning
        graph_file.write_text("# fixed\n" + text, encoding="utf-8")
        assert kb.commits.behind()
        assert fact_source(kb, *FACT, "en")["statement"]["first_line"] > 1 and not kb.graph.changed_on_disk()
        assert "warnings" not in health(kb) and "graph_unread" not in kb.stats()
    finally:
        kb.close()


def test_a_write_over_a_graph_ttl_that_cannot_be_read_is_refused_and_the_edit_kept(tmp_path):
    """Served from the graph read before, a write (an import through the API, a `kg ingest` in the server) would save
    that graph over the user's edit of graph.ttl, typo and all: it is refused instead, and the file is left as saved."""
    import pytest

    from kg.errors import OntologyFormatError

    kb = build_kb(tmp_path)
    try:
        graph_file = kb.graph.path
        edited = graph_file.read_text(encoding="utf-8") + "\n:new-service :dependsOn :mysql-core ;; oops\n"
        graph_file.write_text(edited, encoding="utf-8")
        fact_source(kb, *FACT, "en")  # a read: the graph read before serves, the file is held back
        table = tmp_path / "more.csv"
        table.write_text("source,relation,target\nreport-service,dependsOn,mysql-core\n", encoding="utf-8")
        with pytest.raises(OntologyFormatError, match="nothing was written"):
            kb.import_file(table)
        assert graph_file.read_text(encoding="utf-8") == edited
    finally:
        kb.close()
