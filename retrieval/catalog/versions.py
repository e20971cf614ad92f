"""The versions part of the catalog (kb.sqlite): logical documents, their versions with effective dates, parent chunks, and which children each version holds; in: a cut document, out: what changed, what is in force at a date.

A child chunk's id is a content hash inside its document, so two versions that share a paragraph
share that child: it is indexed once, and a version lists its children in `version_chunks` (with
their positions in that version). A version is in force from `effective_from` (NULL: since always,
for a first version without a date) until the next version's `effective_from`. Children of no
version in force at a date are hidden from queries at that date; they stay in the index so that an
as-of query can find them. Deleting a document removes all of it. What a day hides and which
version answered a hit are read by `VersionsInForce` (retrieval/catalog/in_force.py).
"""

from __future__ import annotations

import datetime as dt
import json
import sqlite3
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from retrieval.catalog.in_force import VersionsInForce, version_json
from retrieval.types import Chunk, Document, ParentChunk, SourceDocument

__all__ = ["VersionCatalog", "VersionChange", "ensure_schema", "one_hit_per_parent", "one_hit_per_text"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS versions (
    version_id TEXT PRIMARY KEY, doc_id TEXT NOT NULL REFERENCES documents(doc_id) ON DELETE CASCADE,
    seq INTEGER NOT NULL, label TEXT NOT NULL, source TEXT NOT NULL, sha256 TEXT NOT NULL, title TEXT NOT NULL,
    effective_from TEXT, effective_to TEXT, explicit INTEGER NOT NULL DEFAULT 0,
    ingested_at REAL NOT NULL, n_chunks INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS versions_doc ON versions(doc_id);
CREATE INDEX IF NOT EXISTS versions_source ON versions(source);
CREATE TABLE IF NOT EXISTS version_chunks (
    version_id TEXT NOT NULL REFERENCES versions(version_id) ON DELETE CASCADE, chunk_id TEXT NOT NULL,
    ordinal INTEGER NOT NULL, parent_id TEXT NOT NULL, line_start INTEGER NOT NULL, line_end INTEGER NOT NULL,
    page INTEGER, PRIMARY KEY (version_id, chunk_id)
);
CREATE INDEX IF NOT EXISTS version_chunks_chunk ON version_chunks(chunk_id);
CREATE TABLE IF NOT EXISTS parents (
    parent_id TEXT PRIMARY KEY, doc_id TEXT NOT NULL REFERENCES documents(doc_id) ON DELETE CASCADE,
    section TEXT NOT NULL, text TEXT NOT NULL, line_start INTEGER NOT NULL, line_end INTEGER NOT NULL,
    page INTEGER, sha256 TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS parents_doc ON parents(doc_id);
"""
_NEW_COLUMNS = {
    "documents": {"doc_key": "TEXT", "format": "TEXT", "summary": "TEXT", "aliases": "TEXT", "tags": "TEXT"},
    "chunks": {"page": "INTEGER"},
}
# A knowledge base made before versions existed: each document becomes its own first version.
_BACKFILL = """
INSERT INTO versions SELECT 'v' || substr(doc_id, 2) || '-1', doc_id, 1, 'v1', source, sha256, title, NULL, NULL, 0,
       ingested_at, n_chunks FROM documents WHERE doc_id NOT IN (SELECT doc_id FROM versions);
INSERT OR IGNORE INTO version_chunks SELECT v.version_id, c.chunk_id, c.ordinal, c.parent_id, c.line_start, c.line_end,
       c.page FROM chunks c JOIN versions v USING (doc_id) WHERE v.seq = 1
       AND c.chunk_id NOT IN (SELECT chunk_id FROM version_chunks);
"""


# The versions that can hide a chunk (an ended one, a dated one), which every query's first look at the catalog asks for:
# small, where a scan of all versions cost ~90 ms at 300k chunks (retrieval/catalog/in_force.py reads them).
_HIDING = ("CREATE INDEX IF NOT EXISTS versions_ended ON versions(doc_id) WHERE effective_to IS NOT NULL;"
           "CREATE INDEX IF NOT EXISTS versions_dated ON versions(effective_from, doc_id) WHERE effective_from IS NOT NULL;")


def ensure_schema(db: sqlite3.Connection) -> None:
    db.executescript(_SCHEMA)
    _add_hiding_indexes(db)
    for table, columns in _NEW_COLUMNS.items():
        have = {row[1] for row in db.execute(f"PRAGMA table_info({table})")}
        for name, kind in columns.items():
            if name not in have:
                db.execute(f"ALTER TABLE {table} ADD COLUMN {name} {kind}")
    # Only a catalog from before versions has documents and no version at all (the backfill is one transaction,
    # and every write since adds a document with its version): two look-ups, not a walk of every document on
    # each open (~25 ms at 50k documents).
    if db.execute("SELECT NOT EXISTS (SELECT 1 FROM versions) AND EXISTS (SELECT 1 FROM documents)").fetchone()[0]:
        db.executescript("BEGIN;" + _BACKFILL + "COMMIT;")


def _add_hiding_indexes(db: sqlite3.Connection) -> None:
    """The hiding indexes on a catalog made before them, by the first process that can write it without waiting: a
    read-only catalog, or one a writer holds right now, answers the same without them (a scan), until a later open."""
    if db.execute("SELECT COUNT(*) FROM sqlite_master WHERE name IN ('versions_ended', 'versions_dated')").fetchone()[0] == 2:
        return
    (timeout,) = db.execute("PRAGMA busy_timeout").fetchone()
    db.execute("PRAGMA busy_timeout = 0")  # a query does not wait behind an ingest for an index
    try:
        db.executescript("BEGIN;" + _HIDING + "COMMIT;")
    except sqlite3.OperationalError:  # read-only, or locked by a writer
        if db.in_transaction:
            db.execute("ROLLBACK")
    finally:
        db.execute(f"PRAGMA busy_timeout = {int(timeout)}")


@dataclass
class VersionChange:
    """What adding a version did: children new to the document, carried over, dropped from the current one."""

    version_id: str
    label: str
    new_chunks: list[Chunk]
    carried: int
    retired: int
    replaced: int = 0  # earlier versions from the same source that this one replaced on the day they began
    dropped: Sequence[str] = ()  # their children no version holds any more: gone from the catalog (and the index)


class VersionCatalog:
    """SQL over the versions tables; callers hold `DocStore.transaction()` around writes."""

    def __init__(self, store) -> None:
        # The DocStore, not one connection: it hands each thread its own (a writer's open transaction
        # stays invisible to the queries of other threads), and a write must use the writer's.
        self._store = store
        # What a day's versions hide and show, read by every query (and its cache of the hidden chunks).
        self._in_force = VersionsInForce(store)

    @property
    def db(self) -> sqlite3.Connection:
        return self._store.db

    # -- writes --------------------------------------------------------------------------------
    def latest_from_source(self, doc_id: str, source: str) -> tuple[str, str | None, str] | None:
        """(sha256, effective_from, label) of the newest version ingested from `source`; None when an
        API post (`api:` source) came after it, so that re-ingesting the file restores its own text."""
        row = self.db.execute(
            "SELECT sha256, effective_from, label, explicit, seq FROM versions WHERE doc_id = ? AND source = ?"
            " ORDER BY seq DESC LIMIT 1", (doc_id, source)).fetchone()
        if row is None or self.db.execute("SELECT 1 FROM versions WHERE doc_id = ? AND seq > ? AND source LIKE 'api:%'",
                                          (doc_id, row[4])).fetchone():
            return None
        return (row[0], row[1] if row[3] else None, row[2])

    def sources(self, doc_id: str) -> list[str]:
        """The distinct sources the document's versions were read from (file paths, `api:` names)."""
        return [r[0] for r in self.db.execute("SELECT DISTINCT source FROM versions WHERE doc_id = ?", (doc_id,))]

    def add_version(self, doc: Document, src: SourceDocument, parents: Sequence[ParentChunk],
                    children: Sequence[Chunk], today: dt.date) -> VersionChange:
        db = self.db
        last = db.execute("SELECT MAX(seq) FROM versions WHERE doc_id = ?", (doc.doc_id,)).fetchone()[0] or 0
        # A document's first version (most of an ingest): nothing in force before it, nothing to chain or replace, so
        # five look-ups fewer (each a round trip with the catalog in PostgreSQL)
        first = last == 0
        before = set() if first else self._current_chunks(doc.doc_id, today.isoformat())
        seq = last + 1
        # A first version without a date has always been in force; a later one from the day it came.
        effective = src.effective_date or (None if seq == 1 else today.isoformat())
        label = src.version_label or f"v{seq}"
        version_id = f"v{doc.doc_id[1:]}-{seq}"
        meta = (src.doc_key, src.format, src.summary, json.dumps(list(src.aliases), ensure_ascii=False),
                json.dumps(list(src.tags), ensure_ascii=False))
        if db.execute("SELECT 1 FROM documents WHERE doc_id = ?", (doc.doc_id,)).fetchone():
            db.execute("UPDATE documents SET source = ?, title = ?, sha256 = ?, version = ?, effective_date = ?,"
                       " ingested_at = ?, n_chunks = ?, doc_key = ?, format = ?, summary = ?, aliases = ?, tags = ?"
                       " WHERE doc_id = ?",
                       (doc.source, doc.title, doc.sha256, seq, effective, time.time(), doc.n_chunks, *meta, doc.doc_id))
        else:
            db.execute("INSERT INTO documents (doc_id, source, title, sha256, version, effective_date, ingested_at,"
                       " n_chunks, doc_key, format, summary, aliases, tags) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
                       (doc.doc_id, doc.source, doc.title, doc.sha256, seq, effective, time.time(), doc.n_chunks, *meta))
        db.executemany("INSERT OR IGNORE INTO parents VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                       [(p.parent_id, p.doc_id, p.section, p.text, p.line_start, p.line_end, p.page, p.sha256)
                        for p in parents])
        known = {r[0] for r in db.execute("SELECT chunk_id FROM chunks WHERE doc_id = ?", (doc.doc_id,))}
        new = [c for c in children if c.chunk_id not in known]
        db.executemany("INSERT INTO chunks (chunk_id, doc_id, ordinal, parent_id, section, text, line_start, line_end,"
                       " sha256, page) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                       [(c.chunk_id, c.doc_id, c.ordinal, c.parent_id, c.section, c.text, c.line_start, c.line_end,
                         c.sha256, c.page) for c in new])
        # A carried child takes its place in the newest version (its lines may have moved).
        db.executemany("UPDATE chunks SET ordinal = ?, parent_id = ?, line_start = ?, line_end = ?, page = ?"
                       " WHERE chunk_id = ?",
                       [(c.ordinal, c.parent_id, c.line_start, c.line_end, c.page, c.chunk_id)
                        for c in children if c.chunk_id in known])
        db.execute("INSERT INTO versions VALUES (?, ?, ?, ?, ?, ?, ?, ?, NULL, ?, ?, ?)",
                   (version_id, doc.doc_id, seq, label, src.source, doc.sha256, doc.title, effective,
                    int(src.effective_date is not None), time.time(), len(children)))
        db.executemany("INSERT INTO version_chunks VALUES (?, ?, ?, ?, ?, ?, ?)",
                       [(version_id, c.chunk_id, c.ordinal, c.parent_id, c.line_start, c.line_end, c.page)
                        for c in children])
        if first:  # its one version runs from `effective` (always, when None) with no end
            replaced, dropped = 0, []
            after = {c.chunk_id for c in children} if (effective or "") <= today.isoformat() else set()
        else:
            self._chain(doc.doc_id)
            replaced, dropped = self._drop_replaced(doc.doc_id, src.source, seq)
            after = self._current_chunks(doc.doc_id, today.isoformat())
        return VersionChange(version_id, label, new, carried=len(children) - len(new),
                             retired=len(before - after - set(dropped)), replaced=replaced, dropped=dropped)

    def _drop_replaced(self, doc_id: str, source: str, seq: int) -> tuple[int, list[str]]:
        """Versions read from `source` before version `seq` that are in force on no day (the next began the day
        they did: a file saved twice a day, `kg ingest --watch`) go with the children only they held: no date can
        show them, and they would grow with every save. Another source's versions stay (two files claiming one
        document and one date are the user's to settle, and dropping one would make the next ingest re-add it)."""
        ids = [r[0] for r in self.db.execute(
            "SELECT version_id FROM versions WHERE doc_id = ? AND source = ? AND seq < ? AND effective_to IS NOT NULL"
            " AND effective_to <= COALESCE(effective_from, '')", (doc_id, source, seq))]
        return (len(ids), self.remove_versions(doc_id, ids)) if ids else (0, [])

    def _chain(self, doc_id: str) -> None:
        """Each version is in force until the next one (by effective date, then ingest order) starts."""
        rows = self.db.execute("SELECT version_id, effective_from FROM versions WHERE doc_id = ?"
                               " ORDER BY COALESCE(effective_from, ''), seq", (doc_id,)).fetchall()
        for (version_id, _), nxt in zip(rows, rows[1:] + [(None, None)], strict=True):
            end = nxt[1] if nxt[0] is not None else None
            if nxt[0] is not None and end is None:
                end = ""  # superseded by a later undated version: never in force
            self.db.execute("UPDATE versions SET effective_to = ? WHERE version_id = ?", (end, version_id))

    def remove_versions(self, doc_id: str, version_ids: Iterable[str]) -> list[str]:
        """Drop versions; children and parents no version holds any more go too. Returns removed chunk ids."""
        ids = list(version_ids)
        self.db.executemany("DELETE FROM versions WHERE version_id = ?", [(v,) for v in ids])
        if not self.db.execute("SELECT 1 FROM versions WHERE doc_id = ? LIMIT 1", (doc_id,)).fetchone():
            return self.delete_document(doc_id)
        # What the document's remaining versions hold (not every version's: a walk of the whole table, ~80 ms at 100k).
        held = "SELECT vc.{0} FROM version_chunks vc JOIN versions v USING (version_id) WHERE v.doc_id = ?"
        gone = [r[0] for r in self.db.execute(
            f"SELECT chunk_id FROM chunks WHERE doc_id = ? AND chunk_id NOT IN ({held.format('chunk_id')})",
            (doc_id, doc_id))]
        self.db.executemany("DELETE FROM chunks WHERE chunk_id = ?", [(c,) for c in gone])
        self.db.execute(f"DELETE FROM parents WHERE doc_id = ? AND parent_id NOT IN ({held.format('parent_id')})",
                        (doc_id, doc_id))
        newest = self.db.execute("SELECT seq, source, title, sha256, n_chunks FROM versions WHERE doc_id = ?"
                                 " ORDER BY seq DESC LIMIT 1", (doc_id,)).fetchone()
        self.db.execute("UPDATE documents SET version = ?, source = ?, title = ?, sha256 = ?, n_chunks = ?"
                        " WHERE doc_id = ?", (*newest, doc_id))
        self._chain(doc_id)
        return gone

    def delete_document(self, doc_id: str) -> list[str]:
        """Every row of the document (chunks, mentions, about, parents, versions cascade). Returns its chunk ids."""
        ids = [r[0] for r in self.db.execute("SELECT chunk_id FROM chunks WHERE doc_id = ?", (doc_id,))]
        version_ids = [r[0] for r in self.db.execute("SELECT version_id FROM versions WHERE doc_id = ?", (doc_id,))]
        self.db.executemany("DELETE FROM version_chunks WHERE version_id = ?", [(v,) for v in version_ids])
        self.db.execute("DELETE FROM documents WHERE doc_id = ?", (doc_id,))
        return ids

    def take_source(self, source: str, doc_id: str) -> list[str]:
        """Another document holds `source` (the file now declares an `id:`): its versions from that file go."""
        row = self.db.execute("SELECT doc_id FROM documents WHERE source = ? AND doc_id != ?", (source, doc_id)).fetchone()
        if row is None:
            return []
        other = row[0]
        ids = [r[0] for r in self.db.execute("SELECT version_id FROM versions WHERE doc_id = ? AND source = ?",
                                             (other, source))]
        return self.remove_versions(other, ids) if ids else self.delete_document(other)

    def versions_from_missing_sources(self, exists) -> dict[str, list[str]]:
        """doc id -> its versions whose source is a file path for which `exists(path)` is false."""
        out: dict[str, list[str]] = {}
        for version_id, doc_id, source in self.db.execute("SELECT version_id, doc_id, source FROM versions"):
            if not exists(source):
                out.setdefault(doc_id, []).append(version_id)
        return out

    # -- reads ---------------------------------------------------------------------------------
    def _current_chunks(self, doc_id: str, day: str) -> set[str]:
        return {r[0] for r in self.db.execute(
            "SELECT vc.chunk_id FROM version_chunks vc JOIN versions v USING (version_id) WHERE v.doc_id = ?"
            " AND COALESCE(v.effective_from, '') <= ? AND (v.effective_to IS NULL OR v.effective_to > ?)",
            (doc_id, day, day))}

    # What a day shows (every query asks): VersionsInForce (retrieval/catalog/in_force.py) reads it.
    def hidden_chunks(self, day: dt.date, keep_unborn: bool = False) -> set[str]:
        """Children of no version in force on `day`: queries skip them (see `VersionsInForce.hidden_chunks`)."""
        return self._in_force.hidden_chunks(day, keep_unborn)

    def in_force(self, chunk_ids: Sequence[str], day: dt.date) -> dict[str, tuple[dict, int, int, int | None, str]]:
        """chunk id -> (version json, line_start, line_end, page, parent id) in the version in force on `day`."""
        return self._in_force.in_force(chunk_ids, day)

    def parent_texts(self, parent_ids: Sequence[str]) -> dict[str, str]:
        return self._in_force.parent_texts(parent_ids)

    def annotate(self, hits: Sequence, day: dt.date) -> None:
        """Each hit gets the version that answered on `day`, its lines and page in it, and its parent's text."""
        self._in_force.annotate(hits, day)

    def parent_of(self, chunk_ids: Sequence[str]) -> dict[str, str]:
        ids = list(dict.fromkeys(chunk_ids))
        if not ids:
            return {}
        return dict(self.db.execute(f"SELECT chunk_id, parent_id FROM chunks WHERE chunk_id IN ({','.join('?' * len(ids))})", ids))

    def parent_text_keys(self, chunk_ids: Sequence[str]) -> dict[str, tuple[str, str]]:
        """Chunk id -> (the hash of its parent's text (its own id for a title-only chunk), its document): one key for
        every child of a parent, and one for two parents of the same text (a file kept twice, a backup folder's copy)."""
        ids = list(dict.fromkeys(chunk_ids))
        if not ids:
            return {}
        return {chunk_id: (key, doc_id) for chunk_id, key, doc_id in self.db.execute(
            "SELECT c.chunk_id, COALESCE(p.sha256, c.chunk_id), c.doc_id FROM chunks c"
            f" LEFT JOIN parents p ON p.parent_id = c.parent_id WHERE c.chunk_id IN ({','.join('?' * len(ids))})", ids)}

    def resolve(self, key: str) -> str | None:
        """A document id, a front matter `id:`/--doc-id, or a source (path) -> the document id."""
        for sql in ("SELECT doc_id FROM documents WHERE doc_id = ?", "SELECT doc_id FROM documents WHERE doc_key = ?",
                    "SELECT doc_id FROM documents WHERE source = ?", "SELECT doc_id FROM versions WHERE source = ?"):
            row = self.db.execute(sql, (key,)).fetchone()
            if row:
                return row[0]
        return None

    def titled(self, title: str) -> list[tuple[str, str, str]]:
        """(doc_id, title, source) of the documents whose title is `title` (case aside), by source."""
        return [tuple(r) for r in self.db.execute(
            "SELECT doc_id, title, source FROM documents WHERE title = ? COLLATE NOCASE ORDER BY source", (title.strip(),))]

    def versions(self, doc_id: str, day: dt.date) -> list[dict]:
        d = day.isoformat()
        rows = self.db.execute("SELECT version_id, label, effective_from, effective_to, seq, source, sha256, title,"
                               " ingested_at, n_chunks, explicit FROM versions WHERE doc_id = ? ORDER BY seq", (doc_id,))
        return [{**version_json(r), "seq": r[4], "source": r[5], "sha256": r[6], "title": r[7],
                 "ingested_at": dt.datetime.fromtimestamp(r[8], dt.UTC).isoformat(timespec="seconds"),
                 "chunks": r[9], "dated": bool(r[10]),
                 "in_force": (r[2] or "") <= d and (r[3] is None or r[3] > d)} for r in rows]

    def documents(self, day: dt.date, doc_id: str | None = None) -> list[dict]:
        d = day.isoformat()
        where = "WHERE d.doc_id = ?" if doc_id else ""
        rows = self.db.execute(
            "SELECT d.doc_id, d.title, d.source, COALESCE(d.format, 'md'), d.doc_key, d.summary, d.aliases, d.tags,"
            " (SELECT COUNT(*) FROM versions v WHERE v.doc_id = d.doc_id),"
            " (SELECT v.version_id || char(31) || v.label || char(31) || COALESCE(v.effective_from, '') || char(31)"
            "  || COALESCE(v.effective_to, '') || char(31) || v.n_chunks FROM versions v WHERE v.doc_id = d.doc_id"
            "  AND COALESCE(v.effective_from, '') <= ? AND (v.effective_to IS NULL OR v.effective_to > ?))"
            f" FROM documents d {where} ORDER BY d.source", (d, d, doc_id) if doc_id else (d, d))
        out = []
        for r in rows:
            version, chunks = None, 0
            if r[9]:
                vid, label, start, end, n = r[9].split("\x1f")
                version = {"version_id": vid, "label": label, "effective_from": start or None, "effective_to": end or None}
                chunks = int(n)
            out.append({"doc_id": r[0], "title": r[1], "source": r[2], "format": r[3], "chunks": chunks,
                        "version": version, "versions": r[8], "pack": None, "id": r[4], "summary": r[5] or "",
                        "aliases": json.loads(r[6] or "[]"), "tags": json.loads(r[7] or "[]")})
        return out

    def stats(self, day: dt.date) -> dict[str, int]:
        total = self.db.execute("SELECT COUNT(*) FROM chunks").fetchone()[0]
        hidden = len(self.hidden_chunks(day))
        return {"chunks": total - hidden, "retired_chunks": hidden,
                "versions": self.db.execute("SELECT COUNT(*) FROM versions").fetchone()[0]}

    def clear_about(self, doc_id: str) -> None:
        """Before a new version's title is matched against the entities again."""
        self.db.execute("DELETE FROM about WHERE doc_id = ?", (doc_id,))


def one_hit_per_text(ranked: Sequence, keys: dict[str, tuple[str, str]]) -> tuple[list, dict[str, list[str]]]:
    """Ranked items -> the best one of each parent text (`keys`: `parent_text_keys`), in order, and for each kept item
    the chunks of *other* documents holding the same text that gave way to it (their copies, said with the hit)."""
    kept: dict[str, str] = {}  # text -> the kept item's id
    out, copies = [], {}
    for item in ranked:
        key, doc = keys.get(item.id, (item.id, None))
        first = kept.get(key)
        if first is None:
            kept[key] = item.id
            out.append(item)
        elif doc is not None and doc != keys.get(first, ("", None))[1]:
            copies.setdefault(first, []).append(item.id)
    return out, copies


def one_hit_per_parent(ranked: Sequence, parent_of: dict[str, str]) -> list:
    """Ranked items (with an `id`, a child chunk id) -> the best one of each parent chunk, in order."""
    seen: set[str] = set()
    out = []
    for item in ranked:
        parent = parent_of.get(item.id) or item.id
        if parent in seen:
            continue
        seen.add(parent)
        out.append(item)
    return out
