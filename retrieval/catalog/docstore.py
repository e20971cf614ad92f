"""Documents, chunks and entity mentions in SQLite: the record of what was ingested and what it mentions."""

from __future__ import annotations

import contextlib
import sqlite3
import threading
import time
from collections.abc import Iterable, Sequence
from pathlib import Path

from retrieval.catalog import anchors, commit, packs, versions
from retrieval.catalog.catalog_file import point, stage_link
from retrieval.types import Chunk, Document, Mention

__all__ = ["DocStore"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS documents (
    doc_id TEXT PRIMARY KEY, source TEXT UNIQUE NOT NULL, title TEXT NOT NULL,
    sha256 TEXT NOT NULL, version INTEGER NOT NULL DEFAULT 1, effective_date TEXT,
    ingested_at REAL NOT NULL, n_chunks INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS chunks (
    chunk_id TEXT PRIMARY KEY, doc_id TEXT NOT NULL REFERENCES documents(doc_id) ON DELETE CASCADE,
    ordinal INTEGER NOT NULL, parent_id TEXT NOT NULL, section TEXT NOT NULL, text TEXT NOT NULL,
    line_start INTEGER NOT NULL, line_end INTEGER NOT NULL, sha256 TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS chunks_doc ON chunks(doc_id);
CREATE TABLE IF NOT EXISTS mentions (
    chunk_id TEXT NOT NULL REFERENCES chunks(chunk_id) ON DELETE CASCADE,
    entity TEXT NOT NULL, surface TEXT NOT NULL, start INTEGER NOT NULL, "end" INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS mentions_entity_chunk ON mentions(entity, chunk_id);
CREATE INDEX IF NOT EXISTS mentions_chunk ON mentions(chunk_id);
CREATE TABLE IF NOT EXISTS about (
    doc_id TEXT NOT NULL REFERENCES documents(doc_id) ON DELETE CASCADE, entity TEXT NOT NULL,
    PRIMARY KEY (doc_id, entity)
);
CREATE INDEX IF NOT EXISTS about_entity ON about(entity);
CREATE TABLE IF NOT EXISTS index_words (word TEXT PRIMARY KEY);
"""


class DocStore:
    def __init__(self, path: Path, catalog: tuple[str, str] | None = None) -> None:
        """The catalog file at `path`, or, with `catalog` = (dsn, schema), its tables in PostgreSQL
        (KG_CATALOG: `postgres_catalog.py`; `path` is then only a name in messages)."""
        self.path = Path(path)
        self.postgres = catalog
        # One connection a thread: a writer's open transaction stays invisible to the queries other
        # threads run meanwhile (WAL: they read the last commit and never wait for the writer).
        self._local = threading.local()
        self._connections: list[sqlite3.Connection] = []
        self._connections_lock = threading.Lock()
        with self._schema_lock():
            self._ensure_schema()

    def _schema_lock(self):
        return self.db.schema_lock() if self.postgres else contextlib.nullcontext()

    def _ensure_schema(self) -> None:
        if self.db.execute("SELECT COUNT(*) FROM sqlite_master WHERE name = 'index_words'").fetchone()[0] == 0:
            self.db.executescript(_SCHEMA)  # only when missing: a no-op script would still wait for a writer
        if self.db.execute("SELECT COUNT(*) FROM sqlite_master WHERE name = 'mentions_entity'").fetchone()[0]:
            # Bases made before 2026-12: the (entity, chunk) index answers the per-entity look-ups of
            # expansion from the index alone (chunks_mentioning: 0.2 -> 0.1 ms a call, ~16 a question).
            try:
                self.db.executescript(
                    "BEGIN; CREATE INDEX IF NOT EXISTS mentions_entity_chunk ON mentions(entity, chunk_id);"
                    " DROP INDEX mentions_entity; COMMIT;"
                )
            except sqlite3.OperationalError:  # a read-only or busy catalog: the old index still serves
                if self.db.in_transaction:
                    self.db.execute("ROLLBACK")
        commit.ensure_schema(self.db)
        anchors.ensure_schema(self.db)
        versions.ensure_schema(self.db)  # versions, parent chunks
        packs.ensure_schema(self.db)  # which pack each document came from

    @property
    def db(self) -> sqlite3.Connection:
        conn = getattr(self._local, "db", None)
        if conn is None and self.postgres:
            from retrieval.catalog.postgres_catalog import CatalogConnection

            conn = CatalogConnection(*self.postgres)
            with self._connections_lock:
                self._connections.append(conn)
            self._local.db = conn
        elif conn is None:
            conn = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None, timeout=30)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute("PRAGMA foreign_keys=ON")
            with self._connections_lock:
                self._connections.append(conn)
            self._local.db = conn
        return conn

    def point_to(self, target: Path) -> bool:
        """The catalog becomes `target`, a new file beside it (a shared knowledge base's restore,
        `catalog_file.point`): this process's connections are closed and the next ones open `target`.
        Call with no thread using the catalog (`kb.readers.exclusive()`). False, with nothing changed and
        the connections open, where the data dir's file system has no symbolic links."""
        if self.postgres:
            return False
        try:
            staged = stage_link(self.path, Path(target))
        except OSError:
            return False
        self.close()
        point(self.path, Path(target), staged)
        return True

    def close(self) -> None:
        with self._connections_lock:
            for conn in self._connections:
                conn.close()
            self._connections.clear()
        self._local = threading.local()

    # -- writes (callers wrap several in `transaction()`) ------------------------------------
    def transaction(self):
        return _Transaction(self.db)

    def document_by_source(self, source: str) -> Document | None:
        row = self.db.execute(
            "SELECT doc_id, source, title, sha256, version, n_chunks FROM documents WHERE source = ?",
            (source,),
        ).fetchone()
        return Document(*row) if row else None

    def put_document(self, doc: Document, chunks: Sequence[Chunk]) -> None:
        self.db.execute("DELETE FROM documents WHERE doc_id = ?", (doc.doc_id,))
        self.db.execute(
            # Columns named: other modules add columns (`ensure_schema`), which a bare VALUES list would miss.
            "INSERT INTO documents (doc_id, source, title, sha256, version, effective_date, ingested_at, n_chunks)"
            " VALUES (?, ?, ?, ?, ?, NULL, ?, ?)",
            (doc.doc_id, doc.source, doc.title, doc.sha256, doc.version, time.time(), doc.n_chunks),
        )
        self.db.executemany(
            "INSERT INTO chunks VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                (c.chunk_id, c.doc_id, c.ordinal, c.parent_id, c.section, c.text, c.line_start, c.line_end, c.sha256)
                for c in chunks
            ],
        )

    def delete_document(self, doc_id: str) -> list[str]:
        ids = [r[0] for r in self.db.execute("SELECT chunk_id FROM chunks WHERE doc_id = ?", (doc_id,))]
        self.db.execute("DELETE FROM documents WHERE doc_id = ?", (doc_id,))
        return ids

    def put_mentions(self, chunk_id: str, mentions: Iterable[Mention]) -> None:
        self.db.executemany(
            "INSERT INTO mentions VALUES (?, ?, ?, ?, ?)",
            [(chunk_id, m.entity, m.surface, m.start, m.end) for m in mentions],
        )

    def put_about(self, doc_id: str, entities: Iterable[str]) -> None:
        self.db.executemany("INSERT OR IGNORE INTO about VALUES (?, ?)", [(doc_id, e) for e in entities])

    def clear_links(self) -> None:
        self.db.execute("DELETE FROM mentions")
        self.db.execute("DELETE FROM about")

    def add_index_words(self, words: Iterable[str]) -> None:
        self.db.executemany("INSERT OR IGNORE INTO index_words VALUES (?)", [(w,) for w in words])

    def index_words(self) -> set[str]:
        """The user-dictionary words the text index was cut with (see `retrieval.write_path.sync_index_words`)."""
        return {row[0] for row in self.db.execute("SELECT word FROM index_words")}

    # -- reads ----------------------------------------------------------------------------------
    def chunks(self, chunk_ids: Sequence[str]) -> dict[str, Chunk]:
        out: dict[str, Chunk] = {}
        for i in range(0, len(chunk_ids), 500):
            part = list(chunk_ids[i : i + 500])
            rows = self.db.execute(
                "SELECT c.chunk_id, c.doc_id, c.ordinal, d.title, c.section, c.text, c.line_start, c.line_end,"
                " c.sha256, c.parent_id FROM chunks c JOIN documents d USING (doc_id)"
                f" WHERE c.chunk_id IN ({','.join('?' * len(part))})",
                part,
            )
            for row in rows:
                out[row[0]] = Chunk(*row)
        return out

    def chunk_documents(self, chunk_ids: Sequence[str]) -> dict[str, str]:
        """Chunk id -> document id."""
        out: dict[str, str] = {}
        for i in range(0, len(chunk_ids), 500):
            part = list(chunk_ids[i : i + 500])
            out.update(self.db.execute(
                f"SELECT chunk_id, doc_id FROM chunks WHERE chunk_id IN ({','.join('?' * len(part))})", part
            ))
        return out

    def chunk_ids(self) -> set[str]:
        return {row[0] for row in self.db.execute("SELECT chunk_id FROM chunks")}

    def iter_chunks(self):
        yield from (
            Chunk(*row)
            for row in self.db.execute(
                "SELECT c.chunk_id, c.doc_id, c.ordinal, d.title, c.section, c.text, c.line_start, c.line_end,"
                " c.sha256, c.parent_id FROM chunks c JOIN documents d USING (doc_id) ORDER BY c.doc_id, c.ordinal"
            )
        )

    def documents(self) -> list[Document]:
        rows = self.db.execute("SELECT doc_id, source, title, sha256, version, n_chunks FROM documents ORDER BY source")
        return [Document(*r) for r in rows]

    def document(self, doc_id: str) -> Document | None:
        row = self.db.execute(
            "SELECT doc_id, source, title, sha256, version, n_chunks FROM documents WHERE doc_id = ?", (doc_id,)
        ).fetchone()
        return Document(*row) if row else None

    def doc_sources(self, doc_ids: Sequence[str]) -> dict[str, str]:
        ids = list(dict.fromkeys(doc_ids))
        out: dict[str, str] = {}
        for start in range(0, len(ids), 900):  # SQLite bounds the parameters of one statement
            batch = ids[start : start + 900]
            out.update(self.db.execute(
                f"SELECT doc_id, source FROM documents WHERE doc_id IN ({','.join('?' * len(batch))})", batch
            ))
        return out

    def chunks_about(self, entity: str) -> list[str]:
        """Chunk ids of the documents whose title is the entity, in document order."""
        rows = self.db.execute(
            "SELECT c.chunk_id FROM about a JOIN chunks c USING (doc_id) WHERE a.entity = ? ORDER BY c.doc_id, c.ordinal",
            (entity,),
        )
        return [r[0] for r in rows]

    def about_chunks(self, entity: str) -> list[tuple[str, str, int]]:
        """(chunk id, document id, ordinal) of the chunks of every document about the entity."""
        rows = self.db.execute(
            "SELECT c.chunk_id, c.doc_id, c.ordinal FROM about a JOIN chunks c USING (doc_id) WHERE a.entity = ?"
            " ORDER BY c.doc_id, c.ordinal",
            (entity,),
        )
        return [(r[0], r[1], r[2]) for r in rows]

    def chunks_mentioning(self, entity: str, limit: int = 50) -> list[tuple[str, int]]:
        """(chunk id, number of mentions) of chunks that mention the entity, most mentions first."""
        rows = self.db.execute(
            "SELECT chunk_id, COUNT(*) AS n FROM mentions WHERE entity = ? GROUP BY chunk_id ORDER BY n DESC, chunk_id LIMIT ?",
            (entity, limit),
        )
        return [(r[0], r[1]) for r in rows]

    def about_chunks_of(self, entities: Sequence[str]) -> dict[str, list[tuple[str, str, int]]]:
        """`about_chunks` of many entities in one statement per 500 (a question's expansion reaches ~50)."""
        return anchors.grouped_rows(self.db, "SELECT a.entity, c.chunk_id, c.doc_id, c.ordinal FROM about a JOIN chunks c USING (doc_id)"
                                 " WHERE a.entity IN ({}) ORDER BY a.entity, c.doc_id, c.ordinal", entities)

    def chunks_mentioning_of(self, entities: Sequence[str], limit: int = 50) -> dict[str, list[tuple[str, int]]]:
        """`chunks_mentioning` of many entities in one statement per 500."""
        return anchors.grouped_rows(self.db, "SELECT entity, chunk_id, n FROM (SELECT entity, chunk_id, COUNT(*) AS n, ROW_NUMBER()"
                                 " OVER (PARTITION BY entity ORDER BY COUNT(*) DESC, chunk_id) AS r FROM mentions"
                                 " WHERE entity IN ({}) GROUP BY entity, chunk_id) AS ranked WHERE r <= ? ORDER BY entity, r",
                        entities, (limit,))

    def mentions_about(self, entity: str, limit: int = 200) -> list[tuple[str, str, int, int]]:
        """(entity, chunk id, start, end) of mentions in the documents about `entity`, in text order."""
        rows = self.db.execute(
            "SELECT m.entity, m.chunk_id, m.start, m.\"end\" FROM about a JOIN chunks c USING (doc_id)"
            " JOIN mentions m USING (chunk_id) WHERE a.entity = ? ORDER BY c.doc_id, c.ordinal, m.start LIMIT ?",
            (entity, limit),
        )
        return [tuple(r) for r in rows]

    def mention_count(self, entity: str) -> int:
        """How many chunks mention the entity."""
        return self.db.execute("SELECT COUNT(DISTINCT chunk_id) FROM mentions WHERE entity = ?", (entity,)).fetchone()[0]

    def mention_counts(self) -> dict[str, int]:
        """Entity -> number of chunks that mention it (its 'document frequency')."""
        return dict(self.db.execute("SELECT entity, COUNT(DISTINCT chunk_id) FROM mentions GROUP BY entity"))

    def has_chunks(self) -> bool:
        return self.db.execute("SELECT 1 FROM chunks LIMIT 1").fetchone() is not None

    def stats(self) -> dict[str, int]:
        one = lambda sql: self.db.execute(sql).fetchone()[0]  # noqa: E731
        return {
            "documents": one("SELECT COUNT(*) FROM documents"),
            "chunks": one("SELECT COUNT(*) FROM chunks"),
            "mentions": one("SELECT COUNT(*) FROM mentions"),
            "linked_entities": one("SELECT COUNT(DISTINCT entity) FROM mentions"),
            "documents_about_an_entity": one("SELECT COUNT(DISTINCT doc_id) FROM about"),
        }


class _Transaction:
    """BEGIN/COMMIT, or a savepoint inside one already open (an ingest that re-cuts older chunks the
    first time a document changed records the new index words within its own transaction)."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db
        self.nested = False

    def __enter__(self):
        self.nested = self.db.in_transaction
        self.db.execute("SAVEPOINT nested" if self.nested else "BEGIN")
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type and not self.db.in_transaction:
            return  # SQLite rolled the whole transaction back itself (a full disk, an I/O error): nothing left to undo
        if self.nested:
            self.db.execute("ROLLBACK TO nested" if exc_type else "RELEASE nested")
            if exc_type:
                self.db.execute("RELEASE nested")
        else:
            self.db.execute("ROLLBACK" if exc_type else "COMMIT")

