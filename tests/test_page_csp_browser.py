"""The page's Content-Security-Policy in a real headless Chromium against a real `kg serve`: every view of the
page (search with its graph drawings, documents, the graph explorer, import) runs with no CSP violation (its
scripts, the vendored libraries and its one inline script are allowed), and a script injected into the page
does not run. Skips where no Chromium is installed (`.ci/run` installs Debian's)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from chromium_cdp import Chromium, find_chromium, free_port, wait_for_http
from conftest import FIXTURE_DOCS, FIXTURE_RELATIONS, kg_in_new_process

pytest.importorskip("websockets", reason="the browser is driven over websockets: pip install -e '.[test]'")
CHROMIUM = find_chromium()
pytestmark = [pytest.mark.skipif(CHROMIUM is None, reason="no Chromium here (Debian: apt-get install chromium)"),
              pytest.mark.slow]


@pytest.fixture(scope="module")
def server(tmp_path_factory) -> str:
    root = tmp_path_factory.mktemp("csp")
    data = root / "kb"
    kg_in_new_process("import", str(FIXTURE_RELATIONS), "--data-dir", str(data), cwd=root)
    kg_in_new_process("ingest", str(FIXTURE_DOCS), "--quiet", "--data-dir", str(data), cwd=root)
    port = free_port()
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("KG_")}, "PYTHONPATH": os.pathsep.join(sys.path)}
    process = subprocess.Popen([sys.executable, "-m", "kg.cli", "serve", "--port", str(port), "--data-dir", str(data)],
                               env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_for_http(base + "/health", timeout=120, process=process)
        yield base
    finally:
        process.terminate()
        process.wait(timeout=20)


def _violations(browser: Chromium) -> list[str]:
    return [e["params"]["entry"]["text"] for e in browser.events
            if e.get("method") == "Log.entryAdded" and "Content Security Policy" in e["params"]["entry"].get("text", "")]


def test_every_view_runs_under_the_csp_and_an_injected_script_does_not(server):
    with Chromium(CHROMIUM, 1440, 900) as browser:
        browser.send("Log.enable")
        browser.goto(server + "/?lang=en&q=" + "order-service%20mysql-core")
        assert browser.evaluate("document.documentElement.classList.contains('js')")  # the inline script ran
        browser.wait_for("document.querySelectorAll('.hit').length > 0")
        for view in ("#documents", "#graph", "#import"):
            browser.goto(server + "/?lang=en" + view)
        browser.evaluate("var s = document.createElement('script'); s.textContent = 'window.injected = 1';"
                         " document.body.appendChild(s); 0")
        assert browser.evaluate("window.injected === undefined")
        violations = _violations(browser)
        assert len(violations) == 1 and "window.injected" not in violations[0], violations  # only the injection
        assert "inline script" in violations[0] and "blocked" in violations[0]


def test_the_page_is_not_framed_by_another_site(server, tmp_path: Path):
    frame = tmp_path / "evil.html"
    frame.write_text(f'<iframe id="f" src="{server}/?lang=en"></iframe>', encoding="utf-8")
    with Chromium(CHROMIUM, 800, 600) as browser:
        browser.send("Log.enable")
        browser.send("Page.navigate", {"url": frame.as_uri()})
        browser.wait_for("document.readyState === 'complete'")
        browser.wait_for("true", timeout=1)  # let the frame's refusal be logged
        logged = [e["params"]["entry"].get("text", "") for e in browser.events if e.get("method") == "Log.entryAdded"]
        assert any("frame-ancestors" in text for text in logged), logged
