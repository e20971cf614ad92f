"""Helpers for tests about processes that must not outlive the one that started them."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

__all__ = ["alive", "children", "outliving"]


def alive(pid: int) -> bool:
    """Whether `pid` is a running process; a zombie (ended, not yet reaped by init) counts as gone."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
            return stat.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return True


def children(pid: int) -> list[int]:
    """The running processes whose parent is `pid` (read from Linux's /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text(encoding="ascii")
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid and alive(int(entry.name)):
                found.append(int(entry.name))
    return found


def outliving(parent: subprocess.Popen, pids: list[int], guard: float) -> list[int]:
    """SIGKILL `parent` (no clean-up of its own runs) and wait up to `guard` seconds (a guard, not a speed target) for
    `pids` to end: those still running, killed then so that they are not left to the next run."""
    parent.send_signal(signal.SIGKILL)
    parent.wait()
    deadline = time.monotonic() + guard
    while any(alive(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    left = [pid for pid in pids if alive(pid)]
    for pid in left:
        os.kill(pid, signal.SIGKILL)
    return left
