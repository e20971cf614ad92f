"""Chunk text hits + each chunk's parent (section) -> the same hits re-scored with the evidence of their whole section.

A 2,000-character handbook section cut into five chunks is judged by its best 400 characters
alone unless its other chunks count too. A section matches a question word when any of its
chunks does: the section's score is, per word, the best of its chunks' scores for that word,
summed (so it is not raised by length, only by covering more of the question). A chunk's
score moves `weight` of the way to its section's. Whole-passage baselines get this for free;
chunking should not lose it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from retrieval.index.analysis import idf_weights, query_terms
from retrieval.types import Mention, TextHit

__all__ = ["named_share", "named_terms", "pool_by_parent", "question_fit"]

TermScores = Callable[[list[int]], Mapping[int, Mapping[str, float]]]


def pool_by_parent(hits: Sequence[TextHit], parent_of: Mapping[str, str], weight: float,
                   term_scores: TermScores) -> list[TextHit]:
    """Hits re-scored towards their section's per-word best score, best first; only sections with
    two or more candidate chunks change (`term_scores` is asked about those chunks only)."""
    if weight <= 0 or len(hits) < 2:
        return list(hits)
    members: dict[str, list[TextHit]] = {}
    for h in hits:
        members.setdefault(parent_of.get(h.chunk_id, h.chunk_id), []).append(h)
    shared = [h for group in members.values() if len(group) > 1 for h in group if h.docnum >= 0]
    if not shared:
        return list(hits)
    per_chunk = term_scores([h.docnum for h in shared])
    pooled: dict[str, float] = {}
    for parent, group in members.items():
        if len(group) < 2:
            continue
        best_term: dict[str, float] = {}
        rest = 0.0
        for h in group:
            scores = per_chunk.get(h.docnum, {})
            for term, score in scores.items():
                best_term[term] = max(best_term.get(term, 0.0), score)
            rest = max(rest, h.score - sum(scores.values()))  # character pairs and the like
        pooled[parent] = sum(best_term.values()) + rest
    out = []
    for h in hits:
        parent = parent_of.get(h.chunk_id, h.chunk_id)
        if parent in pooled and pooled[parent] > h.score:
            h = TextHit(h.chunk_id, h.score + weight * (pooled[parent] - h.score), h.terms, h.docnum)
        out.append(h)
    return sorted(out, key=lambda h: -h.score)


def question_fit(hits: Sequence[TextHit], words: Sequence[str], named: set[str]) -> dict[str, float]:
    """Chunk id -> how much of the question *beyond the entities it names* the chunk matches (0-1).

    Every section about an entity matches the entity's name, so the name says nothing about which
    of them answers; the question's other words do ("默认端口" for "metasrv 默认端口"). The share is
    scaled so the best-fitting chunk scores 1; {} when the question has no other words. `named`:
    the words of the entities it names (`named_terms`).
    """
    other = [w for w in dict.fromkeys(words) if w not in named]
    if not other:
        return {}
    wanted = set(other)
    raw = {h.chunk_id: len(wanted.intersection(h.terms)) / len(wanted) for h in hits}
    top = max(raw.values(), default=0.0)
    return {cid: v / top for cid, v in raw.items() if v > 0} if top > 0 else {}


def named_share(words: Sequence[str], named: set[str], doc_frequency: Callable[[str], int], n: int) -> float:
    """The share of the question's word weight (idf over the `n` chunks) that the names of its linked
    entities (`named`) carry: near 1 for "Who directed Titanic?", low for a question that names a
    component in passing while asking about something else ("为什么 topic 数配得少，故障恢复时从 Kafka 读的数据量会暴涨？")."""
    distinct = list(dict.fromkeys(words))
    if not distinct:
        return 0.0
    weight = idf_weights({w: doc_frequency(w) for w in distinct}, n)
    total = sum(weight.values())
    return sum(v for w, v in weight.items() if w in named) / total if total > 0 else 0.0


def named_terms(mentions: Sequence[Mention]) -> set[str]:
    """The analysed words of the linked entities' surfaces and labels."""
    return {t for m in mentions for t in query_terms(m.surface)} | {t for m in mentions for t in query_terms(m.label)}
