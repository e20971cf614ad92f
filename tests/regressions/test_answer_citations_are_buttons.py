"""Regression: the answer box showed each sentence's citations as the text "[object HTMLButtonElement]".

`Element.append(a, [b, c])` does not flatten an array (it appends the array's string form), and
renderAnswer handed it the list of citation buttons. Checked in a real headless Chromium on the page
served by `kg serve` over an empty knowledge base; skips without Chromium.
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

RECORD = {
    "question": "q", "answer": "A [1]. B [1][2].", "found": True, "language": "en", "path": "rules", "path_reason": "",
    "sentences": [{"text": "A [1].", "citations": [1], "support": 1.0, "flagged": False},
                  {"text": "B [1][2].", "citations": [1, 2], "support": 1.0, "flagged": False}],
    "citations": [{"n": n, "chunk_id": f"c{n}", "doc_id": "d", "title": f"Doc {n}", "source": "x.md", "section": "",
                   "lines": [1, 2], "page": None, "version": None, "text": f"passage {n}"} for n in (1, 2)],
    "rounds": [], "packs_used": [], "timings_ms": {},
}


def test_each_citation_is_a_button_after_its_sentence(tmp_path):
    kg_in_new_process("init", "--data-dir", str(tmp_path / "kb"), cwd=tmp_path)
    port = free_port()
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("KG_")}, "PYTHONPATH": os.pathsep.join(sys.path)}
    server = subprocess.Popen([sys.executable, "-m", "kg.cli", "serve", "--port", str(port), "--data-dir", str(tmp_path / "kb")],
                              env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for_http(f"http://127.0.0.1:{port}/health", timeout=90, process=server)
        with Chromium(CHROMIUM, 1024, 768) as browser:
            browser.goto(f"http://127.0.0.1:{port}/?lang=en")
            browser.evaluate(f"Kg.renderAnswer({json.dumps(RECORD)})")
            text = browser.evaluate("document.querySelector('#answer .answer-text').textContent")
            buttons = browser.evaluate("Array.from(document.querySelectorAll('#answer .answer-text .cite')).map(b => b.dataset.n)")
    finally:
        server.terminate()
        server.wait(timeout=20)
    assert "object" not in text
    assert buttons == ["1", "1", "2"]
    assert text.replace(" ", "") == "A.1B.12"
