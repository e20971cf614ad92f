"""One commit of a `PostgresIndex`: buffered chunk additions and deletions -> one transaction over chunks, postings and term statistics.

Writers of one index queue on a transaction-scoped advisory lock (two query servers may both write);
readers read the last committed snapshot. A commit that replaces the whole index (`kg migrate`, a
rewrite by `kg check --repair`) fills copies of the index tables beside them and swaps them in at its
end, so searches read the old tables meanwhile (they wait only for the swap, not for the filling).
A writer that dies mid-commit leaves the index as it was (PostgreSQL rolls the transaction back).
"""

from __future__ import annotations

import logging
import threading
from collections import Counter
from collections.abc import Callable

from retrieval.index.postgres_conn import connect, unreachable
from retrieval.index.postgres_schema import (
    FIELDS,
    INDEX_TABLES,
    index_tables_sql,
    rounded_length,
    swap_sql,
)
from retrieval.index.postgres_stage import STAGE_CHUNKS, StagedChunks

__all__ = ["PendingWrites", "write_changes"]

NEXT = "_next"  # the suffix of the tables a whole-index commit fills before it swaps them in


class PendingWrites:
    """What a `PostgresIndex` was given since its last commit — chunks added (in order; past `stage_chunks` they
    wait in the writer session's temp tables, `postgres_stage`) and chunk ids deleted — and the writer's own
    connection, on which `commit` writes them in one transaction."""

    def __init__(self, dsn: str, ns: str) -> None:
        from psycopg import OperationalError

        self.dsn, self.ns, self._broken = dsn, ns, OperationalError
        self.stage_chunks = STAGE_CHUNKS
        self.stage = StagedChunks()
        self._lock = threading.Lock()
        self._conn = None
        self._pending: dict[str, tuple[str, list[Counter]]] = {}  # chunk id -> (doc id, term counts)
        self._deleted: set[str] = set()

    def _writer(self):
        if self._conn is None:
            self._conn = connect(self.dsn)
        return self._conn

    def add(self, chunk_id: str, doc_id: str, counts: list[Counter]) -> None:
        with self._lock:
            self._pending.pop(chunk_id, None)  # added again: it goes last, as in whoosh
            self._pending[chunk_id] = (doc_id, counts)
            if len(self._pending) >= self.stage_chunks:
                self.stage.add(self._writer(), self._pending)
                self._pending = {}

    def delete(self, ids: list[str], committed: Callable[[], int]) -> int:
        """Forget the uncommitted additions of `ids` and delete them at the commit; how many there were
        (uncommitted, and `committed()` in the index)."""
        with self._lock:
            n = sum(self._pending.pop(cid, None) is not None for cid in ids)
            if self.stage:
                n += self.stage.discard(self._writer(), ids)
            n += committed()
            self._deleted.update(ids)
        return n

    def rollback(self) -> None:
        with self._lock:
            self._pending, self._deleted = {}, set()
            try:
                self.stage.clear(self._conn)
            except self._broken:  # the session is gone, and its temp tables with it
                self.stage.clear(None)

    def commit(self, replace_all: bool) -> None:
        with self._lock:
            if self._pending or self._deleted or self.stage or replace_all:
                for attempt in range(2):
                    fresh = self._conn is None
                    staged = bool(self.stage)
                    try:
                        write_changes(self._writer(), self.ns, self._pending, self._deleted, replace_all, self.stage)
                        break
                    except self._broken as exc:
                        if self._conn is not None:
                            self._conn.close()
                        self._conn = None
                        # The transaction did not commit: nothing written. A connection that broke while idle
                        # (PostgreSQL restarted since the last commit) is opened again once, unless chunks were
                        # staged on it (they went with its session: the commit fails, the caller rolls back).
                        if fresh or attempt or staged:
                            self.stage.clear(None)
                            raise unreachable(self.dsn, exc) from exc
            self._pending, self._deleted = {}, set()

    def close(self) -> None:
        self.rollback()
        if self._conn is not None:
            self._conn.close()
            self._conn = None


def write_changes(conn, ns: str, pending: dict[str, tuple[str, list[Counter]]], deleted: set[str],
                  replace_all: bool, stage: StagedChunks | None = None) -> int:
    """Apply the additions (`pending`: chunk id -> (doc id, term counts per field), in order, after the
    chunks in `stage` when some were staged on this connection) and the deletions; returns the index's
    new generation."""
    if stage:
        stage.add(conn, pending)  # one path for all of them: the rest joins the staged ones
        pending = {}
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (ns,))
        tables = {name: f"{ns}.{name}" for name in INDEX_TABLES}
        if replace_all:
            conn.execute("DROP TABLE IF EXISTS " + ", ".join(f"{ns}.{name}{NEXT}" for name in INDEX_TABLES))
            conn.execute(index_tables_sql(ns, NEXT))
            tables = {name: f"{ns}.{name}{NEXT}" for name in INDEX_TABLES}
            conn.execute(f"UPDATE {ns}.fields SET total = 0, rounded = 0")
        gone = sorted(deleted | set(pending) | set(stage.seq if stage else ()))
        if gone and not replace_all:
            _delete(conn, ns, gone)
        if pending:
            _insert(conn, ns, pending, tables)
        if stage:
            _add_to_totals(conn, ns, *stage.insert(conn, ns, tables))
        if replace_all:
            conn.execute(swap_sql(ns, NEXT))
        generation = conn.execute(
            f"UPDATE {ns}.generation SET value = value + 1, chunks = (SELECT count(*) FROM {ns}.chunks) "
            "RETURNING value").fetchone()[0]
    if stage:
        stage.clear(conn)
    if replace_all:
        _vacuum(conn, ns)
    return generation


