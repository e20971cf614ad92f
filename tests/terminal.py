"""The real `kg` command with a pseudo-terminal as its stdout and stderr, as a user's terminal would run it: click
writes its colours and progress bars only there, and a terminal escape in what kgrag prints would act only there."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

__all__ = ["kg_on_a_terminal"]


def kg_on_a_terminal(args: list[str], cwd: Path, env: dict | None = None) -> tuple[int, str]:
    """`kg ARGS` in `cwd` (no KG_ variable of this process, `env` added): its exit code and every character the
    terminal received, escapes included."""
    leader, follower = os.openpty()
    environ = {k: v for k, v in os.environ.items() if not k.startswith("KG_")}
    environ.update(env or {}, PYTHONPATH=os.pathsep.join(sys.path))
    process = subprocess.Popen([sys.executable, "-m", "kg.cli", *args], cwd=cwd, env=environ, stdin=subprocess.DEVNULL,
                               stdout=follower, stderr=follower)
    os.close(follower)
    shown = bytearray()
    while True:  # read while it runs: a full terminal buffer would block it
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # Linux: EIO once every holder of the other end has closed it
            break
        if not chunk:
            break
        shown += chunk
    os.close(leader)
    return process.wait(timeout=600), shown.decode("utf-8", "replace")
