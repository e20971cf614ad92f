"""What a `PostgresIndex` read of one generation of the index in (statistics, posting lists, chunk ids, scopes), BM25F term scores and document frequencies out, dropped when another commit moves the generation.

Several servers write one index, so nothing read is trusted past the generation it was read at: every
statement that fills this cache also reads the generation (`snapshot`, `load`), and a search whose
statements straddle a commit starts again (`consistent`). Every method runs under the index's read
lock, on its reader connection.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from kg.errors import BusyError
from retrieval.index.postgres_schema import FIELD_NO, FIELDS, rounded_length

__all__ = ["MAX_CACHED", "GenerationCache"]

MAX_CACHED = 5000  # posting lists kept in memory (per (field, term)) before the cache starts again


class GenerationCache:
    """`GenerationCache(ns, bm25, reader)`: `reader()` is the index's reader connection at the time of the call
    (the index opens it again after PostgreSQL restarted)."""

    def __init__(self, ns: str, bm25: tuple[float, float], reader: Callable) -> None:
        self.ns, self._bm25, self._reader = ns, bm25, reader
        self.generation = -1
        self.n = 0
        self.totals: dict[str, int] = {}
        self.rounded_totals: dict[str, int] = {}
        self._postings: dict[tuple[str, str], dict[int, tuple[int, int]]] = {}  # -> {docnum: (tf, length)}
        self._scores: dict[tuple[str, str], dict[int, float]] = {}
        self.chunk_id_of: dict[int, str] = {}  # docnum -> chunk id, for the docnums a search returned
        self._scopes: dict[frozenset[str], set[int]] = {}

    def snapshot(self, field: str = "body", terms=()) -> dict[str, int]:
        """One statement (one snapshot): the generation, the chunk count, the field totals and the
        document frequencies of `terms` in `field`; when the generation moved, what was cached is dropped."""
        ns = self.ns
        generation, n, df, totals, rounded = self._reader().execute(
            f"SELECT g.value, g.chunks, (SELECT coalesce(json_object_agg(t.term, t.df), '{{}}'::json) FROM {ns}.terms t "
            "WHERE t.field = %s AND t.term = ANY(%s)), "
            f"(SELECT array_agg(f.total ORDER BY f.field) FROM {ns}.fields f), "
            f"(SELECT array_agg(f.rounded ORDER BY f.field) FROM {ns}.fields f) FROM {ns}.generation g",
            (FIELD_NO[field], [t for t, _ in terms])).fetchone()
        if generation != self.generation:
            self.totals = dict(zip(FIELDS, totals, strict=True))
            self.rounded_totals = dict(zip(FIELDS, rounded, strict=True))
            self.generation, self.n = generation, n
            self._postings, self._scores, self.chunk_id_of, self._scopes = {}, {}, {}, {}
        return df

    def follow(self) -> None:
        """Drop what was cached when the index changed since the last look."""
        self.snapshot()

    def consistent(self, keys: list[tuple[str, str]], field: str = "body", terms=()) -> dict[str, int]:
        """`snapshot` + the posting lists of `keys`, read at the same generation (again when a commit
        came in between: rare, and then everything cached was dropped anyway)."""
        for _ in range(10):
            df = self.snapshot(field, terms)
            if self.load(keys):
                return df
        raise BusyError("the PostgreSQL text index changed under ten searches in a row: try again")

    def load(self, keys: list[tuple[str, str]]) -> bool:
        """Fetch the posting lists of the (field, term) pairs not cached yet, in one statement that also
        reads the generation; False (and nothing kept) when that is not the generation cached."""
        missing = list(dict.fromkeys(k for k in keys if k not in self._postings and k[0] in FIELD_NO))
        if not missing:
            return True
        if len(self._postings) + len(missing) > MAX_CACHED:
            self._postings, self._scores = {}, {}
        lists: dict[tuple[str, str], dict[int, tuple[int, int]]] = {k: {} for k in missing}
        rows = self._reader().execute(
            f"SELECT value, NULL::smallint, NULL::text, NULL::bigint, NULL::int, NULL::int FROM {self.ns}.generation "
            f"UNION ALL SELECT NULL, p.field, p.term, p.docnum, p.tf, p.length FROM {self.ns}.postings p "
            "JOIN unnest(%s::smallint[], %s::text[]) AS k(field, term) ON p.field = k.field AND p.term = k.term",
            ([FIELD_NO[f] for f, _ in missing], [t for _, t in missing])).fetchall()
        generation = None
        for value, field, term, docnum, tf, length in rows:
            if field is None:
                generation = value
            else:
                lists[(FIELDS[field], term)][docnum] = (tf, length)
        if generation != self.generation:
            return False
        self._postings.update(lists)
        return True

    def postings(self, field: str, term: str) -> dict[int, tuple[int, int]]:
        """docnum -> (term frequency, exact field length) of one term."""
        key = (field, term)
        if key not in self._postings and not self.load([key]):  # evicted, and the index moved on since
            raise BusyError("the PostgreSQL text index changed during this search: try again")
        return self._postings[key]

    def term_scores(self, field: str, term: str) -> dict[int, float]:
        """docnum -> BM25F score of one term: whoosh's `BM25FScorer` arithmetic, in the same order."""
        key = (field, term)
        cached = self._scores.get(key)
        if cached is None:
            postings = self.postings(field, term)
            cached = {}
            if postings:
                B, K1 = self._bm25
                idf = math.log(self.n / (len(postings) + 1)) + 1
                avgfl = (self.totals.get(field, 0) / (self.n or 1)) or 1
                k1p1 = K1 + 1
                for docnum, (tf, length) in postings.items():
                    norm = K1 * ((1 - B) + B * rounded_length(length) / avgfl)
                    cached[docnum] = idf * ((tf * k1p1) / (tf + norm))
            self._scores[key] = cached
        return cached

    def scope_docnums(self, doc_ids: frozenset[str]) -> set[int]:
        scope = self._scopes.get(doc_ids)
        if scope is None:
            rows = self._reader().execute(f"SELECT docnum FROM {self.ns}.chunks WHERE doc_id = ANY(%s)",
                                          (sorted(doc_ids),)).fetchall()
            scope = self._scopes[doc_ids] = {r[0] for r in rows}
        return scope

    def name_chunks(self, docnums: list[int]) -> None:
        """Fill `chunk_id_of` for these docnums (a chunk deleted since has none)."""
        missing = [d for d in docnums if d not in self.chunk_id_of]
        if missing:
            rows = self._reader().execute(f"SELECT docnum, chunk_id FROM {self.ns}.chunks WHERE docnum = ANY(%s)",
                                          (missing,)).fetchall()
            self.chunk_id_of.update(rows)
