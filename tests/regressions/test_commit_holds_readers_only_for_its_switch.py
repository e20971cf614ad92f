"""Regression (issue 27, item 3): a write committed the text index inside the readers' exclusive lock,
so every query waited while whoosh wrote (and, over 1,000 chunks, fully merged) its segments: 176-299 s
of stalled readers behind one in-server POST. Now the segments are written before the switch, while
queries go on reading the previous commit. The test asks a query from inside whoosh's segment write of
an ingest: it must finish there, answered from the snapshot before the ingest."""

from __future__ import annotations

import threading

from conftest import make_settings

import retrieval.index.whoosh_merge as whoosh_merge
from retrieval.pipeline import KnowledgeBase
from retrieval.types import SourceDocument

DEADLOCK_GUARD = 120  # seconds a query may take before the test calls it stalled (not a speed target)


def test_a_query_runs_while_an_ingest_writes_its_segments(tmp_path, monkeypatch):
    with KnowledgeBase(make_settings(tmp_path / "kb"), create=True) as kb:
        kb.ingest_documents([SourceDocument(f"api:old{i}", f"# old {i}\n\nthe gateway timeout of shard {i}")
                             for i in range(30)])
        before = [h.chunk_id for h in kb.query("gateway timeout", mode="bm25").hits]
        assert before
        seen: dict = {}
        finalize = whoosh_merge.finalize  # writes the new segment, with the segments its commit merges

        def finalize_with_a_query(writer):
            done = threading.Event()

            def ask():
                seen["hits"] = [h.chunk_id for h in kb.query("gateway timeout", mode="bm25").hits]
                done.set()

            seen["thread"] = threading.Thread(target=ask)
            seen["thread"].start()
            seen["answered_during_write"] = done.wait(DEADLOCK_GUARD)
            return finalize(writer)

        monkeypatch.setattr(whoosh_merge, "finalize", finalize_with_a_query)
        report = kb.ingest_documents([SourceDocument(f"api:new{i}", f"# new {i}\n\nanother gateway timeout {i}")
                                      for i in range(40)])
        monkeypatch.undo()
        seen["thread"].join()  # (the old code let it in only after the commit)
        assert report.added == 40
        assert seen["answered_during_write"], "the query waited for the ingest's segment write"
        assert seen["hits"] == before  # the snapshot before the ingest, not a half-written one
        after = kb.query("another gateway timeout", mode="bm25").hits
        assert any(h.source == "api:new0" or h.title.startswith("new") for h in after)
