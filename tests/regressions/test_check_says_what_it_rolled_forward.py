"""Regression: `kg check` printed "clean" after opening the knowledge base had silently rolled forward a
commit that a killed process left half done: the one command meant to say what happened said nothing.
Real processes: the ingest is killed after its catalog commit (KG_CRASH_AT), then `kg check` runs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path


def _kg(*args: str, cwd: Path, crash_at: str | None = None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("KG_")}
    if crash_at:
        env["KG_CRASH_AT"] = crash_at
    return subprocess.run([sys.executable, "-m", "kg.cli", *args], cwd=cwd, env=env, capture_output=True, text=True,
                          encoding="utf-8", check=False, timeout=300)


def test_check_reports_the_commit_it_finished(tmp_path):
    from retrieval.catalog.commit import CRASH_EXIT as exit_code

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# A\n\nThe grebe index.\n", encoding="utf-8")
    killed = _kg("ingest", "docs", "--data-dir", "kb", cwd=tmp_path, crash_at="ingest:catalog")
    assert killed.returncode == exit_code, killed.stderr
    checked = _kg("check", "--data-dir", "kb", cwd=tmp_path)
    assert checked.returncode == 0, checked.stderr
    lines = checked.stdout.strip().splitlines()
    assert lines[0].startswith("recovered: finished the 'ingest' commit a killed process left half done"), lines
    assert lines[-1].startswith("recovered, now clean: "), lines
    again = _kg("check", "--json", "--data-dir", "kb", cwd=tmp_path)  # nothing left to finish
    report = json.loads(again.stdout)
    assert report["clean"] is True and report["recovered"] == []
    assert _kg("check", "--data-dir", "kb", cwd=tmp_path).stdout.startswith("clean: ")
    hits = json.loads(_kg("query", "grebe", "--json", "--data-dir", "kb", cwd=tmp_path).stdout)["hits"]
    assert [Path(h["source"]).name for h in hits] == ["a.md"]  # rolled forward: the catalog had committed
