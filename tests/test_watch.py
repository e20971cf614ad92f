"""`kg ingest --watch`: a running process keeps the knowledge base in step with the folder (new, changed and removed files)."""

from __future__ import annotations

import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow


def _wait_for(condition, timeout: float = 60.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            value = condition()
        except sqlite3.Error:  # the database is being created or written
            value = None
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError("the watching process did not catch up in time")


def _titles(db_path: Path) -> set[str]:
    if not db_path.exists():
        return set()
    with sqlite3.connect(db_path) as db:
        return {row[0] for row in db.execute("SELECT title FROM documents")}


def test_watch_follows_new_changed_and_removed_files(tmp_path):
    docs, kb = tmp_path / "docs", tmp_path / "kb"
    docs.mkdir()
    (docs / "a.md").write_text("# Alpha\n\nfirst note.\n", encoding="utf-8")
    (docs / "b.md").write_text("# Beta\n\nsecond note.\n", encoding="utf-8")
    process = subprocess.Popen(
        [sys.executable, "-m", "kg.cli", "ingest", str(docs), "--watch", "--interval", "0.3", "--data-dir", str(kb), "-q"],
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        db = kb / "kb.sqlite"
        _wait_for(lambda: _titles(db) == {"Alpha", "Beta"})
        time.sleep(0.5)  # the first look at the folder is taken after the first ingest
        (docs / "c.md").write_text("# Gamma\n\nthird note.\n", encoding="utf-8")
        (docs / "b.md").unlink()
        (docs / "a.md").write_text("# Alpha renamed\n\nfirst note, edited.\n", encoding="utf-8")
        _wait_for(lambda: _titles(db) == {"Alpha renamed", "Gamma"})
    finally:
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=30)
    assert process.returncode == 0, err
    assert "stopped watching" in err
    assert f"  removed {(docs / 'b.md').resolve()} (its file is gone)" in out
