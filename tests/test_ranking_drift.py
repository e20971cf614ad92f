"""A whoosh index that merged its segments scores a little differently from a fresh copy of the same chunks
(whoosh sums field lengths exactly when it writes a segment, from rounded one-byte lengths when it merges), and
`kg migrate`'s check must tell that apart from a copy that lost or changed something."""

from __future__ import annotations

import hashlib

from retrieval.index.analysis import query_terms
from retrieval.index.whoosh_index import WhooshIndex
from retrieval.migration import DRIFT, same_within_ties
from retrieval.types import Chunk

WORDS = ("gateway heartbeat timeout retries broker partition replica leader election snapshot restore "
         "metasrv datanode region migration compaction window quota tenant").split()


def _chunks(n: int) -> list[Chunk]:
    out = []
    for i in range(n):
        # lengths spread over 5-200 words, where whoosh's one-byte length encoding rounds
        body = " ".join(WORDS[(i * 7 + k * k) % len(WORDS)] for k in range(5 + (i * 37) % 196))
        cid = f"c{i:04d}"
        out.append(Chunk(cid, f"d{i:04d}", 0, f"note {WORDS[i % len(WORDS)]} {i}", "", body, 1, 1,
                         hashlib.sha256(body.encode()).hexdigest()))
    return out


def _top(index: WhooshIndex, question: str) -> list[tuple[str, float]]:
    return [(h.chunk_id, h.score) for h in index.search([(t, 1.0) for t in query_terms(question)], 10)]


def test_a_merged_index_ranks_like_a_fresh_one_within_drift_not_exactly(tmp_path):
    chunks = _chunks(240)
    fresh = WhooshIndex(tmp_path / "fresh")
    fresh.add_chunks(chunks)
    fresh.commit()
    merged = WhooshIndex(tmp_path / "merged")
    for part in (chunks[:80], chunks[80:160], chunks[160:]):
        merged.add_chunks(part)
        merged.commit()
    merged.optimize()
    merged.commit()
    assert merged.segment_count() == 1
    questions = ["gateway heartbeat timeout", "leader election snapshot", "region migration quota", "compaction window tenant"]
    pairs = [(_top(fresh, q), _top(merged, q)) for q in questions]
    assert all(a and len(a) == len(b) for a, b in pairs)
    # the merge changed the scores (so an exact comparison cannot be the check) ...
    assert not all(same_within_ties(a, b) for a, b in pairs)
    # ... by less than DRIFT, so the check at DRIFT accepts every one
    assert all(same_within_ties(a, b, DRIFT) for a, b in pairs)
    fresh.close()
    merged.close()


def test_the_check_at_drift_still_catches_a_lost_or_changed_chunk():
    base = [("a", 10.0), ("b", 9.0), ("c", 8.5), ("d", 8.49), ("e", 7.0)]
    drifted = [("a", 10.03), ("b", 9.02), ("d", 8.52), ("c", 8.51), ("e", 7.01)]  # c and d within 1%: may swap
    assert same_within_ties(base, drifted, DRIFT) and not same_within_ties(base, drifted)
    lost = [("a", 10.0), ("c", 8.5), ("d", 8.49), ("e", 7.0), ("f", 6.0)]  # b is gone
    assert not same_within_ties(base, lost, DRIFT)
    changed = [("a", 10.0), ("b", 9.5), ("c", 8.5), ("d", 8.49), ("e", 7.0)]  # b scores 5% more
    assert not same_within_ties(base, changed, DRIFT)
    swapped = [("b", 10.0), ("a", 9.0), ("c", 8.5), ("d", 8.49), ("e", 7.0)]  # a and b are 10% apart
    assert not same_within_ties(base, swapped, DRIFT)
    # drift moves two chunks 1.5% apart in opposite directions (-0.7%, +0.9%): they swap, each within DRIFT of itself
    apart = [("a", 10.0), ("b", 9.85), ("c", 8.0)]
    crossed = [("b", 9.94), ("a", 9.93), ("c", 8.02)]
    assert same_within_ties(apart, crossed, DRIFT) and not same_within_ties(apart, crossed)
    # a newcomer above the other side's last hit is not a near tie at the cut
    newcomer = [("a", 10.0), ("b", 9.85), ("x", 8.5)]
    assert not same_within_ties(apart, newcomer, DRIFT) and not same_within_ties(newcomer, apart, DRIFT)
    # equal scores: ids are free inside the group, and the last group may be cut differently
    assert same_within_ties([("a", 5.0), ("b", 5.0), ("c", 4.0)], [("b", 5.0), ("a", 5.0), ("x", 4.0)])


def test_top_tens_from_different_candidates_pass_only_when_every_chunk_scores_alike_deeper(tmp_path):
    """Each side cuts its candidates by the rare words' scores, so a near tie at that cut can put a chunk in one
    side's top 10 only; the check then scores every chunk either side ranked on both sides, deeper."""
    from retrieval.migration import _scored_alike

    chunks = _chunks(240)
    fresh = WhooshIndex(tmp_path / "fresh")
    fresh.add_chunks(chunks)
    fresh.commit()
    merged = WhooshIndex(tmp_path / "merged")
    for part in (chunks[:120], chunks[120:]):
        merged.add_chunks(part)
        merged.commit()
    merged.optimize()
    merged.commit()
    terms = [(t, 1.0) for t in query_terms("leader election snapshot")]
    a = [(h.chunk_id, h.score) for h in fresh.search(terms, 10)]
    deeper = [(h.chunk_id, h.score) for h in merged.search(terms, 40)]
    b = deeper[:9] + [deeper[30]]  # one side's last hit came from further down, as a different cut would give
    assert a[-1][0] != deeper[30][0]
    assert not same_within_ties(a, b, DRIFT) and _scored_alike(fresh, merged, terms, a, b, 10)
    # a copy that lost the top chunk: scored deeper, that chunk is missing on one side
    lossy = WhooshIndex(tmp_path / "lossy")
    lossy.add_chunks([c for c in chunks if c.chunk_id != a[0][0]])
    lossy.commit()
    c = [(h.chunk_id, h.score) for h in lossy.search(terms, 10)]
    assert not _scored_alike(fresh, lossy, terms, a, c, 10)
    for index in (fresh, merged, lossy):
        index.close()
