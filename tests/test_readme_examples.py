"""The README's examples are what this version prints: `tools/readme_examples.py --check` runs every
`<!-- example: … -->` command (the real CLI, one process each, on the quick start's notes and on the demo)
and fails with a diff when a block differs."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.slow


def test_the_readme_examples_are_current() -> None:
    done = subprocess.run([sys.executable, str(ROOT / "tools" / "readme_examples.py"), "--check"],
                          capture_output=True, text=True, encoding="utf-8", check=False)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert re.search(r"README.md: (\d+) examples, all current", done.stdout)


def test_the_quick_start_opens_the_readme() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    headings = re.findall(r"^## (.+)$", readme, re.M)
    assert headings[:3] == ["Quick start: your own notes in three commands", "What a relation table adds", "Two commands"]
    quick = readme.split("## What a relation table adds")[0]
    for command in ("kg ingest ~/notes", "kg query", "kg serve"):
        assert command in quick
    assert "<!-- example: kg query" in quick


def test_ci_runs_the_readmes_test_command_with_the_tested_versions() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    commands = re.findall(r"^pip install .+$", readme.split("## Two commands")[1].split("\n## ")[0], re.M)
    assert commands == ["pip install -c constraints.txt -e . && kg demo",
                        "pip install -c constraints.txt -e '.[test]' && python -m pytest"]
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").strip().splitlines()
    assert ci[-1] == commands[1]
    pins = [line for line in (ROOT / "constraints.txt").read_text(encoding="utf-8").splitlines()
            if line and not line.startswith("#")]
    assert all(re.fullmatch(r"[a-z0-9][a-z0-9.-]*==\S+", pin) for pin in pins), pins
    names = {pin.split("==")[0] for pin in pins}
    assert {"click", "whoosh-reloaded", "spacy", "fastapi", "pytest"} <= names
