"""Files in, which of them are unchanged since their last ingest (same size, modification time and inode as recorded, the document still there) out.

An unchanged file is then neither read nor hashed, and a folder with no change at all is answered from the
catalog alone (`unchanged_folder`, used by `kg ingest` before it opens the knowledge base: no index, no
graph, no spaCy or whoosh import). A file is recorded only once its content was ingested, with the stat
taken before it was read (a write during the read leaves a stat that no longer matches, so the next ingest
reads the file again), and never while its modification time is within RACY_NS of the clock (an edit in
the same tick with the same size would otherwise go unseen: git's "racily clean" rule).
"""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

__all__ = ["CONTEXT_KEY", "context_of", "file_stamp", "gone_sources", "record", "source_of", "unchanged", "unchanged_folder"]

SCHEMA = """CREATE TABLE IF NOT EXISTS file_stats (
    source TEXT PRIMARY KEY, doc_id TEXT NOT NULL, size INTEGER NOT NULL, mtime_ns INTEGER NOT NULL, inode INTEGER NOT NULL
)"""
RACY_NS = 2_000_000_000
CONTEXT_KEY = "file_stats_context"  # kb_state: what the knowledge base around the files was when they were recorded
CATALOG = "kb.sqlite"
JOURNAL = "commit.json"

Stamp = tuple[int, int, int]  # size, mtime_ns, inode


def source_of(file: Path) -> str:
    """The source name `read_sources` gives a file (its resolved path)."""
    file = Path(file)
    if file.is_absolute() and not file.is_symlink() and ".." not in file.parts:
        return str(file)
    try:
        return str(file.resolve())
    except (OSError, RuntimeError):  # a symlink loop (a skipped file): its own name
        return os.path.abspath(file)


def file_stamp(file: Path) -> Stamp | None:
    """(size, mtime_ns, inode) of a regular file, or None when it cannot be trusted (racy, unreadable)."""
    try:
        st = os.stat(file)
    except OSError:
        return None
    if time.time_ns() - st.st_mtime_ns < RACY_NS:
        return None
    return st.st_size, st.st_mtime_ns, st.st_ino


def unchanged(db: sqlite3.Connection, stamps: Mapping[str, Stamp | None]) -> dict[str, str]:
    """Source -> doc id of each file whose stamp is the recorded one and whose document still has a version
    from that source (a deleted document's file is read again)."""
    found: dict[str, str] = {}
    try:
        for source, stamp in stamps.items():
            if stamp is None:
                continue
            row = db.execute(
                "SELECT f.doc_id FROM file_stats f WHERE f.source = ? AND f.size = ? AND f.mtime_ns = ? AND f.inode = ? "
                "AND EXISTS (SELECT 1 FROM versions v WHERE v.doc_id = f.doc_id AND v.source = f.source)",
                (source, *stamp)).fetchone()
            if row:
                found[source] = row[0]
    except sqlite3.OperationalError:  # a catalog from before the table
        return {}
    return found


def record(db: sqlite3.Connection, stamps: Mapping[str, Stamp | None], context: str) -> None:
    """Record the stamps of files just ingested (inside the write's transaction), with the doc id their
    latest version has, and the `context` they were recorded in (see `context_of`)."""
    db.execute(SCHEMA)
    rows = []
    for source, stamp in stamps.items():
        if stamp is None:
            db.execute("DELETE FROM file_stats WHERE source = ?", (source,))
            continue
        doc = db.execute("SELECT doc_id FROM versions WHERE source = ? ORDER BY ingested_at DESC, seq DESC LIMIT 1",
                         (source,)).fetchone()
        if doc:
            rows.append((source, doc[0], *stamp))
    db.executemany("INSERT INTO file_stats VALUES (?, ?, ?, ?, ?) ON CONFLICT (source) DO UPDATE SET doc_id = excluded.doc_id,"
                   " size = excluded.size, mtime_ns = excluded.mtime_ns, inode = excluded.inode", rows)
    db.execute("INSERT INTO kb_state VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
               (CONTEXT_KEY, context))


def context_of(root: Path) -> str:
    """What else an ingest depends on: graph.ttl and synonyms.txt as they are (size, mtime). An unchanged
    folder is answered from the catalog only while these are the recorded ones (the write path records
    "stale" instead while the text index needs `kg check --repair`, so that ingest keeps saying so)."""
    parts = []
    for name in ("graph.ttl", "synonyms.txt"):
        try:
            st = os.stat(Path(root) / name)
            parts.append(f"{st.st_size}:{st.st_mtime_ns}")
        except OSError:
            parts.append("-")
    return "|".join(parts)


def _read_only(root: Path, postgres: tuple[str, str] | None):
    """The catalog to read: its file in the data dir (read-only), or its tables in PostgreSQL (KG_CATALOG: `postgres`
    is (dsn, schema)); None when there is none yet."""
    if postgres:
        from retrieval.catalog.postgres_catalog import CatalogConnection

        try:
            return CatalogConnection(*postgres)
        except Exception:  # noqa: BLE001 - not answering: the caller opens the knowledge base, which says why
            return None
    catalog = Path(root) / CATALOG
    if not catalog.exists():
        return None
    try:
        return sqlite3.connect(f"file:{catalog}?mode=ro", uri=True)
    except sqlite3.Error:
        return None


def unchanged_folder(root: Path, files: Sequence[Path], postgres: tuple[str, str] | None = None) -> int | None:
    """How many files, when every one of them is unchanged since it was ingested and nothing else an ingest
    would do is pending (no interrupted commit, graph.ttl and synonyms.txt as recorded); else None."""
    root = Path(root)
    if not files or (root / JOURNAL).exists():
        return None
    db = _read_only(root, postgres)
    if db is None:
        return None
    try:
        row = db.execute("SELECT value FROM kb_state WHERE key = ?", (CONTEXT_KEY,)).fetchone()
        if not row or row[0] != context_of(root):
            return None
        stamps = {source_of(f): file_stamp(f) for f in files}
        return len(files) if len(unchanged(db, stamps)) == len(stamps) else None
    except sqlite3.Error:
        return None
    finally:
        db.close()


def gone_sources(root: Path, folders: Sequence[Path], present: Sequence[Path] = (),
                 left_out: Callable[[str], bool] | None = None, postgres: tuple[str, str] | None = None) -> list[str]:
    """The files under `folders` that versions in the catalog were read from and that no longer exist (or that
    `left_out` says the folder's ignore rules now leave out): their text still answers until `kg ingest --sync` (or
    `kg delete`) removes it. Read-only, from the catalog alone; `present` (the files just found there) are not looked
    at again."""
    roots = [str(Path(p).resolve()) for p in folders if Path(p).is_dir()]
    db = _read_only(root, postgres) if roots else None
    if db is None:
        return []
    prefixes = tuple(r.rstrip(os.sep) + os.sep for r in roots)
    try:
        # Only the sources under the folders, as a range of the source index (a prefix ends with the separator, and
        # every text starting with it sorts between it and the same text ending in the next character): the catalog
        # may hold hundreds of thousands of other sources, and this runs after every `kg ingest FOLDER`.
        sources = {row[0] for prefix in prefixes for row in db.execute(
            "SELECT DISTINCT source FROM versions WHERE source >= ? AND source < ?",
            (prefix, prefix[:-1] + chr(ord(prefix[-1]) + 1)))}
    except sqlite3.Error:
        return []
    finally:
        db.close()
    seen = {source_of(f) for f in present}
    return sorted(s for s in sources if s not in seen and (not os.path.isfile(s) or (left_out and left_out(s))))
