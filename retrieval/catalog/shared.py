"""A knowledge base shared by several `kg serve` machines (KG_TEXT_BACKEND=postgres): the last published commit in PostgreSQL in, each data dir brought to it out.

The text index already lives in PostgreSQL; what a server also needs to answer is the catalog
(SQLite), graph.ttl, synonyms.txt, REGISTRY.md and relation-tables.json. Rather than a second catalog implementation,
each commit *publishes* those files to the knowledge base's schema, in one transaction with the
generation number, and every data dir is a local copy of the last publication:

    writer (holding the PostgreSQL write lock, `postgres_lock.py`):
        restore the published files when the data dir is behind -> write locally as the
        embedded default does (the text index goes to PostgreSQL) -> publish files + generation
    reader (the server's follower, every KG_FOLLOW_INTERVAL):
        SELECT the generation -> when it moved, restore the files and reload

The catalog's own generation is the published one, so "behind" is one indexed SELECT. A journal row
says a commit is in flight: a writer that died between its text index commit and its publication
leaves it set, and the next writer re-derives the index from the published catalog (the state
before). The catalog goes as a SQLite file image cut in pieces of PIECE bytes, each with its sha256:
a commit uploads the pieces whose hash changed and a server downloads those it lacks, keeping the last
image it restored (`shared-catalog.image` in the data dir). An edit rewrites a few of the file's pages,
so it moves a few pieces, not the file (237 MB at 100k chunks); the catalog as PostgreSQL tables is
what millions of chunks would need (README "Scaling out").

The meaning channel's vectors are not published: with pgvector on the server they are in the schema already
(`retrieval/vectors/pgvector_store.py`, written by `kg embed` on any machine, read by all); without it each data dir
keeps its own vectors.sqlite and each server runs `kg embed` itself.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import socket
import sqlite3
import tempfile
from pathlib import Path

from kg.errors import BusyError

__all__ = ["CATALOG_FILE", "SHARED_FILES", "SharedRecord", "open_shared_record"]

CATALOG_FILE = "kb.sqlite"
# The truth beside the catalog, as files (relation-tables.json: what each relation table asserted, kg/relations/ledger.py,
# so that an import on any server removes the rows deleted since the last import on another).
SHARED_FILES = ("graph.ttl", "synonyms.txt", "REGISTRY.md", "relation-tables.json")
_TEMP_PREFIX = ".kgrag-shared-"
IMAGE_FILE = "shared-catalog.image"  # the catalog image last published or restored here: its pieces are not fetched again
PIECE = 256 * 1024  # an edit changes a few SQLite pages (4 KB each) spread through the file


def open_shared_record(settings) -> SharedRecord | None:
    """The shared record of a knowledge base on PostgreSQL; None for the embedded default."""
    if settings.text_backend != "postgres" or not settings.postgres_dsn:
        return None
    return SharedRecord(settings.postgres_dsn, settings.postgres_schema)


def _schema_sql(ns: str) -> str:
    return f"""
    CREATE SCHEMA IF NOT EXISTS {ns};
    CREATE TABLE IF NOT EXISTS {ns}.kb_commit (
        id int PRIMARY KEY CHECK (id = 1), generation bigint, journal text, writer text,
        published_at timestamptz);
    INSERT INTO {ns}.kb_commit (id) VALUES (1) ON CONFLICT DO NOTHING;
    CREATE TABLE IF NOT EXISTS {ns}.kb_files (name text PRIMARY KEY, content bytea NOT NULL);
    CREATE TABLE IF NOT EXISTS {ns}.kb_pieces (
        part int PRIMARY KEY, sha bytea NOT NULL, content bytea NOT NULL);
    """


def who() -> str:
    """How a writer is named to the others (in messages and the journal row)."""
    return f"kg pid {os.getpid()} on {socket.gethostname()}"


class SharedRecord:
    """`SharedRecord(dsn, namespace)`: the publication of one knowledge base (one PostgreSQL schema)."""

    def __init__(self, dsn: str, namespace: str) -> None:
        from retrieval.index.postgres_conn import RetryingConnection

        self.dsn, self.ns = dsn, namespace
        self.fetched = 0  # catalog pieces the last restore fetched
        self._db = RetryingConnection(dsn)
        conn = self._db.conn
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (f"{namespace}.kb_commit",))
            conn.execute(_schema_sql(namespace))

    def _call(self, work):
        """`work(connection)` on the record's connection, one caller at a time, tried again once on a
        connection that broke while idle (`RetryingConnection`)."""
        return self._db.call(work)

    def generation(self) -> int | None:
        """The last published generation (None: nothing published yet)."""
        return self._call(lambda db: db.execute(f"SELECT generation FROM {self.ns}.kb_commit").fetchone()[0])

    def journal(self) -> dict | None:
        """The commit in flight ({"op", "writer"}), or None; seen by a lock holder, it is a dead writer's."""
        op, writer = self._call(lambda db: db.execute(f"SELECT journal, writer FROM {self.ns}.kb_commit").fetchone())
        return None if op is None else {"op": op, "writer": writer}

    def start_journal(self, op: str) -> None:
        self._call(lambda db: db.execute(f"UPDATE {self.ns}.kb_commit SET journal = %s, writer = %s", (op, who())))

    def finish_journal(self) -> None:
        self._call(lambda db: db.execute(f"UPDATE {self.ns}.kb_commit SET journal = NULL"))

    def publish(self, root: Path, catalog: sqlite3.Connection, generation: int) -> int:
        """The data dir's catalog and files become the published state at `generation` (one transaction;
        the journal row is cleared in it); returns how many catalog pieces were sent. Call with the write
        lock held."""
        image = _catalog_image(root, catalog)
        rows = [(name, content) for name in SHARED_FILES if (content := _read(Path(root) / name)) is not None]
        mine = _piece_hashes(image)

        def write(db) -> int:
            with db.transaction():
                published = dict(db.execute(f"SELECT part, sha FROM {self.ns}.kb_pieces").fetchall())
                changed = [part for part, sha in enumerate(mine) if published.get(part) != sha]
                db.execute(f"DELETE FROM {self.ns}.kb_files")  # the small files, and a catalog an older kgrag put here
                with db.cursor() as cur:
                    cur.executemany(f"INSERT INTO {self.ns}.kb_files VALUES (%s, %s)", rows)
                db.execute(f"DELETE FROM {self.ns}.kb_pieces WHERE part >= %s", (len(mine),))
                with open(image, "rb") as fh:
                    for part in changed:  # one piece in memory at a time
                        fh.seek(part * PIECE)
                        db.execute(f"INSERT INTO {self.ns}.kb_pieces VALUES (%s, %s, %s) ON CONFLICT (part) DO "
                                   "UPDATE SET sha = EXCLUDED.sha, content = EXCLUDED.content",
                                   (part, mine[part], fh.read(PIECE)))
                db.execute(f"UPDATE {self.ns}.kb_commit SET generation = %s, journal = NULL, writer = %s, "
                           "published_at = now()", (generation, who()))
                return len(changed)

        try:
            return self._call(write)
        finally:
            os.replace(image, Path(root) / IMAGE_FILE)  # what was published: the next restore here starts from it

    def restore(self, root: Path, catalog: sqlite3.Connection) -> int | None:
        """Bring the data dir to the published state: the catalog copied into the open database (its other
        connections see it at their next statement), the files written where they differ. Returns the
        generation restored (None: nothing published, nothing changed)."""
        image = Path(root) / IMAGE_FILE
        mine = _piece_hashes(image) if image.exists() else []

        def read(db):
            with db.transaction():  # one snapshot for the generation, the files and the pieces
                db.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
                rows = db.execute(f"SELECT c.generation, f.name, f.content FROM {self.ns}.kb_commit c "
                                  f"LEFT JOIN {self.ns}.kb_files f ON true").fetchall()
                if not rows or rows[0][0] is None:
                    return None
                files = {name: bytes(content) for _, name, content in rows if name is not None}
                hashes = db.execute(f"SELECT part, sha, length(content) FROM {self.ns}.kb_pieces ORDER BY part").fetchall()
                if CATALOG_FILE in files:  # published whole by an older kgrag
                    image.write_bytes(files.pop(CATALOG_FILE))
                elif not hashes:
                    raise BusyError(f"the published record of '{self.ns}' has no catalog: publish again with a write "
                                    "on the server that holds the knowledge base (e.g. `kg check --repair`)")
                else:
                    wanted = [part for part, sha, _ in hashes if part >= len(mine) or mine[part] != bytes(sha)]
                    self.fetched = len(wanted)
                    with open(image, "r+b" if image.exists() else "wb") as fh:
                        for part in wanted:  # one piece in memory at a time
                            content = db.execute(f"SELECT content FROM {self.ns}.kb_pieces WHERE part = %s",
                                                 (part,)).fetchone()[0]
                            fh.seek(part * PIECE)
                            fh.write(content)
                        last, _, size = hashes[-1]
                        fh.truncate(last * PIECE + size)
                return rows[0][0], files

        got = self._call(read)
        if got is None:
            return None
        generation, files = got
        _restore_catalog(root, catalog, image)
        for name in SHARED_FILES:
            _write_if_different(Path(root) / name, files.get(name))
        return generation

    def close(self) -> None:
        self._db.close()


