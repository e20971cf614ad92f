"""The catalog file of a shared knowledge base's data dir (`retrieval.catalog.catalog_file`), with real SQLite files:
the link kb.sqlite is pointed at a new file in one rename, a connection that had the old one keeps reading it, and
what killed restores leave is swept."""

from __future__ import annotations

import os
import shutil
import sqlite3
from pathlib import Path

from retrieval.catalog import catalog_file as cf
from retrieval.catalog.docstore import DocStore

PIECE = 4096


def _file(path: Path, rows: int) -> None:
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("CREATE TABLE IF NOT EXISTS t (id INTEGER PRIMARY KEY, text TEXT)")
    db.executemany("INSERT INTO t (text) VALUES (?)", [("正文" * 100,) for _ in range(rows)])
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()


def _count(db: sqlite3.Connection) -> int:
    return db.execute("SELECT COUNT(*) FROM t").fetchone()[0]


def test_pointing_the_link_swaps_the_file_for_new_connections_only(tmp_path):
    link = tmp_path / "kb.sqlite"
    _file(link, 10)  # a data dir's catalog as the embedded default leaves it: a plain file
    other = sqlite3.connect(link, isolation_level=None)  # another process, mid-read
    assert _count(other) == 10
    new = cf.new_target(tmp_path)
    shutil.copyfile(link, new)
    _file(new, 5)  # the restored catalog: 15 rows
    cf.point(link, new)
    assert link.is_symlink() and os.readlink(link) == new.name  # relative: the data dir can move
    probe = sqlite3.connect(link)
    assert _count(probe) == 15
    probe.close()
    assert _count(other) == 10  # the file it opened, gone from the folder but not from under it
    other.close()
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["kb.sqlite", new.name])

    newer = cf.new_target(tmp_path)
    shutil.copyfile(new, newer)
    cf.point(link, newer)  # a link to a link's target: the previous target goes, with its WAL
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["kb.sqlite", newer.name])


def test_a_docstore_reopens_on_the_new_file(tmp_path):
    link = tmp_path / "kb.sqlite"
    store = DocStore(link)
    assert store.db.execute("SELECT COUNT(*) FROM documents").fetchone()[0] == 0
    new = cf.new_target(tmp_path)
    copy = sqlite3.connect(new)
    store.db.backup(copy)
    copy.execute("INSERT INTO documents (doc_id, source, title, sha256, version, ingested_at, n_chunks) "
                 "VALUES ('d', 's', 't', 'h', 1, 0, 0)")
    copy.commit()
    copy.close()
    assert store.point_to(new)
    assert store.db.execute("SELECT COUNT(*) FROM documents").fetchone()[0] == 1
    assert cf.file_of(store.db) == new.resolve()
    store.close()


def test_without_symbolic_links_nothing_is_swapped_and_the_connections_stay_open(tmp_path, monkeypatch):
    store = DocStore(tmp_path / "kb.sqlite")
    db = store.db
    new = cf.new_target(tmp_path)
    shutil.copyfile(tmp_path / "kb.sqlite", new)

    def refused(src, dst):
        raise OSError(1, "Operation not permitted")  # as on a file system without symbolic links

    monkeypatch.setattr(os, "symlink", refused)
    assert not store.point_to(new)
    assert db.execute("SELECT COUNT(*) FROM documents").fetchone()[0] == 0  # still open: the caller copies through it
    assert not (tmp_path / "kb.sqlite").is_symlink()
    store.close()


def test_a_checkpoint_leaves_the_committed_state_in_the_file_alone(tmp_path):
    path = tmp_path / "kb.sqlite"
    _file(path, 3)
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("INSERT INTO t (text) VALUES ('x')")
    assert Path(str(path) + "-wal").stat().st_size > 0
    reader = sqlite3.connect(path, isolation_level=None)
    reader.execute("BEGIN")
    assert _count(reader) == 4  # a read transaction holds the WAL
    db.execute("INSERT INTO t (text) VALUES ('y')")
    # wait_ms=0: one attempt, no waiting, so the outcome is the reader's snapshot, not time: it cannot finish while
    # the reader is on an older snapshot, and it does once the reader is done
    assert not cf.checkpointed(db, wait_ms=0)
    reader.execute("COMMIT")
    assert cf.checkpointed(db, wait_ms=0)
    assert db.execute("PRAGMA busy_timeout").fetchone()[0] == 5000  # sqlite3's default (timeout=5.0), put back
    copy = tmp_path / "copy.sqlite"
    shutil.copyfile(path, copy)  # the file alone, without its WAL
    assert _count(sqlite3.connect(copy)) == 5


def test_a_sweep_removes_what_killed_restores_left_and_nothing_live(tmp_path):
    link = tmp_path / "kb.sqlite"
    live = cf.new_target(tmp_path)
    _file(live, 2)
    cf.point(link, live)
    dead = cf.new_target(tmp_path)
    for name in (dead.name, dead.name + "-wal", ".kgrag-shared-abc.sqlite", *cf.LEGACY, "kb.sqlite-shm"):
        (tmp_path / name).write_bytes(b"left")
    (tmp_path / "graph.ttl").write_text("", encoding="utf-8")
    cf.sweep(tmp_path, link)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["kb.sqlite", live.name, "graph.ttl"])
    assert _count(sqlite3.connect(link)) == 2


def test_piece_hashes_in_threads_are_the_pieces_in_order(tmp_path):
    import hashlib

    path = tmp_path / "blob"
    path.write_bytes(os.urandom(1024 * 300 + 17))  # 301 pieces of 1 KB: five tasks, the last piece short
    whole = path.read_bytes()
    expected = [hashlib.sha256(whole[i:i + 1024]).digest() for i in range(0, len(whole), 1024)]
    assert cf.piece_hashes(path, 1024) == expected
    assert cf.piece_hashes(path, 1024 * 1024) == [hashlib.sha256(whole).digest()]
    empty = tmp_path / "empty"
    empty.write_bytes(b"")
    assert cf.piece_hashes(empty, 1024) == []
