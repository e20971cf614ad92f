"""The write lock of a knowledge base on PostgreSQL: one writer at a time across every machine that shares it (what `kg.lock.DataDirLock` is for one data dir).

A session-level advisory lock, keyed by the knowledge base's schema, on a connection of its own:
PostgreSQL drops it when the holder's connection ends (a killed `kg` process, a machine that went
away once TCP notices), so a dead writer never leaves it behind. Same interface and behaviour as
`DataDirLock`: re-entrant inside the holding process, a second writer polls up to `KG_WRITE_WAIT`
seconds, saying once that it waits and who holds it, then fails with `BusyError` (exit 75 / 503).
The two-key form keeps it apart from the text index's per-commit lock (`pg_advisory_xact_lock(hashtext(ns))`,
the one-key form): the two key spaces never collide. With `job`, the lock of another job one process at a time does
for the knowledge base, on every machine (`job="embedding"`: the background embedding of `kg serve`), keyed apart
from the writer's.
"""

from __future__ import annotations

from collections.abc import Callable

from kg.lock import WriteLock, say_waiting

__all__ = ["PostgresWriteLock"]

LOCK_CLASS = 0x6B67  # "kg": the first key of every kgrag writer lock


class PostgresWriteLock(WriteLock):
    """`PostgresWriteLock(dsn, namespace, wait)`: the writer lock of the knowledge base in schema `namespace`."""

    def __init__(self, dsn: str, namespace: str, wait: float, on_wait: Callable[[str], None] = say_waiting,
                 job: str = "") -> None:
        from retrieval.catalog.shared import who

        super().__init__(wait, on_wait)
        self.dsn, self.ns = dsn, namespace
        self.key = f"{namespace}:{job}" if job else namespace  # a schema name has no ':' (KG_POSTGRES_SCHEMA)
        self.where = f"the knowledge base '{namespace}' in PostgreSQL"
        self.name = who()
        from retrieval.index.postgres_conn import RetryingConnection

        # The lock's own session (the lock lives and dies with it), named after the writer for `_holder`.
        self._db = RetryingConnection(dsn, connect_now=False, application_name=self.name[:63])

    def _try(self) -> bool:
        """One attempt at the PostgreSQL lock; PostgreSQL down is a 503 (`BusyError`)."""
        return self._db.call(lambda conn: bool(conn.execute(
            "SELECT pg_try_advisory_lock(%s, hashtext(%s))", (LOCK_CLASS, self.key)).fetchone()[0]))

    def _holder(self) -> str:
        """' (kg pid N on HOST)': the application name of the connection holding the lock, when visible."""
        try:
            row = self._db.conn.execute(
                "SELECT a.application_name FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid "
                "WHERE l.locktype = 'advisory' AND l.granted AND l.classid::bigint = %s "
                "AND l.objid::bigint = (hashtext(%s)::bigint & 4294967295) AND l.objsubid = 2",
                (LOCK_CLASS, self.key)).fetchone()
        except Exception:  # only a nicer message: never a reason to fail
            return ""
        return f" ({row[0]})" if row and row[0] else ""

    def _drop(self) -> None:
        if self._db.conn is not None:
            try:
                self._db.conn.execute("SELECT pg_advisory_unlock(%s, hashtext(%s))", (LOCK_CLASS, self.key))
            except Exception:  # the connection broke: PostgreSQL dropped the lock with the session
                self._db.close()

    def close(self) -> None:
        self._db.close()
