"""The published catalog (`retrieval.catalog.shared`) against a real PostgreSQL: sent and fetched in pieces, so an
edit moves the few pieces it changed, and a server's data dir restores exactly what was published."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from backends_servers import postgres_server

from retrieval.catalog import shared
from retrieval.catalog.shared import CATALOG_FILE, IMAGE_FILE, SharedRecord


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
        pieces = (writer_dir / IMAGE_FILE).stat().st_size // shared.PIECE
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
        (reader_dir / IMAGE_FILE).write_bytes(b"damaged" * 1000)  # the local image is only a cache
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
