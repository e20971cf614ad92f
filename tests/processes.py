"""Helpers for tests about processes that must not outlive the one that started them."""

from __future__ import annotations

import os

__all__ = ["alive"]


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
