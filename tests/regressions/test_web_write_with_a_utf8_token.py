"""Regression: with an API token that is not Latin-1 (the README says UTF-8 tokens work), every write from the page
failed with a JavaScript TypeError and no message: fetch() refuses a header value with a character above U+00FF.

The page now sends the token's UTF-8 bytes (which the server compares as sent). Checked in a real headless Chromium
on the page served by `kg serve` over an empty knowledge base; skips without Chromium.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from chromium_cdp import Chromium, find_chromium, free_port, wait_for_http
from conftest import kg_in_new_process

CHROMIUM = find_chromium()
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="no Chromium here (Debian: apt-get install chromium)")
TOKEN = "钥匙-ключ-🔑"


def test_a_document_is_posted_with_a_utf8_token(tmp_path):
    kg_in_new_process("init", "--data-dir", str(tmp_path / "kb"), cwd=tmp_path)
    port = free_port()
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("KG_")}, "PYTHONPATH": os.pathsep.join(sys.path),
           "KG_API_TOKEN": TOKEN}
    server = subprocess.Popen([sys.executable, "-m", "kg.cli", "serve", "--port", str(port), "--data-dir", str(tmp_path / "kb")],
                              env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for_http(f"http://127.0.0.1:{port}/health", timeout=90, process=server)
        with Chromium(CHROMIUM, 1024, 768) as browser:
            browser.goto(f"http://127.0.0.1:{port}/?lang=en")
            browser.evaluate(f"sessionStorage.setItem('kg-token', {json.dumps(TOKEN)})")
            result = browser.evaluate(
                "Kg.api('POST', '/documents', {text: '# Note\\n\\nquokka', source: 'note.md', format: 'md'}, {write: true})"
                ".then(r => [r.status, r.data.added])", await_promise=True)
            assert result == [201, 1]
            # A wrong one is refused with the server's reason, not a script error.
            browser.evaluate("sessionStorage.setItem('kg-token', '错误的钥匙')")
            browser.evaluate("window.__refused = null; Kg.api('DELETE', '/documents/note.md', null, {write: true})"
                             ".then(r => { window.__refused = [r.status, Kg.errorText(r.data)]; })")
            browser.wait_for("document.querySelector('#token-dialog').open")
            assert browser.evaluate("document.querySelector('#token-error').textContent") == "The API token was refused; enter it again."
            browser.click("#token-dialog button[value=cancel]")
            browser.wait_for("window.__refused")
            status, message = browser.evaluate("window.__refused")
            assert status == 401 and "bearer token" in message
            assert not [line for line in browser.console if line.startswith("exception")], browser.console
    finally:
        server.terminate()
        server.wait(timeout=20)
