"""The catalog's chunks and the graph's entity labels + the vector store in -> an in-memory matrix each, and a
question vector in -> similarities out (exact search).

Exact search is one matrix-vector product: 384 dims x 10k chunks is ~4 M multiply-adds (~1-2 ms here), 200k chunks
~80 M (~30-60 ms, 300 MB as float32). Beyond ~200k chunks, or with a larger model, an ANN index (HNSW, IVF-PQ)
would be needed in place of `ChunkMatrix.similarities`; the channel's contract (ids and similarities, best first)
would not change.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass, field

import numpy as np

from retrieval.vectors.store import VectorStore
from retrieval.vectors.texts import label_text, passage_text, vector_key

__all__ = ["ChunkMatrix", "LabelMatrix", "chunk_keys", "label_keys"]


def chunk_keys(store, chunk_ids: Collection[str] | None = None) -> dict[str, tuple[str, str]]:
    """Chunk id -> (vector key, embedded text) for every chunk of the catalog (or those of `chunk_ids`)."""
    chunks = store.iter_chunks() if chunk_ids is None else store.chunks(sorted(chunk_ids)).values()
    return {c.chunk_id: (vector_key(t), t) for c in chunks for t in (passage_text(c.title, c.section, c.text),)}


def label_keys(view) -> dict[str, tuple[str, str]]:
    """Entity IRI -> (vector key, embedded text) of its label and aliases."""
    out = {}
    for iri, entity in view.entities.items():
        text = label_text(entity.label, tuple(entity.aliases))
        out[iri] = (vector_key(text), text)
    return out


@dataclass
class ChunkMatrix:
    """Row i is the vector of `ids[i]`; rows of chunks without a vector are absent."""

    ids: list[str]
    matrix: np.ndarray  # (n, dim) float32, L2-normalised
    total: int  # chunks in the catalog (with or without a vector)
    _row: dict[str, int] | None = field(default=None, repr=False)  # id -> row, built on first use

    @classmethod
    def build(cls, keyed: dict[str, tuple[str, str]], vectors: VectorStore) -> ChunkMatrix:
        # Only the float32 matrix is held whole: the stored float16 rows are copied in as they are read (at 100k
        # chunks a dict of every stored vector first doubled the peak memory of building it).
        keys = list({key for key, _ in keyed.values()})
        absent = set(vectors.missing(keys))
        ids = [cid for cid, (key, _) in keyed.items() if key not in absent]
        rows: dict[str, list[int]] = {}
        for row, cid in enumerate(ids):
            rows.setdefault(keyed[cid][0], []).append(row)
        matrix = np.empty((len(ids), vectors.dim() if ids else 0), dtype=np.float32)
        for key, vector in vectors.each(list(rows)):
            matrix[rows[key]] = vector
        if len(ids):
            matrix /= np.maximum(np.linalg.norm(matrix, axis=1, keepdims=True), 1e-6)
        return cls(ids, matrix, len(keyed))

    def extended(self, keys: dict[str, str], vectors: VectorStore) -> ChunkMatrix | None:
        """This matrix with rows for the chunks whose vectors were stored since it was built, from the same catalog
        (`keys`: chunk id -> vector key, as then): within one catalog generation vectors of its chunks are only added
        (`kg embed` prunes only keys no chunk uses; a repair is a commit). Only the new rows are read; every row is
        where `build` puts it, so ties rank as in a matrix built anew. None where a new vector cannot be read."""
        have = set(self.ids)
        waiting = [cid for cid in keys if cid not in have]
        absent = set(vectors.missing(list({keys[cid] for cid in waiting})))
        added = {cid for cid in waiting if keys[cid] not in absent}
        if not added:
            return self
        ids = [cid for cid in keys if cid in have or cid in added]
        at = {cid: row for row, cid in enumerate(ids)}
        rows: dict[str, list[int]] = {}
        for cid in added:
            rows.setdefault(keys[cid], []).append(at[cid])
        block = np.empty((len(rows), vectors.dim()), dtype=np.float32)
        places, got = [], 0
        for key, vector in vectors.each(list(rows)):
            block[got] = vector
            places.append(rows[key])
            got += 1
        if got != len(rows) or (self.ids and block.shape[1] != self.dim):
            return None
        block /= np.maximum(np.linalg.norm(block, axis=1, keepdims=True), 1e-6)
        matrix = np.empty((len(ids), block.shape[1]), dtype=np.float32)
        if self.ids:
            matrix[np.fromiter((at[cid] for cid in self.ids), dtype=np.intp, count=len(self.ids))] = self.matrix
        for i, targets in enumerate(places):
            matrix[targets] = block[i]
        return ChunkMatrix(ids, matrix, len(keys))

    @property
    def dim(self) -> int:
        return self.matrix.shape[1] if self.matrix.ndim == 2 else 0

    def vectors_of(self, ids) -> dict[str, np.ndarray]:
        """Chunk id -> its (normalised) vector, for the ids that have one."""
        if self._row is None:
            self._row = {cid: i for i, cid in enumerate(self.ids)}
        return {cid: self.matrix[self._row[cid]] for cid in ids if cid in self._row}

    def similarities(self, query: np.ndarray) -> np.ndarray:
        if not self.ids or len(query) != self.dim:
            return np.zeros(len(self.ids), np.float32)
        return self.matrix @ np.asarray(query, dtype=np.float32)

    def search(self, query: np.ndarray, k: int, skip: Iterable[str] = (), keep=None) -> list[tuple[str, float]]:
        """The `k` chunks nearest `query`, best first (the contract `PgChunkSearch` shares)."""
        return self.nearest(self.similarities(query), k, skip, keep)

    def nearest(self, sims: np.ndarray, k: int, skip: Iterable[str] = (), keep=None) -> list[tuple[str, float]]:
        """The `k` best (id, similarity), best first; `skip` ids and those `keep(id)` refuses are passed over."""
        if not len(sims):
            return []
        skip = set(skip)
        # The best few first (argpartition, every row tied with the last of them included, so the order is exactly a
        # full stable sort's); every row only when the filters refuse too many of those.
        order = _best_rows(sims, k * 4 + len(skip) + 16)
        out = self._first(order, sims, k, skip, keep)
        if len(out) < k and len(order) < len(sims):
            out = self._first(np.argsort(-sims, kind="stable"), sims, k, skip, keep)
        return out

    def _first(self, order, sims: np.ndarray, k: int, skip: set, keep) -> list[tuple[str, float]]:
        out = []
        for row in order:
            cid = self.ids[row]
            if cid in skip or (keep is not None and not keep(cid)):
                continue
            out.append((cid, float(sims[row])))
            if len(out) >= k:
                break
        return out


def _best_rows(sims: np.ndarray, m: int) -> np.ndarray:
    """Row numbers of the `m` highest similarities and every row tied with the lowest of them, in the order of a
    stable sort by descending similarity (the whole order when m covers every row)."""
    if m >= len(sims):
        return np.argsort(-sims, kind="stable")
    floor = np.partition(sims, len(sims) - m)[len(sims) - m]
    rows = np.flatnonzero(sims >= floor)
    return rows[np.argsort(-sims[rows], kind="stable")]


@dataclass
class LabelMatrix:
    iris: list[str]
    names: list[str]  # label / aliases as embedded
    matrix: np.ndarray

    @classmethod
    def build(cls, keyed: dict[str, tuple[str, str]], vectors: VectorStore) -> LabelMatrix:
        inner = ChunkMatrix.build(keyed, vectors)
        return cls(inner.ids, [keyed[i][1] for i in inner.ids], inner.matrix)

    def nearest(self, query: np.ndarray, k: int, min_similarity: float) -> list[tuple[str, float]]:
        if not self.iris or len(query) != self.matrix.shape[1]:
            return []
        sims = self.matrix @ np.asarray(query, dtype=np.float32)
        order = np.argsort(-sims, kind="stable")[:k]
        return [(self.iris[i], float(sims[i])) for i in order if sims[i] >= min_similarity]
