"""Regression (found by schemathesis): whoosh names segments with the global `random`, so after a
`random.seed(...)` (a benchmark script, hypothesis) two commits picked the same segment name and the
second ingest failed with an AssertionError inside whoosh."""

from __future__ import annotations

import random

from retrieval.types import SourceDocument


def test_ingests_after_the_same_seed_both_commit(fresh_kb):
    random.seed(1234)
    fresh_kb.ingest_documents([SourceDocument("api:one", "# one\n\nheron")])
    random.seed(1234)
    fresh_kb.ingest_documents([SourceDocument("api:two", "# two\n\nosprey")])
    assert [h.source for h in fresh_kb.query("osprey", mode="bm25").hits] == ["api:two"]
    assert fresh_kb.check().clean
