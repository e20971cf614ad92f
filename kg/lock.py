"""Locks: a data dir in, one writer at a time across processes out (`DataDirLock`), and many readers with short exclusive commit instants inside one process (`SharedLock`).

`DataDirLock` is an `fcntl.flock` on `<data dir>/write.lock`: the kernel drops it when the
holder dies, so a killed `kg ingest` never leaves a stale lock behind. A second writer polls for
a bounded time (`KG_WRITE_WAIT`), saying once on stderr that it waits, and then fails with
`BusyError` (CLI: `error:` line and exit code 75; API: 503 with Retry-After).
"""

from __future__ import annotations

import fcntl
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from kg.errors import BusyError

__all__ = ["LOCK_FILE", "DataDirLock", "SharedLock", "WriteLock", "say_waiting"]

LOCK_FILE = "write.lock"
_POLL = 0.05


def say_waiting(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


class WriteLock:
    """One writer at a time across processes, re-entrant inside the process that holds it.

    A subclass says how one attempt takes the lock without waiting (`_try`), how it lets go (`_drop`), who holds
    it (`_holder`, for messages) and what it guards (`where`); this class does the re-entrancy, the bounded wait
    and the messages. `DataDirLock` is the one of a data dir, `PostgresWriteLock` the one of a shared knowledge base.
    """

    where = "the knowledge base"

    def __init__(self, wait: float, on_wait: Callable[[str], None] = say_waiting) -> None:
        self.wait = wait
        self.on_wait = on_wait
        self._mutex = threading.RLock()
        self._depth = 0

    @property
    def held(self) -> bool:
        return self._depth > 0

    def _try(self) -> bool:
        """One attempt that never waits; True when this process now holds the lock."""
        raise NotImplementedError

    def _drop(self) -> None:
        """Let go of the lock `_try` took."""
        raise NotImplementedError

    def _holder(self) -> str:
        """' (pid N)' or similar: who holds the lock, for messages; '' when unknown."""
        return ""

    def try_acquire(self) -> bool:
        """Take the lock only if no other process holds it (never waits); True when taken."""
        if not self._mutex.acquire(blocking=False):
            return False
        try:
            if not self._depth and not self._try():
                self._mutex.release()
                return False
            self._depth += 1
            return True
        except BaseException:
            self._mutex.release()
            raise

    def acquire(self) -> None:
        self._mutex.acquire()
        if self._depth:
            self._depth += 1
            return
        try:
            self._take()
        except BaseException:
            self._mutex.release()
            raise
        self._depth = 1

    def _take(self) -> None:
        deadline = time.monotonic() + self.wait
        told = False
        while not self._try():
            holder = self._holder()
            if time.monotonic() >= deadline:
                raise BusyError(
                    f"another kg process{holder} is writing to {self.where} and kept its write lock for "
                    f"{self.wait:g} s: try again when it has finished, or wait longer with KG_WRITE_WAIT=<seconds>",
                    retry_after=max(1, min(60, round(self.wait) or 1)),
                )
            if not told:
                self.on_wait(f"waiting for another kg process{holder} to finish writing to {self.where} "
                             f"(up to {self.wait:g} s, KG_WRITE_WAIT)…")
                told = True
            time.sleep(_POLL)

    def release(self) -> None:
        if not self._depth:
            raise RuntimeError(f"release of a {type(self).__name__} that is not held")
        self._depth -= 1
        if not self._depth:
            self._drop()
        self._mutex.release()

    def close(self) -> None:
        """Let go of what the lock keeps open between writes (nothing, unless a backing says otherwise)."""

    def __enter__(self) -> WriteLock:
        self.acquire()
        return self

    def __exit__(self, *exc) -> None:
        self.release()


class DataDirLock(WriteLock):
    """The cross-process write lock of one data dir: `fcntl.flock` on `<data dir>/write.lock` (or the file `name`, for
    another job one process of a data dir does at a time), the holder's pid in it."""

    def __init__(self, root: Path, wait: float, on_wait: Callable[[str], None] = say_waiting,
                 name: str = LOCK_FILE) -> None:
        super().__init__(wait, on_wait)
        self.path = Path(root) / name
        self.where = str(self.path.parent)
        self._fd: int | None = None

    def _try(self) -> bool:
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return False
        except BaseException:
            os.close(fd)
            raise
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        self._fd = fd
        return True

    def _drop(self) -> None:
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None

    def _holder(self) -> str:
        try:
            pid = self.path.read_text().strip()
        except OSError:
            return ""
        return f" (pid {pid})" if pid.isdigit() else ""


class SharedLock:
    """Readers share; a writer takes it alone for the instant a commit becomes visible.

    Writer-preferring (a waiting commit lets no new reader in, so a stream of queries cannot
    starve it), and re-entrant for a thread that already holds either side.
    """

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._readers = 0
        self._writer: int | None = None
        self._waiting = 0
        self._local = threading.local()

    @property
    def reading_here(self) -> bool:
        """Does the calling thread hold the shared side?"""
        return getattr(self._local, "depth", 0) > 0

    @contextmanager
    def shared(self) -> Iterator[None]:
        me = threading.get_ident()
        depth = getattr(self._local, "depth", 0)
        if depth or self._writer == me:
            self._local.depth = depth + 1
            try:
                yield
            finally:
                self._local.depth = depth
            return
        with self._cond:
            while self._writer is not None or self._waiting:
                self._cond.wait()
            self._readers += 1
        self._local.depth = 1
        try:
            yield
        finally:
            self._local.depth = 0
            with self._cond:
                self._readers -= 1
                if not self._readers:
                    self._cond.notify_all()

    @contextmanager
    def exclusive(self) -> Iterator[None]:
        me = threading.get_ident()
        if self._writer == me:
            yield
            return
        held_shared = getattr(self._local, "depth", 0)
        with self._cond:
            self._waiting += 1
            # A reader that commits (a write called inside a read) counts itself out while it waits.
            while self._writer is not None or self._readers - (1 if held_shared else 0):
                self._cond.wait()
            self._waiting -= 1
            self._writer = me
        try:
            yield
        finally:
            with self._cond:
                self._writer = None
                self._cond.notify_all()
