"""What every worker process of kgrag does first: end when the process that started it ends."""

from __future__ import annotations

import os
import signal
import sys

__all__ = ["end_with_parent"]


def end_with_parent(parent: int) -> None:
    """Linux's parent-death signal (SIGKILL when `parent` dies), so a killed command leaves no worker behind holding
    files open or a core busy; a parent already gone ends this process now."""
    if sys.platform.startswith("linux"):
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    if os.getppid() != parent:  # the parent died before that: nobody would ever read this worker's results
        os._exit(1)
