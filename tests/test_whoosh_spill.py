"""A writer given more postings than `WRITER_LIMIT_MB` spills sorted runs to temporary files (whoosh's posting pool),
written and read a block of postings at a time (`whoosh_write._write_run`): the knowledge base answers exactly as one
whose writer kept every posting in memory. Real whoosh, the demo's documents."""

from __future__ import annotations

from conftest import make_settings
from whoosh import writing

import retrieval.index.whoosh_index  # noqa: F401 - installs whoosh_write's mends (before the test patches one)
from kg.cli.base import DEMO_DIR
from retrieval.index import whoosh_write
from retrieval.types import SourceDocument

QUESTIONS = ["LORA-02 的心跳间隔是多少？", "redis-cluster 宕机会影响哪些服务？", "Who owns payment-service?", "DiskPressure"]


def _answers(data_dir) -> dict:
    from retrieval.pipeline import KnowledgeBase

    docs = [SourceDocument(str(p.relative_to(DEMO_DIR)), p.read_text(encoding="utf-8"))
            for p in sorted((DEMO_DIR / "docs").rglob("*.md"))]
    with KnowledgeBase(make_settings(data_dir), create=True) as kb:
        kb.ingest_documents(docs)  # one writer, one segment
        return {(q, mode): [(h.chunk_id, round(h.score, 9)) for h in kb.query(q, k=8, mode=mode).hits]
                for q in QUESTIONS for mode in ("bm25", "full")}


def test_a_writer_that_spills_its_postings_answers_as_one_that_did_not(tmp_path, monkeypatch):
    runs = []
    monkeypatch.setattr(writing.PostingPool, "_write_run",
                        lambda pool, f, items: runs.append(1) or whoosh_write._write_run(pool, f, items))
    in_memory = _answers(tmp_path / "memory")
    assert not runs
    monkeypatch.setattr(whoosh_write, "WRITER_LIMIT_MB", 0.05)  # ~50 KB of postings a run
    monkeypatch.setattr(whoosh_write, "_RUN_BLOCK", 100)  # several blocks a run
    spilled = _answers(tmp_path / "spilled")
    assert len(runs) > 3
    assert spilled == in_memory and all(in_memory.values())
