"""Regression: `kg llm serve` (and anything else that starts the model's server through `LocalServer`) runs it as a
child process. A parent killed with SIGKILL, or whose terminal is closed, runs no clean-up, and the server (up to
2 GB with the 1.5B model) went on holding its memory and port with no one to stop it. The server now ends when the
process that started it is gone."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest
from local_llm import MODEL, why_not
from processes import alive

GUARD = 120  # seconds to wait for the orphaned server to end before calling it left running (not a speed target)


def test_the_model_server_ends_when_the_process_that_started_it_is_killed():
    reason = why_not()
    if reason:
        pytest.skip(f"real-model test skipped: {reason}")
    starter = textwrap.dedent(f"""
        import sys, time
        from retrieval.answer.local_server import LocalServer
        server = LocalServer({MODEL!r}, threads=1).start()
        print(server.process.pid, flush=True)
        time.sleep(600)
    """)
    parent = subprocess.Popen([sys.executable, "-c", starter], stdout=subprocess.PIPE, text=True)
    try:
        line = parent.stdout.readline()
        assert line.strip().isdigit(), "the server did not start"
        server = int(line)
        assert alive(server)
        parent.send_signal(signal.SIGKILL)  # no clean-up runs: LocalServer.stop is never called
        parent.wait()
        deadline = time.monotonic() + GUARD
        while alive(server) and time.monotonic() < deadline:
            time.sleep(0.5)
        left = alive(server)
    finally:
        if parent.poll() is None:
            parent.kill()
    if left:
        os.kill(server, signal.SIGKILL)
    assert not left, "the model server outlived the process that started it"