def _read(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None


def _catalog_image(root: Path, catalog: sqlite3.Connection) -> Path:
    """A consistent copy of the catalog's committed state, as a database file (a temp file of `root`)."""
    fd, tmp = tempfile.mkstemp(prefix=_TEMP_PREFIX, suffix=".sqlite", dir=root)
    os.close(fd)
    try:
        copy = sqlite3.connect(tmp)
        try:
            catalog.backup(copy)
            copy.execute("PRAGMA journal_mode=DELETE")  # one self-contained file
        finally:
            copy.close()
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return Path(tmp)


def _piece_hashes(path: Path) -> list[bytes]:
    out = []
    with open(path, "rb") as fh:
        while piece := fh.read(PIECE):
            out.append(hashlib.sha256(piece).digest())
    return out


def _restore_catalog(root: Path, catalog: sqlite3.Connection, image: Path) -> None:
    """The image copied into the open catalog; the image itself is kept, read through a temp copy so that
    SQLite never writes to it (a journal, a header change)."""
    fd, tmp = tempfile.mkstemp(prefix=_TEMP_PREFIX, suffix=".sqlite", dir=root)
    os.close(fd)
    try:
        shutil.copyfile(image, tmp)
        source = sqlite3.connect(tmp)
        try:
            source.backup(catalog)
        finally:
            source.close()
    finally:
        for suffix in ("", "-wal", "-shm", "-journal"):
            Path(tmp + suffix).unlink(missing_ok=True)


def _write_if_different(path: Path, content: bytes | None) -> None:
    if content is None:
        path.unlink(missing_ok=True)
        return
    if _read(path) == content:
        return  # unchanged: its stamp stays, so nothing reloads it for nothing
    fd, tmp = tempfile.mkstemp(prefix=_TEMP_PREFIX, dir=path.parent)
    with os.fdopen(fd, "wb") as fh:
        fh.write(content)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)
