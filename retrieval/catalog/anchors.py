"""Section anchors in SQLite: (entity, chunk, strength, reason) rows saying which sections are *about* an entity, and parent lookups.

The table is written at ingest (`retrieval.graph.anchors` decides the rows) and read by graph
expansion and `KnowledgeBase.entity()`; it lives beside the catalog's own tables in kb.sqlite.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence

__all__ = ["anchor_counts", "anchors_about", "anchors_about_many", "chunk_parents", "clear_anchors", "document_sections",
           "ensure_schema", "grouped_rows", "put_anchors"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS anchors (
    chunk_id TEXT NOT NULL REFERENCES chunks(chunk_id) ON DELETE CASCADE,
    entity TEXT NOT NULL, strength REAL NOT NULL, reason TEXT NOT NULL,
    PRIMARY KEY (entity, chunk_id)
);
CREATE INDEX IF NOT EXISTS anchors_chunk ON anchors(chunk_id);
"""


def ensure_schema(db: sqlite3.Connection) -> None:
    db.executescript(_SCHEMA)


def put_anchors(db: sqlite3.Connection, rows: Iterable[tuple[str, str, float, str]]) -> None:
    """(chunk id, entity, strength, reason) rows; the strongest reason per (entity, chunk) is kept."""
    db.executemany(
        "INSERT INTO anchors VALUES (?, ?, ?, ?) ON CONFLICT(entity, chunk_id) DO UPDATE SET"
        " strength = excluded.strength, reason = excluded.reason WHERE excluded.strength > anchors.strength",
        list(rows),
    )


def clear_anchors(db: sqlite3.Connection, chunk_ids: Sequence[str] | None = None) -> None:
    if chunk_ids is None:
        db.execute("DELETE FROM anchors")
        return
    for i in range(0, len(chunk_ids), 500):
        part = list(chunk_ids[i : i + 500])
        db.execute(f"DELETE FROM anchors WHERE chunk_id IN ({','.join('?' * len(part))})", part)


def anchors_about(db: sqlite3.Connection, entity: str, limit: int = 50) -> list[tuple[str, float, str]]:
    """(chunk id, strength, reason) of the sections about the entity, strongest first."""
    rows = db.execute(
        "SELECT a.chunk_id, a.strength, a.reason FROM anchors a JOIN chunks c USING (chunk_id)"
        " WHERE a.entity = ? ORDER BY a.strength DESC, c.doc_id, c.ordinal LIMIT ?",
        (entity, limit),
    )
    return [(r[0], r[1], r[2]) for r in rows]


def anchors_about_many(db: sqlite3.Connection, entities: Sequence[str], limit: int = 50) -> dict[str, list[tuple[str, float, str]]]:
    """`anchors_about` of many entities in one statement per 500 (a question's expansion reaches ~50)."""
    return grouped_rows(db, "SELECT entity, chunk_id, strength, reason FROM (SELECT a.entity AS entity, a.chunk_id AS chunk_id,"
                            " a.strength AS strength, a.reason AS reason, ROW_NUMBER() OVER (PARTITION BY a.entity"
                            " ORDER BY a.strength DESC, c.doc_id, c.ordinal) AS r FROM anchors a JOIN chunks c USING (chunk_id)"
                            " WHERE a.entity IN ({})) AS ranked WHERE r <= ? ORDER BY entity, r", entities, (limit,))


def anchor_counts(db: sqlite3.Connection) -> int:
    return db.execute("SELECT COUNT(DISTINCT entity) FROM anchors").fetchone()[0]


def chunk_parents(db: sqlite3.Connection, chunk_ids: Sequence[str]) -> dict[str, str]:
    """Chunk id -> its parent: the section it belongs to (`parent_id`), else its document."""
    return _per_chunk(db, "SELECT chunk_id, COALESCE(NULLIF(parent_id, ''), doc_id) FROM chunks WHERE chunk_id IN ({})", chunk_ids)


def document_outline(db: sqlite3.Connection, doc_id: str) -> list[tuple[str, str, str]]:
    """(chunk id, parent, section heading path) of each chunk of the document, in document order (every version's)."""
    return db.execute("SELECT chunk_id, COALESCE(NULLIF(parent_id, ''), doc_id), section FROM chunks"
                      " WHERE doc_id = ? ORDER BY ordinal", (doc_id,)).fetchall()


def document_sections(db: sqlite3.Connection, chunk_ids: Sequence[str]) -> dict[str, int]:
    """Chunk id -> how many sections (parents) its document has: each document counted once, not once per chunk."""
    return _per_chunk(db, "WITH wanted AS (SELECT chunk_id, doc_id FROM chunks WHERE chunk_id IN ({})),"
                          " counted AS (SELECT doc_id, COUNT(DISTINCT parent_id) AS n FROM chunks"
                          " WHERE doc_id IN (SELECT doc_id FROM wanted) GROUP BY doc_id)"
                          " SELECT w.chunk_id, n.n FROM wanted w JOIN counted n USING (doc_id)", chunk_ids)


def _per_chunk(db: sqlite3.Connection, select: str, chunk_ids: Sequence[str]) -> dict:
    """`select` (its `{}` the placeholders of up to 500 ids: SQLite's variable limit) over the ids, as a dict."""
    out: dict = {}
    for i in range(0, len(chunk_ids), 500):
        part = list(chunk_ids[i : i + 500])
        out.update(db.execute(select.format(",".join("?" * len(part))), part))
    return out


def grouped_rows(db: sqlite3.Connection, select: str, keys: Sequence[str], after: tuple = ()) -> dict[str, list[tuple]]:
    """Rows of `select` (its `{}` the placeholders of up to 500 keys, then the `after` parameters; its first column
    the key) grouped by key in the statement's order; every key present, empty when no row names it."""
    out: dict[str, list[tuple]] = {key: [] for key in keys}
    distinct = list(out)
    for i in range(0, len(distinct), 500):
        part = distinct[i : i + 500]
        for key, *rest in db.execute(select.format(",".join("?" * len(part))), (*part, *after)):
            out[key].append(tuple(rest))
    return out
