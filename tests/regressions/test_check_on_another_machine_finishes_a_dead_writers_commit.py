"""Regression: on a knowledge base shared through PostgreSQL, a `kg ingest` killed after its text index commit
(before publishing) left rows in PostgreSQL's index that no published catalog has. Only the next *writer*
finished that commit: `kg check` on another machine reported "1 text index entr(y/ies) have no chunk in the
catalog (orphans)" and exited 1, naming neither the dead writer nor the cure. Now any process that opens the
knowledge base and gets the write lock finishes it, and `kg check` says what it recovered and who died."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from backends_servers import postgres_server


def _kg(env: dict, *args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kg.cli", *args], cwd=cwd, env=env, capture_output=True, text=True,
                          encoding="utf-8", check=False, timeout=600)


def test_check_on_machine_b_finishes_the_commit_a_killed_writer_on_machine_a_left(tmp_path):
    from retrieval.catalog.commit import CRASH_EXIT

    with postgres_server() as pg:
        if isinstance(pg, str):
            pytest.skip(pg)
        env = {**{k: v for k, v in os.environ.items() if not k.startswith("KG_")},
               "PYTHONPATH": os.pathsep.join(sys.path), "OMP_NUM_THREADS": "1", "KG_TEXT_BACKEND": "postgres",
               "KG_POSTGRES_DSN": pg.url, "KG_POSTGRES_SCHEMA": "dead_writer", "KG_WRITE_WAIT": "15"}
        a_dir, b_dir = tmp_path / "machine-a", tmp_path / "machine-b"
        for folder in (a_dir, b_dir):
            assert _kg(env, "init", "--data-dir", str(folder), cwd=tmp_path).returncode == 0
        (tmp_path / "grebe.md").write_text("# Grebe\n\nThe grebeledger settles at noon.\n", encoding="utf-8")
        killed = _kg({**env, "KG_CRASH_AT": "ingest:index"}, "ingest", "grebe.md", "--data-dir", str(a_dir), "-q",
                     cwd=tmp_path)
        assert killed.returncode == CRASH_EXIT, killed.stderr[-2000:]

        checked = _kg(env, "check", "--json", "--data-dir", str(b_dir), cwd=tmp_path)
        assert checked.returncode == 0, checked.stdout + checked.stderr[-2000:]
        report = json.loads(checked.stdout)
        assert report["clean"] is True and report["counts"]["indexed"] == 0, report
        assert len(report["recovered"]) == 1, report
        assert report["recovered"][0].startswith("finished the 'ingest' commit a killed process (kg pid "), report
        assert "1 orphan(s) removed" in report["recovered"][0], report

        # Machine A agrees: its unpublished write is undone, and nothing is left to recover anywhere.
        for folder in (a_dir, b_dir):
            again = _kg(env, "check", "--json", "--data-dir", str(folder), cwd=tmp_path)
            assert again.returncode == 0, again.stdout + again.stderr[-2000:]
            assert json.loads(again.stdout)["counts"]["documents"] == 0, again.stdout
