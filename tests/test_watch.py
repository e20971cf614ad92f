"""`kg ingest --watch`: a running process keeps the knowledge base in step with the folder (new, changed and removed files)."""

from __future__ import annotations

import queue
import signal
import sqlite3
import subprocess
import sys
import threading
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


class _Lines:
    """The lines a process writes to one pipe, read on a thread so a test can wait for a given line."""

    def __init__(self, pipe) -> None:
        self.lines: queue.Queue[str] = queue.Queue()
        self.seen: list[str] = []
        threading.Thread(target=self._read, args=(pipe,), daemon=True).start()

    def _read(self, pipe) -> None:
        for line in pipe:
            self.lines.put(line.rstrip("\n"))
        self.lines.put(None)  # the pipe closed

    def wait_for(self, text: str, timeout: float = 600.0) -> None:
        """Until a line containing `text` has been written (the timeout only bounds a hung process)."""
        while not any(text in line for line in self.seen):
            try:
                line = self.lines.get(timeout=timeout)
            except queue.Empty:
                raise AssertionError(f"no line {text!r} yet; so far: {self.seen}") from None
            if line is None:
                raise AssertionError(f"the process ended before writing {text!r}; it wrote: {self.seen}")
            self.seen.append(line)

    def rest(self) -> list[str]:
        while (line := self.lines.get(timeout=30)) is not None:
            self.seen.append(line)
        return self.seen


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
    out, err = _Lines(process.stdout), _Lines(process.stderr)
    removed = f"  removed {(docs / 'b.md').resolve()} (its file is gone)"
    try:
        db = kb / "kb.sqlite"
        err.wait_for("watching ")  # printed once the first ingest is done and the folder's first look taken
        assert _titles(db) == {"Alpha", "Beta"}
        (docs / "c.md").write_text("# Gamma\n\nthird note.\n", encoding="utf-8")
        (docs / "b.md").unlink()
        (docs / "a.md").write_text("# Alpha renamed\n\nfirst note, edited.\n", encoding="utf-8")
        out.wait_for(removed)  # printed after the removal is committed
        _wait_for(lambda: _titles(db) == {"Alpha renamed", "Gamma"})  # the edit may land one look later
    finally:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=300)  # a bound for a hung process only: a loaded machine is slow
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
            raise AssertionError(f"kg ingest --watch did not stop on Ctrl-C; stderr: {err.seen}") from None
    assert process.returncode == 0, err.rest()
    assert "stopped watching" in err.rest()
    assert removed in out.rest()
