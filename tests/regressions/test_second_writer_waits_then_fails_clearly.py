"""Regression: a second writer on one data dir crashed with `database is locked` / whoosh LockError
tracebacks (and `kg import` had already changed graph.ttl). Now it waits for the data dir's write
lock, saying so, and after KG_WRITE_WAIT fails cleanly: CLI `error:` + exit 75, API 503 + Retry-After,
nothing applied."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from conftest import build_kb, make_settings
from fastapi.testclient import TestClient

from api.app import create_app
from kg.lock import DataDirLock


def _kg(*args: str, cwd: Path, **env: str) -> subprocess.CompletedProcess:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("KG_")} | env
    return subprocess.run([sys.executable, "-m", "kg.cli", *args], cwd=cwd, env=environ, capture_output=True,
                          text=True, encoding="utf-8", check=False, timeout=300)


def test_cli_writers_wait_then_fail_with_an_error_line_and_change_nothing(tmp_path):
    build_kb(tmp_path).close()
    (tmp_path / "more.csv").write_text("source,relation,target\nkafka-bus,dependsOn,mysql-core\n", encoding="utf-8")
    (tmp_path / "new.md").write_text("# heron\n\nheron 是新服务。\n", encoding="utf-8")
    graph_before = (tmp_path / "kb/graph.ttl").read_bytes()
    with DataDirLock(tmp_path / "kb", wait=0):  # another kg process is writing
        for args in (["import", "more.csv"], ["ingest", "new.md"]):
            done = _kg(*args, "--data-dir", "kb", "-q", cwd=tmp_path, KG_WRITE_WAIT="0.5")
            assert done.returncode == 75, done.stderr
            assert "Traceback" not in done.stderr
            lines = done.stderr.strip().splitlines()
            assert lines[0].startswith(f"waiting for another kg process (pid {os.getpid()}) to finish writing to kb")
            assert lines[-1] == (
                f"error: another kg process (pid {os.getpid()}) is writing to kb and kept its write lock for 0.5 s: "
                "try again when it has finished, or wait longer with KG_WRITE_WAIT=<seconds>"
            )
    assert (tmp_path / "kb/graph.ttl").read_bytes() == graph_before  # nothing applied
    # Readers never wait for the lock, and once it is free the same command works.
    assert "documents" in _kg("stats", "--data-dir", "kb", cwd=tmp_path).stdout
    done = _kg("ingest", "new.md", "--data-dir", "kb", "-q", cwd=tmp_path)
    assert done.returncode == 0 and done.stdout.startswith("1 new"), done.stderr


def test_api_writes_answer_503_with_retry_after_while_another_process_writes(tmp_path):
    with TestClient(create_app(make_settings(tmp_path / "kb", write_wait=0.3))) as client:
        with DataDirLock(tmp_path / "kb", wait=0):
            response = client.post("/documents", json={"text": "# heron\n\nheron nest", "source": "heron"})
            assert response.status_code == 503
            assert response.headers["retry-after"] == "1"
            error = response.json()["error"]
            assert error["type"] == "BusyError"
            assert error["message"].startswith("another kg process")
            # Queries go on meanwhile.
            assert client.post("/query", json={"query": "heron"}).status_code == 200
        response = client.post("/documents", json={"text": "# heron\n\nheron nest", "source": "heron"})
        assert response.status_code == 201
        assert [h["source"] for h in client.post("/query", json={"query": "heron"}).json()["hits"]] == ["api:heron"]
