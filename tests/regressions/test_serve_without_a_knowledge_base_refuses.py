"""Regression: `kg serve` with no `--data-dir` (the natural next step after `kg demo`) silently created an empty
`./.kgrag` and served 0 documents, while `kg query` in the same place said what to do.

Now it refuses and says how to get a knowledge base (naming `--data-dir .kgrag-demo` once `kg demo` built it),
and `kg serve --demo` serves the bundled demo (building it when it is missing). Real CLI, own processes.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest
from chromium_cdp import free_port, wait_for_http

pytestmark = pytest.mark.slow


def _env() -> dict:
    return {**{k: v for k, v in os.environ.items() if not k.startswith("KG_")}, "PYTHONPATH": os.pathsep.join(sys.path)}


def _serve(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    try:
        return subprocess.run([sys.executable, "-m", "kg.cli", "serve", "--port", str(free_port()), *args], cwd=cwd,
                              env=_env(), capture_output=True, text=True, encoding="utf-8", timeout=120)
    except subprocess.TimeoutExpired as exc:  # the old code served the empty folder until stopped
        pytest.fail(f"kg serve {' '.join(args)} served instead of refusing: {exc.stderr!r}")


def test_serve_in_a_folder_without_a_knowledge_base_refuses_and_creates_nothing(tmp_path: Path) -> None:
    done = _serve(cwd=tmp_path)
    assert done.returncode == 1
    assert done.stderr.startswith(
        "error: no knowledge base in '.kgrag', so there is nothing to serve: index your notes there first with "
        "`kg ingest PATH` (or `kg init` to start empty and add documents through the page or the API), point "
        "--data-dir / KG_DATA_DIR at an existing one, or try the demo: `kg serve --demo` serves the bundled demo"
    ), done.stderr
    assert list(tmp_path.iterdir()) == []


def test_after_kg_demo_the_refusal_names_its_data_dir(tmp_path: Path) -> None:
    (tmp_path / ".kgrag-demo").mkdir()
    (tmp_path / ".kgrag-demo" / "kgrag.json").write_text("{}\n", encoding="utf-8")  # what `kg demo` leaves
    done = _serve(cwd=tmp_path)
    assert done.returncode == 1
    assert done.stderr.rstrip().endswith("try the demo: `kg serve --data-dir .kgrag-demo` serves the demo `kg demo` built")


def test_serve_demo_builds_and_serves_the_demo(tmp_path: Path) -> None:
    port = free_port()
    (tmp_path / "mine").mkdir()
    env = {**_env(), "KG_DATA_DIR": str(tmp_path / "mine")}  # a shell's own knowledge base: --demo still means the demo
    server = subprocess.Popen([sys.executable, "-m", "kg.cli", "serve", "--demo", "--port", str(port)], cwd=tmp_path,
                              env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        wait_for_http(f"http://127.0.0.1:{port}/health", timeout=300, process=server)
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/stats", timeout=30) as response:
            stats = json.loads(response.read())
    finally:
        server.terminate()
        _, err = server.communicate(timeout=30)
    assert stats["documents"] == 65, stats  # the demo's documents (kg/demo/docs)
    assert "building the demo knowledge base in .kgrag-demo" in err
    assert (tmp_path / ".kgrag-demo" / "kgrag.json").exists()
    assert list((tmp_path / "mine").iterdir()) == []
