"""The catalog as tables in PostgreSQL (KG_CATALOG=postgresql://…): SQLite's catalog SQL in, the same statements run on PostgreSQL out.

Every catalog module (documents, chunks, versions, anchors, packs, file stamps, the commit record) speaks SQLite
through one connection per thread (`DocStore.db`). Rather than a second copy of each of their ~200 statements, this
file is that connection for PostgreSQL: `CatalogConnection` answers the part of `sqlite3.Connection` they use, and
`translate` turns their SQL into PostgreSQL's (placeholders, `INSERT OR IGNORE`, `IS ?`, SQLite's column types, its
`PRAGMA`s). The catalog then lives once, beside the text index, and no server keeps a copy of it (`shared.py`
publishes only the small files). What SQLite gives that PostgreSQL lays out differently:

- text sorts byte by byte in SQLite: every text column is `COLLATE "C"` here, so ORDER BY and the range scans of
  `filestats.gone_sources` give the same order;
- SQLite's INTEGER is 64 bits and REAL a double: BIGINT and DOUBLE PRECISION;
- `PRAGMA data_version` (another connection committed) is a counter row every writing transaction moves, and
  `total_changes` counts this connection's own writes, so the caches keyed by them (`in_force.py`,
  `packs/scope.py`) stay right;
- `sqlite_master` is a view over the schema's tables and indexes, so "does this table exist" reads the same;
- an error is raised as the `sqlite3` error the callers catch (`OperationalError`, `IntegrityError`); PostgreSQL
  not answering is a 503 (`BusyError`), as for the text index.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path

from kg.errors import ConfigError
from kg.files import masked

__all__ = ["CatalogConnection", "catalog_namespace", "copy_catalog", "open_catalog", "refuse_unmoved", "translate"]

_WRITES = ("INSERT", "UPDATE", "DELETE", "REPLACE")
_TYPES = {"INTEGER": "BIGINT", "REAL": "DOUBLE PRECISION", "TEXT": 'TEXT COLLATE "C"', "BLOB": "BYTEA"}
_TYPE_WORDS = re.compile(r"\b(INTEGER|REAL|TEXT|BLOB)\b")
_IS_PARAM = re.compile(r"\bIS\s+(NOT\s+)?\?", re.IGNORECASE)
_OR_IGNORE = re.compile(r"^\s*INSERT\s+OR\s+IGNORE\s+INTO\b", re.IGNORECASE)
_CHAR = re.compile(r"\bchar\(", re.IGNORECASE)  # SQLite's char(n) is PostgreSQL's chr(n)
_PRAGMA = re.compile(r"^\s*PRAGMA\s+(\w+)\s*(?:\(\s*(\w+)\s*\)|=\s*(\S+))?\s*;?\s*$", re.IGNORECASE)


def catalog_namespace(settings) -> str:
    """The PostgreSQL schema of a knowledge base's catalog: its text index's schema with `_catalog` after it."""
    return f"{settings.postgres_schema}_catalog"


def open_catalog(settings):
    """(dsn, schema) of the catalog in PostgreSQL, or None for the embedded SQLite file; a setting that cannot work
    is refused saying what to set."""
    dsn = (settings.catalog or "").strip()
    if not dsn or dsn in ("sqlite", "file"):
        return None
    if not dsn.startswith(("postgresql://", "postgres://")) and "=" not in dsn:
        raise ConfigError(f"KG_CATALOG must be a PostgreSQL connection string (postgresql://user@host/db or "
                          f"'host=... dbname=...'), or unset for the catalog file in the data dir; got {dsn[:40]!r}")
    if settings.text_backend != "postgres":
        raise ConfigError("KG_CATALOG=postgresql://… needs KG_TEXT_BACKEND=postgres (and KG_POSTGRES_DSN): a catalog "
                          "shared by several servers with a text index in each data dir would disagree with it")
    return dsn, catalog_namespace(settings)


def refuse_unmoved(root: Path, store, published: str | None = None) -> None:
    """KG_CATALOG names a catalog with no chunk while the data dir's kb.sqlite holds documents, or while the shared
    record (schema `published`, on the same database) holds a catalog published as a file: it was never moved there
    (`kg migrate --catalog`). Opening it would read the knowledge base as empty, and the next commit would drop the
    published catalog and take every chunk out of the shared text index as not in the catalog: refused, saying what
    to run."""
    if not store.postgres or store.has_chunks():
        return
    file, where = Path(root) / "kb.sqlite", None
    try:
        if file.exists():
            db = sqlite3.connect(f"file:{file}?mode=ro", uri=True)
            try:
                if count := db.execute("SELECT COUNT(*) FROM documents").fetchone()[0]:
                    where = f"{file} holds {count} document(s)"
            finally:
                db.close()
    except sqlite3.Error:
        pass
    if where is None and published and store.db.execute("SELECT to_regclass(?)", (f"{published}.kb_pieces",)).fetchone()[0] \
            and store.db.execute(f"SELECT EXISTS (SELECT 1 FROM {published}.kb_pieces)").fetchone()[0]:
        where = f"the schema {published} holds a catalog published as a file"
    if where is not None:
        dsn, schema = store.postgres
        store.close()
        raise ConfigError(f"KG_CATALOG names an empty catalog (schema {schema}) while {where}: move it there first "
                          f"with `kg migrate --to postgres+sparql --catalog '{masked(dsn)}'` run where that catalog is "
                          "(with KG_CATALOG unset), or unset KG_CATALOG to go on with the file")


def _split(sql: str) -> list[tuple[bool, str]]:
    """`sql` as (is code, text) pieces: quoted strings and identifiers apart from the code around them."""
    out, i, start, n = [], 0, 0, len(sql)
    while i < n:
        ch = sql[i]
        if ch in "'\"":
            if i > start:
                out.append((True, sql[start:i]))
            end = i + 1
            while end < n:
                if sql[end] == ch:
                    if end + 1 < n and sql[end + 1] == ch:  # a doubled quote inside
                        end += 2
                        continue
                    break
                end += 1
            out.append((False, sql[i:end + 1]))
            i = start = end + 1
            continue
        i += 1
    if start < n:
        out.append((True, sql[start:]))
    return out


@lru_cache(maxsize=2048)
def translate(sql: str, with_params: bool = True) -> str:
    """SQLite's statement as PostgreSQL's: `?` placeholders, `IS [NOT] ?`, `INSERT OR IGNORE`, column types in DDL,
    `%` doubled where psycopg reads placeholders."""
    ddl = re.match(r"\s*(CREATE\s+TABLE|ALTER\s+TABLE)", sql, re.IGNORECASE) is not None
    ignore = _OR_IGNORE.match(sql) is not None
    if ignore:
        sql = _OR_IGNORE.sub("INSERT INTO", sql, count=1)
    if re.match(r"\s*INSERT\s+OR\s+REPLACE\b", sql, re.IGNORECASE):
        raise sqlite3.OperationalError("INSERT OR REPLACE has no PostgreSQL form without its conflict target: "
                                       "write it as INSERT … ON CONFLICT (…) DO UPDATE")
    parts = []
    for code, text in _split(sql):
        if code:
            text = _IS_PARAM.sub(lambda m: "IS DISTINCT FROM ?" if m.group(1) else "IS NOT DISTINCT FROM ?", text)
            text = _CHAR.sub("chr(", text.replace("WITHOUT ROWID", ""))
            if ddl:
                text = _TYPE_WORDS.sub(lambda m: _TYPES[m.group(1)], text)
            if with_params:
                text = text.replace("%", "%%").replace("?", "%s")
        elif with_params:
            text = text.replace("%", "%%")
        parts.append(text)
    out = "".join(parts).rstrip().rstrip(";")
    if ignore:
        out += " ON CONFLICT DO NOTHING"
    return out


def _statements(script: str) -> list[str]:
    """A script cut at the semicolons outside quotes."""
    out, current = [], []
    for code, text in _split(script):
        if not code:
            current.append(text)
            continue
        pieces = text.split(";")
        for piece in pieces[:-1]:
            current.append(piece)
            out.append("".join(current))
            current = []
        current.append(pieces[-1])
    out.append("".join(current))
    return [s.strip() for s in out if s.strip()]


class _Rows:
    """A cursor over rows already at hand (what a PRAGMA answers)."""

    def __init__(self, rows: list[tuple]) -> None:
        self._rows = list(rows)
        self.rowcount = -1

    def fetchone(self):
        return self._rows.pop(0) if self._rows else None

    def fetchall(self):
        rows, self._rows = self._rows, []
        return rows

    def __iter__(self):
        while self._rows:
            yield self._rows.pop(0)


def _schema_sql(ns: str) -> str:
    return f"""
    CREATE SCHEMA IF NOT EXISTS {ns};
    CREATE TABLE IF NOT EXISTS {ns}.catalog_version (id int PRIMARY KEY CHECK (id = 1), version bigint NOT NULL);
    INSERT INTO {ns}.catalog_version VALUES (1, 0) ON CONFLICT DO NOTHING;
    CREATE OR REPLACE VIEW {ns}.sqlite_master AS
        SELECT 'table'::text AS type, table_name::text AS name, table_name::text AS tbl_name
          FROM information_schema.tables WHERE table_schema = '{ns}' AND table_type = 'BASE TABLE'
               AND table_name <> 'catalog_version'  -- this connection's own, not the catalog's
        UNION ALL
        SELECT 'index', indexname::text, tablename::text FROM pg_indexes WHERE schemaname = '{ns}';
    """


class CatalogConnection:
    """`CatalogConnection(dsn, namespace)`: the part of `sqlite3.Connection` the catalog modules use, on PostgreSQL
    (autocommit; BEGIN/COMMIT/SAVEPOINT are sent as they come, as SQLite's with `isolation_level=None`)."""

    def __init__(self, dsn: str, namespace: str) -> None:
        self.dsn, self.ns = dsn, namespace
        self.total_changes = 0
        self._wrote = False  # the open transaction wrote: its COMMIT moves the data version
        self._conn = self._connect()

    def _connect(self):
        from retrieval.index.postgres_conn import connect

        conn = connect(self.dsn)
        if conn.execute("SELECT to_regclass(%s)", (f"{self.ns}.sqlite_master",)).fetchone()[0] is None:
            with conn.transaction():
                conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (f"{self.ns}.catalog",))
                conn.execute(_schema_sql(self.ns))
        conn.execute(f"SET search_path TO {self.ns}")
        return conn

    def schema_lock(self):
        """Around the catalog modules' CREATE/ALTER on open: one server at a time (two creating the same table at
        once is an error in PostgreSQL, not in SQLite)."""
        return _SchemaLock(self)

    @property
    def in_transaction(self) -> bool:
        from psycopg.pq import TransactionStatus

        return self._conn.info.transaction_status != TransactionStatus.IDLE

    def execute(self, sql: str, params=()):
        pragma = _PRAGMA.match(sql)
        if pragma:
            return self._pragma(pragma.group(1).lower(), pragma.group(2))
        head = sql.lstrip()[:9].upper()
        if head.startswith("COMMIT") and self._wrote:
            self._run("UPDATE catalog_version SET version = version + 1", ())
        if head.startswith(("BEGIN", "COMMIT", "ROLLBACK")) and not head.startswith("ROLLBACK "):
            self._wrote = False
        cursor = self._run(translate(sql, bool(params)), params)
        if head.startswith(_WRITES):
            self._count(cursor.rowcount)
        return cursor

    def executemany(self, sql: str, rows):
        rows = [tuple(_value(v) for v in row) for row in rows]
        if not rows:
            return _Rows([])
        cursor = self._conn.cursor()
        try:
            cursor.executemany(translate(sql, True), rows)
        except Exception as exc:  # noqa: BLE001 - raised as the sqlite3 error callers catch
            raise _as_sqlite(exc, self.dsn) from exc
        self._count(max(cursor.rowcount, len(rows)))
        return cursor

    def executescript(self, script: str) -> None:
        for statement in _statements(script):
            self.execute(statement)

    def commit(self) -> None:
        if self.in_transaction:
            self.execute("COMMIT")

    def rollback(self) -> None:
        if self.in_transaction:
            self.execute("ROLLBACK")

    def close(self) -> None:
        self._conn.close()

    # -- inside ----------------------------------------------------------------------------------
    def _run(self, sql: str, params):
        """One statement. A connection that broke while idle (PostgreSQL restarted) is opened again and the statement
        sent once more; one that broke inside a transaction fails it (503), and the next statement connects again."""
        import psycopg

        values = tuple(_value(v) for v in params) if params else None
        for attempt in range(2):
            idle = not self.in_transaction
            try:
                if self._conn.closed or self._conn.broken:
                    self._conn = self._connect()
                return self._conn.execute(sql, values) if values is not None else self._conn.execute(sql)
            except psycopg.OperationalError as exc:
                if not (self._conn.closed or self._conn.broken) or not idle or attempt:
                    raise _as_sqlite(exc, self.dsn) from exc
            except Exception as exc:  # noqa: BLE001 - raised as the sqlite3 error callers catch
                raise _as_sqlite(exc, self.dsn) from exc
        raise AssertionError("unreachable")

    def _count(self, rows: int) -> None:
        self.total_changes += max(rows, 0)
        if self.in_transaction:
            self._wrote = True
        else:  # a write outside a transaction committed by itself
            self._run("UPDATE catalog_version SET version = version + 1", ())

    def _pragma(self, name: str, argument: str | None):
        if name == "data_version":
            return self._run("SELECT version FROM catalog_version", ())
        if name == "table_info":
            return _Rows([(i, column, kind, 0, None, 0) for i, (column, kind) in enumerate(self._run(
                "SELECT column_name, data_type FROM information_schema.columns WHERE table_schema = %s AND "
                "table_name = %s ORDER BY ordinal_position", (self.ns, argument)).fetchall())])
        if name == "busy_timeout":
            return _Rows([(30000,)])
        return _Rows([])  # journal_mode, synchronous, foreign_keys, wal_checkpoint: PostgreSQL's own business


