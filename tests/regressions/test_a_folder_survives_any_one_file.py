"""Regressions: one file stopped a whole folder ingest. A line over 1,000,000 characters (a Markdown
data-URI image) was a spaCy E088 traceback and none of the folder's good files went in (the API: a 500);
a symlink loop was a `RuntimeError` traceback with 0 files in; a FIFO named `x.md` hung the ingest for
good. And GBK / GB18030 notes (what Windows editors in China save) were skipped as "not UTF-8", though
the relation import reads GBK. Real CLI, one process per command."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading

import pytest
from conftest import make_settings
from fastapi.testclient import TestClient

from api.app import create_app

DATA_URI = "data:image/png;base64," + "iVBORw0KGgo" * 91_000  # 1,001,000 characters on one line


def _folder(tmp_path):
    docs = tmp_path / "notes"
    docs.mkdir()
    (docs / "good.md").write_text("# Good\n\nThe walrus cache holds sessions.\n", encoding="utf-8")
    (docs / "image.md").write_text(f"# Diagram\n\n![topology]({DATA_URI})\n\nThe pelican gateway fronts it.\n",
                                   encoding="utf-8")
    (docs / "gbk.md").write_bytes("# 旧笔记\n\n鹈鹕网关在前面。\n".encode("gbk"))
    (docs / "gb18030.txt").write_bytes("古籍𠮷字：鸬鹚缓存。\n".encode("gb18030"))  # 𠮷 is outside GBK
    (docs / "neither.md").write_bytes(b"# x\n\n\xff\xfe\xff")
    os.symlink("loop-b.md", docs / "loop-a.md")
    os.symlink("loop-a.md", docs / "loop-b.md")
    os.mkfifo(docs / "pipe.md")
    return docs


def _kg(*args, cwd):
    # A FIFO read would block for ever: bounded, so that the old code fails instead of hanging the suite.
    done = subprocess.run([sys.executable, "-m", "kg.cli", *args], cwd=cwd, capture_output=True, text=True,
                          encoding="utf-8", check=False, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


def test_every_other_file_is_ingested_and_each_skip_says_why(tmp_path):
    docs = _folder(tmp_path)
    kb = ["--data-dir", str(tmp_path / "kb")]
    report = _kg("ingest", "notes", "--json", *kb, cwd=tmp_path)
    assert report["added"] == 4
    assert {s["path"]: s["reason"] for s in report["skipped"]} == {
        str(docs / "loop-a.md"): "symlink loop: not followed",
        str(docs / "loop-b.md"): "symlink loop: not followed",
        str(docs / "pipe.md"): "a FIFO (named pipe), not a file: not read",
        str(docs / "neither.md"): "neither UTF-8, GBK/GB18030 nor Big5 text (byte 5); save the file as UTF-8 and ingest it again",
    }
    warnings = "\n".join(report["warnings"])
    assert f"{docs / 'image.md'}: 1 unbroken run(s) of 1,000+ letters and digits" in warnings
    assert f"{docs / 'gbk.md'}: read as GBK (it is not UTF-8)" in warnings
    assert f"{docs / 'gb18030.txt'}: read as GB18030 (it is not UTF-8)" in warnings
    for question, name in (("pelican gateway", "image.md"), ("鹈鹕网关", "gbk.md"), ("鸬鹚缓存", "gb18030.txt"),
                           ("walrus", "good.md")):
        hits = _kg("query", question, "--json", "--mode", "bm25", *kb, cwd=tmp_path)["hits"]
        assert hits and hits[0]["source"] == str(docs / name), (question, hits[:1])
    [hit] = [h for h in _kg("query", "古籍", "--json", "--mode", "bm25", *kb, cwd=tmp_path)["hits"]][:1]
    assert "古籍𠮷字" in hit["text"]


def test_a_data_uri_document_posted_to_the_api_is_ingested(tmp_path):
    with TestClient(create_app(make_settings(tmp_path / "kb"))) as client:
        text = f"# Diagram\n\n![topology]({DATA_URI})\n\nThe pelican gateway fronts it.\n"
        for fmt in ("md", "txt"):
            response = client.post("/documents", json={"text": text, "source": f"diagram-{fmt}", "format": fmt})
            assert response.status_code == 201, response.text[:500]
            assert "unbroken run(s)" in response.json()["warnings"][0]
        hits = client.post("/query", json={"query": "pelican gateway", "mode": "bm25"}).json()["hits"]
        assert {h["source"] for h in hits} == {"api:diagram-md", "api:diagram-txt"}
        assert all(len(h["text"]) < 1000 for h in hits)


def test_a_fifo_put_in_a_files_place_is_refused_not_read(tmp_path):
    """Listed as a file, replaced by a FIFO before it is read: the reader opens without waiting."""
    from kg.errors import InputError
    from retrieval.ingest.readers import read_source_file

    os.mkfifo(tmp_path / "late.md")
    outcome: list = []
    reader = threading.Thread(target=lambda: outcome.append(pytest.raises(InputError, read_source_file, tmp_path / "late.md")),
                              daemon=True)
    reader.start()
    reader.join(60)
    if reader.is_alive():  # the old reader blocks in open(); give it its writer so the thread ends
        with open(tmp_path / "late.md", "wb"):
            pass
        reader.join(10)
        pytest.fail("reading a FIFO blocked")
    assert "a FIFO (named pipe), not a file: not read" in str(outcome[0].value)
