"""Regression: after the most ordinary edit (ingest a folder, change a file, ingest the folder again) `kg check`
said "not clean: 1 document(s) whose chunk count disagrees with their chunks" and exited 1, and `--repair` could
not make it clean. The check compared a document's chunk count (its newest version's) with all its chunks, which
include its earlier versions' (kept for questions about an earlier day). Real processes, the real CLI."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path


def _kg(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("KG_")}
    return subprocess.run([sys.executable, "-m", "kg.cli", *args], cwd=cwd, env=env, capture_output=True, text=True,
                          encoding="utf-8", check=False, timeout=300)


def test_an_edited_file_checks_clean_and_a_broken_count_is_still_found(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    note = docs / "pool.md"
    note.write_text("# Pool\n\nThe pool holds 20 connections.\n\n## Timeouts\n\nA borrow waits 3 seconds.\n",
                    encoding="utf-8")
    assert _kg("ingest", "docs", "--data-dir", "kb", cwd=tmp_path).returncode == 0
    note.write_text(note.read_text(encoding="utf-8") + "\nA borrow now waits 5 seconds.\n", encoding="utf-8")
    edited = _kg("ingest", "docs", "--data-dir", "kb", cwd=tmp_path)
    assert edited.returncode == 0, edited.stderr
    db = sqlite3.connect(tmp_path / "kb" / "kb.sqlite")
    with db:
        versions = db.execute("SELECT COUNT(*) FROM versions").fetchone()[0]
        chunks, newest = db.execute("SELECT (SELECT COUNT(*) FROM chunks), n_chunks FROM documents").fetchone()
    assert versions == 2 and chunks > newest  # the earlier version's chunk is kept beside the new one

    checked = _kg("check", "--data-dir", "kb", cwd=tmp_path)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert checked.stdout.startswith("clean: 1 documents"), checked.stdout

    # What the check is for is still found: a count that disagrees with the newest version, a chunk no version holds.
    with db:
        db.execute("UPDATE documents SET n_chunks = n_chunks + 1")
        db.execute("INSERT INTO chunks (chunk_id, doc_id, ordinal, parent_id, section, text, line_start, line_end,"
                   " sha256, page) SELECT 'c-ghost', doc_id, 99, parent_id, section, text, line_start, line_end,"
                   " sha256, page FROM chunks LIMIT 1")
    db.close()
    broken = json.loads(_kg("check", "--json", "--data-dir", "kb", cwd=tmp_path).stdout)
    assert broken["clean"] is False
    assert "1 document(s) whose chunk count disagrees with their newest version's chunks" in broken["problems"]
    assert "1 chunk(s) belong to no version of their document" in broken["problems"]
