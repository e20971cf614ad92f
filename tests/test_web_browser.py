"""The page as a person uses it: a real headless Chromium against a real `kg serve` on the demo knowledge base.

Asks a Chinese and an English question, reads hits and why, opens a passage and a citation, follows
the graph drawing to an entity, uploads a file by drag and drop (with a UTF-8 API token asked for),
imports a bad relation table and reads its errors by line. The server's answers come from a local
OpenAI-compatible endpoint (tests/fake_llm.py) through litellm, so that they stream in many pieces;
The conversation, the graph explorer, the document viewer and the home page follow. Screenshots are
saved (to docs/screenshots/ when WEB_SCREENSHOTS_DIR says so). Skips where no Chromium is installed
(`.ci/run` installs Debian's).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import urllib.parse
import urllib.request
from pathlib import Path

import pytest
from chromium_cdp import Chromium, find_chromium, free_port, wait_for_http
from conftest import kg_in_new_process
from fake_llm import FakeLLM, passages_of
from office_files import write_workbook

from kg.cli.base import DEMO_DIR

pytest.importorskip("websockets", reason="the browser is driven over websockets: pip install -e '.[test]'")
CHROMIUM = find_chromium()
pytestmark = [pytest.mark.skipif(CHROMIUM is None, reason="no Chromium here (Debian: apt-get install chromium)"),
              pytest.mark.slow]

# The committed screenshots in docs/screenshots/ are refreshed with
#   WEB_SCREENSHOTS_DIR=docs/screenshots python -m pytest tests/test_web_browser.py
# otherwise they go to a temporary folder, so that a test run leaves the work tree as it was.
SCREENSHOTS_ENV = "WEB_SCREENSHOTS_DIR"
TOKEN = "令牌-browser-test-ключ"  # a token in any script works: the page sends its UTF-8 bytes
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
    # From a long folder name, as users' folders often are: the document viewer shows the full source path, and a
    # path that wraps nowhere once widened the 360 px page (only in checkouts with long paths).
    docs = root / "team_knowledge_base_kept_in_a_rather_deeply_nested_folder" / "docs"
    shutil.copytree(DEMO_DIR / "docs", docs)
    kg_in_new_process("ingest", str(docs), "--quiet", "--data-dir", str(data), cwd=root)
    return data


def cited_answer(body: dict) -> str:
    """A Markdown answer citing the first passage that names mysql-core or redis-cluster (else passage 1), and
    the graph fact [R1] in its own words when the server gave one."""
    passages = passages_of(body)
    n = next((n for n, text in passages.items() if "mysql-core" in text or "redis-cluster" in text), 1)
    user = next((m["content"] for m in body.get("messages", []) if m.get("role") == "user"), "")
    fact = re.search(r'<fact n="R1"[^>]*>\n(.*?)\n</fact>', user, re.DOTALL)
    return f"The **impact** of the failure: `redis-cluster` clients fail over to the database [{n}]." + (f" {fact.group(1)}[R1]" if fact else "")


@pytest.fixture(scope="module")
def llm():
    with FakeLLM() as fake:
        fake.replies["answer"] = cited_answer
        fake.replies["rewrite"] = "1. redis-cluster impact\n2. order-service dependencies"
        yield fake


@pytest.fixture(scope="module")
def server(demo_dir, llm) -> str:
    port = free_port()
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("KG_")}, "KG_API_TOKEN": TOKEN,
           "KG_LLM_MODEL": "openai/test-model", "KG_LLM_BASE_URL": llm.base_url, "PYTHONPATH": os.pathsep.join(sys.path)}
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


def show(browser: Chromium, server: str, lang: str, question: str | None = None) -> None:
    """The page opened afresh (a question's results, with its answer when answers are on), so that a test runs the
    same alone as after the others."""
    browser.goto(server + f"/?lang={lang}" + (f"&q={urllib.parse.quote(question)}" if question else ""))
    browser.wait_for("window.Kg && Kg.features" + (
        " && document.querySelectorAll('#results .hit').length > 0"
        " && (!Kg.features.ask || document.body.dataset.searched)"
        " && !document.querySelector('#results').hasAttribute('aria-busy')" if question else ""), timeout=60)


def texts(browser: Chromium, selector: str) -> list[str]:
    return browser.evaluate(f"Array.from(document.querySelectorAll({json.dumps(selector)})).map(e => e.textContent)")


def assert_fits(browser: Chromium, width: int = 360) -> None:
    """The page is no wider than the window. Layout after a resize may settle a frame later on a busy machine, so
    this waits up to 10 s; when it still overflows, the message names the elements that stick out."""
    try:
        browser.wait_for(f"document.documentElement.scrollWidth <= {width}", timeout=10)
    except TimeoutError:
        # The outermost elements that stick out (not their children), and elements whose own content overflows them.
        wide = browser.evaluate(
            f"Array.from(document.querySelectorAll('body *')).filter(e => e.getBoundingClientRect().right > {width} "
            f"&& !(e.parentElement && e.parentElement.getBoundingClientRect().right > {width}) || e.scrollWidth > e.clientWidth + 1 "
            "&& getComputedStyle(e).overflowX === 'visible').slice(0, 12).map(e => e.tagName + '.' + e.className + "
            "(e.parentElement ? ' in ' + e.parentElement.tagName + '.' + e.parentElement.className : '') + ' ' + "
            "Math.round(e.getBoundingClientRect().right) + '/' + e.scrollWidth + ' ' + e.textContent.slice(0, 60))")
        raise AssertionError(f"the page is {browser.evaluate('document.documentElement.scrollWidth')} px wide at {width} px: {wide}") from None


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
    # Relations are named by their rdfs:label in the page's language (an edge walked backwards with an arrow).
    labels = {r["name"]: r["label"] for r in api_get(server, "/graph?lang=en&limit=1")["relations"]}
    name = relations[0].lstrip("^")
    drawn = browser.evaluate("Array.from(document.querySelectorAll('.graph-path svg .edge')).map(e => e.dataset.relation)")
    assert (labels[name] if name == relations[0] else "← " + labels[name]) in drawn
    assert browser.evaluate("document.querySelector('.graph-path svg .node.center').dataset.label") == "redis-cluster"
    browser.resize(1440, 1400)  # tall enough to show hits reached through a relation
    browser.evaluate("window.scrollTo(0, 0)")
    browser.screenshot(shots / "search-en-1440.png", full_page=False)
    browser.resize(1440, 900)


def test_a_chinese_question_after_switching_language(browser, server):
    show(browser, server, "en", EN_QUESTION)
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
    assert "依赖" in drawn and depends_on & set(labels)
    assert "<mark>订单服务</mark>" in browser.evaluate("document.querySelector('#results').innerHTML")


def test_opening_a_citation_or_passage(browser, server):
    show(browser, server, "zh", ZH_QUESTION)
    if browser.evaluate("Kg.features.ask"):
        # A passage's citation: a relation question's graph facts [R1] lead the answer and open a fact card.
        browser.wait_for("document.querySelector('#answer .cite:not(.fact)')", timeout=60)
        browser.click("#answer .cite:not(.fact)")
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
    show(browser, server, "zh")
    query = json.loads(urllib.request.urlopen(urllib.request.Request(
        server + "/query", data=json.dumps({"query": ZH_QUESTION, "k": 2}).encode(), headers={"Content-Type": "application/json"})).read())
    first, second = query["hits"]
    citations = [
        {"n": 1, **{k: first[k] for k in ("chunk_id", "doc_id", "title", "source", "section", "lines", "text")}, "page": None,
         "version": {"version_id": "v2", "label": "2024 修订版", "effective_from": "2024-03-01", "effective_to": None}},
        {"n": 2, **{k: second[k] for k in ("chunk_id", "doc_id", "title", "source", "section", "lines", "text")}, "page": 3,
         "version": None, "placed": "the first section of the page about redis-cluster, brought after its section 影响范围"},
    ]
    record = {"question": ZH_QUESTION, "answer": "订单服务依赖 mysql-core [1]。也依赖 redis-cluster [2]。", "found": True,
              "language": "zh", "path": "rules", "path_reason": "no LLM configured",
              "sentences": [{"text": "订单服务依赖 mysql-core [1]。", "citations": [1], "support": 0.9, "flagged": False},
                            {"text": "也依赖 redis-cluster [2]。", "citations": [2], "support": 0.2, "flagged": True}],
              "citations": citations, "rounds": [], "packs_used": [], "timings_ms": {}}
    browser.evaluate(f"Kg.renderAnswer({json.dumps(record, ensure_ascii=False)}).closest('.turn').id = 'record-turn'")
    assert texts(browser, "#record-turn .sentence") == ["订单服务依赖 mysql-core。", "也依赖 redis-cluster。"]
    assert texts(browser, "#record-turn .cite") == ["1", "2"]
    assert browser.evaluate("document.querySelectorAll('#record-turn .sentence.flagged').length") == 1
    browser.click('#record-turn .cite[data-n="1"]')
    card = browser.evaluate("document.querySelector('#record-turn .passage[data-cite=\"1\"]').textContent")
    assert "2024 修订版" in card and "2024-03-01" in card and first["title"] in card
    assert browser.evaluate("document.querySelector('#record-turn .passage[data-cite=\"1\"] .md').textContent").strip()[:20] in first["text"]
    browser.click('#record-turn .cite[data-n="2"]')
    card = browser.evaluate("document.querySelector('#record-turn .passage[data-cite=\"2\"]').textContent")
    assert "页 3" in card and f"行 {second['lines'][0]}–{second['lines'][1]}" in card
    browser.screenshot(shots / "answer-layout-zh-1440.png", full_page=False)
    # The sources list says why passage 2 is there (the ranking did not place it); passage 1 says nothing more.
    assert texts(browser, "#record-turn .sources .placed") == [
        "— the first section of the page about redis-cluster, brought after its section 影响范围"]
    assert browser.evaluate("document.querySelector('#record-turn .sources li[value=\"1\"] .placed') === null")
    browser.click('#record-turn .cite[data-n="1"]')  # a second click closes it
    assert browser.evaluate("document.querySelector('#record-turn .passage[data-cite=\"1\"]') === null")
    browser.evaluate("document.querySelector('#record-turn').remove()")


def test_an_answer_keeps_its_words_around_its_sentences(browser, server):
    """Drawn sentence by sentence, an answer keeps the note that its sources are in another language and the
    length-limit note (the words of `answer` around its sentences), as `kg ask` prints them."""
    show(browser, server, "en")
    note, cut = "(The sources are in Chinese; quoted as written.)", "(The answer reached the length limit, KG_LLM_MAX_TOKENS, and stops here.)"
    record = {"question": "How many nodes?", "answer": f"{note}\n我们的 redis-cluster 有 6 个节点。[1]\n{cut}", "found": True,
              "language": "en", "path": "llm", "path_reason": "", "citations": [], "rounds": [], "packs_used": [], "timings_ms": {},
              "sentences": [{"text": "我们的 redis-cluster 有 6 个节点。", "citations": [1], "support": 1.0, "flagged": False}]}
    browser.evaluate(f"Kg.renderAnswer({json.dumps(record, ensure_ascii=False)}).closest('.turn').id = 'framed-turn'")
    assert texts(browser, "#framed-turn .answer-lead") == [note]
    assert texts(browser, "#framed-turn .answer-tail") == [cut]
    assert texts(browser, "#framed-turn .sentence") == ["我们的 redis-cluster 有 6 个节点。"]
    browser.evaluate("document.querySelector('#framed-turn').remove()")


def test_a_code_block_of_an_answer_is_drawn_on_its_lines_and_cited(browser, server):
    """A command block is a sentence of its own (`code`): drawn as a block with its lines as written, its citation a
    button after it, the sentences around it drawn as sentences, and no fence shown as framing."""
    show(browser, server, "zh")
    command = "greptime cli meta snapshot restore \\\n  --store-addrs 127.0.0.1:2379"
    record = {"question": "怎么恢复元数据？", "found": True, "language": "zh", "path": "rules", "path_reason": "",
              "answer": f"从本地备份文件恢复元数据到 etcd：[1]\n```\n{command}\n```\n[1]\n恢复后重启 metasrv。[1]",
              "citations": [], "rounds": [], "packs_used": [], "timings_ms": {},
              "sentences": [{"text": "从本地备份文件恢复元数据到 etcd：", "citations": [1], "support": 1.0, "flagged": False},
                            {"text": command, "citations": [1], "support": 1.0, "flagged": False, "code": ""},
                            {"text": "恢复后重启 metasrv。", "citations": [1], "support": 1.0, "flagged": False}]}
    browser.evaluate(f"Kg.renderAnswer({json.dumps(record, ensure_ascii=False)}).closest('.turn').id = 'code-turn'")
    assert browser.evaluate("document.querySelector('#code-turn pre.sentence.code code').textContent") == command
    assert texts(browser, "#code-turn .sentence") == ["从本地备份文件恢复元数据到 etcd：", command, "恢复后重启 metasrv。"]
    assert texts(browser, "#code-turn .cite") == ["1", "1", "1"]
    assert browser.evaluate("document.querySelectorAll('#code-turn .answer-lead, #code-turn .answer-tail').length") == 0
    browser.evaluate("document.querySelector('#code-turn').remove()")


def test_a_result_says_which_graph_it_walked(browser, server):
    """A /query result of a server walking the SPARQL store (KG_GRAPH_WALK=store), made from this server's real result:
    the note says which graph its relations came from, in the page's language."""
    show(browser, server, "en")
    query = json.loads(urllib.request.urlopen(urllib.request.Request(
        server + "/query", data=json.dumps({"query": ZH_QUESTION, "k": 2}).encode(), headers={"Content-Type": "application/json"})).read())
    assert query["graph"] is None  # this server walks graph.ttl, as by default: the page says nothing of it
    down = {**query, "graph": {"walked": "graph.ttl", "store": "http://127.0.0.1:7878",
                               "problem": "the SPARQL store at http://127.0.0.1:7878 does not answer (refused)"}}
    browser.evaluate(f"Kg.renderResult({json.dumps(down, ensure_ascii=False)})")
    assert texts(browser, "#results .graph-walk") == [
        "Relations walked in graph.ttl: the SPARQL store at http://127.0.0.1:7878 does not answer (refused)"]
    up = {**query, "graph": {"walked": "store", "store": "http://127.0.0.1:7878"}}
    browser.evaluate(f"Kg.renderResult({json.dumps(up, ensure_ascii=False)})")
    assert texts(browser, "#results .graph-walk") == ["Relations walked in the SPARQL store at http://127.0.0.1:7878, as it is now."]
    browser.evaluate(f"Kg.renderResult({json.dumps(query, ensure_ascii=False)})")
    assert texts(browser, "#results .graph-walk") == []


def test_a_result_searched_on_the_fallback_names_no_pack_as_chosen(browser, server):
    """A /query result whose routing was not sure where to look (every pack and the documents outside packs searched),
    made from this server's real result: one note that says so, not "Pack: ops (… searched every pack)" a pack; and one
    that no pack had a basis for it, so only the documents outside packs were searched."""
    show(browser, server, "zh")
    query = json.loads(urllib.request.urlopen(urllib.request.Request(
        server + "/query", data=json.dumps({"query": ZH_QUESTION, "k": 2}).encode(), headers={"Content-Type": "application/json"})).read())
    why = "not sure where to look (best pack scores 0.12): searched every pack"
    fallback = {**query, "packs_used": [{"id": "ops", "why": why}, {"id": "garden", "why": why}],
                "routing": {"path": "rules", "fallback": True, "scores": {"ops": 0.12, "garden": 0.0}, "round": 1, "note": ""}}
    browser.evaluate(f"Kg.renderResult({json.dumps(fallback, ensure_ascii=False)})")
    assert texts(browser, "#results .packs-fallback") == [
        "知识包：未选定（不确定该查哪个：最高得分 0.12），已搜索全部知识包（ops、garden）和不属于任何知识包的文档"]
    chosen = {**fallback, "packs_used": [{"id": "ops", "why": "asked for (--pack)"}], "routing": {**fallback["routing"], "fallback": False}}
    browser.evaluate(f"Kg.renderResult({json.dumps(chosen, ensure_ascii=False)})")
    assert texts(browser, "#results .packs-fallback") == [] and "知识包: ops (asked for (--pack))" in browser.evaluate(
        "document.querySelector('#results').textContent")
    # No pack has a basis for it: the documents outside packs were searched, and the note says why no pack was.
    outside = {**query, "packs_used": [], "routing": {**fallback["routing"], "fallback": False, "outside": True,
                                                       "note": "no word of it is in any pack"}}
    browser.evaluate(f"Kg.renderResult({json.dumps(outside, ensure_ascii=False)})")
    assert texts(browser, "#results .packs-outside") == ["知识包：没有一个有依据（no word of it is in any pack），已搜索不属于任何知识包的文档"]


def test_the_entity_panel_draws_its_neighbours(browser, server, shots):
    show(browser, server, "zh", ZH_QUESTION)
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
        assert_fits(browser, 360)
        assert browser.evaluate("Math.max(...Array.from(document.querySelectorAll('svg.graph')).map(s => s.getBoundingClientRect().right))") <= 360
        browser.screenshot(shots / "search-zh-360.png", full_page=False)
        browser.click(".entities .chip")
        browser.wait_for("document.querySelector('#panel .entity-graph svg')")
        assert_fits(browser, 360)
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
    assert browser.evaluate("document.querySelector('#upload-progress').value") == 1
    assert not [line for line in browser.console if "TypeError" in line]
    assert api_get(server, "/stats")["documents"] == before + 1
    browser.goto(server + "/?lang=en")
    ask(browser, "quokkabackup")
    assert texts(browser, ".hit .hit-head strong")[0] == "备份策略 quokkabackup"
    # A Word document goes as its bytes (read as text it would be a zip's noise): the token is in the tab already.
    # A file of no type kgrag reads is refused by the server, not added as text noise.
    runbook = tmp_path / "settlement-runbook.docx"
    runbook.write_bytes((Path(__file__).parent / "data" / "docx" / "settlement-runbook.docx").read_bytes())
    sheet = tmp_path / "budget.numbers"  # Apple Numbers: no type kgrag reads
    sheet.write_bytes(b"PK\x03\x04" + bytes(range(256)) * 4)
    browser.goto(server + "/?lang=en#documents")
    browser.wait_for("!document.querySelector('#view-documents').hidden && document.querySelector('#documents-list table')")
    deck = tmp_path / "oncall-training.pptx"  # a PowerPoint deck goes as its bytes too
    deck.write_bytes((Path(__file__).parent / "data" / "pptx" / "oncall-training.pptx").read_bytes())
    gbk = tmp_path / "夜班.md"  # a note saved as GBK (Windows' "ANSI" in China): the page sends bytes, the server decodes
    gbk.write_bytes("# 夜班安排\n\n夜班由王五负责，交接在早上八点。\n".encode("gbk"))
    browser.drop_files("#drop", [runbook, deck, gbk, sheet])
    browser.wait_for("document.querySelector('#upload-progress').value === 4", timeout=60)
    lines = texts(browser, "#upload-log li")
    assert any(line.startswith("夜班.md: 1 added") for line in lines), lines
    assert any(line.startswith("settlement-runbook.docx: 1 added") for line in lines), lines
    assert any(line.startswith("oncall-training.pptx: 1 added") for line in lines), lines
    assert lines[0].startswith("budget.numbers:") and "unsupported file type" in lines[0], lines
    # The same runbook again under another name: one hit, whose why names the copy. Dropped once the list of documents
    # has been drawn again with the three new ones (it grows above the drop zone: a drop while it is redrawn can land on
    # the list that moved in under the pointer; CI on a loaded machine lost it so, once in ~5 runs).
    browser.wait_for("['夜班.md', 'settlement-runbook.docx', 'oncall-training.pptx'].every(function (name) {"
                     " return document.querySelector('#documents-list').textContent.indexOf(name) >= 0; })", timeout=60)
    copy = tmp_path / "runbook-copy.docx"
    copy.write_bytes(runbook.read_bytes())
    browser.drop_files("#drop", [copy])
    browser.wait_for("document.querySelector('#upload-progress').value === 1 && "
                     "!document.querySelector('#upload-log li.busy')", timeout=60)
    browser.goto(server + "/?lang=en")
    ask(browser, "settlectl retry")
    assert texts(browser, ".hit .hit-head strong")[0] == "结算服务运行手册"
    assert texts(browser, ".hit .hit-head strong").count("结算服务运行手册") == 1
    why = texts(browser, ".hit .why li")
    assert "the same text is also in runbook-copy.docx (shown once)" in why, why
    assert texts(browser, ".hit .where")[0].endswith("settlement-runbook.docx")  # Word: its section says where, not lines
    ask(browser, "值班长的电话 不要打个人手机")  # the deck's speaker notes, on its slide
    assert texts(browser, ".hit .where")[0].endswith("oncall-training.pptx · slide 2")
    # What a passage's `page` counts, wherever the page shows it (the passage dialog, the document viewer).
    assert browser.evaluate("[Kg.unit('x/deck.pptx'), Kg.unit('sheet.XLSX'), Kg.unit('a.pdf'), Kg.unit('')]") == [
        "slide", "row", "page", "page"]
    ask(browser, "夜班由谁负责")
    assert texts(browser, ".hit .hit-head strong")[0] == "夜班安排"  # read as GBK, not as UTF-8 noise


def test_import_errors_are_shown_by_line(browser, server, tmp_path, shots):
    table = tmp_path / "team-relations.csv"
    table.write_text("source,relation,target\nbilling-service,dependsOn,mysql-core\nbilling-service,depnds_on,kafka-cluster\n",
                     encoding="utf-8")
    browser.goto(server + "/?lang=en#import")
    browser.wait_for("!document.querySelector('#view-import').hidden")
    browser.set_files("#import-input", [table])
    browser.click("#import-form button[type=submit]")  # the token is in this tab's session already, or asked for
    done = "document.querySelector('#import-result table')"
    browser.wait_for(f"document.querySelector('#token-dialog').open || {done}", timeout=60)
    if browser.evaluate("document.querySelector('#token-dialog').open"):  # run alone (`-k`): no upload before it
        browser.type_text("#token-input", TOKEN)
        browser.click("#token-ok")
    browser.wait_for(done, timeout=60)
    rows = browser.evaluate("Array.from(document.querySelectorAll('#import-result tbody tr')).map(r => Array.from(r.cells).map(c => c.textContent))")
    assert rows == [["team-relations.csv", "3", "relation 'depnds_on' is not in the ontology (did you mean 'dependsOn'?)"]]
    assert "was not imported" in texts(browser, "#import-result p.error")[0]
    # The same table kept in a workbook under a title row: the problem names the row Excel shows.
    cells = [("依赖表",), (), ("source", "relation", "target"), ("billing-service", "dependsOn", "mysql-core"),
             ("billing-service", "depnds_on", "kafka-cluster")]
    sheet = "".join(f'<row r="{i}">' + "".join(f'<c t="inlineStr"><is><t>{v}</t></is></c>' for v in row) + "</row>"
                    for i, row in enumerate(cells, start=1) if row)
    book = write_workbook(tmp_path / "team-relations.xlsx", [("关系", "visible", sheet)])
    browser.set_files("#import-input", [book])
    browser.click("#import-form button[type=submit]")
    browser.wait_for("document.querySelector('#import-result p.error') && "
                     "document.querySelector('#import-result p.error').textContent.includes('team-relations.xlsx')")
    rows = browser.evaluate("Array.from(document.querySelectorAll('#import-result tbody tr')).map(r => Array.from(r.cells).map(c => c.textContent))")
    assert rows == [["team-relations.xlsx", "5", "relation 'depnds_on' is not in the ontology (did you mean 'dependsOn'?)"]]
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


# ---- the conversation, Markdown, the explorer, the document viewer, the home page ----------------

FOLLOW_UP = "那 order-service 呢？"


def test_a_two_turn_conversation_streams_its_answers(browser, server, llm, shots):
    browser.goto(server + "/?lang=zh")
    browser.evaluate("Kg.chat.clear()")
    # What the page sends to /ask, recorded in the page (the server's side is the fake LLM's requests).
    browser.evaluate("window.__asked = []; window.__fetch = window.fetch; window.fetch = function (url, o) {"
                     " if (url === '/ask') window.__asked.push(JSON.parse(o.body)); return window.__fetch(url, o); }")
    ask(browser, "redis-cluster 宕机会影响哪些服务？")
    turn = "#thread .turn:nth-child(1)"
    browser.wait_for(f"document.querySelector('{turn} .copy')", timeout=60)
    # Streamed: the answer's text arrived as `delta` events before its record (how many pieces is the
    # server's business), drawn as Markdown (bold, code) with its citation a button that opens the passage.
    assert int(browser.evaluate(f"document.querySelector('{turn}').dataset.deltas")) >= 1
    assert browser.evaluate(f"document.querySelector('{turn} .answer-text strong').textContent") == "impact"
    assert browser.evaluate(f"document.querySelector('{turn} .answer-text code').textContent") == "redis-cluster"
    assert browser.evaluate(f"document.querySelector('{turn} .answer-text').textContent").count("*") == 0
    browser.click(f"{turn} .cite:not(.fact)")
    browser.wait_for(f"document.querySelector('{turn} .passage')")
    # A graph fact [R1] opens with its triples; each triple's source (its lines in graph.ttl) is one click on.
    record = browser.evaluate("Kg.chat.turns()[0].record")
    assert record["facts"] and record["facts"][0]["relation"] == "requiredBy"
    browser.click(f"{turn} .cite.fact")
    browser.wait_for(f"document.querySelector('{turn} .fact-card')")
    card = browser.evaluate(f"document.querySelector('{turn} .fact-card').textContent")
    assert record["facts"][0]["text"]["zh"] in card
    # each triple with the table and line that state it
    assert record["facts"][0]["origins"][0].startswith("relations.csv:") and record["facts"][0]["origins"][0] in card
    browser.click(f"{turn} .fact-card .source")
    browser.wait_for("document.querySelector('#panel pre.turtle .fact-row')")
    rows = texts(browser, "#panel pre.turtle .fact-row")
    assert any(":dependsOn" in row for row in rows) and any("redis-cluster" in row for row in rows)
    assert "relations.csv:" in texts(browser, "#panel .fact-box .origin")[0]  # and the table row it came from
    # The loop's path and rounds, on demand.
    browser.click(f"{turn} details.loop summary")
    assert browser.evaluate(f"document.querySelectorAll('{turn} .rounds li').length") >= 1
    assert "test-model" in browser.evaluate(f"document.querySelector('{turn} details.loop').textContent")
    # Copy with sources.
    browser.click(f"{turn} .copy")
    copied = browser.wait_for("Kg.lastCopied")
    cited = record["citations"][0]
    # The question, then the answer as the model wrote it, after the relation table's facts that lead it.
    assert copied.startswith("redis-cluster 宕机会影响哪些服务？\n\n")
    assert "The **impact**" in copied and record["facts"][0]["text"]["zh"].split("：")[0] in copied
    assert f"[{cited['n']}] {cited['title']}" in copied
    # The follow-up: asked from the conversation, with the turn before it as context.
    browser.type_text("#followup-q", FOLLOW_UP)
    browser.click("#followup-form button")
    browser.wait_for("document.querySelectorAll('#thread .turn').length === 2"
                     " && document.querySelector('#thread .turn:nth-child(2) .copy')", timeout=60)
    sent = browser.evaluate("window.__asked")
    assert sent[0]["stream"] is True and "history" not in sent[0]
    if browser.evaluate("Kg.features.ask_history"):
        assert sent[1]["question"] == FOLLOW_UP and sent[1]["history"][0]["content"] == "redis-cluster 宕机会影响哪些服务？"
        # The server searched the follow-up as the question it stands for (the fake model wrote no standalone one).
        second = browser.evaluate("Kg.chat.turns()[1].record")
        assert second["question"] == FOLLOW_UP and second["rounds"][0]["query"].startswith("order-service 宕机会影响哪些服务")
    else:
        assert sent[1]["question"] == "redis-cluster 宕机会影响哪些服务？\n" + FOLLOW_UP
        assert browser.evaluate("document.querySelector('#thread .turn:nth-child(2) .note').textContent").startswith("已连同上一个问题")
    assert any(FOLLOW_UP in json.dumps(r, ensure_ascii=False) for r in llm.requests)
    browser.screenshot(shots / "conversation-zh-1440.png", full_page=False)
    # Kept in this browser: a reload shows both turns; clearing empties it.
    browser.goto(server + "/?lang=zh")
    assert texts(browser, "#thread .turn .question") == ["问redis-cluster 宕机会影响哪些服务？", "问" + FOLLOW_UP]
    browser.click("#clear-conversation")
    assert browser.evaluate("document.querySelectorAll('#thread .turn').length + localStorage.getItem('kg-conversation').length") == 2


def test_a_markdown_table_in_a_passage_is_a_table(browser, server):
    browser.goto(server + "/?lang=zh")
    browser.evaluate("document.querySelector('#with-answer').checked = false")
    ask(browser, "redis-cluster 故障处理手册 影响面速查")
    heads = browser.evaluate("Array.from(document.querySelectorAll('#results .hit .md table th')).map(e => e.textContent)")
    assert "使用方" in heads and "缓存不可用时的表现" in heads
    assert browser.evaluate("document.querySelector('#results .hit .md table td').textContent") == "order-service"
    assert "|---|" not in browser.evaluate("document.querySelector('#results').textContent")
    # The matched words are marked inside the rendered Markdown.
    assert browser.evaluate("document.querySelectorAll('#results .hit .md mark').length") > 0


def test_an_admonition_in_a_passage_is_a_callout_not_its_fence(browser, server):
    """A Docusaurus page's ":::tip 注意" … ":::" is drawn as the site draws it: a quote under its title."""
    show(browser, server, "zh")
    text = ":::tip 注意\n这些 API 在 GreptimeCloud 中无法使用。\n\n```bash\ncurl -X POST http://localhost:4000/v1/sql\n```\n:::\n\n正文。"
    browser.evaluate(f"document.body.append(Object.assign(KgMd.render({json.dumps(text, ensure_ascii=False)}, []), {{id: 'admonition'}}))")
    assert browser.evaluate("document.querySelector('#admonition blockquote strong').textContent") == "注意"
    assert "无法使用" in browser.evaluate("document.querySelector('#admonition blockquote').textContent")
    assert browser.evaluate("document.querySelector('#admonition blockquote pre code').textContent").startswith("curl -X POST")
    assert ":::" not in browser.evaluate("document.querySelector('#admonition').textContent")
    assert browser.evaluate("document.querySelector('#admonition > p').textContent") == "正文。"
    browser.evaluate("document.querySelector('#admonition').remove()")


def test_html_in_a_document_does_not_run(browser, server, tmp_path):
    note = tmp_path / "hostile.md"
    note.write_text("# 恶意文档 zorbleflux\n\nzorbleflux 的说明。\n\n<script>window.__pwned = 1</script>\n\n"
                    '<img src="x" onerror="window.__pwned = 2"> <a href="javascript:window.__pwned = 3">link</a>\n\n'
                    "| a | b |\n|---|---|\n| <b onmouseover=\"window.__pwned = 4\">x</b> | y |\n", encoding="utf-8")
    browser.goto(server + "/?lang=en#documents")
    browser.wait_for("document.querySelector('#documents-list table')")
    browser.set_files("#upload-input", [note])  # the token is in this tab's session already, or asked for
    done = "document.querySelector('#upload-log li[data-file=\"hostile.md\"]:not(.busy)')"
    browser.wait_for(f"document.querySelector('#token-dialog').open || {done}", timeout=60)
    if browser.evaluate("document.querySelector('#token-dialog').open"):
        browser.type_text("#token-input", TOKEN)
        browser.click("#token-ok")
    browser.wait_for("document.querySelector('#upload-log li[data-file=\"hostile.md\"].ok')", timeout=60)
    browser.goto(server + "/?lang=en")
    browser.evaluate("document.querySelector('#with-answer').checked = false")
    ask(browser, "zorbleflux")
    browser.evaluate("document.querySelectorAll('#results .hit .open-passage').forEach(b => b.click())")
    browser.evaluate("document.querySelectorAll('#results b, #results img, #results a').forEach(e => e.dispatchEvent(new MouseEvent('mouseover')))")
    assert browser.evaluate("window.__pwned === undefined")
    assert browser.evaluate("document.querySelectorAll('#results script, #results [onerror], #results [onmouseover]').length") == 0
    assert browser.evaluate("Array.from(document.querySelectorAll('#results a')).every(a => !a.href.startsWith('javascript:'))")
    # And in the document viewer.
    browser.click("#results .hit .open-doc")
    browser.wait_for("document.body.dataset.docShown")
    assert browser.evaluate("document.querySelector('#doc-view h2').textContent") == "恶意文档 zorbleflux"
    assert browser.evaluate("window.__pwned === undefined && document.querySelectorAll('#doc-view script, #doc-view [onerror]').length === 0")


def test_the_graph_explorer_filters_and_opens_an_entity(browser, server, shots):
    browser.goto(server + "/?lang=zh#graph")
    browser.wait_for("document.querySelector('#graph-canvas').dataset.drawn === '1'", timeout=60)
    whole = api_get(server, "/graph?lang=zh")
    assert browser.evaluate("KgExplore.state.cy.nodes().length") == len(whole["nodes"])
    # Relation and class names in the UI's language (the ontology's @zh labels).
    options = texts(browser, "#graph-relation option")
    assert any(o.startswith("依赖 (dependsOn)") for o in options), options
    browser.screenshot(shots / "graph-zh-1440.png", full_page=False)
    # Filter by class: only databases (and nothing else) are drawn.
    browser.evaluate("var s = document.querySelector('#graph-class'); s.value = 'Database'; s.dispatchEvent(new Event('change'))")
    browser.wait_for("document.querySelector('#graph-canvas').dataset.drawn === '2'", timeout=60)
    databases = api_get(server, "/graph?class=Database")["nodes"]
    drawn = browser.evaluate("KgExplore.state.cy.nodes().map(n => n.data('label'))")
    assert sorted(drawn) == sorted(n["label"] for n in databases) and "mysql-core" in drawn
    # A relation filter and a search: order-service's dependencies.
    browser.evaluate("var s = document.querySelector('#graph-class'); s.value = ''; var r = document.querySelector('#graph-relation');"
                     " r.value = 'dependsOn'; document.querySelector('#graph-q').value = 'order-service'")
    browser.click("#graph-form button[type=submit]")
    browser.wait_for("document.querySelector('#graph-canvas').dataset.drawn === '3'", timeout=60)
    edges = browser.evaluate("KgExplore.state.cy.edges().map(e => e.data('relation'))")
    assert edges and set(edges) == {"dependsOn"}
    assert browser.evaluate("KgExplore.state.cy.nodes('[matched = 1]').map(n => n.data('label'))") == ["order-service"]
    # A real click on a node opens its panel; a fact's source is one click away from there.
    x, y = browser.evaluate("KgExplore.nodePoint('mysql-core')")
    for kind in ("mouseMoved", "mousePressed", "mouseReleased"):
        browser.send("Input.dispatchMouseEvent", {"type": kind, "x": x, "y": y, "button": "left", "clickCount": 1})
    browser.wait_for("document.querySelector('#panel h2') && document.querySelector('#panel h2').textContent === 'mysql-core'")
    assert "被依赖: " in texts(browser, "#panel .facts li b")  # requiredBy, by its Chinese label
    browser.click('#panel .facts li[data-relation="requiredBy"] .source')
    browser.wait_for("document.querySelector('#panel pre.turtle .fact-row')")
    fact_rows = texts(browser, "#panel pre.turtle .fact-row")
    assert any("mysql-core" in row for row in fact_rows) and any(":dependsOn" in row for row in fact_rows)
    assert "graph.ttl" in browser.evaluate("document.querySelector('#panel .fact-box').textContent")


def test_the_document_viewer(browser, server, shots):
    docs = api_get(server, "/documents")["documents"]
    doc = next(d for d in docs if d["source"].endswith("redis-cluster-failure.md"))
    outline = api_get(server, f"/documents/{doc['doc_id']}/outline")
    target = outline["chunks"][-1]["chunk_id"]
    browser.goto(server + "/?lang=zh#documents")
    browser.wait_for("document.querySelector('#documents-list table a')")
    browser.evaluate(f"location.hash = {json.dumps('doc=' + doc['doc_id'] + '&chunk=' + target)}")
    browser.wait_for("document.body.dataset.docShown && document.body.dataset.docShown.endsWith(':' + " + json.dumps(target) + ")")
    assert browser.evaluate("document.querySelector('#doc-view h2').textContent") == doc["title"]
    assert texts(browser, "#doc-view .toc a") == [s["section"] for s in outline["sections"]]
    assert browser.evaluate("document.querySelectorAll('#doc-view .chunk').length") == len(outline["chunks"])
    assert browser.evaluate("document.querySelector('#doc-view .chunk.target').dataset.chunk") == target
    assert browser.evaluate("document.querySelector('#doc-view .chunk .md table') !== null")
    about = [a["label"] for c in outline["chunks"] for a in c["about"]]
    assert about and about[0] in texts(browser, "#doc-view .about .chip")
    assert len(texts(browser, "#doc-version option")) == doc["versions"]
    browser.screenshot(shots / "document-zh-1440.png", full_page=False)
    browser.resize(360, 780)
    try:
        browser.evaluate("window.scrollTo(0, 0)")
        assert_fits(browser, 360)
        browser.screenshot(shots / "document-zh-360.png", full_page=False)
        browser.goto(server + "/?lang=zh#documents")
        browser.wait_for("document.querySelector('#documents-list table')")
        # The list scrolls sideways inside its box; no column is squeezed to one character a line.
        assert_fits(browser, 360)
        narrowest = browser.evaluate("Math.min(...Array.from(document.querySelectorAll('#documents-list td')).filter(td => td.textContent.length > 2).map(td => td.getBoundingClientRect().width))")
        assert narrowest >= 50
    finally:
        browser.resize(1440, 900)


def test_the_home_page(browser, server, shots):
    browser.goto(server + "/?lang=zh")
    browser.evaluate("Kg.chat.clear()")
    browser.goto(server + "/?lang=zh")
    browser.wait_for("document.querySelector('#home .counts')")
    stats = api_get(server, "/stats")
    assert browser.evaluate("document.querySelector('[data-count=documents] b').textContent") == str(stats["documents"])
    examples = texts(browser, "#home .example")
    assert examples and any("order-service" in e or "redis-cluster" in e for e in examples)
    assert browser.evaluate("document.querySelectorAll('#home .recent li').length") > 0
    browser.screenshot(shots / "home-zh-1440.png", full_page=False)
    browser.resize(360, 780)
    try:
        assert_fits(browser, 360)
        browser.screenshot(shots / "home-zh-360.png", full_page=False)
    finally:
        browser.resize(1440, 900)
    browser.click("#home .example")
    browser.wait_for("document.querySelectorAll('#results .hit').length > 0", timeout=60)
    assert browser.evaluate("document.querySelector('#home').hidden")


def test_favicon_and_no_request_leaves_the_server(browser, server):
    show(browser, server, "en", EN_QUESTION)
    with urllib.request.urlopen(server + "/favicon.ico") as response:
        assert response.headers["Content-Type"].startswith("image/svg+xml")
    # Every script and style the page loads is its own (nothing from another host, nothing inline).
    sources = browser.evaluate("Array.from(document.querySelectorAll('script[src], link[href]')).map(e => e.src || e.href)")
    assert sources and all(s.startswith(server + "/") for s in sources)
    assert browser.evaluate("Array.from(document.scripts).filter(s => !s.src && s.type !== 'application/json').length") == 0
    assert browser.evaluate("document.querySelectorAll('[onclick], [onload], [onerror], [onsubmit]').length") == 0
