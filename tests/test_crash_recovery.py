"""`kill -9` during `kg ingest`, then a re-run: the same documents, versions, chunks, mentions and index entries as an uninterrupted ingest."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import FIXTURE_RELATIONS, kg_in_new_process, make_settings

from retrieval.pipeline import KnowledgeBase

pytestmark = pytest.mark.slow


def _corpus(folder: Path, n: int = 250) -> None:
    folder.mkdir(parents=True)
    for i in range(n):
        body = "\n\n".join(
            f"## 第{j}节\n\n订单服务 order-service 的第{i}号说明第{j}段：redis-cluster 超时设置为 {i * 10 + j} 毫秒，"
            f"payment-service retries {j} times before giving up."
            for j in range(6)
        )
        (folder / f"doc-{i:03d}.md").write_text(f"# 文档 {i}\n\n{body}\n", encoding="utf-8")


def _state(data_dir: Path) -> dict:
    with KnowledgeBase(make_settings(data_dir)) as kb:
        db = kb.store.db
        rows = lambda sql: sorted(db.execute(sql).fetchall())  # noqa: E731
        with kb.index.ix.searcher() as searcher:
            indexed = sorted(fields["chunk_id"] for fields in searcher.all_stored_fields())
        return {
            "documents": rows("SELECT doc_id, source, title, sha256, version, n_chunks FROM documents"),
            "versions": rows("SELECT version_id, doc_id, seq, sha256, effective_from, effective_to FROM versions"),
            "chunks": rows("SELECT chunk_id, doc_id, parent_id, text, line_start, line_end FROM chunks"),
            "version_chunks": rows("SELECT version_id, chunk_id FROM version_chunks"),
            "parents": rows("SELECT parent_id, text FROM parents"),
            "mentions": rows('SELECT chunk_id, entity, start, "end" FROM mentions'),
            "about": rows("SELECT doc_id, entity FROM about"),
            "index": indexed,
        }


def _ingest(data_dir: Path, docs: Path, cwd: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "kg.cli", "ingest", str(docs), "--data-dir", str(data_dir), "-q"],
                            cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def test_a_killed_ingest_rerun_equals_an_uninterrupted_one(tmp_path):
    docs = tmp_path / "docs"
    _corpus(docs)
    reference, crashed = tmp_path / "reference", tmp_path / "crashed"
    for data_dir in (reference, crashed):
        kg_in_new_process("import", str(FIXTURE_RELATIONS), "--data-dir", str(data_dir), cwd=tmp_path)
    kg_in_new_process("ingest", str(docs), "--data-dir", str(reference), "-q", cwd=tmp_path)

    # The first kill waits for the event, not for time: the journal (commit.json) appears when the write
    # begins, so that kill lands mid-write on any machine. The others land wherever the ingest has got to
    # after a while (anywhere, or after the end: they add kill points, they assert nothing).
    journal = crashed / "commit.json"
    killed_mid_write = 0
    for delay in (None, 0.5, 1.5, 3.0):
        process = _ingest(crashed, docs, tmp_path)
        if delay is None:
            while process.poll() is None and not journal.exists():
                time.sleep(0.01)
        else:
            time.sleep(delay)
        if process.poll() is None:
            in_flight = journal.exists()
            os.kill(process.pid, signal.SIGKILL)
            killed_mid_write += in_flight
        process.wait()
    assert killed_mid_write >= 1
    kg_in_new_process("ingest", str(docs), "--data-dir", str(crashed), "-q", cwd=tmp_path)

    expected, got = _state(reference), _state(crashed)
    assert len(expected["documents"]) == 250 and expected["mentions"]
    for key in expected:
        assert got[key] == expected[key], key
    # And a further run changes nothing.
    again = kg_in_new_process("ingest", str(docs), "--data-dir", str(crashed), cwd=tmp_path)
    assert again.startswith("nothing changed: 250 document(s) already up to date")
