"""Regression: `kg versions` and `kg delete` did not accept a document's title, the name a person knows it by
(`kg documents` shows titles first). Now a title (case aside) names the document when one document has it; a
title several documents share is an error that lists them, and removes nothing. The real CLI through click's
runner, in this process (English notes and no relation table: nothing a later test would see)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from click.testing import CliRunner

from kg.cli import cli


class _Done:
    def __init__(self, result) -> None:
        self.returncode, self.stdout, self.stderr = result.exit_code, result.stdout, result.stderr


def kg_run(*args: str, cwd: Path) -> _Done:
    here = Path.cwd()
    os.chdir(cwd)
    try:
        return _Done(CliRunner().invoke(cli, list(args)))
    finally:
        os.chdir(here)


def kg_ok(*args: str, cwd: Path) -> str:
    done = kg_run(*args, cwd=cwd)
    assert done.returncode == 0, done.stderr
    return done.stdout


def _notes(root: Path) -> None:
    for name, text in {"a/setup.md": "# Setup\n\nInstall the agent on the gateway.\n",
                       "b/setup.md": "# Setup\n\nFlash the firmware before the first boot.\n",
                       "osprey.md": "# Osprey\n\nThe osprey nests on the cliff.\n"}.items():
        (root / "notes" / name).parent.mkdir(parents=True, exist_ok=True)
        (root / "notes" / name).write_text(text, encoding="utf-8")


def test_a_title_names_its_document_and_a_shared_title_lists_the_candidates(tmp_path: Path) -> None:
    _notes(tmp_path)
    kb = ["--data-dir", str(tmp_path / "kb")]
    kg_ok("ingest", "notes", "-q", *kb, cwd=tmp_path)

    listed = json.loads(kg_ok("versions", "Osprey", "--json", *kb, cwd=tmp_path))["versions"]
    assert [v["title"] for v in listed] == ["Osprey"]

    shared = kg_run("delete", "setup", *kb, cwd=tmp_path)
    assert shared.returncode == 2
    first, second = (str((tmp_path / "notes" / d / "setup.md").resolve()) for d in ("a", "b"))
    assert shared.stderr.startswith("error: 2 documents are titled 'Setup': name one by its doc_id or path: ")
    assert f"({first}); " in shared.stderr and shared.stderr.rstrip().endswith(f"({second})")

    assert kg_ok("delete", "osprey", *kb, cwd=tmp_path).startswith("deleted Osprey (")
    titles = [d["title"] for d in json.loads(kg_ok("documents", "--json", *kb, cwd=tmp_path))["documents"]]
    assert titles == ["Setup", "Setup"]  # the refused delete removed nothing

    unknown = kg_run("versions", "Heron", *kb, cwd=tmp_path)
    assert unknown.returncode == 1
    assert "no document 'Heron' (give a doc_id, a front matter id, a source path or a title" in unknown.stderr
