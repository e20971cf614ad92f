"""New chunks analysed and written into whoosh segments by worker processes (`kg ingest --workers N`), while the
writing process reads, cuts, records and links the documents; the workers' segments are published by the writer's
commit beside its own, or dropped with it.

Without workers one process does everything, and most of an ingest's CPU is whoosh's: analysing each field (jieba,
the identifier splitter, the character pairs), pooling the postings and writing the segment (~70% of a `kg ingest`
of a folder). Each worker is a forked copy of the writer taken at its first new chunk (the schema, the analyzers and
the words taught to jieba are the writer's), with a whoosh writer of its own that takes no lock (the writing process
holds the index's), so each writes one segment no reader sees until the commit names it. Chunks go out in batches,
round robin; a worker that fails or dies fails the ingest, whose catalog transaction then rolls back (the files a
worker wrote are no segment of the index, and whoosh's next commit deletes them). Workers end with the writing
process (Linux's parent-death signal), so a killed ingest leaves none holding the index's files open.

Fork only (Linux, macOS): elsewhere, and on a fork that fails, the chunks are indexed in the writing process.
"""

from __future__ import annotations

import multiprocessing
import os
import queue
import sys
import traceback

from kg.errors import KgError
from retrieval.child_processes import end_with_parent

__all__ = ["BATCH", "IndexWorkerError", "SegmentWorkers", "can_fork"]

BATCH = 64  # chunks a message: fewer, larger pickles, and the workers' turns stay even
AHEAD = 8  # batches a worker may have waiting: bounds what the writer holds in pipes when it runs ahead
POLL_S = 1.0  # how often a wait checks that the workers are still alive


class IndexWorkerError(KgError):
    """A worker process failed or died: the ingest it served wrote nothing."""


def can_fork() -> bool:
    return "fork" in multiprocessing.get_all_start_methods()


class SegmentWorkers:
    """`processes` forked workers, each writing the chunks it is sent into a whoosh segment of its own.
    `add(fields)` a chunk's fields (as for whoosh's `add_document`); `finish()` the workers' segments;
    `cancel()` stops them and drops what they wrote."""

    def __init__(self, ix, processes: int, writer_args: dict) -> None:
        ctx = multiprocessing.get_context("fork")
        self._results = ctx.Queue()
        self._inboxes = [ctx.Queue(AHEAD) for _ in range(processes)]
        self._batch: list[dict] = []
        self._turn = 0
        self._procs = []
        try:
            for n, inbox in enumerate(self._inboxes):
                proc = ctx.Process(target=_work, args=(ix, inbox, self._results, writer_args, os.getpid()),
                                   name=f"kg-index-{n + 1}", daemon=True)
                proc.start()
                self._procs.append(proc)
        except BaseException:
            self.cancel()
            raise

    def add(self, fields: dict) -> None:
        self._batch.append(fields)
        if len(self._batch) >= BATCH:
            self._send()

    def finish(self) -> list:
        """Wait for every worker's segment (none from a worker that was sent nothing)."""
        self._send()
        for inbox in self._inboxes:
            self._put(inbox, None)
        segments = []
        for _ in self._procs:
            kind, value = self._result()
            if kind == "error":
                self.cancel()
                raise IndexWorkerError(f"an index worker process failed, and this ingest wrote nothing:\n{value}")
            if value is not None:
                segments.append(value)
        for proc in self._procs:
            proc.join()
        self._close()
        return segments

    def cancel(self) -> None:
        for proc in self._procs:
            if proc.is_alive():
                proc.kill()
        for proc in self._procs:
            proc.join()
        self._close()

    # -- the pipes ---------------------------------------------------------------------------------------
    def _send(self) -> None:
        if self._batch:
            inbox = self._inboxes[self._turn % len(self._inboxes)]
            self._turn += 1
            self._put(inbox, self._batch)
            self._batch = []

    def _put(self, inbox, item) -> None:
        while True:
            try:
                inbox.put(item, timeout=POLL_S)
                return
            except queue.Full:
                self._check_alive()

    def _result(self) -> tuple[str, object]:
        while True:
            try:
                return self._results.get(timeout=POLL_S)
            except queue.Empty:
                self._check_alive()

    def _check_alive(self) -> None:
        """A worker that exited with an error (or was killed) while the writer waits on it fails the ingest."""
        for proc in self._procs:
            if proc.exitcode not in (None, 0):
                try:
                    kind, value = self._results.get(timeout=POLL_S)
                    detail = value if kind == "error" else ""
                except queue.Empty:
                    detail = ""
                self.cancel()
                how = f"was killed by signal {-proc.exitcode}" if proc.exitcode < 0 else f"exited with {proc.exitcode}"
                raise IndexWorkerError(f"index worker {proc.name} {how}, and this ingest wrote nothing"
                                       + (f":\n{detail}" if detail else ""))

    def _close(self) -> None:
        for q in (*self._inboxes, self._results):
            q.close()
            q.cancel_join_thread()  # what is left in a pipe of a failed ingest is not waited for


def _work(ix, inbox, results, writer_args: dict, parent: int) -> None:
    """A worker: chunks in from `inbox` until None, then its segment (or None) out to `results`."""
    end_with_parent(parent)
    try:
        from whoosh.writing import SegmentWriter

        from retrieval.index import whoosh_merge
        from retrieval.index.whoosh_adding import add_document

        writer = SegmentWriter(ix, _lk=False, **writer_args)  # the writing process holds the index's lock
        while (batch := inbox.get()) is not None:
            for fields in batch:
                add_document(writer, fields)
        if writer._added:
            segment = whoosh_merge.finalize(writer)  # files no reader opens until the writer's commit names them
        else:
            writer._close_segment()
            segment = None
        # Not writer._finish(): it would delete the temporary folder the writing process's own writer shares.
        results.put(("segment", segment))
    except BaseException:
        results.put(("error", traceback.format_exc(limit=-4)))
        sys.exit(1)
