"""The published catalog (`retrieval.catalog.shared`) against a real PostgreSQL: sent and fetched in pieces, so an
edit moves the few pieces it changed, and a server's data dir restores exactly what was published, as a new file
the data dir's kb.sqlite is pointed at (`retrieval.catalog.catalog_file`) or, without that, through SQLite."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from backends_servers import postgres_server

from retrieval.catalog import shared
from retrieval.catalog.docstore import DocStore
from retrieval.catalog.shared import CATALOG_FILE, SharedRecord


@pytest.fixture(scope="module")
def pg_url():
    with postgres_server() as server:
        if isinstance(server, str):
            pytest.skip(server)
        yield server.url


def _catalog(folder: Path, rows: int) -> sqlite3.Connection:
    folder.mkdir(parents=True, exist_ok=True)
    db = sqlite3.connect(folder / CATALOG_FILE, isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("CREATE TABLE IF NOT EXISTS chunks (id INTEGER PRIMARY KEY, text TEXT)")
    db.executemany("INSERT INTO chunks (text) VALUES (?)", [(f"段落 {i} " + "正文" * 200,) for i in range(rows)])
    return db


def _content(db: sqlite3.Connection) -> list:
    return db.execute("SELECT * FROM chunks ORDER BY id").fetchall()


def test_an_edit_publishes_and_fetches_only_the_pieces_it_changed(pg_url, tmp_path, monkeypatch):
    monkeypatch.setattr(shared, "PIECE", 16 * 1024)
    writer_dir, reader_dir = tmp_path / "writer", tmp_path / "reader"
    writer = _catalog(writer_dir, 2000)  # ~2.5 MB: ~150 pieces
    (writer_dir / "graph.ttl").write_text("@prefix kg: <urn:kg:> .\n", encoding="utf-8")
    reader = _catalog(reader_dir, 0)
    record = SharedRecord(pg_url, "t_shared_pieces")
    try:
        sent = record.publish(writer_dir, writer, 1)
        pieces = (writer_dir / CATALOG_FILE).stat().st_size // shared.PIECE  # published from the file itself
        assert sent >= pieces > 100
        assert record.restore(reader_dir, reader) == 1
        assert record.fetched == sent
        assert _content(reader) == _content(writer)
        assert (reader_dir / "graph.ttl").read_text(encoding="utf-8") == "@prefix kg: <urn:kg:> .\n"

        writer.execute("UPDATE chunks SET text = 'edited' WHERE id = 1500")  # one paragraph
        sent = record.publish(writer_dir, writer, 2)
        assert 0 < sent <= 4
        assert record.restore(reader_dir, reader) == 2
        assert 0 < record.fetched <= 4
        assert _content(reader) == _content(writer)

        writer.execute("DELETE FROM chunks WHERE id > 100")
        writer.execute("VACUUM")  # the file shrinks: pieces past its end are dropped
        record.publish(writer_dir, writer, 3)
        assert record.restore(reader_dir, reader) == 3
        assert _content(reader) == _content(writer)
        assert len(_content(reader)) == 100
    finally:
        record.close()
        writer.close()
        reader.close()


def test_a_catalog_published_whole_by_an_older_kgrag_is_restored(pg_url, tmp_path):
    writer_dir, reader_dir = tmp_path / "writer", tmp_path / "reader"
    writer, reader = _catalog(writer_dir, 50), _catalog(reader_dir, 0)
    record = SharedRecord(pg_url, "t_shared_whole")
    try:
        writer.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        whole = (writer_dir / CATALOG_FILE).read_bytes()
        record._call(lambda db: (db.execute("INSERT INTO t_shared_whole.kb_files VALUES (%s, %s)", (CATALOG_FILE, whole)),
                                 db.execute("UPDATE t_shared_whole.kb_commit SET generation = 7")))
        assert record.restore(reader_dir, reader) == 7
        assert _content(reader) == _content(writer)
    finally:
        record.close()
        writer.close()
        reader.close()


def _leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith(".kgrag-shared-") or p.name.endswith("-journal"))



class _Server:
    """A writer's catalog, the published record and a server's data dir whose DocStore is swapped as a server's is."""

    def __init__(self, url: str, tmp_path: Path, namespace: str, rows: int) -> None:
        self.writer_dir, self.reader_dir = tmp_path / "writer", tmp_path / "reader"
        self.writer = _catalog(self.writer_dir, rows)
        self.record = SharedRecord(url, namespace)
        self.reader_dir.mkdir()
        self.store = DocStore(self.reader_dir / CATALOG_FILE)

    def swap(self, target) -> bool:
        return self.store.point_to(target)

    def publish(self, generation: int) -> int:
        return self.record.publish(self.writer_dir, self.writer, generation)

    def restore(self) -> int | None:
        return self.record.restore(self.reader_dir, self.store.db, swap=self.swap)

    def close(self) -> None:
        self.record.close()
        self.writer.close()
        self.store.close()


