"""The write lock of a knowledge base on PostgreSQL: one writer at a time across every machine that shares it (what `kg.lock.DataDirLock` is for one data dir).

A session-level advisory lock, keyed by the knowledge base's schema, on a connection of its own:
PostgreSQL drops it when the holder's connection ends (a killed `kg` process, a machine that went
away once TCP notices), so a dead writer never leaves it behind. Same interface and behaviour as
`DataDirLock`: re-entrant inside the holding process, a second writer polls up to `KG_WRITE_WAIT`
seconds, saying once that it waits and who holds it, then fails with `BusyError` (exit 75 / 503).
The two-key form keeps it apart from the text index's per-commit lock (`pg_advisory_xact_lock(hashtext(ns))`,
the one-key form): the two key spaces never collide.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable

from kg.errors import BusyError

__all__ = ["PostgresWriteLock"]

LOCK_CLASS = 0x6B67  # "kg": the first key of every kgrag writer lock
_POLL = 0.05


def _say_waiting(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


class PostgresWriteLock:
    """`PostgresWriteLock(dsn, namespace, wait)`: the writer lock of the knowledge base in schema `namespace`."""

    def __init__(self, dsn: str, namespace: str, wait: float, on_wait: Callable[[str], None] = _say_waiting) -> None:
        from retrieval.catalog.shared import who

        self.dsn, self.ns = dsn, namespace
        self.wait = wait
        self.on_wait = on_wait
        self.name = who()
        self._mutex = threading.RLock()
        self._conn = None
        self._depth = 0

    @property
    def held(self) -> bool:
        return self._depth > 0

    def _try(self) -> bool:
        """One attempt at the PostgreSQL lock; PostgreSQL down is a 503 (`BusyError`)."""
        from psycopg import OperationalError

        from retrieval.index.postgres_index import connect, unreachable

        for attempt in range(2):
            fresh = self._conn is None or self._conn.closed
            if fresh:
                self._conn = connect(self.dsn, application_name=self.name[:63])
            try:
                return bool(self._conn.execute("SELECT pg_try_advisory_lock(%s, hashtext(%s))",
                                               (LOCK_CLASS, self.ns)).fetchone()[0])
            except OperationalError as exc:  # broken while idle (PostgreSQL restarted): once more on a new one
                self._conn.close()
                self._conn = None
                if fresh or attempt:
                    raise unreachable(self.dsn, exc) from exc
        raise AssertionError("unreachable")

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
                    f"another kg process{holder} is writing to the knowledge base '{self.ns}' in PostgreSQL and "
                    f"kept its write lock for {self.wait:g} s: try again when it has finished, or wait longer with "
                    "KG_WRITE_WAIT=<seconds>",
                    retry_after=max(1, min(60, round(self.wait) or 1)),
                )
            if not told:
                self.on_wait(f"waiting for another kg process{holder} to finish writing to '{self.ns}' "
                             f"(up to {self.wait:g} s, KG_WRITE_WAIT)…")
                told = True
            time.sleep(_POLL)

    def _holder(self) -> str:
        """' (kg pid N on HOST)': the application name of the connection holding the lock, when visible."""
        try:
            row = self._conn.execute(
                "SELECT a.application_name FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid "
                "WHERE l.locktype = 'advisory' AND l.granted AND l.classid::bigint = %s "
                "AND l.objid::bigint = (hashtext(%s)::bigint & 4294967295) AND l.objsubid = 2",
                (LOCK_CLASS, self.ns)).fetchone()
        except Exception:  # only a nicer message: never a reason to fail
            return ""
        return f" ({row[0]})" if row and row[0] else ""

    def release(self) -> None:
        if not self._depth:
            raise RuntimeError("release of a PostgresWriteLock that is not held")
        self._depth -= 1
        if not self._depth and self._conn is not None:
            try:
                self._conn.execute("SELECT pg_advisory_unlock(%s, hashtext(%s))", (LOCK_CLASS, self.ns))
            except Exception:  # the connection broke: PostgreSQL dropped the lock with the session
                self._conn.close()
                self._conn = None
        self._mutex.release()

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def __enter__(self) -> PostgresWriteLock:
        self.acquire()
        return self

    def __exit__(self, *exc) -> None:
        self.release()
