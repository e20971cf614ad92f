"""A `WhooshIndex` + the documents of a few packs -> the same text search inside those documents, scored with *their* statistics (document frequencies, chunk count, average field lengths), as if they were an index of their own.

BM25's idf and length normalisation are collection statistics. Filtering a search of the whole
index to some documents keeps the whole index's statistics: a word that is rare in one pack but
common in another weighs what it weighs in the mixture, and a pack of short passages is judged
against the average length of every pack. Routing searches inside the chosen packs, so it must
score as those packs alone would. The statistics are counted from the index itself at query time
(a posting list walk per word, cached until the next commit), so nothing is stored at ingest and
an index without packs never comes here.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from whoosh import scoring

from retrieval.index.candidates import head_then_tail
from retrieval.index.whoosh_postings import postings
from retrieval.types import TextHit

__all__ = ["ScopedIndex"]

MAX_CACHED = 20000  # (field, term) entries kept per scope before the cache starts again


class _ScopeStats:
    """Statistics of one set of documents (their docnums) under one searcher."""

    def __init__(self, searcher, docnums: frozenset[int], fields: Sequence[str]) -> None:
        self.searcher = searcher
        self.docnums = docnums
        self.n = len(docnums)
        # whoosh keeps a document's field length in one byte (rounded) and the field's exact total; the
        # scope's total is its rounded lengths' sum, corrected by the whole index's exact / rounded ratio.
        self.avgfl = {}
        everything = range(searcher.doc_count_all())
        for f in fields:
            total = sum(searcher.doc_field_length(d, f, 0) or 0 for d in docnums)
            rounded = sum(searcher.doc_field_length(d, f, 0) or 0 for d in everything) or 1
            self.avgfl[f] = (total * searcher.field_length(f) / rounded / self.n) if self.n and total else 1.0
        self.postings: dict[tuple[str, str], dict[int, float]] = {}  # in-scope docnum -> term weight (tf)
        self.scores: dict[tuple[str, str], dict[int, float]] = {}

    def weights(self, field: str, term: str) -> dict[int, float]:
        key = (field, term)
        cached = self.postings.get(key)
        if cached is None:
            scope = self.docnums
            cached = {docnum: tf for docnum, tf in postings(self.searcher, field, term) if docnum in scope}
            if len(self.postings) > MAX_CACHED:
                self.postings.clear()
                self.scores.clear()
            self.postings[key] = cached
        return cached

    def df(self, field: str, term: str) -> int:
        return len(self.weights(field, term))

    def idf(self, field: str, term: str) -> float:
        """whoosh's own idf formula (`WeightingModel.idf`) over the scope's documents."""
        return math.log(self.n / (self.df(field, term) + 1)) + 1 if self.n else 0.0


class ScopedIndex:
    """The read side of a `WhooshIndex` (search, term_scores, doc_frequency, doc_count) inside a set
    of documents, with that set's statistics: `ScopedIndex(index, doc_ids)`."""

    def __init__(self, index, doc_ids: frozenset[str]) -> None:
        self.index = index
        self.doc_ids = frozenset(doc_ids)
        self._stats: _ScopeStats | None = None

    def _current(self) -> _ScopeStats:
        """The statistics for the index's current searcher (counted again after a commit)."""
        searcher = self.index._searcher
        if self._stats is None or self._stats.searcher is not searcher:
            docnums = frozenset(self.index._scope_docnums(self.doc_ids))
            fields = [f for f in ("title", "section", "body", "grams") if f in searcher.schema.names()]
            self._stats = _ScopeStats(searcher, docnums, fields)
        return self._stats

    def search(self, terms: Sequence[tuple[str, float]], limit: int, fields: dict[str, float] | None = None,
               grams: Sequence[tuple[str, float]] = (), doc_ids: frozenset[str] | None = None,
               beyond: int = 0) -> list[TextHit]:
        """As `WhooshIndex.search` inside the scope (`doc_ids`, if given, must be the scope's own)."""
        if doc_ids is not None and frozenset(doc_ids) != self.doc_ids:
            raise ValueError("a scoped index searches its own documents only")
        ix = self.index
        with ix._search_lock:
            stats = self._current()
            fields = {f: b for f, b in (fields or ix.field_boosts).items() if b > 0}
            rare, common = ix._split_by_frequency(terms, "body", stats.n, stats.df)
            scores = lambda f, t: self._term_scores(stats, f, t)  # noqa: E731
            if not rare or not fields or not stats.n:
                return []
            # The same sums as whoosh's Or of boosted Terms under BM25F with the scope's idf and
            # average lengths (a test compares them).
            found = ix._top_chunks(rare, fields, limit + beyond, None, scores, ties=limit)
            gram_common = list(grams) if ix._has_grams else []
            if found and (common or gram_common):
                rare_scores = [entry[2] for entry in found]
                ix._add_common_terms(found, common, fields, term_scores=scores)
                ix._add_common_terms(found, gram_common, {"grams": 1.0}, report=False, term_scores=scores)
                found = head_then_tail(found, limit, rare_scores)
        return [TextHit(chunk_id=cid, score=score, terms=tuple(sorted(matched)), docnum=docnum)
                for docnum, cid, score, matched in found[:limit + beyond]]

    def term_scores(self, terms: Sequence[tuple[str, float]], docnums: Sequence[int],
                    fields: dict[str, float] | None = None) -> dict[int, dict[str, float]]:
        """As `WhooshIndex.term_scores`, with the scope's statistics."""
        ix = self.index
        fields = {f: b for f, b in (fields or ix.field_boosts).items() if b > 0}
        out: dict[int, dict[str, float]] = {d: {} for d in docnums}
        if not out:
            return out
        with ix._search_lock:
            stats = self._current()
            for term, weight in terms:
                for field, boost in fields.items():
                    scores = self._term_scores(stats, field, term)
                    for docnum, per_term in out.items():
                        score = scores.get(docnum)
                        if score is not None:
                            per_term[term] = per_term.get(term, 0.0) + score * weight * boost
        return out

    def doc_frequency(self, term: str, field: str = "body") -> int:
        with self.index._search_lock:
            return self._current().df(field, term)

    def doc_count(self) -> int:
        with self.index._search_lock:
            return self._current().n

    def _term_scores(self, stats: _ScopeStats, field: str, term: str) -> dict[int, float]:
        """In-scope docnum -> BM25F score of one term with the scope's idf and average length."""
        key = (field, term)
        cached = stats.scores.get(key)
        if cached is None:
            weights = stats.weights(field, term)
            ix = self.index
            B, K1 = ix._weighting.B, ix._weighting.K1
            idf, avgfl = stats.idf(field, term), stats.avgfl.get(field, 1.0)
            searcher = stats.searcher
            cached = {d: scoring.bm25(idf, w, searcher.doc_field_length(d, field, 1), avgfl, B, K1)
                      for d, w in weights.items()}
            stats.scores[key] = cached
        return cached
