"""The page as a person uses it: a real headless Chromium against a real `kg serve` on the demo knowledge base.

Asks a Chinese and an English question, reads hits and why, opens a passage (a citation where
answers exist), follows the graph drawing to an entity, uploads a file by drag and drop (with the
API token asked for), imports a bad relation table and reads its errors by line. Screenshots are saved
(to docs/screenshots/ when WEB_SCREENSHOTS_DIR says so). Skips where no Chromium is installed (`.ci/run` installs Debian's).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.parse
import urllib.request
from pathlib import Path

import pytest
from chromium_cdp import Chromium, find_chromium, free_port, wait_for_http
from conftest import kg_in_new_process

from kg.cli.base import DEMO_DIR

pytest.importorskip("websockets", reason="the browser is driven over websockets: pip install -e '.[test]'")
CHROMIUM = find_chromium()
pytestmark = [pytest.mark.skipif(CHROMIUM is None, reason="no Chromium here (Debian: apt-get install chromium)"),
              pytest.mark.slow]

# The committed screenshots in docs/screenshots/ are refreshed with
#   WEB_SCREENSHOTS_DIR=docs/screenshots python -m pytest tests/test_web_browser.py
# otherwise they go to a temporary folder, so that a test run leaves the work tree as it was.
SCREENSHOTS_ENV = "WEB_SCREENSHOTS_DIR"
TOKEN = "browser-test-token"
EN_QUESTION = "what breaks if redis-cluster goes down?"
ZH_QUESTION = "订单服务依赖哪些组件？"


@pytest.fixture(scope="module")
def demo_dir(tmp_path_factory) -> Path:
    """The demo knowledge base, built by the real CLI in processes of its own (as `kg demo` does)."""
    root = tmp_path_factory.mktemp("web-demo")
    data = root / "kb"
    kg_in_new_process("init", "--data-dir", str(data), cwd=root)
    for name in ("relations.csv", "synonyms.txt"):
        kg_in_new_process("import", str(DEMO_DIR / name), "--data-dir", str(data), cwd=root)
    kg_in_new_process("ingest", str(DEMO_DIR / "docs"), "--quiet", "--data-dir", str(data), cwd=root)
    return data


@pytest.fixture(scope="module")
def server(demo_dir) -> str:
    port = free_port()
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("KG_")}, "KG_API_TOKEN": TOKEN,
           "PYTHONPATH": os.pathsep.join(sys.path)}
    process = subprocess.Popen(
        [sys.executable, "-m", "kg.cli", "serve", "--host", "127.0.0.1", "--port", str(port), "--data-dir", str(demo_dir)],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        wait_for_http(base + "/health", timeout=90, process=process)
        yield base
    finally:
        process.terminate()
        process.wait(timeout=20)


@pytest.fixture(scope="module")
def shots(tmp_path_factory) -> Path:
    chosen = os.environ.get(SCREENSHOTS_ENV)
    return Path(chosen) if chosen else tmp_path_factory.mktemp("screenshots")


@pytest.fixture(scope="module")
def browser():
    with Chromium(CHROMIUM, 1440, 900) as chromium:
        yield chromium
        assert not [line for line in chromium.console if line.startswith("exception")], chromium.console


def api_get(base: str, path: str) -> dict:
    with urllib.request.urlopen(base + path, timeout=30) as response:
        return json.load(response)


def ask(browser: Chromium, question: str) -> None:
    before = int(browser.evaluate("document.body.dataset.searched || 0"))
    browser.type_text("#q", question)
    browser.press_enter()
    # Done when a search finished after this one started, for this question, and nothing is in
    # flight: a redraw still answering from before (the language switch re-runs the last search,
    # with its answer) must not count.
    browser.wait_for(
        f"Number(document.body.dataset.searched || 0) > {before}"
        f" && new URLSearchParams(location.search).get('q') === {json.dumps(question)}"
        " && !document.querySelector('#results').hasAttribute('aria-busy')",
        timeout=60,
    )


def texts(browser: Chromium, selector: str) -> list[str]:
    return browser.evaluate(f"Array.from(document.querySelectorAll({json.dumps(selector)})).map(e => e.textContent)")


def test_an_english_question(browser, server, shots):
    browser.goto(server + "/?lang=en")
    ask(browser, EN_QUESTION)
    expected = json.loads(urllib.request.urlopen(urllib.request.Request(
        server + "/query", data=json.dumps({"query": EN_QUESTION}).encode(), headers={"Content-Type": "application/json"})).read())
    titles = texts(browser, ".hit .hit-head strong")
    assert titles == [h["title"] for h in expected["hits"]]
    assert texts(browser, ".entities .chip") == ["redis-cluster"]
    assert "redis-cluster" in texts(browser, ".hit mark")
    why = texts(browser, ".hit .why li")
    assert any(w.startswith("matches the words ") for w in why)
    assert any(w.startswith("reached through the relation graph from redis-cluster") for w in why)
    # A graph hit through a relation is drawn: its nodes and the typed arrow between them.
    relations = [h["why"]["graph"]["path"].split(" → ")[1] for h in expected["hits"]
                 if "graph" in h["why"] and h["why"]["graph"]["path"].count(" → ") >= 3]
    assert relations, "the demo question reaches documents through relations"
    drawn = browser.evaluate("Array.from(document.querySelectorAll('.graph-path svg .edge')).map(e => e.dataset.relation)")
    assert relations[0] in drawn
    assert browser.evaluate("document.querySelector('.graph-path svg .node.center').dataset.label") == "redis-cluster"
    browser.resize(1440, 1400)  # tall enough to show hits reached through a relation
    browser.evaluate("window.scrollTo(0, 0)")
    browser.screenshot(shots / "search-en-1440.png", full_page=False)
    browser.resize(1440, 900)


def test_a_chinese_question_after_switching_language(browser, server):
    before = int(browser.evaluate("document.body.dataset.searched || 0"))
    browser.click("#lang-toggle")
    browser.wait_for("document.documentElement.lang === 'zh-CN'")
    # The shown results are redrawn in Chinese: the switch re-runs the search (with its answer), and
    # the page counts it as done only once all of it has arrived.
    browser.wait_for(f"Number(document.body.dataset.searched || 0) > {before}"
                     " && !document.querySelector('#results').hasAttribute('aria-busy')"
                     " && document.querySelector('.hit .why li').textContent.includes('排名')", timeout=60)
    assert browser.evaluate("document.querySelector('#search-form button[type=submit]').textContent") == "搜索"
    ask(browser, ZH_QUESTION)
    assert texts(browser, ".entities .chip") == ["order-service"]
    why = " ".join(texts(browser, ".hit .why li"))
    assert "从 订单服务 经关系图到达" in why or "从 order-service 经关系图到达" in why
    drawn = browser.evaluate("Array.from(document.querySelectorAll('.graph-path svg .edge')).map(e => e.dataset.relation)")
    labels = browser.evaluate("Array.from(document.querySelectorAll('.graph-path svg .node')).map(e => e.dataset.label)")
    # Which of order-service's dependencies rank among the shown hits is the ranking's business;
    # the page must draw the typed arrow to one of them (the demo's relation table lists them).
    rows = (DEMO_DIR / "relations.csv").read_text(encoding="utf-8").splitlines()
    depends_on = {r.split(",")[2] for r in rows if r.startswith("order-service,dependsOn,")}
    assert "dependsOn" in drawn and depends_on & set(labels)
    assert "<mark>订单服务</mark>" in browser.evaluate("document.querySelector('#results').innerHTML")


def test_opening_a_citation_or_passage(browser, server):
    if browser.evaluate("Kg.features.ask"):
        browser.wait_for("document.querySelector('#answer .cite')", timeout=60)
        browser.click("#answer .cite")
        browser.wait_for("document.querySelector('#answer .passage')")
        card = browser.evaluate("document.querySelector('#answer .passage').textContent")
    else:
        assert browser.evaluate("document.querySelector('#answer').hidden")
        first = browser.evaluate("document.querySelector('.hit').dataset.chunk")
        browser.click(".hit .open-passage")
        browser.wait_for(f"document.querySelector('.hit[data-chunk=\"{first}\"] .passage')")
        card = browser.evaluate("document.querySelector('.hit .passage').textContent")
        hit = api_get(server, "/entities/order-service")  # the page and the API agree on the demo
        assert hit["label"] == "order-service"
    assert "文档" in card and "章节" in card and "行" in card


def test_an_answer_record_renders_with_citations_that_open(browser, server, shots):
    """The answer box on a record of the shape CONTRACTS.md gives `POST /ask`, made from real hits of this server."""
    query = json.loads(urllib.request.urlopen(urllib.request.Request(
        server + "/query", data=json.dumps({"query": ZH_QUESTION, "k": 2}).encode(), headers={"Content-Type": "application/json"})).read())
    first, second = query["hits"]
    citations = [
        {"n": 1, **{k: first[k] for k in ("chunk_id", "doc_id", "title", "source", "section", "lines", "text")}, "page": None,
         "version": {"version_id": "v2", "label": "2024 修订版", "effective_from": "2024-03-01", "effective_to": None}},
        {"n": 2, **{k: second[k] for k in ("chunk_id", "doc_id", "title", "source", "section", "lines", "text")}, "page": 3,
         "version": None},
    ]
    record = {"question": ZH_QUESTION, "answer": "订单服务依赖 mysql-core [1]。也依赖 redis-cluster [2]。", "found": True,
              "language": "zh", "path": "rules", "path_reason": "no LLM configured",
              "sentences": [{"text": "订单服务依赖 mysql-core [1]。", "citations": [1], "support": 0.9, "flagged": False},
                            {"text": "也依赖 redis-cluster [2]。", "citations": [2], "support": 0.2, "flagged": True}],
              "citations": citations, "rounds": [], "packs_used": [], "timings_ms": {}}
    browser.evaluate(f"Kg.renderAnswer({json.dumps(record, ensure_ascii=False)})")
    assert texts(browser, "#answer .sentence") == ["订单服务依赖 mysql-core。", "也依赖 redis-cluster。"]
    assert texts(browser, "#answer .cite") == ["1", "2"]
    assert browser.evaluate("document.querySelectorAll('#answer .sentence.flagged').length") == 1
    browser.click('#answer .cite[data-n="1"]')
    card = browser.evaluate("document.querySelector('#answer .passage[data-cite=\"1\"]').textContent")
    assert "2024 修订版" in card and "2024-03-01" in card and first["title"] in card and first["text"][:40] in card
    browser.click('#answer .cite[data-n="2"]')
    card = browser.evaluate("document.querySelector('#answer .passage[data-cite=\"2\"]').textContent")
    assert "页 3" in card and f"行 {second['lines'][0]}–{second['lines'][1]}" in card
    browser.screenshot(shots / "answer-layout-zh-1440.png", full_page=False)
    browser.click('#answer .cite[data-n="1"]')  # a second click closes it
    assert browser.evaluate("document.querySelector('#answer .passage[data-cite=\"1\"]') === null")
    browser.evaluate("document.querySelector('#answer').hidden = true")


def test_the_entity_panel_draws_its_neighbours(browser, server, shots):
    browser.click(".entities .chip")
    browser.wait_for("document.querySelector('#panel .entity-graph svg')")
    entity = api_get(server, "/entities/" + urllib.parse.quote("order-service"))
    neighbours = [n["label"] for rel in sorted(entity["neighbours"]) for n in entity["neighbours"][rel]]
    drawn = browser.evaluate("Array.from(document.querySelectorAll('#panel svg .node:not(.center)')).map(e => e.dataset.label)")
    assert drawn == neighbours[:16]
    assert browser.evaluate("document.querySelector('#panel h2').textContent") == "order-service"
    assert "订单服务" in browser.evaluate("document.querySelector('#panel').textContent")
    browser.screenshot(shots / "entity-zh-1440.png", full_page=False)
    # Clicking a neighbour in the drawing opens it.
    browser.evaluate("document.querySelector('#panel svg .node:not(.center)').dispatchEvent(new MouseEvent('click', {bubbles: true}))")
    browser.wait_for(f"document.querySelector('#panel h2').textContent === {json.dumps(neighbours[0])}")


def test_a_phone_sized_window(browser, server, shots):
    browser.resize(360, 780)
    try:
        browser.goto(server + "/?lang=zh&q=" + urllib.parse.quote(ZH_QUESTION))
        # With answers, the page re-runs the server's search to fetch one: wait until that is drawn too.
        browser.wait_for("document.querySelectorAll('.hit svg.graph').length > 0"
                         " && (!Kg.features.ask || document.body.dataset.searched)", timeout=60)
        # Nothing wider than the screen: no sideways scrolling on a phone.
        assert browser.evaluate("document.documentElement.scrollWidth") <= 360
        assert browser.evaluate("Math.max(...Array.from(document.querySelectorAll('svg.graph')).map(s => s.getBoundingClientRect().right))") <= 360
        browser.screenshot(shots / "search-zh-360.png", full_page=False)
        browser.click(".entities .chip")
        browser.wait_for("document.querySelector('#panel .entity-graph svg')")
        assert browser.evaluate("document.documentElement.scrollWidth") <= 360
        browser.screenshot(shots / "entity-zh-360.png", full_page=False)
    finally:
        browser.resize(1440, 900)


def test_upload_by_drag_and_drop_asks_for_the_token(browser, server, tmp_path):
    note = tmp_path / "backup-policy.md"
    note.write_text("# 备份策略 quokkabackup\n\n每晚 02:00 对 mysql-core 做全量备份，保留 14 天。\n", encoding="utf-8")
    browser.goto(server + "/?lang=en#documents")
    # The list of documents is drawn above the drop zone when it arrives: drop once it is there, as a
    # person would, or the drop lands on the list that has just moved in under the pointer.
    browser.wait_for("!document.querySelector('#view-documents').hidden && document.querySelector('#documents-list table')")
    # Cancelled: nothing is written.
    browser.drop_files("#drop", [note])
    browser.wait_for("document.querySelector('#token-dialog').open")
    browser.click("#token-dialog button[value=cancel]")
    browser.wait_for("document.querySelector('#upload-log li.error')")
    assert "no API token was given" in texts(browser, "#upload-log li")[0]
    assert api_get(server, "/stats")["documents"] == api_get(server, "/health")["documents"]
    before = api_get(server, "/stats")["documents"]
    # With the token: the file is read in the page and POSTed, then found by a search.
    browser.drop_files("#drop", [note])
    browser.wait_for("document.querySelector('#token-dialog').open")
    browser.type_text("#token-input", TOKEN)
    browser.click("#token-ok")
    browser.wait_for("document.querySelector('#upload-log li.ok')", timeout=60)
    assert texts(browser, "#upload-log li.ok")[0].startswith("backup-policy.md: 1 added")
    assert api_get(server, "/stats")["documents"] == before + 1
    browser.goto(server + "/?lang=en")
    ask(browser, "quokkabackup")
    assert texts(browser, ".hit .hit-head strong")[0] == "备份策略 quokkabackup"


def test_import_errors_are_shown_by_line(browser, server, tmp_path, shots):
    table = tmp_path / "team-relations.csv"
    table.write_text("source,relation,target\nbilling-service,dependsOn,mysql-core\nbilling-service,depnds_on,kafka-cluster\n",
                     encoding="utf-8")
    browser.goto(server + "/?lang=en#import")
    browser.wait_for("!document.querySelector('#view-import').hidden")
    browser.set_files("#import-input", [table])
    browser.click("#import-form button[type=submit]")  # the token is still in this tab's session
    browser.wait_for("document.querySelector('#import-result table')", timeout=60)
    rows = browser.evaluate("Array.from(document.querySelectorAll('#import-result tbody tr')).map(r => Array.from(r.cells).map(c => c.textContent))")
    assert rows == [["team-relations.csv", "3", "relation 'depnds_on' is not in the ontology (did you mean 'dependsOn'?)"]]
    assert "was not imported" in texts(browser, "#import-result p.error")[0]
    browser.click("#run-check")
    browser.wait_for("document.querySelector('#check-result p')")
    record = api_get(server, "/ontology/check")
    shown = texts(browser, "#check-result p")[0]
    assert shown == ("No problems found." if not record["findings"] else f"{record['errors']} error(s), {record['warnings']} warning(s)")
    browser.screenshot(shots / "import-errors-1440.png", full_page=False)


def test_search_without_javascript(server):
    with Chromium(CHROMIUM, 1024, 768) as plain:
        plain.send("Emulation.setScriptExecutionDisabled", {"value": True})
        plain.send("Page.navigate", {"url": server + "/?lang=en&q=" + urllib.parse.quote(EN_QUESTION)})
        plain.wait_for("document.readyState === 'complete' && document.querySelectorAll('li.hit').length > 0", timeout=60)
        assert plain.evaluate("document.querySelectorAll('.hit .why li').length") > 0
        assert plain.evaluate("document.querySelector('noscript') !== null")
