"""What a one-paragraph edit must not pay for the size of the knowledge base (issue 25): opening the text index's
searcher and writer reads its segment files in place instead of copying them whole, and the catalog statements
of an edit find their rows through indexes instead of walking tables that grow with every document."""

from __future__ import annotations

import io
import os
import pickle
import random
import sqlite3
import subprocess
import sys
import time

import whoosh.filedb.structfile as structfile
from conftest import copy_fixture_corpus, make_settings

from retrieval.index.whoosh_files import ViewFile
from retrieval.index.whoosh_index import WhooshIndex
from retrieval.pipeline import KnowledgeBase
from retrieval.types import Chunk, SourceDocument

WORDS = [f"w{i:03d}" for i in range(400)] + ["缓存", "网关", "副本", "超时"]


def _chunks(n: int) -> list[Chunk]:
    rng = random.Random(25)
    return [Chunk(chunk_id=f"c{i}", doc_id=f"d{i}", ordinal=0, title=f"t{i % 7}", section="",
                  text=" ".join(rng.choice(WORDS) for _ in range(60)), line_start=1, line_end=1, sha256=f"h{i}")
            for i in range(n)]


def _age(path, seconds: int) -> None:
    past = time.time() - seconds
    for f in [path, *path.rglob("*")] if path.is_dir() else [path]:
        if f.is_file():
            os.utime(f, (past, past))


def _index_bytes(path) -> int:
    return sum(f.stat().st_size for f in path.iterdir() if f.suffix == ".seg")


def test_opening_the_index_and_writing_one_chunk_copies_no_segment(tmp_path, monkeypatch):
    index = WhooshIndex(tmp_path / "index")
    index.add_chunks(_chunks(600))
    index.commit()
    index.close()
    size = _index_bytes(tmp_path / "index")

    copied = []

    class CountingBytesIO(io.BytesIO):
        def __init__(self, initial=b""):
            copied.append(len(memoryview(initial).cast("B")) if initial else 0)
            super().__init__(initial)

    monkeypatch.setattr(structfile, "BytesIO", CountingBytesIO)
    index = WhooshIndex(tmp_path / "index")  # a searcher over every segment
    try:
        assert index.search([("w001", 1.0), ("w002", 1.0)], 5)  # reads postings through the in-place files
        index.add_chunks(_chunks(1))  # update_document: the writer opens its own searcher to delete the old copy
        index.commit()  # and a new searcher on the new generation
        assert index.doc_count() == 600
    finally:
        index.close()
    # Before: each of the three opens copied the terms and postings of every segment (~3x the index).
    assert sum(copied) < size / 100, (sum(copied), size)


def test_a_view_file_reads_as_a_bytes_file_does():
    payload = b"".join([pickle.dumps({"k": list(range(50))}, -1), b"line one\nline two\n", pickle.dumps((1, "二"), 0)])
    view, bio = ViewFile(memoryview(payload)), io.BytesIO(payload)
    for f in (view, bio):
        f.seek(0)
    assert pickle.load(view) == pickle.load(bio)
    assert view.tell() == bio.tell()
    assert (view.readline(), view.readline()) == (bio.readline(), bio.readline())
    assert pickle.load(view) == pickle.load(bio) == (1, "二")  # protocol 0: read line by line
    assert view.read() == bio.read() == b""
    assert view.seek(-4, 2) == bio.seek(-4, 2)
    assert view.read(10) == bio.read(10)
    view.seek(3)
    bio.seek(3)
    out_v, out_b = bytearray(7), bytearray(7)
    assert view.readinto(out_v) == bio.readinto(out_b) and out_v == out_b


# A statement that walks a table that grows with every document costs at least a few VM steps a row: with
# BULK documents in the catalog such a walk is far over this, a look-up through an index far under it.
BULK = 600
STEPS = 1_000


def _steps(db: sqlite3.Connection, sql: str) -> int:
    count = [0]

    def tick() -> int:
        count[0] += 1
        return 0

    db.set_progress_handler(tick, 1)
    try:
        db.execute(sql).fetchall()
    finally:
        db.set_progress_handler(None, 1)
    return count[0]


