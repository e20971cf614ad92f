"""A full disk: a write stops with an error that says so (exit 74, HTTP 507), nothing half made stays, and the same
write goes through once there is space. And a knowledge base on a read-only mount is a clear error, not a traceback.

Two real ways to fill it: SQLite's own page limit on a connection (`PRAGMA max_page_count`, which makes SQLite
answer "database or disk is full" exactly as on a full disk), everywhere; and a small tmpfs mounted for the test,
where this process may mount one (root in a container that allows it), for the text index's files and the CLI.
"""

from __future__ import annotations

import os
import random
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import FIXTURE_DOCS, kg_process, make_settings
from fastapi.testclient import TestClient

from kg.errors import StorageError
from retrieval.pipeline import KnowledgeBase

WORDS = ["服务", "端口", "redis", "mysql", "超时", "告警", "节点", "备份", "恢复", "配置", "网关", "数据库", "连接池", "日志"]


def notes(folder: Path, count: int, sections: int = 12) -> Path:
    """`count` Markdown files of `sections` sections of generated text (~12 KB each at 12 sections)."""
    rng = random.Random(7)
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(count):
        body = "".join(f"## 节 {s}\n\n{''.join(rng.choice(WORDS) for _ in range(120))} 编号{i}-{s}。\n\n" for s in range(sections))
        (folder / f"n{i:03d}.md").write_text(f"# 文档 {i}\n\n{body}", encoding="utf-8")
    return folder


def fill_catalog(kb: KnowledgeBase, spare_pages: int = 8) -> None:
    """The catalog may grow by `spare_pages` pages more on this connection: SQLite's "database or disk is full" after."""
    pages = kb.store.db.execute("PRAGMA page_count").fetchone()[0]
    kb.store.db.execute(f"PRAGMA max_page_count = {pages + spare_pages}")


def counts(kb: KnowledgeBase) -> tuple[int, int]:
    return kb.stats()["documents"], kb.stats()["indexed_chunks"]


def test_an_ingest_that_fills_the_catalog_changes_nothing_and_the_same_ingest_then_works(tmp_path):
    kb = KnowledgeBase(make_settings(tmp_path / "kb"), create=True)
    try:
        kb.ingest_paths([FIXTURE_DOCS])
        before = counts(kb)
        fill_catalog(kb)
        with pytest.raises(StorageError) as error:
            kb.ingest_paths([notes(tmp_path / "more", 40)])
        # Before the fix SQLite's own rollback made the catalog's ROLLBACK fail, and that error hid this one.
        assert str(error.value) == (f"the disk of {kb.root} is full (database or disk is full): the ingest was stopped "
                                    "and nothing was changed; free some space and run it again")
        assert (error.value.status, error.value.exit_code) == (507, 74)
        assert counts(kb) == before
        assert kb.check().clean
        assert not (kb.root / "commit.json").exists()
        kb.store.db.execute("PRAGMA max_page_count = 1073741823")
        report = kb.ingest_paths([tmp_path / "more"])
        assert len(report.doc_ids) == 40 and counts(kb)[0] == before[0] + 40
        assert kb.check().clean
    finally:
        kb.close()


def test_embedding_that_fills_its_file_stops_with_the_disk_error(tmp_path):
    kb = KnowledgeBase(make_settings(tmp_path / "kb", embed_model="hash"), create=True)
    try:
        kb.ingest_paths([notes(tmp_path / "notes", 30)])
        store = kb.vectors.store
        store.start_model("hash-384")
        pages = store.db.execute("PRAGMA page_count").fetchone()[0]
        store.db.execute(f"PRAGMA max_page_count = {pages + 4}")
        import sqlite3

        with pytest.raises(sqlite3.OperationalError, match="database or disk is full"):  # not "cannot rollback"
            store.put([f"k{i}" for i in range(400)], __import__("numpy").ones((400, 384), dtype="float32"))
        assert store.missing(["k0"]) == ["k0"]  # the batch is absent, whole
    finally:
        kb.close()


# ---------------------------------------------------------------- a real full disk (a tmpfs), through the CLI


@pytest.fixture
def small_disk(tmp_path):
    """A 3 MB tmpfs mounted for the test (skipped where this process cannot mount one)."""
    if os.geteuid() != 0 or not shutil.which("mount"):
        pytest.skip("mounting a small tmpfs needs root and mount(8)")
    mount = tmp_path / "small"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=3m", "tmpfs", str(mount)], capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], capture_output=True)


