"""What a `PostgresIndex` read of one generation of the index in (statistics, posting lists, chunk ids, scopes), BM25F term scores and document frequencies out, dropped when another commit moves the generation.

A posting list comes as one value per (field, term), its postings packed by PostgreSQL (`string_agg` of their
binary forms, in the primary key's order, which is docnum's) and read as numpy arrays (`PostingArrays`); scores are numpy's over the whole list, the
same IEEE-754 operations in the same order as the one-posting-at-a-time arithmetic they replace, so the same
floats. Fetched as rows and scored one posting at a time, a question's lists cost a full-mode query at 1M chunks
127-137 ms p50 (690-750 p95) of the client's CPU; as arrays 26-34 (69-82): bench/RESULTS-backends.md.

Several servers write one index, so nothing read is trusted past the generation it was read at: every
statement that fills this cache also reads the generation (`snapshot`, `load`), and a search whose
statements straddle a commit starts again (`consistent`). Every method runs under the index's read
lock, on its reader connection.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, NamedTuple

from kg.errors import BusyError
from retrieval.index.postgres_schema import FIELD_NO, FIELDS, rounded_length

if TYPE_CHECKING:
    import numpy as np

    from retrieval.index.posting_arrays import Postings

__all__ = ["MAX_CACHED", "GenerationCache", "PostingArrays", "bm25f_scores"]

MAX_CACHED = 5000  # posting lists kept in memory (per (field, term)) before the cache starts again


class PostingArrays(NamedTuple):
    """One posting list: docnums ascending, and each posting's term frequency and exact field length."""

    ids: np.ndarray  # int64
    tf: np.ndarray  # int64
    length: np.ndarray  # int64

    def __len__(self) -> int:  # the postings, not the three arrays
        return len(self.ids)

    def within(self, scope: np.ndarray) -> PostingArrays:
        """The postings of the docnums in `scope` (a sorted int64 array)."""
        import numpy as np

        keep = np.isin(self.ids, scope, assume_unique=True)
        return PostingArrays(self.ids[keep], self.tf[keep], self.length[keep])


_PACKED = None  # the numpy dtype of one packed posting: int8send(docnum) || int4send(tf) || int4send(length)


def _unpack(blob: bytes | None) -> PostingArrays:
    import numpy as np

    global _PACKED
    if _PACKED is None:
        _PACKED = np.dtype([("docnum", ">i8"), ("tf", ">i4"), ("length", ">i4")])
    rows = np.frombuffer(blob or b"", dtype=_PACKED)
    ids = rows["docnum"].astype(np.int64)
    if len(ids) > 1 and not bool(np.all(ids[1:] > ids[:-1])):  # the index's order, which SQL does not promise
        rows = rows[np.argsort(ids, kind="stable")]
        ids = rows["docnum"].astype(np.int64)
    return PostingArrays(ids, rows["tf"].astype(np.int64), rows["length"].astype(np.int64))


_ROUNDED = None  # rounded_length(i) at index i, grown as longer fields come


def _rounded(lengths: np.ndarray) -> np.ndarray:
    """Each field length as whoosh stores it (`rounded_length`), as floats, by table look-up."""
    import numpy as np

    global _ROUNDED
    top = int(lengths.max())
    if _ROUNDED is None or top >= len(_ROUNDED):
        size = max(top + 1, 2 * (0 if _ROUNDED is None else len(_ROUNDED)), 1024)
        _ROUNDED = np.array([rounded_length(i) for i in range(size)], dtype=np.float64)
    return _ROUNDED[lengths]


def bm25f_scores(postings: PostingArrays, n: int, avgfl: float, bm25: tuple[float, float]) -> Postings:
    """docnum -> BM25F score of one posting list among `n` chunks (the whole index's, or a scope's): whoosh's
    `BM25FScorer` arithmetic, `idf * ((tf * (K1 + 1)) / (tf + K1 * ((1 - B) + B * length / avgfl)))` with the
    field length rounded as whoosh stores it, evaluated in that order over the whole list."""
    import numpy as np

    from retrieval.index.posting_arrays import EMPTY, Postings

    if not len(postings):
        return EMPTY
    B, K1 = bm25
    idf = math.log(n / (len(postings) + 1)) + 1
    rounded = _rounded(postings.length)
    tf = postings.tf.astype(np.float64)
    norm = K1 * ((1 - B) + B * rounded / avgfl)
    return Postings(postings.ids, idf * ((tf * (K1 + 1)) / (tf + norm)))


class GenerationCache:
    """`GenerationCache(ns, bm25, reader)`: `reader()` is the index's reader connection at the time of the call
    (the index opens it again after PostgreSQL restarted)."""

    def __init__(self, ns: str, bm25: tuple[float, float], reader: Callable) -> None:
        self.ns, self._bm25, self._reader = ns, bm25, reader
        self.generation = -1
        self.n = 0
        self.totals: dict[str, int] = {}
        self.rounded_totals: dict[str, int] = {}
        self._postings: dict[tuple[str, str], PostingArrays] = {}
        self._scores: dict[tuple[str, str], Postings] = {}
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
        rows = self._reader().execute(
            f"SELECT value, NULL::smallint, NULL::text, NULL::bytea FROM {self.ns}.generation "
            # One aggregate per key over its index range (docnum order, no sort): with the primary key covering
            # tf and length, an index-only scan that reads the list's few index pages, not a heap page a posting.
            "UNION ALL SELECT NULL, k.field, k.term, (SELECT string_agg(int8send(p.docnum) || int4send(p.tf) "
            f"|| int4send(p.length), ''::bytea) FROM {self.ns}.postings p WHERE p.field = k.field AND p.term = k.term) "
            "FROM unnest(%s::smallint[], %s::text[]) AS k(field, term)",
            ([FIELD_NO[f] for f, _ in missing], [t for _, t in missing])).fetchall()
        generation = None
        packed: dict[tuple[str, str], bytes] = {}
        for value, field, term, blob in rows:
            if field is None:
                generation = value
            else:
                packed[(FIELDS[field], term)] = blob
        if generation != self.generation:
            return False
        lists = {k: _unpack(packed.get(k)) for k in missing}
        self._postings.update(lists)
        return True

    def postings(self, field: str, term: str) -> PostingArrays:
        """One term's postings: docnums, term frequencies, exact field lengths."""
        key = (field, term)
        if key not in self._postings and not self.load([key]):  # evicted, and the index moved on since
            raise BusyError("the PostgreSQL text index changed during this search: try again")
        return self._postings[key]

    def term_scores(self, field: str, term: str) -> Postings:
        """docnum -> BM25F score of one term (`bm25f_scores`)."""
        key = (field, term)
        cached = self._scores.get(key)
        if cached is None:
            avgfl = (self.totals.get(field, 0) / (self.n or 1)) or 1
            cached = self._scores[key] = bm25f_scores(self.postings(field, term), self.n, avgfl, self._bm25)
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
