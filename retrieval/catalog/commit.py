"""The commit record: a data dir in, its generation number, what the mentions were linked against, and the journal of a commit in flight out.

A write is a journaled commit (see `retrieval.writing.Commits`):

    1. take the data dir's write lock (`kg.lock.DataDirLock`)
    2. write `commit.json` (the journal: "a commit of <op> is in flight")
    3. change the stores that are the truth (SQLite catalog, graph.ttl, synonyms.txt), each atomically
    4. bring the derived stores in line (whoosh index, mentions, re-cut index words)
    5. bump the generation in the catalog, then remove the journal

A journal found by the next process that takes the lock means a writer died between 2 and 5:
it re-derives what is derived from the truth (`retrieval.consistency.repair`), so the result is
the state either before the write (the catalog had not committed) or after it. `KG_CRASH_AT=<op>:<step>`
makes the process exit at that step, so tests can kill a commit at every step.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import time
from pathlib import Path

__all__ = [
    "JOURNAL_FILE",
    "crash_point",
    "ensure_schema",
    "file_digest",
    "finish_journal",
    "generation",
    "get_state",
    "pending_journal",
    "set_state",
    "start_journal",
]

JOURNAL_FILE = "commit.json"
CRASH_ENV = "KG_CRASH_AT"
CRASH_EXIT = 86

_SCHEMA = "CREATE TABLE IF NOT EXISTS kb_state (key TEXT PRIMARY KEY, value TEXT NOT NULL)"


def ensure_schema(db: sqlite3.Connection) -> None:
    exists = db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'kb_state'").fetchone()
    if not exists:
        db.execute(_SCHEMA)


def get_state(db: sqlite3.Connection, key: str, default: str | None = None) -> str | None:
    row = db.execute("SELECT value FROM kb_state WHERE key = ?", (key,)).fetchone()
    return row[0] if row else default


def set_state(db: sqlite3.Connection, key: str, value: str) -> None:
    db.execute("INSERT INTO kb_state VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value", (key, value))


def generation(db: sqlite3.Connection) -> int:
    """The number of commits made to this data dir; a process that loaded an older one reloads."""
    return int(get_state(db, "generation", "0") or 0)


def bump_generation(db: sqlite3.Connection) -> int:
    new = generation(db) + 1
    set_state(db, "generation", str(new))
    return new


def file_digest(path: Path) -> str:
    """sha256 of a file's content ("" when it does not exist)."""
    h = hashlib.sha256()
    try:
        with Path(path).open("rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                h.update(block)
    except FileNotFoundError:
        return ""
    return h.hexdigest()


def start_journal(root: Path, op: str) -> None:
    path = Path(root) / JOURNAL_FILE
    tmp = path.with_suffix(".tmp")
    with tmp.open("w", encoding="utf-8") as fh:
        json.dump({"op": op, "pid": os.getpid(), "started": time.time()}, fh)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def pending_journal(root: Path) -> dict | None:
    path = Path(root) / JOURNAL_FILE
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError):
        return {"op": "unknown"}  # a journal cut short is still a commit in flight


def finish_journal(root: Path) -> None:
    (Path(root) / JOURNAL_FILE).unlink(missing_ok=True)
    Path(root, JOURNAL_FILE).with_suffix(".tmp").unlink(missing_ok=True)


def crash_point(op: str, step: str) -> None:
    """Exit at once (no cleanup, like a kill -9) when KG_CRASH_AT names this step of this operation."""
    if os.environ.get(CRASH_ENV) == f"{op}:{step}":
        os._exit(CRASH_EXIT)
