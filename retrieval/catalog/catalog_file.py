"""The catalog file of a data dir on a shared knowledge base (KG_TEXT_BACKEND=postgres), as `shared.py` publishes and
restores it: cut in pieces and hashed, a new file built beside it and swapped in by a symbolic link.

On the backends the data dir's catalog is a local copy of the published one. Restoring it through SQLite (its backup
API into the open database) wrote the whole file twice, once to the WAL and once at the checkpoint: at 1M chunks
(a 2.4 GB catalog) 35 s of a follower's catch-up and most of a write that had to catch up first. Instead:

    kb.sqlite -> kb-<random>.sqlite        (a relative symbolic link; SQLite opens the target, and names its
                                            -wal and -shm after it)
    restore:  copy the target, hash the copy's pieces, write over those that differ from the published ones (each
              fetched piece checked against its hash), then point kb.sqlite at the copy (one rename) and reopen this
              process's connections
    publish:  checkpoint the WAL into the target, hash it and read the changed pieces from it directly

A connection another process still holds keeps reading the file it opened (and its own -wal), never the new one's.
A restore hashes its own private copy (not the old file, which another process may still change), so the new file
is the published one piece for piece.
"""

from __future__ import annotations

import hashlib
import os
import secrets
import shutil
import sqlite3
from pathlib import Path

__all__ = ["checkpointed", "copy_into", "file_of", "new_target", "piece_hashes", "point", "stage_link", "sweep"]

_TARGET = ("kb-", ".sqlite")  # kb.sqlite -> kb-<random>.sqlite
_SIDES = ("-wal", "-shm", "-journal")
LEGACY = ("shared-catalog.image", "shared-catalog.pieces")  # what older kgrags kept beside the catalog (a second copy of
# it; the hashes of its pieces)
TEMP_PREFIX = ".kgrag-shared-"


def _hash_range(path: Path, piece: int, start: int, stop: int) -> list[bytes]:
    out = []
    with open(path, "rb") as fh:
        fh.seek(start * piece)
        for _ in range(start, stop):
            if not (chunk := fh.read(piece)):
                break
            out.append(hashlib.sha256(chunk).digest())
    return out


def piece_hashes(path: Path, piece: int) -> list[bytes]:
    """The sha256 of each piece of the file, hashed by a few threads (hashlib lets go of the GIL: at 1M chunks the
    2.4 GB catalog took 1.1 s on 2 cores against 2.2-4.2 s in one thread)."""
    count = -(-os.path.getsize(path) // piece)
    span = 64  # pieces a task
    if count <= span:
        return _hash_range(path, piece, 0, count)
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(min(4, os.cpu_count() or 1)) as pool:
        parts = pool.map(lambda start: _hash_range(path, piece, start, min(count, start + span)), range(0, count, span))
        return [digest for part in parts for digest in part]


def file_of(catalog: sqlite3.Connection) -> Path | None:
    """The file this connection has open (SQLite resolves the link when it opens)."""
    for _, name, filename in catalog.execute("PRAGMA database_list"):
        if name == "main" and filename:
            return Path(filename)
    return None


def checkpointed(catalog: sqlite3.Connection, wait_ms: int = 5000) -> bool:
    """Every commit moved from the WAL into the database file (so the file alone is the committed state); False when
    readers kept it from finishing within `wait_ms` (or the catalog is not in WAL mode)."""
    (before,) = catalog.execute("PRAGMA busy_timeout").fetchone()
    catalog.execute(f"PRAGMA busy_timeout = {int(wait_ms)}")
    try:
        busy, log, done = catalog.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
    except sqlite3.OperationalError:
        return False
    finally:
        catalog.execute(f"PRAGMA busy_timeout = {int(before)}")
    return busy == 0 and log != -1 and log == done


def new_target(root: Path) -> Path:
    return Path(root) / f"{_TARGET[0]}{secrets.token_hex(8)}{_TARGET[1]}"


def _fsync_dir(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def stage_link(link: Path, target: Path) -> Path:
    """A new relative link to `target` beside `link`, for `point`; OSError where the file system has no symbolic links."""
    tmp = link.with_name(f"{TEMP_PREFIX}{secrets.token_hex(8)}.link")
    os.symlink(target.name, tmp)
    return tmp


def point(link: Path, target: Path, staged: Path | None = None) -> None:
    """`link` (kb.sqlite, a file or a link) becomes a relative link to `target` (in the same folder; `staged`: made
    by `stage_link`), in one rename; the file it named goes (a process that has it open reads on until it reopens),
    with its -wal and -shm."""
    before = link.resolve() if link.is_symlink() else link
    tmp = staged or stage_link(link, target)
    try:
        os.replace(tmp, link)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    _fsync_dir(link.parent)
    if before.name != target.name:
        for side in ("",) + _SIDES if before != link else _SIDES:
            before.with_name(before.name + side).unlink(missing_ok=True)


def sweep(root: Path, link: Path) -> None:
    """What a killed restore or publish left behind, catalog files the link no longer points at, and what older kgrags
    kept beside the catalog. Call with the write lock held (no other process of this data dir is restoring or publishing)."""
    root = Path(root)
    current = link.resolve().name if link.is_symlink() else None
    for path in root.iterdir():
        name = path.name
        base = next((name[:-len(s)] for s in _SIDES if name.endswith(s)), name)
        stale_target = base.startswith(_TARGET[0]) and base.endswith(_TARGET[1]) and base != current
        if name.startswith(TEMP_PREFIX) or stale_target or name in LEGACY:
            path.unlink(missing_ok=True)
    if current is not None:  # kb.sqlite became a link: a WAL left by the file it replaced is nobody's
        for side in _SIDES:
            link.with_name(link.name + side).unlink(missing_ok=True)


def copy_into(source: Path | None, target: Path) -> None:
    """`target` starts as a copy of `source` (nothing: empty)."""
    if source is not None and source.exists():
        shutil.copyfile(source, target)
    else:
        target.write_bytes(b"")
