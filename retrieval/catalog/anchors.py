"""Section anchors in SQLite: (entity, chunk, strength, reason) rows saying which sections are *about* an entity, and parent lookups.

The table is written at ingest (`retrieval.graph.anchors` decides the rows) and read by graph
expansion and `KnowledgeBase.entity()`; it lives beside the catalog's own tables in kb.sqlite.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence

__all__ = ["anchor_counts", "anchors_about", "chunk_parents", "clear_anchors", "document_sections", "ensure_schema",
           "put_anchors"]

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


def anchor_counts(db: sqlite3.Connection) -> int:
    return db.execute("SELECT COUNT(DISTINCT entity) FROM anchors").fetchone()[0]


def chunk_parents(db: sqlite3.Connection, chunk_ids: Sequence[str]) -> dict[str, str]:
    """Chunk id -> its parent: the section it belongs to (`parent_id`), else its document."""
    return _per_chunk(db, "SELECT chunk_id, COALESCE(NULLIF(parent_id, ''), doc_id) FROM chunks WHERE chunk_id IN", chunk_ids)


def document_sections(db: sqlite3.Connection, chunk_ids: Sequence[str]) -> dict[str, int]:
    """Chunk id -> how many sections (parents) its document has."""
    return _per_chunk(db, "SELECT c.chunk_id, (SELECT COUNT(DISTINCT s.parent_id) FROM chunks s WHERE s.doc_id = c.doc_id)"
                          " FROM chunks c WHERE c.chunk_id IN", chunk_ids)


def _per_chunk(db: sqlite3.Connection, select_in: str, chunk_ids: Sequence[str]) -> dict:
    """`select_in (?, ?, ...)` over the ids, 500 at a time (SQLite's variable limit), as a dict."""
    out: dict = {}
    for i in range(0, len(chunk_ids), 500):
        part = list(chunk_ids[i : i + 500])
        out.update(db.execute(f"{select_in} ({','.join('?' * len(part))})", part))
    return out
