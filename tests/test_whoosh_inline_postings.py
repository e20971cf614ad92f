"""Short posting lists kept in their term's entry (retrieval/index/whoosh_write.py `INLINE_LIMIT`): whoosh 2.7's codec
can do it, but the path was unreachable and broken. The same documents indexed with and without it, in batches whose
commits merge segments, give the same hits with the same scores; the inlined lists are really there and are read by
`whoosh_postings.inlined_postings`."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import make_settings

import retrieval.index.whoosh_write as whoosh_write
from kg.cli.base import DEMO_DIR
from retrieval.types import SourceDocument

QUESTIONS = ["LORA-02 的心跳间隔是多少？", "redis-cluster 宕机会影响哪些服务？", "Who owns payment-service?",
             "Kafka 消费积压告警响了该怎么处理？", "How is the wildcard TLS certificate renewed?", "DiskPressure"]


def _documents() -> list[SourceDocument]:
    return [SourceDocument(str(path.relative_to(DEMO_DIR)), path.read_text(encoding="utf-8"))
            for path in sorted((DEMO_DIR / "docs").rglob("*.md"))]


def _build(data_dir: Path) -> tuple[dict, int, int]:
    """Hits and scores of every question in both modes, the number of inlined term entries and of segments."""
    from retrieval.pipeline import KnowledgeBase

    docs = _documents()
    with KnowledgeBase(make_settings(data_dir), create=True) as kb:
        for batch in (docs[:8], docs[8:16], docs[16:]):  # the third commit merges the first two segments into its own
            kb.ingest_documents(batch)
        results = {(q, mode): [(h.chunk_id, round(h.score, 9)) for h in kb.query(q, k=8, mode=mode).hits]
                   for q in QUESTIONS for mode in ("bm25", "full")}
        inlined = 0
        with kb.index.ix.searcher() as searcher:
            for sub, _offset in searcher.leaf_searchers():
                terms = sub.reader()._terms
                inlined += sum(1 for _key, info in terms.items() if info.is_inlined())
        return results, inlined, kb.index.segment_count()


def test_inlined_postings_give_the_same_hits_and_scores(tmp_path, monkeypatch):
    inline, inlined, segments = _build(tmp_path / "inline")
    monkeypatch.setattr(whoosh_write, "INLINE_LIMIT", 1)  # whoosh's default: every list in the posting file
    blocks, none_inlined, _ = _build(tmp_path / "blocks")
    assert none_inlined == 0 and inlined > 1000  # most of a segment's terms occur in one to three chunks
    assert segments == 1  # the merged segment was written with its lists inlined too
    assert inline == blocks
    assert all(inline[(q, "bm25")] for q in QUESTIONS)


def test_an_inlined_list_is_read_as_its_arrays(tmp_path):
    pytest.importorskip("numpy")
    from retrieval.index.whoosh_postings import inlined_postings
    from retrieval.pipeline import KnowledgeBase

    with KnowledgeBase(make_settings(tmp_path / "kb"), create=True) as kb:
        kb.ingest_documents([SourceDocument("a.md", "# A\n\nzyxwv appears once here."),
                             SourceDocument("b.md", "# B\n\nzyxwv zyxwv appears twice here.")])
        with kb.index.ix.searcher() as searcher:
            [(sub, _offset)] = list(searcher.leaf_searchers())
            info = sub.reader()._terms.term_info("body", b"zyxwv")
            ids, weights = inlined_postings(info)
        hits = kb.query("zyxwv", mode="bm25").hits
    assert info.is_inlined() and list(ids) == [0, 1] and list(weights) == [1.0, 2.0]
    assert [h.title for h in hits] == ["B", "A"]
