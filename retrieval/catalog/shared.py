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
before). The catalog goes as its SQLite file cut in pieces of PIECE bytes, each with its sha256: a commit
checkpoints the catalog's WAL and uploads the pieces of the file whose hash changed, and a server builds the new file
from its own and the pieces it lacks, then points kb.sqlite at it (`catalog_file.py`: no second copy is kept, and
nothing is written through SQLite). An edit rewrites a few of the file's pages, so it moves a few pieces, not the
file (2.4 GB at 1M chunks); the catalog as PostgreSQL tables is what millions of chunks would need (README "Scaling
out").

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
from kg.files import replace_file
from retrieval.catalog.catalog_file import (
    TEMP_PREFIX,
    checkpointed,
    copy_into,
    file_of,
    new_target,
    piece_hashes,
    sweep,
)

__all__ = ["CATALOG_FILE", "SHARED_FILES", "SharedRecord", "open_shared_record"]

CATALOG_FILE = "kb.sqlite"
# The truth beside the catalog, as files (relation-tables.json: what each relation table asserted, kg/relations/ledger.py,
# so that an import on any server removes the rows deleted since the last import on another).
SHARED_FILES = ("graph.ttl", "synonyms.txt", "REGISTRY.md", "relation-tables.json")
ROOM_MARGIN = 64 * 1024 * 1024  # beyond the new catalog, for its WAL and the small files
PIECE = 256 * 1024  # an edit changes a few SQLite pages (4 KB each) spread through the file
FILES_STAMP = "published-generation"  # KG_CATALOG: the generation of the data dir's copies of SHARED_FILES


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
        root = Path(root)
        if not isinstance(catalog, sqlite3.Connection):  # KG_CATALOG: the catalog's tables are in PostgreSQL already
            return self._publish_files(root, generation)
        link = root / CATALOG_FILE
        sweep(root, link)
        source = file_of(catalog)
        # The file itself once its WAL is checkpointed (read in place); a copy through SQLite when this connection's
        # file is not the data dir's (another process swapped it) or readers keep the checkpoint from finishing.
        live = (source is not None and link.exists() and source.exists() and source.samefile(link)
                and checkpointed(catalog))
        if not live:
            source = _catalog_image(root, catalog)
        rows = _small_files(root)
        mine = piece_hashes(source, PIECE)

        def write(db) -> int:
            with db.transaction():
                published = dict(db.execute(f"SELECT part, sha FROM {self.ns}.kb_pieces").fetchall())
                changed = [part for part, sha in enumerate(mine) if published.get(part) != sha]
                db.execute(f"DELETE FROM {self.ns}.kb_pieces WHERE part >= %s", (len(mine),))
                with open(source, "rb") as fh:
                    for part in changed:  # one piece in memory at a time
                        fh.seek(part * PIECE)
                        db.execute(f"INSERT INTO {self.ns}.kb_pieces VALUES (%s, %s, %s) ON CONFLICT (part) DO "
                                   "UPDATE SET sha = EXCLUDED.sha, content = EXCLUDED.content",
                                   (part, mine[part], fh.read(PIECE)))
                self._put_files(db, rows, generation)
                return len(changed)

        try:
            return self._call(write)
        finally:
            if not live:
                source.unlink(missing_ok=True)

    def _publish_files(self, root: Path, generation: int) -> int:
        """`publish` of a knowledge base whose catalog is in PostgreSQL (KG_CATALOG): the small files and the
        generation; no catalog pieces (any left by a catalog file before are dropped)."""
        rows = _small_files(root)

        def write(db) -> None:
            with db.transaction():
                db.execute(f"DELETE FROM {self.ns}.kb_pieces")
                self._put_files(db, rows, generation)

        self._call(write)
        self._stamp(root, generation)
        return 0

    def _put_files(self, db, rows: list[tuple[str, bytes]], generation: int) -> None:
        """Inside a publication's transaction: the small files and the generation (the journal row cleared)."""
        db.execute(f"DELETE FROM {self.ns}.kb_files")  # the small files, and a catalog an older kgrag put here
        with db.cursor() as cur:
            cur.executemany(f"INSERT INTO {self.ns}.kb_files VALUES (%s, %s)", rows)
        db.execute(f"UPDATE {self.ns}.kb_commit SET generation = %s, journal = NULL, writer = %s, "
                   "published_at = now()", (generation, who()))

    def _published_files(self, db) -> tuple[int, dict[str, bytes]] | None:
        """(the published generation, name -> content of the published files), None when nothing is published."""
        rows = db.execute(f"SELECT c.generation, f.name, f.content FROM {self.ns}.kb_commit c "
                          f"LEFT JOIN {self.ns}.kb_files f ON true").fetchall()
        if not rows or rows[0][0] is None:
            return None
        return rows[0][0], {name: bytes(content) for _, name, content in rows if name is not None}

    def files_generation(self, root: Path) -> int:
        """With the catalog in PostgreSQL: the generation the data dir's files were last published or restored at
        (0: never), kept in FILES_STAMP, as a catalog file's own generation says it for kb.sqlite."""
        try:
            return int((Path(root) / FILES_STAMP).read_text("ascii").strip() or 0)
        except (OSError, ValueError):
            return 0

    def _stamp(self, root: Path, generation: int) -> None:
        replace_file(Path(root) / FILES_STAMP, f"{generation}\n".encode("ascii"), TEMP_PREFIX)

    def _restore_files(self, root: Path) -> int | None:
        """`restore` of a knowledge base whose catalog is in PostgreSQL: the small files only."""
        got = self._call(self._published_files)
        if got is None:
            return None
        generation, files = got
        _write_small_files(root, files)
        self._stamp(root, generation)
        return generation

    def restore(self, root: Path, catalog: sqlite3.Connection, swap=None) -> int | None:
        """Bring the data dir to the published state; returns the generation restored (None: nothing published,
        nothing changed). The catalog is built as a new file beside the old one (a copy of it, hashed, with the pieces
        whose hash differs from the published one fetched and checked) and `swap(new_file)` points the data dir at it (True; `catalog` is then
        closed); without `swap`, or when it returns False, the file is copied into the open `catalog` through SQLite
        (its other connections see it at their next statement). The small files are written where they differ."""
        root = Path(root)
        if not isinstance(catalog, sqlite3.Connection):  # KG_CATALOG: nothing of the catalog to bring
            return self._restore_files(root)
        link = root / CATALOG_FILE
        sweep(root, link)
        target = new_target(root)

        def read(db):
            with db.transaction():  # one snapshot for the generation, the files and the pieces
                db.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
                got = self._published_files(db)
                if got is None:
                    return None
                generation, files = got
                hashes = db.execute(f"SELECT part, sha, length(content) FROM {self.ns}.kb_pieces ORDER BY part").fetchall()
                if CATALOG_FILE in files:  # published whole by an older kgrag
                    target.write_bytes(files.pop(CATALOG_FILE))
                    return generation, files
                if not hashes:
                    raise BusyError(f"the published record of '{self.ns}' has no catalog: publish again with a write "
                                    "on the server that holds the knowledge base (e.g. `kg check --repair`)")
                published = [bytes(sha) for _, sha, _ in hashes]
                last, _, size = hashes[-1]
                _room_for(root, last * PIECE + size)
                copy_into(link, target)  # a private copy: what it holds is what its hashes say, whatever the old file does
                with open(target, "r+b") as fh:
                    fh.truncate(last * PIECE + size)
                mine = piece_hashes(target, PIECE)
                wanted = [part for part, sha in enumerate(published) if mine[part] != sha]
                self.fetched = len(wanted)
                with open(target, "r+b") as fh:
                    for part in wanted:  # one piece in memory at a time
                        content = bytes(db.execute(f"SELECT content FROM {self.ns}.kb_pieces WHERE part = %s",
                                                   (part,)).fetchone()[0])
                        if hashlib.sha256(content).digest() != published[part]:
                            raise BusyError(f"piece {part} of the catalog published in '{self.ns}' does not match its "
                                            "hash: publish again with a write (e.g. `kg check --repair` on a server)")
                        fh.seek(part * PIECE)
                        fh.write(content)
                return generation, files

        try:
            got = self._call(read)
            if got is None:
                return None
            generation, files = got
            _fsync(target)
            if swap is None or not swap(target):
                _copy_through_sqlite(target, catalog)
                checkpointed(catalog, wait_ms=0)  # when it can: the file the next restore copies then holds it all
        finally:
            if not (link.is_symlink() and link.resolve() == target.resolve()):
                for suffix in ("", "-wal", "-shm", "-journal"):
                    Path(str(target) + suffix).unlink(missing_ok=True)
        _write_small_files(root, files)
        return generation

    def close(self) -> None:
        self._db.close()


def _small_files(root: Path) -> list[tuple[str, bytes]]:
    """(name, content) of the data dir's SHARED_FILES that exist."""
    return [(name, content) for name in SHARED_FILES if (content := _read(root / name)) is not None]


def _write_small_files(root: Path, files: dict[str, bytes]) -> None:
    """The published SHARED_FILES into the data dir where they differ (one not published: removed)."""
    for name in SHARED_FILES:
        _write_if_different(Path(root) / name, files.get(name))


def _read(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None


def _catalog_image(root: Path, catalog: sqlite3.Connection) -> Path:
    """A consistent copy of the catalog's committed state, as a database file (a temp file of `root`)."""
    fd, tmp = tempfile.mkstemp(prefix=TEMP_PREFIX, suffix=".sqlite", dir=root)
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


def _room_for(root: Path, size: int) -> None:
    """A restore writes the new catalog beside the old one: say so before starting when the disk cannot hold it."""
    free = shutil.disk_usage(root).free
    if free < size + ROOM_MARGIN:
        raise BusyError(f"restoring the published catalog needs {size / 1e9:.1f} GB free beside the current one in "
                        f"{root} ({free / 1e9:.1f} GB free): free some space there, then try again")


def _fsync(path: Path) -> None:
    with open(path, "rb+") as fh:
        os.fsync(fh.fileno())


def _copy_through_sqlite(source: Path, catalog: sqlite3.Connection) -> None:
    """`source` copied into the open catalog by SQLite's backup (every page through its WAL)."""
    db = sqlite3.connect(source)
    try:
        db.backup(catalog)
    finally:
        db.close()


def _write_if_different(path: Path, content: bytes | None) -> None:
    if content is None:
        path.unlink(missing_ok=True)
    elif _read(path) != content:  # unchanged: its stamp stays, so nothing reloads it for nothing
        replace_file(path, content, TEMP_PREFIX)
