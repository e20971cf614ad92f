"""Regression (found by bench/load.py once queries stopped queuing behind one lock): concurrent queries
read the one whoosh searcher's posting files at once and failed with UnpicklingError (500s). The race
is timing-dependent (2 of 665 queries under 20 clients); this test runs it many times and compares answers."""

from __future__ import annotations

import random
from concurrent.futures import ThreadPoolExecutor

from conftest import make_settings

from retrieval.pipeline import KnowledgeBase
from retrieval.types import SourceDocument

WORDS = ["cache", "replica", "gateway", "timeout", "quota", "shard", "ledger", "broker", "缓存", "网关", "副本", "超时"]


def test_many_threads_query_at_once_and_get_the_serial_answers(tmp_path):
    rng = random.Random(5)
    # Posting lists longer than one whoosh block (128 postings), so a search seeks while it reads.
    docs = [SourceDocument(f"api:d{i}", f"# d{i}\n\n" + " ".join(rng.choice(WORDS) for _ in range(30)))
            for i in range(600)]
    with KnowledgeBase(make_settings(tmp_path / "kb"), create=True) as kb:
        kb.ingest_documents(docs)
        questions = [" ".join(rng.sample(WORDS, 3)) for _ in range(12)]
        serial = {q: [h.chunk_id for h in kb.query(q, mode="bm25").hits] for q in questions}
        with ThreadPoolExecutor(max_workers=8) as pool:
            answers = list(pool.map(lambda q: (q, [h.chunk_id for h in kb.query(q, mode="bm25").hits]), questions * 15))
    assert all(chunks == serial[q] for q, chunks in answers)
