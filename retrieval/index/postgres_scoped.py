"""A `PostgresIndex` + the documents of a few packs -> the same search inside them, scored with their own statistics (as `ScopedIndex` does for whoosh).

The statistics come from SQL over the scope's chunks (count, rounded field lengths) and from the
index's cached posting lists filtered to the scope; the arithmetic is `ScopedIndex`'s, so a routed
question ranks the same on either backend.
"""

from __future__ import annotations

from collections.abc import Sequence

from kg.errors import BusyError
from retrieval.index.candidates import add_common_terms, head_then_tail, top_chunks
from retrieval.index.postgres_cache import PostingArrays, bm25f_scores
from retrieval.index.postgres_schema import FIELDS
from retrieval.types import TextHit

__all__ = ["PostgresScope", "add_common_terms", "scope_rows"]


class PostgresScope:
    """The read side of a `PostgresIndex` (search, term_scores, doc_frequency, doc_count) inside `doc_ids`."""

    def __init__(self, index, doc_ids: frozenset[str]) -> None:
        self.index = index
        self.doc_ids = frozenset(doc_ids)
        self._generation = None
        self._docnums = None  # the scope's docnums, a sorted numpy array
        self.n = 0
        self.avgfl: dict[str, float] = {}
        self._weights: dict[tuple[str, str], PostingArrays] = {}
        self._scores: dict = {}  # (field, term) -> `Postings`

    def _current(self) -> None:
        """Under the index's read lock: the scope's statistics for the index's generation."""
        ix = self.index
        ix.cache.follow()
        if self._generation == ix.cache.generation:
            return
        import numpy as np

        self._docnums = np.array(sorted(ix.cache.scope_docnums(self.doc_ids)), dtype=np.int64)
        rows = self._scope_rows()
        self.n = len(rows)
        self.avgfl = {}
        whole = self._whole()
        for f, name in enumerate(FIELDS):
            total = sum(r[0][f] for r in rows)
            # ScopedIndex: the scope's rounded total, corrected by the whole index's exact / rounded ratio
            rounded = whole.rounded_totals.get(name, 0) or 1
            self.avgfl[name] = (total * whole.totals.get(name, 0) / rounded / self.n) if self.n and total else 1.0
        self._weights, self._scores = {}, {}
        self._generation = ix.cache.generation

    def _whole(self):
        """The statistics of the whole index (its field totals, exact and rounded)."""
        return self.index.cache

    def _scope_rows(self) -> list[tuple]:
        """(rounded field lengths,) of each of the scope's chunks."""
        return scope_rows(self.index, self.doc_ids)

    def _consistent(self, keys: list[tuple[str, str]]) -> None:
        """The scope's statistics and the posting lists of `keys` at one generation of the index."""
        for _ in range(10):
            self._current()
            if self.index.cache.load(keys):
                return
        raise BusyError("the PostgreSQL text index changed under ten searches in a row: try again")

    def _in_scope(self, field: str, term: str) -> PostingArrays:
        key = (field, term)
        cached = self._weights.get(key)
        if cached is None:
            cached = self._weights[key] = self.index.postings(field, term).within(self._docnums)
        return cached

    def _term_scores(self, field: str, term: str):
        key = (field, term)
        cached = self._scores.get(key)
        if cached is None:
            # an empty scope (n 0) has no postings in it: no score, no idf to take
            cached = self._scores[key] = bm25f_scores(self._in_scope(field, term), self.n, self.avgfl.get(field, 1.0),
                                                      self.index._bm25)
        return cached

    def search(self, terms: Sequence[tuple[str, float]], limit: int, fields: dict[str, float] | None = None,
               grams: Sequence[tuple[str, float]] = (), doc_ids: frozenset[str] | None = None,
               beyond: int = 0) -> list[TextHit]:
        if doc_ids is not None and frozenset(doc_ids) != self.doc_ids:
            raise ValueError("a scoped index searches its own documents only")
        ix = self.index
        with ix._read():
            fields = {f: b for f, b in (fields or ix.field_boosts).items() if b > 0}
            self._consistent([(f, t) for t, _ in terms for f in ("body", *fields)] + [("grams", g) for g, _ in grams])
            df = {t: len(self._in_scope("body", t)) for t, _ in terms}
            rare, common = ix.split_by_frequency(terms, self.n, df)
            if not rare or not fields or not self.n:
                return []
            found = top_chunks(rare, fields, limit + beyond, None, self._term_scores, lambda d: "", ties=limit)
            if found and (common or grams):
                rare_scores = [entry[2] for entry in found]
                add_common_terms(found, common, fields, self._term_scores)
                add_common_terms(found, list(grams), {"grams": 1.0}, self._term_scores, report=False)
                found = head_then_tail(found, limit, rare_scores)
            found = found[:limit + beyond]
            ix.cache.name_chunks([entry[0] for entry in found])
            return [TextHit(chunk_id=ix.cache.chunk_id_of[d], score=score, terms=tuple(sorted(matched)), docnum=d)
                    for d, _, score, matched in found]

    def term_scores(self, terms: Sequence[tuple[str, float]], docnums: Sequence[int],
                    fields: dict[str, float] | None = None) -> dict[int, dict[str, float]]:
        ix = self.index
        fields = {f: b for f, b in (fields or ix.field_boosts).items() if b > 0}
        out: dict[int, dict[str, float]] = {d: {} for d in docnums}
        if not out:
            return out
        with ix._read():
            self._consistent([(f, t) for t, _ in terms for f in fields])
            add_weighted_scores(out, terms, fields, self._term_scores)
        return out

    def doc_frequency(self, term: str, field: str = "body") -> int:
        with self.index._read():
            self._current()
            return len(self._in_scope(field, term))

    def doc_count(self) -> int:
        with self.index._read():
            self._current()
            return self.n


def scope_rows(index, doc_ids: frozenset[str]) -> list[tuple]:
    """(rounded field lengths,) of each chunk of those documents in one `PostgresIndex` (its reader, under its lock)."""
    return index._reader.execute(f"SELECT rounded FROM {index.ns}.chunks WHERE doc_id = ANY(%s)",
                                 (sorted(doc_ids),)).fetchall()


def add_weighted_scores(out: dict[int, dict[str, float]], terms: Sequence[tuple[str, float]],
                        fields: dict[str, float], term_scores) -> None:
    """Into out (docnum -> {term: score}), each term's BM25F score in each field, times its weight and the
    field's boost; term_scores(field, term) gives {docnum: score} (the whole index's or one scope's)."""
    for term, weight in terms:
        for field, boost in fields.items():
            scores = term_scores(field, term)
            for docnum, per_term in out.items():
                score = scores.get(docnum)
                if score is not None:
                    per_term[term] = per_term.get(term, 0.0) + score * weight * boost