def test_a_restore_with_a_swap_points_the_data_dir_at_a_new_file(pg_url, tmp_path, monkeypatch):
    """A server's restore: the published catalog is built beside the old file, kb.sqlite points at it, the store's
    connections reopen on it; a connection another process holds reads the file it opened until it reopens."""
    monkeypatch.setattr(shared, "PIECE", 16 * 1024)
    kb = _Server(pg_url, tmp_path, "t_shared_swap", 800)
    try:
        kb.publish(1)
        assert kb.restore() == 1
        link = kb.reader_dir / CATALOG_FILE
        assert link.is_symlink() and not Path(str(link) + "-wal").exists()  # the file it replaced left no WAL
        assert _content(kb.store.db) == _content(kb.writer)
        elsewhere = sqlite3.connect(link)  # "another process", reading the file of generation 1
        assert _content(elsewhere) == _content(kb.writer)
        first = link.resolve()

        kb.writer.execute("UPDATE chunks SET text = 'edited' WHERE id = 700")
        sent = kb.publish(2)
        assert kb.restore() == 2
        assert 0 < kb.record.fetched == sent <= 4  # only what changed is fetched
        assert link.resolve() != first and not first.exists()  # the old file is gone from the folder...
        assert _content(kb.store.db) == _content(kb.writer)
        assert elsewhere.execute("SELECT text FROM chunks WHERE id = 700").fetchone()[0] != "edited"  # ...not from under it
        elsewhere.close()
        assert all(p.name.startswith(link.resolve().name) for p in kb.reader_dir.iterdir() if p.name.startswith("kb-"))
        assert _leftovers(kb.reader_dir) == [] and _leftovers(kb.writer_dir) == []
    finally:
        kb.close()


def test_a_damaged_local_catalog_is_mended_by_the_next_restore(pg_url, tmp_path, monkeypatch):
    """A restore hashes the copy it builds, not what it believes the old file holds: pieces of the local catalog
    that were damaged (or changed by another process) are fetched with those the new commit changed."""
    monkeypatch.setattr(shared, "PIECE", 16 * 1024)
    kb = _Server(pg_url, tmp_path, "t_shared_lies", 400)
    try:
        kb.publish(1)
        kb.restore()
        kb.writer.execute("UPDATE chunks SET text = 'edited' WHERE id = 300")
        sent = kb.publish(2)
        kb.store.close()
        with open(kb.reader_dir / CATALOG_FILE, "r+b") as fh:  # a piece the commit did not touch, damaged
            fh.seek(3 * shared.PIECE + 100)
            fh.write(b"\xff" * 200)
        assert kb.restore() == 2
        assert kb.record.fetched > sent
        assert _content(kb.store.db) == _content(kb.writer)
    finally:
        kb.close()


def test_where_symbolic_links_cannot_be_made_the_restore_copies_through_sqlite(pg_url, tmp_path, monkeypatch):
    """A data dir on a file system without symbolic links: the swap declines before closing anything, and the
    published catalog is copied into the open one as before (the data dir's kb.sqlite stays a plain file)."""
    import os

    monkeypatch.setattr(shared, "PIECE", 16 * 1024)
    kb = _Server(pg_url, tmp_path, "t_shared_nolinks", 300)

    def refused(src, dst):
        raise OSError(1, "Operation not permitted")

    monkeypatch.setattr(os, "symlink", refused)
    try:
        kb.publish(1)
        assert kb.restore() == 1
        assert not (kb.reader_dir / CATALOG_FILE).is_symlink()
        assert _content(kb.store.db) == _content(kb.writer)
        assert [p.name for p in kb.reader_dir.iterdir() if p.name.startswith("kb-")] == []  # the new file was dropped
    finally:
        kb.close()


def test_a_restore_on_a_disk_too_full_for_the_new_file_says_so_and_changes_nothing(pg_url, tmp_path, monkeypatch):
    import shutil
    from collections import namedtuple

    from kg.errors import BusyError

    monkeypatch.setattr(shared, "PIECE", 16 * 1024)
    kb = _Server(pg_url, tmp_path, "t_shared_full", 300)
    try:
        kb.publish(1)
        before = sorted(p.name for p in kb.reader_dir.iterdir())
        usage = namedtuple("usage", "total used free")
        monkeypatch.setattr(shutil, "disk_usage", lambda path: usage(10**9, 10**9 - 1000, 1000))
        with pytest.raises(BusyError, match="needs .* GB free beside the current one"):
            kb.restore()
        assert sorted(p.name for p in kb.reader_dir.iterdir()) == before  # no partial file left
        monkeypatch.undo()
        monkeypatch.setattr(shared, "PIECE", 16 * 1024)
        assert kb.restore() == 1 and _content(kb.store.db) == _content(kb.writer)
    finally:
        kb.close()
