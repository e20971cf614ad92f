"""Regression: `kg serve` on a port another server holds loaded the knowledge base, started the app, and only then
printed uvicorn's `ERROR: [Errno 98] error while attempting to bind …` among its INFO lines and exited 3. It now says
so first, in one line with what to do, and exits 1 (real CLI, own process)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow


def test_a_port_in_use_is_said_before_anything_loads(tmp_path: Path) -> None:
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("KG_")}, "PYTHONPATH": os.pathsep.join(sys.path)}
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run([sys.executable, "-m", "kg.cli", "serve", "--demo", "--port", str(port)], cwd=tmp_path,
                              env=env, capture_output=True, text=True, encoding="utf-8", timeout=120)
    assert done.returncode == 1, done.stderr
    assert done.stderr == (f"error: port {port} on 127.0.0.1 is in use (another kg serve?): stop that server or choose "
                           "another port with --port\n")
    assert list(tmp_path.iterdir()) == []  # the demo was not built first
