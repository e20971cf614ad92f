"""A question's rare terms' posting scores -> the candidate chunks, best first; its common terms' scores added to them.

Backend-neutral: whoosh (`WhooshIndex`, `ScopedIndex`) and PostgreSQL (`PostgresIndex`, `PostgresScope`) hand in
their own `term_scores(field, term) -> {docnum: BM25F score}` and get the same candidates and the same floats.
"""

from __future__ import annotations

__all__ = ["add_common_terms", "head_then_tail", "top_chunks"]


def top_chunks(rare, fields: dict[str, float], limit: int, scope: set[int] | None,
               term_scores, chunk_id, ties: int = 0) -> list[list]:
    """[docnum, chunk id, score, matched terms] of the `limit` best chunks for the rare terms, and up to `ties`
    more that tie with the last of them (`head_then_tail` lets the common terms choose among a tie at the cut).

    The score is what whoosh's `Or` of boosted `Term`s gives (the sum of each term's BM25F score
    in each field, times the term's weight and the field's boost), added up here from the cached
    per-term posting scores instead of whoosh's matcher tree, which walked every posting of
    every clause through several layers of Python per question. Ties go to the lower docnum, as in
    whoosh. `term_scores(field, term)` -> {docnum: score} or `Postings`; `chunk_id(docnum)` -> the chunk's id.

    The sums are numpy's over whole posting lists, in the order a loop over (term, field) adds them: a
    chunk's total starts at 0.0 (0.0 + x is x) and each list adds its weighted score once, so every
    total is the float the one-posting-at-a-time loop made (a test compares them to the last bit).
    """
    import numpy as np  # here, not at the top: an ingest imports this module and needs no numpy (~0.17 s)

    from retrieval.index.posting_arrays import as_postings

    lists = []  # (term, docnums, weighted scores) in the order the sums are made
    for term, weight in rare:
        for field, boost in fields.items():
            factor = weight * boost
            postings = as_postings(term_scores(field, term))
            if len(postings):
                lists.append((term, postings.ids, postings.scores * factor))
    if not lists or limit < 1:
        return []
    size = max(int(ids[-1]) for _, ids, _ in lists) + 1
    if scope is not None:
        allowed = np.zeros(size, dtype=bool)
        inside = np.fromiter(scope, dtype=np.int64, count=len(scope))
        allowed[inside[(inside >= 0) & (inside < size)]] = True
        lists = [(term, ids[keep], weighted[keep]) for term, ids, weighted in lists if (keep := allowed[ids]).any()]
    totals = np.zeros(size, dtype=np.float64)
    touched = np.zeros(size, dtype=bool)
    for _, ids, weighted in lists:
        totals[ids] += weighted  # a posting list holds each docnum once: one addition per chunk
        touched[ids] = True
    docnums = np.flatnonzero(touched)
    scores = totals[docnums]
    if len(docnums) > limit:  # the limit-th best score; every chunk tied with it stays for the docnum order
        cut = np.partition(scores, len(scores) - limit)[len(scores) - limit]
        keep = scores >= cut
        docnums, scores = docnums[keep], scores[keep]
    order = np.lexsort((docnums, -scores))[:limit + ties]  # best first, ties by docnum (past `limit`: all tied)
    docnums, scores = docnums[order], scores[order]
    matched: list[set[str]] = [set() for _ in range(len(docnums))]
    for term, ids, _ in lists:
        for i in np.flatnonzero(_holds(ids, docnums)).tolist():
            matched[i].add(term)
    return [[docnum, chunk_id(docnum), score, terms]
            for docnum, score, terms in zip(docnums.tolist(), scores.tolist(), matched, strict=True)]


def _holds(ids, docnums):
    """Which of `docnums` (an array) the ascending array `ids` holds."""
    import numpy as np

    where = np.searchsorted(ids, docnums)
    where[where == len(ids)] = 0
    return ids[where] == docnums


def add_common_terms(found: list, common, fields: dict[str, float], term_scores, report: bool = True) -> None:
    """Each common term's BM25F score (term_scores(field, term) -> {docnum: score} or `Postings`) added to the
    candidates [docnum, chunk id, score, matched terms] that hold it; whoosh's and PostgreSQL's indexes share it.

    The candidates are looked up in each (term, field)'s list at once (a binary search per candidate). A
    candidate gets at most one addition per (term, field), in the order of the loop, each `score * weight *
    boost` as before, so the sums are the same floats.
    """
    if not found:
        return
    import numpy as np

    from retrieval.index.posting_arrays import as_postings

    docnums = np.fromiter((entry[0] for entry in found), dtype=np.int64, count=len(found))
    totals = np.fromiter((entry[2] for entry in found), dtype=np.float64, count=len(found))
    changed = np.zeros(len(found), dtype=bool)
    for term, weight in common:
        for field, boost in fields.items():
            postings = as_postings(term_scores(field, term))
            if not len(postings):
                continue
            held, where = postings.positions(docnums)
            if not held.any():
                continue
            totals[held] += postings.scores[where[held]] * weight * boost
            changed |= held
            if report:
                for i in np.flatnonzero(held).tolist():
                    found[i][3].add(term)
    for i, total in zip(np.flatnonzero(changed).tolist(), totals[changed].tolist(), strict=True):
        found[i][2] = total


def head_then_tail(found: list[list], limit: int, rare: list[float] | None = None) -> list[list]:
    """Candidates (chosen best-first by their rarer words) ranked by their whole score: the first
    `limit` among themselves, then the rest among themselves, so reading deeper adds hits after
    the ones a search of `limit` returns and never changes those.

    `rare`: the candidates' scores from the rarer words alone (before the common words were added). Candidates
    tied with the `limit`-th there are in the head too (up to `limit` more: `top_chunks(ties=limit)`), so the common
    words, not the order the chunks were indexed in, choose among a tie at the cut: a title hundreds of chunks
    share made the cut fall inside such a tie, and a chunk scoring 4th was left out (bench/RESULTS-backends.md)."""
    end = min(limit, len(found))
    if rare is not None and 0 < end < len(found):
        # at most `limit` more (the callers' `ties=limit`), so a deeper read keeps the same head
        while end < min(len(found), 2 * limit) and rare[end] == rare[limit - 1]:
            end += 1
    head, tail = found[:end], found[end:]
    head.sort(key=lambda f: -f[2])
    tail.sort(key=lambda f: -f[2])
    return head + tail