def _value(v):
    """A parameter as SQLite would store it: a bool is an integer there."""
    return int(v) if isinstance(v, bool) else v


def _as_sqlite(exc: Exception, dsn: str) -> Exception:
    import psycopg
    from psycopg import errors

    from retrieval.index.postgres_conn import unreachable

    if isinstance(exc, psycopg.OperationalError) and not isinstance(exc, errors.QueryCanceled):
        return unreachable(dsn, exc)
    if isinstance(exc, psycopg.IntegrityError):
        return sqlite3.IntegrityError(str(exc).strip())
    if isinstance(exc, psycopg.Error):
        return sqlite3.OperationalError(str(exc).strip())
    return exc


class _SchemaLock:
    def __init__(self, db: CatalogConnection) -> None:
        self.db = db

    def __enter__(self):
        self.db._run("SELECT pg_advisory_lock(hashtext(%s))", (f"{self.db.ns}.catalog",))
        return self

    def __exit__(self, *exc) -> None:
        if self.db.in_transaction:
            self.db._conn.execute("ROLLBACK")
        self.db._run("SELECT pg_advisory_unlock(hashtext(%s))", (f"{self.db.ns}.catalog",))


# Parents before children (PostgreSQL checks each foreign key as the row goes in); any other table after them.
_COPY_ORDER = ("kb_state", "documents", "chunks", "versions", "version_chunks", "parents", "mentions", "about")


