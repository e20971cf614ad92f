"""Regression: `kg pack add ID PATH` crashed with `TypeError: iterable or length is required` on click 8.5.

The pack's files are counted while it is ingested, so its progress bar has no total; `Progress(None, …)`
called `click.progressbar(length=None)`, which click 8.5 refuses. The tests ran only the `--json`/quiet path.
Here the real CLI runs in a process of its own with its human output, once on a pipe and once with stderr
on a terminal (a pseudo-terminal), where click draws the bar.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import kg_process

DOCS = {
    "tomatoes.md": "# Tomatoes\n\nTomato seedlings need 8 hours of sun.\n",
    "compost.md": "# Compost\n\nTurn the compost pile weekly.\n",
    "PACK.md": "---\nid: garden\ntitle: Garden notes\ncovers: [tomatoes, compost]\n---\n",
}


def _pack(root: Path) -> Path:
    folder = root / "garden"
    folder.mkdir()
    for name, text in DOCS.items():
        (folder / name).write_text(text, encoding="utf-8")
    return folder


def test_pack_add_and_update_print_their_human_summary(tmp_path: Path) -> None:
    folder = _pack(tmp_path)
    kb = ["--data-dir", str(tmp_path / "kb")]
    added = kg_process("pack", "add", "garden", str(folder), *kb, cwd=tmp_path)
    assert added.returncode == 0, added.stderr
    assert "Traceback" not in added.stderr
    assert "ingesting" in added.stderr  # the bar's label: not silenced on the human path
    assert "garden" in added.stdout and "2 document" in added.stdout, added.stdout
    updated = kg_process("pack", "update", "garden", *kb, cwd=tmp_path)
    assert updated.returncode == 0, updated.stderr
    assert "garden" in updated.stdout


@pytest.mark.skipif(not hasattr(os, "openpty"), reason="needs a pseudo-terminal (POSIX)")
def test_pack_add_draws_a_counting_bar_on_a_terminal(tmp_path: Path) -> None:
    folder = _pack(tmp_path)
    leader, follower = os.openpty()
    try:
        done = subprocess.run(
            [sys.executable, "-m", "kg.cli", "pack", "add", "garden", str(folder), "--data-dir", str(tmp_path / "kb")],
            cwd=tmp_path, stdout=subprocess.PIPE, stderr=follower, text=True, check=False,
        )
        os.close(follower)
        follower = -1
        drawn = b""
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # Linux: EIO once the terminal's other end is closed and drained
                break
            if not chunk:
                break
            drawn += chunk
    finally:
        if follower != -1:
            os.close(follower)
        os.close(leader)
    text = drawn.decode("utf-8", "replace")
    assert done.returncode == 0, text
    assert "Traceback" not in text
    assert "ingesting" in text and "2" in text.split("ingesting")[-1], text  # the bar counts what it ingested