def test_kg_ingest_on_a_full_disk_exits_74_and_leaves_the_knowledge_base_as_it_was(small_disk, tmp_path):
    data = small_disk / "kb"
    folder = notes(tmp_path / "notes", 300)  # ~3.6 MB of Markdown: its index does not fit in 3 MB
    assert kg_process("init", "--data-dir", str(data), cwd=tmp_path).returncode == 0
    done = kg_process("ingest", str(folder), "--data-dir", str(data), cwd=tmp_path)
    assert done.returncode == 74, done.stderr
    # Which store hits the full disk first (the catalog or the index) depends on how the disk fills.
    assert re.search(rf"error: the disk of {re.escape(str(data))} is full \((\[Errno 28\] No space left on device|database "
                     r"or disk is full)\): the ingest was stopped and nothing was changed; free some space and run it again\n$",
                     done.stderr), done.stderr
    assert "Traceback" not in done.stderr
    # What the failed write had put in the index folder is gone already: the space is the user's to use.
    assert sorted(p.name for p in (data / "index").iterdir()) == ["MAIN_WRITELOCK", "_MAIN_0.toc"]
    check = kg_process("check", "--data-dir", str(data), cwd=tmp_path)
    assert check.returncode == 0 and check.stdout.startswith("clean: 0 documents, 0 chunks"), check.stdout + check.stderr
    # With space, the same command works, and what the failed write left in the index folder is gone.
    subprocess.run(["mount", "-o", "remount,size=64m", str(small_disk)], check=True)
    again = kg_process("ingest", str(folder), "--data-dir", str(data), cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert "300 new" in again.stdout
    assert not [p.name for p in (data / "index").iterdir() if p.name.endswith(".tmp") or p.suffix in (".pst", ".trm")]
    assert kg_process("check", "--data-dir", str(data), cwd=tmp_path).returncode == 0



def fill_disk(mount: Path, leave: int) -> None:
    """A file that leaves `leave` bytes free on the file system of `mount`."""
    free = os.statvfs(mount).f_bavail * os.statvfs(mount).f_frsize
    (mount / "filler").write_bytes(b"\0" * max(0, free - leave))


def test_the_api_answers_a_full_disk_with_507_and_keeps_serving(small_disk):
    from api.app import create_app

    settings = make_settings(small_disk / "kb", api_token="secret")
    with TestClient(create_app(settings)) as client:
        fill_disk(small_disk, leave=64 * 1024)
        text = "".join(f"## 节 {s}\n\n" + "数据库连接池配置说明，超时与重试。" * 80 + "\n\n" for s in range(60))
        response = client.post("/documents", json={"source": "notes/big.md", "text": f"# 大文档\n\n{text}"},
                               headers={"Authorization": "Bearer secret"})
        assert response.status_code == 507, response.text
        error = response.json()["error"]
        assert error["type"] == "StorageError" and "No space left on device" in error["message"], error
        assert client.get("/documents").json()["documents"] == []
        assert client.post("/query", json={"query": "数据库连接池"}).status_code == 200
        assert sorted(p.name for p in (small_disk / "kb" / "index").iterdir() if not p.name.startswith("_MAIN_")) == \
            ["MAIN_WRITELOCK"]  # nothing of the failed write's segment is left taking space
        (small_disk / "filler").unlink()
        again = client.post("/documents", json={"source": "notes/big.md", "text": f"# 大文档\n\n{text}"},
                            headers={"Authorization": "Bearer secret"})
        assert again.status_code == 201, again.text


def test_a_knowledge_base_on_a_read_only_mount_is_a_clear_error(tmp_path):
    if os.geteuid() != 0 or not shutil.which("mount"):
        pytest.skip("a read-only bind mount needs root and mount(8)")
    kb = KnowledgeBase(make_settings(tmp_path / "kb"), create=True)
    kb.ingest_paths([FIXTURE_DOCS])
    kb.close()
    view = tmp_path / "read-only"
    view.mkdir()
    done = subprocess.run(["mount", "--bind", str(tmp_path / "kb"), str(view)], capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot bind-mount here: {done.stderr.strip()}")
    try:
        if subprocess.run(["mount", "-o", "remount,bind,ro", str(view)], capture_output=True).returncode != 0:
            pytest.skip("cannot make a bind mount read-only here")
        for command in (("query", "mysql-core"), ("ingest", str(FIXTURE_DOCS))):
            result = kg_process(*command, "--data-dir", str(view), cwd=tmp_path)
            assert result.returncode == 1, result.stderr
            assert result.stderr == (
                f"error: '{view}' is on a read-only file system: kgrag writes there even to answer (the catalog's SQLite "
                "journal, the write lock), so mount it writable, or copy the knowledge base somewhere writable\n")
    finally:
        subprocess.run(["umount", "-l", str(view)], capture_output=True)
