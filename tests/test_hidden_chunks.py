"""Which chunks a query hides (superseded or not yet in force) is read from the documents that have an ended or
future version only; checked against a walk of every version of the catalog (the rule as it was written first)
on a knowledge base of many documents, a few with histories and future versions, on days before, between and
after their versions."""

from __future__ import annotations

import datetime as dt

from conftest import make_settings

from retrieval.pipeline import KnowledgeBase
from retrieval.types import SourceDocument


def _every_version(db, day: dt.date, keep_unborn: bool) -> set[str]:
    d = day.isoformat()
    by_doc: dict[str, list] = {}
    for version_id, doc_id, start, end in db.execute(
            "SELECT version_id, doc_id, COALESCE(effective_from, ''), effective_to FROM versions ORDER BY seq"):
        by_doc.setdefault(doc_id, []).append((version_id, start, end))
    chosen, affected = set(), []
    for versions in by_doc.values():
        live = [v for v, start, end in versions if start <= d and (end is None or end > d)]
        if not live and keep_unborn:
            live = [min(versions, key=lambda v: v[1])[0]]
        chosen.update(live)
        if len(live) < len(versions):
            affected += [v for v, _, _ in versions]
    hidden, shown = set(), set()
    for version_id in affected:
        for (chunk_id,) in db.execute("SELECT chunk_id FROM version_chunks WHERE version_id = ?", (version_id,)):
            (shown if version_id in chosen else hidden).add(chunk_id)
    return hidden - shown


def test_hidden_chunks_are_those_a_walk_of_every_version_finds(tmp_path):
    with KnowledgeBase(make_settings(tmp_path / "kb", today=dt.date(2024, 6, 1)), create=True) as kb:
        kb.ingest_documents([SourceDocument(f"api:plain{i}", f"# plain {i}\n\nshard {i} of the ledger") for i in range(60)])
        for i, (first, second) in enumerate([("2023-01-01", "2024-01-01"), ("2024-03-01", "2025-01-01"),
                                             ("2025-01-01", "2026-01-01")]):
            for when, words in ((first, "old budget"), (second, "new budget")):
                kb.ingest_documents([SourceDocument(f"api:prd{i}", f"---\neffective: {when}\n---\n\n# prd {i}\n\n{words} {i}")])
        kb.ingest_documents([SourceDocument("api:plain3", "# plain 3\n\nshard 3 moved to the archive")])  # an undated edit
        days = [dt.date(2022, 1, 1), dt.date(2023, 6, 1), dt.date(2024, 6, 1), dt.date(2025, 6, 1), dt.date(2027, 1, 1)]
        some = 0
        for day in days:
            for keep_unborn in (False, True):
                want = _every_version(kb.store.db, day, keep_unborn)
                assert kb.history.hidden_chunks(day, keep_unborn=keep_unborn) == want
                some += bool(want)
        assert some >= 6  # the days do hide chunks


def test_reading_the_hidden_chunks_never_scans_every_version(tmp_path):
    """Every query asks which chunks are hidden: the versions that can hide one are read through the catalog's
    partial indexes, so the question costs what the dated and ended versions cost, not a scan of all of them
    (~90 ms at 300k chunks). Each statement it runs is checked with SQLite's own query plan."""
    with KnowledgeBase(make_settings(tmp_path / "kb", today=dt.date(2024, 6, 1)), create=True) as kb:
        kb.ingest_documents([SourceDocument(f"api:plain{i}", f"# plain {i}\n\nshard {i} of the ledger") for i in range(20)])
        for when, words in (("2023-01-01", "old budget"), ("2025-01-01", "new budget")):
            kb.ingest_documents([SourceDocument("api:prd", f"---\neffective: {when}\n---\n\n# prd\n\n{words}")])
        db = kb.store.db
        statements: list[str] = []
        db.set_trace_callback(statements.append)
        try:
            assert kb.history.hidden_chunks(dt.date(2024, 6, 1))  # the 2023 version's chunks, read (not kept) here
        finally:
            db.set_trace_callback(None)
        reads = [s for s in statements if s.lstrip().upper().startswith("SELECT") and "versions" in s]
        assert len(reads) >= 2  # the check, and the versions of the documents with a history
        for statement in reads:
            plan = [row[3] for row in db.execute("EXPLAIN QUERY PLAN " + statement)]
            assert not [step for step in plan if step == "SCAN versions"], (statement, plan)


def test_a_catalog_from_before_the_hiding_indexes_gets_them_without_waiting_for_a_writer(tmp_path):
    """A catalog made before the partial indexes gets them at the next open that can write it at once; a process opening
    it while a writer holds it (or a read-only catalog) goes on without them and gets the same hidden chunks."""
    import sqlite3

    settings = make_settings(tmp_path / "kb", today=dt.date(2024, 6, 1))
    with KnowledgeBase(settings, create=True) as kb:
        for when, words in (("2023-01-01", "old budget"), ("2025-01-01", "new budget")):
            kb.ingest_documents([SourceDocument("api:prd", f"---\neffective: {when}\n---\n\n# prd\n\n{words}")])
        want = kb.history.hidden_chunks(dt.date(2024, 6, 1))
        catalog = kb.store.path
    assert want
    names = "SELECT name FROM sqlite_master WHERE name IN ('versions_ended', 'versions_dated')"
    other = sqlite3.connect(catalog, isolation_level=None)
    try:
        other.executescript("DROP INDEX versions_ended; DROP INDEX versions_dated;")  # as an older kgrag left it
        other.execute("BEGIN IMMEDIATE")  # a writer holds the catalog
        with KnowledgeBase(settings) as kb:
            assert kb.history.hidden_chunks(dt.date(2024, 6, 1)) == want
        assert other.execute(names).fetchall() == []  # not made: it would have waited for the writer
        other.execute("ROLLBACK")
        with KnowledgeBase(settings) as kb:
            assert kb.history.hidden_chunks(dt.date(2024, 6, 1)) == want
        assert sorted(other.execute(names).fetchall()) == [("versions_dated",), ("versions_ended",)]
    finally:
        other.close()
