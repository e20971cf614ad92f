"""A question's rare terms' posting scores -> the candidate chunks, best first; its common terms' scores added to them.

Backend-neutral: whoosh (`WhooshIndex`, `ScopedIndex`) and PostgreSQL (`PostgresIndex`, `PostgresScope`) hand in
their own `term_scores(field, term) -> {docnum: BM25F score}` and get the same candidates and the same floats.
"""

from __future__ import annotations

import heapq

__all__ = ["add_common_terms", "head_then_tail", "top_chunks"]


def top_chunks(rare, fields: dict[str, float], limit: int, scope: set[int] | None,
               term_scores, chunk_id) -> list[list]:
    """[docnum, chunk id, score, matched terms] of the `limit` best chunks for the rare terms.

    The score is what whoosh's `Or` of boosted `Term`s gives (the sum of each term's BM25F score
    in each field, times the term's weight and the field's boost), added up here from the cached
    per-term posting scores instead of whoosh's matcher tree, which walked every posting of
    every clause through several layers of Python per question (most of a Chinese question's
    time: ~30 clauses for 10 words in 3 fields). Ties go to the lower docnum, as in whoosh.
    `term_scores(field, term)` -> {docnum: score}; `chunk_id(docnum)` -> the chunk's id.
    """
    totals: dict[int, float] = {}
    matched: dict[int, set[str]] = {}
    for term, weight in rare:
        for field, boost in fields.items():
            factor = weight * boost
            for docnum, score in term_scores(field, term).items():
                if scope is not None and docnum not in scope:
                    continue
                if docnum in totals:
                    totals[docnum] += score * factor
                    matched[docnum].add(term)
                else:
                    totals[docnum] = score * factor
                    matched[docnum] = {term}
    best = heapq.nsmallest(limit, totals.items(), key=lambda item: (-item[1], item[0]))
    return [[docnum, chunk_id(docnum), score, matched[docnum]] for docnum, score in best]


def add_common_terms(found: list, common, fields: dict[str, float], term_scores, report: bool = True) -> None:
    """Each common term's BM25F score (term_scores(field, term) -> {docnum: score}) added to the candidates
    [docnum, chunk id, score, matched terms] that hold it; whoosh's and PostgreSQL's indexes share it.

    Each (term, field) walks the smaller of its posting scores and the candidates: a rare character pair
    holds a few chunks of the thousand candidates, a common word most of a large index. A candidate gets
    at most one addition per (term, field), in the same order either way, so the sums are the same floats.
    """
    if not found:
        return
    by_docnum = {entry[0]: entry for entry in found}
    for term, weight in common:
        for field, boost in fields.items():
            scores = term_scores(field, term)
            if not scores:
                continue
            if len(scores) < len(by_docnum):
                held = [(by_docnum[d], s) for d, s in scores.items() if d in by_docnum]
            else:
                held = [(entry, s) for entry in found if (s := scores.get(entry[0])) is not None]
            for entry, score in held:
                entry[2] += score * weight * boost
                if report:
                    entry[3].add(term)


def head_then_tail(found: list[list], limit: int) -> list[list]:
    """Candidates (chosen best-first by their rarer words) ranked by their whole score: the first
    `limit` among themselves, then the rest among themselves, so reading deeper adds hits after
    the ones a search of `limit` returns and never changes those."""
    head, tail = found[:limit], found[limit:]
    head.sort(key=lambda f: -f[2])
    tail.sort(key=lambda f: -f[2])
    return head + tail
