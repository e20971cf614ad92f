"""Regression (issue 27, item 4): `pool_by_parent` asked `WhooshIndex.term_scores` for the candidates'
per-word scores, and `term_scores` walked posting lists on the one shared searcher without the search
lock: with other searches seeking the same posting file at once, a read landed mid-block and failed
("Block tag error", a 500 under 8 concurrent heavy queries) or, worse, read the wrong scores. Each
round below reopens the searcher (its posting-score cache starts empty), then runs searches and
term_scores side by side and compares them with the serial answers."""

from __future__ import annotations

import random
import sys
from concurrent.futures import ThreadPoolExecutor

from retrieval.index.whoosh_index import WhooshIndex
from retrieval.types import Chunk

WORDS = [f"w{i:03d}" for i in range(300)]


def test_term_scores_alongside_searches_match_the_serial_answers(tmp_path):
    rng = random.Random(7)
    index = WhooshIndex(tmp_path / "ix")
    # Long posting lists (many whoosh blocks of 128) so that every read seeks while it reads.
    chunks = [Chunk(chunk_id=f"c{i}", doc_id=f"d{i // 5}", ordinal=i % 5, title=f"t{i}", section="",
                    text=" ".join(rng.choice(WORDS[:40]) if j % 2 else rng.choice(WORDS) for j in range(60)),
                    line_start=1, line_end=1, sha256=f"h{i}")
              for i in range(2500)]
    index.add_chunks(chunks)
    index.commit()
    try:
        searches = [[(w, 1.0) for w in rng.sample(WORDS, 4)] for _ in range(16)]
        pooled = [[(w, 1.0) for w in rng.sample(WORDS, 6)] for _ in range(16)]
        docnums = list(range(0, 2500, 3))
        serial_search = [[(h.chunk_id, h.score) for h in index.search(t, 50)] for t in searches]
        serial_scores = [index.term_scores(t, docnums) for t in pooled]

        def search(i):
            return "search", i, [(h.chunk_id, h.score) for h in index.search(searches[i], 50)]

        def scores(i):
            return "scores", i, index.term_scores(pooled[i], docnums)

        interval = sys.getswitchinterval()
        sys.setswitchinterval(1e-6)  # threads switch between a seek and its read, as on a busy server
        try:
            for _ in range(6):
                index.commit()  # a new searcher: nothing cached, every call reads posting files
                with ThreadPoolExecutor(max_workers=8) as pool:
                    futures = [pool.submit(search if k % 2 else scores, k // 2 % 16) for k in range(64)]
                    results = [f.result() for f in futures]
                for kind, i, got in results:
                    assert got == (serial_search[i] if kind == "search" else serial_scores[i])
        finally:
            sys.setswitchinterval(interval)
    finally:
        index.close()
