"""Connections to PostgreSQL for every kgrag part that uses it (text index, shared record, write lock, pgvector):
autocommit, a clear 503 when the server does not answer, one retry on a connection that broke while idle."""

from __future__ import annotations

import threading

from kg.errors import BusyError, InputError
from kg.files import masked

__all__ = ["RetryingConnection", "connect", "unreachable"]


def connect(dsn: str, **options):
    """An autocommit connection, or a 503 (`BusyError`) saying PostgreSQL does not answer."""
    try:
        import psycopg
    except ImportError as exc:  # the extra is optional
        raise InputError("the PostgreSQL text backend needs psycopg: pip install 'kgrag[postgres]'") from exc
    try:
        return psycopg.connect(dsn, autocommit=True, connect_timeout=10, **options)
    except psycopg.OperationalError as exc:
        raise unreachable(dsn, exc) from exc


def unreachable(dsn: str, exc: Exception) -> BusyError:
    """PostgreSQL down or restarting: a 503 worth retrying (the next call connects again)."""
    return BusyError(f"PostgreSQL at '{masked(dsn)}' does not answer ({str(exc).strip().splitlines()[0] if str(exc).strip() else exc}): "
                     "is the server running? check KG_POSTGRES_DSN (a pack's own database: KG_PACK_DATABASES); kgrag connects "
                     "again on the next request")


class RetryingConnection:
    """One autocommit connection that one caller at a time uses through `call(work)`. A connection that broke
    while idle (PostgreSQL restarted) is opened again and the work tried once more (a transaction that broke
    did not commit); PostgreSQL still down is a 503 (`BusyError`) saying so."""

    def __init__(self, dsn: str, connect_now: bool = True, **options) -> None:
        from psycopg import OperationalError

        self.dsn, self._options, self._broken = dsn, options, OperationalError
        self._mutex = threading.Lock()
        self.conn = connect(dsn, **options) if connect_now else None

    def call(self, work):
        with self._mutex:
            for attempt in range(2):
                fresh = self.conn is None or self.conn.closed
                if fresh:
                    self.conn = connect(self.dsn, **self._options)
                try:
                    return work(self.conn)
                except self._broken as exc:
                    self.conn.close()
                    self.conn = None
                    if fresh or attempt:
                        raise unreachable(self.dsn, exc) from exc
        raise AssertionError("unreachable")

    def close(self) -> None:
        with self._mutex:
            if self.conn is not None:
                self.conn.close()
                self.conn = None