def _vacuum(conn, ns: str) -> None:
    """After a whole index is written (its tables are new): their visibility map and statistics now. A search reads
    the postings' key alone only on pages the map says are all-visible; until autovacuum has visited new tables
    (7 minutes after a move of 1M chunks) every posting costs a table page too (full mode ~5x slower)."""
    try:
        conn.execute(f"VACUUM (ANALYZE) {', '.join(f'{ns}.{name}' for name in INDEX_TABLES)}")
    except Exception as exc:  # the index is committed: without this vacuum, autovacuum does it later
        logging.getLogger("kgrag").warning("the text index is written, but VACUUM ANALYZE of its PostgreSQL tables "
                                           "failed (%s): searches read table pages until autovacuum visits them", exc)


def _delete(conn, ns: str, chunk_ids: list[str]) -> None:
    rows = conn.execute(f"DELETE FROM {ns}.chunks WHERE chunk_id = ANY(%s) RETURNING docnum, lengths, rounded",
                        (chunk_ids,)).fetchall()
    if not rows:
        return
    docnums = [r[0] for r in rows]
    conn.execute(
        f"UPDATE {ns}.terms t SET df = t.df - d.n FROM (SELECT field, term, count(*) AS n FROM {ns}.postings "
        "WHERE docnum = ANY(%s) GROUP BY field, term) d WHERE t.field = d.field AND t.term = d.term",
        (docnums,))
    conn.execute(f"DELETE FROM {ns}.postings WHERE docnum = ANY(%s)", (docnums,))
    _add_to_totals(conn, ns, [-sum(r[1][f] for r in rows) for f in range(len(FIELDS))],
                   [-sum(r[2][f] for r in rows) for f in range(len(FIELDS))])


def _insert(conn, ns: str, pending: dict[str, tuple[str, list[Counter]]], tables: dict[str, str]) -> None:
    n = len(pending)
    docnums = sorted(r[0] for r in conn.execute(
        f"SELECT nextval('{ns}.docnums') FROM generate_series(1, %s)", (n,)).fetchall())
    totals, rounded_totals = [0] * len(FIELDS), [0] * len(FIELDS)
    df: Counter = Counter()
    with conn.cursor() as cur:
        with cur.copy(f"COPY {tables['chunks']} (docnum, chunk_id, doc_id, lengths, rounded) FROM STDIN") as copy:
            for docnum, (chunk_id, (doc_id, counts)) in zip(docnums, pending.items(), strict=True):
                lengths = [sum(c.values()) for c in counts]
                rounded = [rounded_length(length) for length in lengths]
                for f in range(len(FIELDS)):
                    totals[f] += lengths[f]
                    rounded_totals[f] += rounded[f]
                copy.write_row((docnum, chunk_id, doc_id, lengths, rounded))
        with cur.copy(f"COPY {tables['postings']} (field, term, docnum, tf, length) FROM STDIN") as copy:
            for docnum, (_doc_id, counts) in zip(docnums, pending.values(), strict=True):
                for f, count in enumerate(counts):
                    length = sum(count.values())
                    for term, tf in count.items():
                        copy.write_row((f, term, docnum, tf, length))
                        df[(f, term)] += 1
        conn.execute("CREATE TEMP TABLE IF NOT EXISTS new_terms (field smallint, term text, df bigint) "
                     "ON COMMIT DELETE ROWS")
        with cur.copy("COPY new_terms (field, term, df) FROM STDIN") as copy:
            for (f, term), count in df.items():
                copy.write_row((f, term, count))
    conn.execute(f"INSERT INTO {tables['terms']} AS terms SELECT field, term, df FROM new_terms "
                 "ON CONFLICT (field, term) DO UPDATE SET df = terms.df + EXCLUDED.df")
    _add_to_totals(conn, ns, totals, rounded_totals)


def _add_to_totals(conn, ns: str, totals: list[int], rounded: list[int]) -> None:
    conn.execute(
        f"UPDATE {ns}.fields f SET total = f.total + d.total, rounded = f.rounded + d.rounded "
        "FROM unnest(%s::smallint[], %s::bigint[], %s::bigint[]) AS d(field, total, rounded) WHERE f.field = d.field",
        (list(range(len(FIELDS))), totals, rounded))