def copy_catalog(source, target, made_later: Sequence[str] = (), batch: int = 5000) -> int:
    """Every row of every table of the catalog `source` into the catalog `target` (each a connection `DocStore.db`
    gives: SQLite's or `CatalogConnection`; `target`'s tables made by its `DocStore`, and by `made_later`, the CREATE
    statements of tables a module makes when first used), in one transaction of `target`, whose rows are replaced;
    the columns both sides have. Returns the rows copied (`kg migrate --catalog`)."""
    tables = lambda db: [row[0] for row in db.execute(  # noqa: E731
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite%' ORDER BY name")]
    columns = lambda db, table: [row[1] for row in db.execute(f"PRAGMA table_info({table})")]  # noqa: E731
    rank = {name: i for i, name in enumerate(_COPY_ORDER)}
    mine = sorted(tables(source), key=lambda t: (rank.get(t, len(rank)), t))
    copied = 0
    target.execute("BEGIN")
    try:
        for ddl in made_later:
            target.execute(ddl)
        theirs = set(tables(target))
        for table in reversed([t for t in mine if t in theirs]):
            target.execute(f"DELETE FROM {table}")
        for table in mine:
            if table not in theirs:
                raise sqlite3.OperationalError(f"the catalog table {table} has no counterpart to be copied into")
            both = [c for c in columns(source, table) if c in set(columns(target, table))]
            names = ", ".join(f'"{c}"' for c in both)
            rows = source.execute(f"SELECT {names} FROM {table}")
            insert = f"INSERT INTO {table} ({names}) VALUES ({', '.join('?' * len(both))})"
            while part := rows.fetchmany(batch):
                target.executemany(insert, part)
                copied += len(part)
        target.execute("COMMIT")
    except BaseException:
        if target.in_transaction:
            target.execute("ROLLBACK")
        raise
    return copied
