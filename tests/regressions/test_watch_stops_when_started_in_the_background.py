"""`kg ingest --watch` started in the background by a script (`kg ingest DIR --watch &` in sh) inherits SIGINT
ignored, and Python leaves an ignored SIGINT ignored: `kill -INT` (and so the watch test's Ctrl-C, when the suite
itself ran in such a background job) never stopped it. Watching now sets its own handlers: SIGINT and SIGTERM
stop it cleanly, whatever it inherited."""

import signal
import subprocess
import sys

import pytest


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_the_watch_stops_on_a_signal_it_inherited_ignored(tmp_path, sig):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# Alpha\n\nfirst note.\n", encoding="utf-8")
    process = subprocess.Popen(
        [sys.executable, "-m", "kg.cli", "ingest", str(docs), "--watch", "--interval", "0.3",
         "--data-dir", str(tmp_path / "kb"), "-q"],
        cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        preexec_fn=lambda: (signal.signal(signal.SIGINT, signal.SIG_IGN), signal.signal(signal.SIGTERM, signal.SIG_IGN)))
    try:
        first = process.stderr.readline()  # printed once the first ingest is done and watching began
        assert first.startswith("watching "), first
        process.send_signal(sig)
        rest = process.communicate(timeout=300)[1]  # a bound for a hung process only
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 0 and "stopped watching" in rest, rest
