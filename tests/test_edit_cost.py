"""What a one-paragraph edit must not pay for the size of the knowledge base (issue 25): opening the text index's
searcher and writer reads its segment files in place instead of copying them whole."""

from __future__ import annotations

import io
import pickle
import random

import whoosh.filedb.structfile as structfile

from retrieval.index.whoosh_files import ViewFile
from retrieval.index.whoosh_index import WhooshIndex
from retrieval.types import Chunk

WORDS = [f"w{i:03d}" for i in range(400)] + ["缓存", "网关", "副本", "超时"]


def _chunks(n: int) -> list[Chunk]:
    rng = random.Random(25)
    return [Chunk(chunk_id=f"c{i}", doc_id=f"d{i}", ordinal=0, title=f"t{i % 7}", section="",
                  text=" ".join(rng.choice(WORDS) for _ in range(60)), line_start=1, line_end=1, sha256=f"h{i}")
            for i in range(n)]


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