def test_no_catalog_statement_of_an_edit_walks_the_catalog(tmp_path, monkeypatch):
    docs, _ = copy_fixture_corpus(tmp_path)
    _age(docs, 3600)  # stamps old enough to be recorded, as for files edited a while ago
    data = tmp_path / "kb"
    with KnowledgeBase(make_settings(data), create=True) as kb:
        kb.ingest_paths([docs])
        kb.ingest_documents([SourceDocument(f"bulk/{i}.md", f"# Note {i}\n\nThe gateway {WORDS[i % 400]} note {i}.")
                             for i in range(BULK)])
    edited = next(docs.rglob("*.md"))
    edited.write_text(edited.read_text(encoding="utf-8") + "\n\nOne more paragraph: the gateway timeout is 9s.\n",
                      encoding="utf-8")
    _age(edited, 60)

    statements: list[str] = []
    connect = sqlite3.connect

    def traced(*args, **kwargs):
        conn = connect(*args, **kwargs)
        conn.set_trace_callback(statements.append)  # statements as run, their parameters inlined
        return conn

    monkeypatch.setattr(sqlite3, "connect", traced)
    with KnowledgeBase(make_settings(data)) as kb:  # opening is part of every `kg ingest`
        report = kb.ingest_paths([docs])
    monkeypatch.undo()
    assert report.updated == 1 and report.chunks_indexed >= 1
    reads = [sql for sql in dict.fromkeys(statements) if sql.lstrip().upper().startswith("SELECT")]
    assert len(reads) > 20
    with connect(data / "kb.sqlite") as db:
        # index_words is the graph's vocabulary, read whole once a process to find words taught since.
        costly = {sql: n for sql in reads if "index_words" not in sql and (n := _steps(db, sql)) > STEPS}
    assert costly == {}


def test_kg_ingest_of_an_edit_imports_no_numpy(tmp_path):
    """numpy (~0.17 s of a start-up) serves the query path's diversity and the vectors; an edit uses neither."""
    docs, _ = copy_fixture_corpus(tmp_path)
    script = ("import runpy, sys\nsys.argv = ['kg', 'ingest', sys.argv[1], '--data-dir', sys.argv[2], '-q']\n"
              "try:\n    runpy.run_module('kg.cli', run_name='__main__')\nexcept SystemExit:\n    pass\n"
              "print('numpy' in sys.modules)")
    for _ in range(2):  # a new knowledge base, then an edit of it
        done = subprocess.run([sys.executable, "-c", script, str(docs), str(tmp_path / "kb")], capture_output=True,
                              text=True, check=False)
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip().splitlines()[-1] == "False"
        edited = next(docs.rglob("*.md"))
        edited.write_text(edited.read_text(encoding="utf-8") + "\n\nOne more paragraph.\n", encoding="utf-8")
    assert (tmp_path / "kb" / "kb.sqlite").exists()


def test_an_edit_opens_each_segment_of_the_text_index_once(tmp_path, monkeypatch):
    """The writer opens every segment (its deletes look the old chunk up); a process that only writes opens no
    searcher besides, neither at start nor after its commit (the next read opens one)."""
    import whoosh.reading

    docs, _ = copy_fixture_corpus(tmp_path)
    data = tmp_path / "kb"
    with KnowledgeBase(make_settings(data), create=True) as kb:
        kb.ingest_paths([docs])
        for batch in range(3):  # one segment an ingest (each larger than the first tiers)
            kb.ingest_documents([SourceDocument(f"bulk/{batch}-{i}.md", f"# Note {batch} {i}\n\nThe gateway {WORDS[i]}.")
                                 for i in range(40 * (batch + 1))])
        segments = kb.index.segment_count()
    assert segments >= 3
    edited = next(docs.rglob("*.md"))
    edited.write_text(edited.read_text(encoding="utf-8") + "\n\nOne more paragraph: the gateway timeout is 9s.\n",
                      encoding="utf-8")

    opened = []
    original = whoosh.reading.SegmentReader.__init__

    def counting(self, storage, schema, segment, *args, **kwargs):
        opened.append(segment.segment_id())
        original(self, storage, schema, segment, *args, **kwargs)

    monkeypatch.setattr(whoosh.reading.SegmentReader, "__init__", counting)
    with KnowledgeBase(make_settings(data)) as kb:
        report = kb.ingest_paths([docs])
    monkeypatch.undo()
    assert report.updated == 1 and report.chunks_indexed >= 1
    assert len(opened) == segments, opened  # was three times: at open, in the writer, after the commit
    with KnowledgeBase(make_settings(data)) as kb:  # and the next read finds the edit
        assert any("9s" in h.text for h in kb.query("gateway timeout 9s", mode="bm25").hits)
