"""Which pack each document belongs to: a `pack` column on the catalog's documents, and the look-ups routing needs."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterable, Sequence
from pathlib import Path

from retrieval.catalog.anchors import grouped_rows

__all__ = ["PACKS_DIR", "PackStore", "chunk_packs", "documents_by_pack", "ensure_schema", "entity_packs", "mentioned", "outside_documents", "pack_documents", "packs_of", "set_pack"]

PACKS_DIR = "packs"  # DATA_DIR/packs/ID holds a pack's copy


def ensure_schema(db: sqlite3.Connection) -> None:
    """Add the `pack` column (NULL = no pack) to a catalog that lacks it; called from `DocStore.__init__`."""
    columns = {row[1] for row in db.execute("PRAGMA table_info(documents)")}
    if "pack" not in columns:
        db.execute("ALTER TABLE documents ADD COLUMN pack TEXT")
    db.execute("CREATE INDEX IF NOT EXISTS documents_pack ON documents(pack)")


def set_pack(db: sqlite3.Connection, pack: str | None, doc_ids: Sequence[str] = (), source_prefix: str | None = None) -> int:
    """Mark documents as belonging to `pack`: by id, and every document whose source starts with
    `source_prefix` (the pack's folder, so files re-ingested by a plain `kg ingest` stay in it)."""
    changed = 0
    ids = list(dict.fromkeys(doc_ids))
    for i in range(0, len(ids), 500):
        part = ids[i : i + 500]
        changed += db.execute(
            f"UPDATE documents SET pack = ? WHERE doc_id IN ({','.join('?' * len(part))})", [pack, *part]
        ).rowcount
    if source_prefix:
        pattern = source_prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
        changed += db.execute(
            "UPDATE documents SET pack = ? WHERE source LIKE ? ESCAPE '\\' AND pack IS NOT ?", (pack, pattern, pack)
        ).rowcount
    return changed


def packs_of(db: sqlite3.Connection, data_dir: Path, doc_ids: Iterable[str]) -> dict[str, str | None]:
    """Each document's pack (None: no pack, or not in the catalog): its `pack` column, or, for a document a pack's
    ingest is adding now (the column is set when that ingest ends), the pack folder its file lies in."""
    prefix = str((Path(data_dir) / PACKS_DIR).resolve()) + os.sep
    out: dict[str, str | None] = {}
    ids = list(dict.fromkeys(doc_ids))
    for i in range(0, len(ids), 500):
        part = ids[i : i + 500]
        for doc_id, pack, source in db.execute(
                f"SELECT doc_id, pack, source FROM documents WHERE doc_id IN ({','.join('?' * len(part))})", part):
            if pack is None and source and source.startswith(prefix):
                pack = source[len(prefix):].split(os.sep, 1)[0] or None
            out[doc_id] = pack
    return out


def pack_documents(db: sqlite3.Connection, packs: Iterable[str]) -> frozenset[str]:
    """Document ids of the given packs."""
    names = list(dict.fromkeys(packs))
    if not names:
        return frozenset()
    rows = db.execute(f"SELECT doc_id FROM documents WHERE pack IN ({','.join('?' * len(names))})", names)
    return frozenset(r[0] for r in rows)


def outside_documents(db: sqlite3.Connection) -> frozenset[str]:
    """Document ids of the documents in no pack (ingested with `kg ingest`, not `kg pack add`)."""
    return frozenset(r[0] for r in db.execute("SELECT doc_id FROM documents WHERE pack IS NULL"))


def documents_by_pack(db: sqlite3.Connection) -> dict[str | None, int]:
    """Pack id (None for documents outside every pack) -> number of documents."""
    return dict(db.execute("SELECT pack, COUNT(*) FROM documents GROUP BY pack"))


def pack_titles(db: sqlite3.Connection) -> dict[str, list[str]]:
    """pack -> the titles of its documents (routing: a question that names one is about that pack)."""
    out: dict[str, list[str]] = {}
    for pack, title in db.execute("SELECT pack, title FROM documents WHERE pack IS NOT NULL AND title != '' ORDER BY pack, title"):
        out.setdefault(pack, []).append(title)
    return out


def entity_packs(db: sqlite3.Connection, entities: Sequence[str]) -> dict[str, dict[str, int]]:
    """Entity IRI -> {pack: chunks of that pack that mention the entity or belong to a document about it}."""
    if not entities:
        return {}
    marks = ",".join("?" * len(entities))
    out: dict[str, dict[str, int]] = {}
    rows = db.execute(
        "SELECT m.entity, d.pack, COUNT(DISTINCT m.chunk_id) FROM mentions m JOIN chunks c USING (chunk_id)"
        f" JOIN documents d USING (doc_id) WHERE m.entity IN ({marks}) AND d.pack IS NOT NULL GROUP BY m.entity, d.pack",
        list(entities),
    )
    for entity, pack, n in rows:
        out.setdefault(entity, {})[pack] = n
    rows = db.execute(
        f"SELECT a.entity, d.pack, d.n_chunks FROM about a JOIN documents d USING (doc_id)"
        f" WHERE a.entity IN ({marks}) AND d.pack IS NOT NULL",
        list(entities),
    )
    for entity, pack, n in rows:
        counts = out.setdefault(entity, {})
        counts[pack] = counts.get(pack, 0) + n
    return out


def mentioned(db: sqlite3.Connection, entities: Sequence[str]) -> set[str]:
    """The entity IRIs among `entities` that some chunk mentions or some document is about, in a pack or not."""
    if not entities:
        return set()
    marks = ",".join("?" * len(entities))
    rows = db.execute(f"SELECT entity FROM mentions WHERE entity IN ({marks})"
                      f" UNION SELECT entity FROM about WHERE entity IN ({marks})", [*entities, *entities])
    return {entity for (entity,) in rows}


def chunk_packs(db: sqlite3.Connection, chunk_ids: Sequence[str]) -> dict[str, str | None]:
    """Chunk id -> the pack of its document (None outside every pack)."""
    out: dict[str, str | None] = {}
    ids = list(dict.fromkeys(chunk_ids))
    for i in range(0, len(ids), 500):
        part = ids[i : i + 500]
        out.update(db.execute(
            "SELECT c.chunk_id, d.pack FROM chunks c JOIN documents d USING (doc_id)"
            f" WHERE c.chunk_id IN ({','.join('?' * len(part))})", part,
        ))
    return out


class PackStore:
    """The catalog's reads that graph evidence uses, restricted to the documents of some packs: expansion
    inside the chosen packs counts an entity's mentions there, as it would in a knowledge base of those
    packs alone. Everything else is the wrapped `DocStore`'s."""

    def __init__(self, store, packs: Sequence[str]) -> None:
        self._store = store
        self.packs = tuple(packs)
        # No pack named: the documents outside every pack (a question no pack has a basis for searches those).
        self._in = f"d.pack IN ({','.join('?' * len(self.packs))})" if self.packs else "d.pack IS NULL"

    @property
    def db(self):
        return self._store.db  # the calling thread's connection (`DocStore.db`), read at each call

    def __getattr__(self, name: str):
        return getattr(self._store, name)

    def about_chunks(self, entity: str) -> list[tuple[str, str, int]]:
        rows = self.db.execute(
            "SELECT c.chunk_id, c.doc_id, c.ordinal FROM about a JOIN chunks c USING (doc_id) JOIN documents d USING (doc_id)"
            f" WHERE a.entity = ? AND {self._in} ORDER BY c.doc_id, c.ordinal", (entity, *self.packs))
        return [(r[0], r[1], r[2]) for r in rows]

    def chunks_about(self, entity: str) -> list[str]:
        return [cid for cid, _, _ in self.about_chunks(entity)]

    def chunks_mentioning(self, entity: str, limit: int = 50) -> list[tuple[str, int]]:
        rows = self.db.execute(
            "SELECT m.chunk_id, COUNT(*) AS n FROM mentions m JOIN chunks c USING (chunk_id) JOIN documents d USING (doc_id)"
            f" WHERE m.entity = ? AND {self._in} GROUP BY m.chunk_id ORDER BY n DESC, m.chunk_id LIMIT ?",
            (entity, *self.packs, limit))
        return [(r[0], r[1]) for r in rows]

    def about_chunks_of(self, entities: Sequence[str]) -> dict[str, list[tuple[str, str, int]]]:
        return grouped_rows(self.db, "SELECT a.entity, c.chunk_id, c.doc_id, c.ordinal FROM about a JOIN chunks c USING (doc_id)"
                                 f" JOIN documents d USING (doc_id) WHERE a.entity IN ({{}}) AND {self._in}"
                                 " ORDER BY a.entity, c.doc_id, c.ordinal", entities, self.packs)

    def chunks_mentioning_of(self, entities: Sequence[str], limit: int = 50) -> dict[str, list[tuple[str, int]]]:
        return grouped_rows(self.db, "SELECT entity, chunk_id, n FROM (SELECT m.entity AS entity, m.chunk_id AS chunk_id,"
                                 " COUNT(*) AS n, ROW_NUMBER() OVER (PARTITION BY m.entity ORDER BY COUNT(*) DESC, m.chunk_id)"
                                 " AS r FROM mentions m JOIN chunks c USING (chunk_id) JOIN documents d USING (doc_id)"
                                 f" WHERE m.entity IN ({{}}) AND {self._in} GROUP BY m.entity, m.chunk_id)"
                                 " AS ranked WHERE r <= ? ORDER BY entity, r", entities, (*self.packs, limit))

    def mention_count(self, entity: str) -> int:
        return self.db.execute(
            "SELECT COUNT(DISTINCT m.chunk_id) FROM mentions m JOIN chunks c USING (chunk_id) JOIN documents d USING (doc_id)"
            f" WHERE m.entity = ? AND {self._in}", (entity, *self.packs)).fetchone()[0]

    def mention_counts(self) -> dict[str, int]:
        return dict(self.db.execute(
            "SELECT m.entity, COUNT(DISTINCT m.chunk_id) FROM mentions m JOIN chunks c USING (chunk_id)"
            f" JOIN documents d USING (doc_id) WHERE {self._in} GROUP BY m.entity", self.packs))

    def mentions_about(self, entity: str, limit: int = 200) -> list[tuple[str, str, int, int]]:
        rows = self.db.execute(
            "SELECT m.entity, m.chunk_id, m.start, m.\"end\" FROM about a JOIN documents d USING (doc_id)"
            " JOIN chunks c USING (doc_id) JOIN mentions m USING (chunk_id)"
            f" WHERE a.entity = ? AND {self._in} ORDER BY c.doc_id, c.ordinal, m.start LIMIT ?", (entity, *self.packs, limit))
        return [tuple(r) for r in rows]

    def stats(self) -> dict[str, int]:
        chunks = self.db.execute(f"SELECT COUNT(*) FROM chunks c JOIN documents d USING (doc_id) WHERE {self._in}",
                                 self.packs).fetchone()[0]
        return {**self._store.stats(), "chunks": chunks}
