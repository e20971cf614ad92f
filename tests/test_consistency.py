"""`KnowledgeBase.check()` / `kg check`, and queries running while a write is in progress (real stores)."""

from __future__ import annotations

import dataclasses
import json
import threading

from conftest import CROSS_DOC_QUERY, kg_in_new_process

from retrieval.types import SourceDocument


def test_a_fresh_knowledge_base_checks_clean(fresh_kb):
    report = fresh_kb.check()
    assert report.clean, report.problems
    assert report.counts["chunks"] == report.counts["indexed"] > 0


def test_check_repair_on_a_clean_knowledge_base_finds_nothing_not_even_its_own_journal(fresh_kb, tmp_path):
    out = kg_in_new_process("check", "--repair", "--data-dir", str(fresh_kb.root), cwd=tmp_path)
    assert out.startswith("clean: ") and "problem" not in out, out


def test_check_finds_and_repairs_orphans_missing_chunks_and_left_over_temp_files(fresh_kb):
    kb = fresh_kb
    [victim] = [c for c in kb.store.iter_chunks() if c.title == "nginx"][:1]
    # The index lost a chunk and kept one the catalog no longer has, as a crash between commits left it.
    kb.index.delete_chunks([victim.chunk_id])
    kb.index.add_chunks([dataclasses.replace(victim, chunk_id="c-orphan", doc_id="d-gone")])
    kb.index.commit()
    assert victim.chunk_id not in {h.chunk_id for h in kb.query("proxy_read_timeout", mode="bm25").hits}
    (kb.root / ".graph-abc123.ttl").write_bytes(b"")
    report = kb.check()
    assert report.problems == [
        "1 temporary file(s) left by an interrupted save: .graph-abc123.ttl",
        "1 chunk(s) in the catalog are not in the text index (unsearchable)",
        "1 text index entr(y/ies) have no chunk in the catalog (orphans)",
    ]
    repaired = kb.check(repair=True)
    assert repaired.repaired == ["removed 1 temporary file(s)", "text index: 1 orphan(s) removed, 1 chunk(s) added"]
    assert kb.check().clean
    assert not (kb.root / ".graph-abc123.ttl").exists()
    hits = {h.chunk_id for h in kb.query("proxy_read_timeout", mode="bm25").hits}
    assert victim.chunk_id in hits and "c-orphan" not in hits


def test_mentions_linked_against_another_graph_are_relinked_on_the_next_open_or_read(fresh_kb, tmp_path):
    kb = fresh_kb
    mentions = kb.store.stats()["mentions"]

    def tamper() -> None:  # what an import killed after replacing graph.ttl leaves
        with kb.store.transaction():
            kb.store.db.execute("DELETE FROM mentions")
            kb.store.db.execute("UPDATE kb_state SET value = 'old' WHERE key = 'linked_graph'")

    tamper()
    out = json.loads(kg_in_new_process("check", "--json", "--data-dir", str(kb.root), cwd=tmp_path))
    assert out["clean"] is True, out  # opening it finished the interrupted import
    assert kb.store.stats()["mentions"] == mentions
    tamper()
    assert kb.check().clean  # in-process: the next read does the same
    assert kb.store.stats()["mentions"] == mentions


def test_queries_run_while_a_write_is_in_progress(fresh_kb):
    kb = fresh_kb
    inside, release = threading.Event(), threading.Event()

    def progress(_n: int) -> None:  # the ingest's own progress callback: hold the write open here
        inside.set()
        release.wait(30)

    writer = threading.Thread(target=kb.ingest_documents,
                              args=([SourceDocument("api:slow", "# slow\n\nheron nest")], progress))
    writer.start()
    try:
        assert inside.wait(30)
        answers = []
        reader = threading.Thread(target=lambda: answers.append(kb.query(CROSS_DOC_QUERY)))
        reader.start()
        reader.join(20)
        assert answers and answers[0].hits, "a query waited for the writer"
        assert kb.query("heron").hits == []  # the uncommitted document is not visible yet
    finally:
        release.set()
        writer.join(30)
    assert [h.source for h in kb.query("heron").hits] == ["api:slow"]


def test_check_of_a_large_knowledge_base_says_what_it_is_doing_first(fresh_kb, monkeypatch):
    from click.testing import CliRunner

    from kg.cli import check as check_cli
    from kg.cli import cli

    def run(*flags):
        return CliRunner().invoke(cli, ["check", "--data-dir", str(fresh_kb.root), *flags], catch_exceptions=False)

    fresh_kb.close()
    assert "checking" not in run().stderr  # the fixture is small: nothing to announce
    monkeypatch.setattr(check_cli, "ANNOUNCE_CHUNKS", 1)
    result = run()
    chunks = result.stdout.split(" chunks,")[0].rsplit(", ", 1)[1]
    assert result.exit_code == 0 and result.stdout.startswith("clean: ")
    assert result.stderr.startswith(f"checking {int(chunks):,} chunks: the catalog against the text index"), result.stderr
    assert "checking" not in run("--quiet").stderr and "checking" not in run("--json").stderr


def test_check_during_another_processs_write_does_not_call_it_dead(fresh_kb):
    from kg.lock import DataDirLock
    from retrieval.catalog import commit

    (fresh_kb.root / commit.JOURNAL_FILE).write_text(json.dumps({"op": "ingest"}), encoding="utf-8")
    other = DataDirLock(fresh_kb.root, 0)  # another writer: flock on its own open of write.lock
    assert other.try_acquire()
    try:
        report = fresh_kb.check()
        assert report.clean, report.problems  # the journal is a live write's
        assert any("another kg process is writing" in note for note in report.notes), report.notes
    finally:
        other.release()
        other.close()
    report = fresh_kb.check()  # the writer is gone and its journal is still there: a dead write, said so
    assert any("was cut short" in problem for problem in report.problems), report.problems


def test_check_while_a_thread_of_this_process_commits_does_not_call_it_dead(fresh_kb):
    """A server's `check` while its follower thread commits: the journal is on disk a moment before and after the
    write marks itself, with this process holding the lock (seen in CI as "cut short" right after a relink)."""
    from retrieval.catalog import commit

    holding, release = threading.Event(), threading.Event()

    def writer() -> None:
        with fresh_kb.commits.flock:
            commit.start_journal(fresh_kb.root, "catch_up")
            holding.set()
            release.wait(30)
            commit.finish_journal(fresh_kb.root)

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        assert holding.wait(30)
        report = fresh_kb.check()
        assert report.clean, report.problems
        assert any("this process is writing" in note for note in report.notes), report.notes
    finally:
        release.set()
        thread.join(30)
    assert fresh_kb.check().clean
