"""Regression: `/docs` was a blank page without internet (FastAPI loads Swagger UI from a CDN), while the API's
error messages send users there ("no endpoint … (see /docs for the API)").

Now /docs and /redoc load their scripts and styles from the server itself (the files the package fastapi-offline
ships). Checked on the page's HTML through the ASGI app, and in a real headless Chromium against `kg serve`:
Swagger UI draws the API's operations and every resource the page loaded came from the server.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from chromium_cdp import Chromium, find_chromium, free_port, wait_for_http
from conftest import kg_in_new_process, make_settings
from fastapi.testclient import TestClient

from api import create_app

_REFERENCES = re.compile(r"""(?:src|href|url)\s*[=:]\s*['"]([^'"]+)['"]""")


@pytest.mark.parametrize("page", ["/docs", "/redoc"])
def test_the_docs_pages_reference_only_the_servers_own_files(tmp_path: Path, page: str) -> None:
    with TestClient(create_app(make_settings(tmp_path / "kb"))) as client:
        html = client.get(page)
        assert html.status_code == 200
        assert not re.findall(r"https?://", html.text), "a page of the API docs loads something from the network"
        references = _REFERENCES.findall(html.text)
        assert "/openapi.json" in references and any(r.endswith(".js") for r in references)
        for reference in references:
            assert reference.startswith("/"), reference
            response = client.get(reference)
            assert response.status_code == 200 and len(response.content) > 0, reference
        # The error messages that point there stay true.
        missing = client.get("/nope").json()["error"]["message"]
        assert missing == "no endpoint /nope (see /docs for the API)"


@pytest.mark.slow
@pytest.mark.skipif(find_chromium() is None, reason="no Chromium here (Debian: apt-get install chromium)")
def test_swagger_ui_draws_the_operations_from_local_files_in_a_browser(tmp_path: Path) -> None:
    pytest.importorskip("websockets", reason="the browser is driven over websockets: pip install -e '.[test]'")
    kg_in_new_process("init", "--data-dir", str(tmp_path / "kb"), cwd=tmp_path)
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("KG_")}, "PYTHONPATH": os.pathsep.join(sys.path)}
    server = subprocess.Popen([sys.executable, "-m", "kg.cli", "serve", "--port", str(port), "--data-dir", str(tmp_path / "kb")],
                              env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for_http(base + "/health", timeout=120, process=server)
        with Chromium(find_chromium(), 1280, 900) as browser:
            browser.send("Page.navigate", {"url": base + "/docs"})  # not goto: it waits for kgrag's own page
            browser.wait_for("document.querySelectorAll('.opblock').length > 5", timeout=90)
            operations = browser.evaluate("Array.from(document.querySelectorAll('.opblock-summary-path')).map(e => e.textContent)")
            loaded = browser.evaluate("performance.getEntriesByType('resource').map(e => e.name)")
    finally:
        server.terminate()
        server.wait(timeout=20)
    assert any("/query" in op for op in operations), operations
    assert loaded and all(url.startswith(base + "/") for url in loaded), loaded
