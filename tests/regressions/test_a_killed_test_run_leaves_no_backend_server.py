"""Regression: the backend tests start PostgreSQL, `oxigraph serve` and `kg serve` as child processes and stop them in
a `finally`. A test run killed with SIGKILL (a CI job's timeout, a closed terminal) runs no `finally`, and the servers
went on holding memory, ports and their temp folders until someone found them. Each now ends when the process that
started it is gone (`backends_servers.ends_with_parent`)."""

from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from processes import alive, outliving

GUARD = 60  # seconds to wait for an orphaned server to end before calling it left running (not a speed target)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the parent-death signal is Linux's")
def test_servers_end_when_the_test_process_that_started_them_is_killed():
    starter = textwrap.dedent(f"""
        import sys, time
        sys.path.insert(0, {str(Path(__file__).parents[1])!r})
        from backends_servers import oxigraph_server, postgres_server
        with postgres_server() as pg, oxigraph_server() as graph:
            if isinstance(pg, str) or isinstance(graph, str):
                print("skip", pg if isinstance(pg, str) else graph, flush=True)
                sys.exit(0)
            postmaster = (pg.folder / "data" / "postmaster.pid").read_text().split()[0]
            print(postmaster, graph.process.pid, pg.folder, graph.folder, flush=True)
            time.sleep(600)
    """)
    parent = subprocess.Popen([sys.executable, "-c", starter], stdout=subprocess.PIPE, text=True)
    folders: list[str] = []
    try:
        line = parent.stdout.readline().split(maxsplit=4)
        if line[:1] == ["skip"]:
            pytest.skip(f"backend servers unavailable: {' '.join(line[1:])}")
        assert len(line) == 4 and line[0].isdigit(), f"the servers did not start: {line}"
        pids, folders = [int(line[0]), int(line[1])], line[2:]
        assert all(alive(pid) for pid in pids)
        left = outliving(parent, pids, GUARD)  # SIGKILL: no `finally` of the context managers runs
    finally:
        if parent.poll() is None:
            parent.kill()
            parent.wait()
    for folder in folders:  # the temp folders are the killed run's to leave: removed here
        shutil.rmtree(folder, ignore_errors=True)
    assert not left, f"server processes {left} outlived the process that started them"
