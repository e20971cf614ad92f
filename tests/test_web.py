"""The page at / through the real ASGI app: server-side search without JavaScript, languages, assets, feature detection; POST /import and GET /ontology/check."""

from __future__ import annotations

import html
import json
import re

import pytest
from conftest import CROSS_DOC_QUERY, build_kb, make_settings
from fastapi.testclient import TestClient

from api.app import create_app
from api.web.render import highlight, path_steps, pick_language, shown_terms, why_in_words

TOKEN = "s3cret-token"


@pytest.fixture
def client(tmp_path):
    build_kb(tmp_path).close()
    with TestClient(create_app(make_settings(tmp_path / "kb"))) as test_client:
        yield test_client


@pytest.fixture
def guarded(tmp_path):
    build_kb(tmp_path).close()
    with TestClient(create_app(make_settings(tmp_path / "kb", api_token=TOKEN))) as test_client:
        yield test_client


def boot(page: str) -> dict:
    found = re.search(r'<script type="application/json" id="kg-boot">(.*?)</script>', page, re.S)
    return json.loads(found.group(1))


def test_the_page_speaks_the_browser_language(client):
    zh = client.get("/", headers={"Accept-Language": "zh-CN,zh;q=0.9,en;q=0.8"})
    assert zh.status_code == 200 and zh.headers["content-type"].startswith("text/html")
    assert '<html lang="zh-CN">' in zh.text and "<title>kgrag：向知识库提问</title>" in zh.text
    en = client.get("/", headers={"Accept-Language": "de-DE,en;q=0.5,zh;q=0.2"})
    assert '<html lang="en">' in en.text and "<title>kgrag: ask your knowledge base</title>" in en.text
    assert boot(en.text)["lang"] == "en" and set(boot(en.text)["messages"]) == {"en", "zh"}


def test_the_language_link_sticks_in_a_cookie(client):
    chosen = client.get("/?lang=zh", headers={"Accept-Language": "en"})
    assert chosen.cookies.get("kg_lang") == "zh"
    again = client.get("/", headers={"Accept-Language": "en"})  # the client keeps the cookie
    assert '<html lang="zh-CN">' in again.text


def test_search_works_without_javascript(client):
    page = client.get("/", params={"q": CROSS_DOC_QUERY, "mode": "full", "lang": "en"}).text
    form = re.search(r'<form id="search-form"[^>]*>', page).group(0)
    assert 'method="get"' in form and 'action="/"' in form
    hits = re.findall(r'<li class="hit">(.*?)</li>\s*(?=<li class="hit">|</ol>)', page, re.S)
    assert len(hits) == len(boot(page)["result"]["hits"]) > 0
    text = html.unescape(page)
    assert "order-service" in re.search(r'<p class="entities">(.*?)</p>', text, re.S).group(1)
    # A graph hit says in words how the graph reached it, and draws the path as text.
    assert "reached through the relation graph from order-service" in text
    # The relation by its rdfs:label in the page's language (English here).
    assert re.search(r"<b>order-service</b> —depends on→ <b>mysql-core</b>", text)
    assert "<mark>订单服务</mark>" in page


def test_a_bad_mode_falls_back_and_an_empty_query_renders_no_results(client):
    page = client.get("/", params={"q": "mysql", "mode": "nonsense"}).text
    assert re.search(r'<option value="full"[^>]* selected', page)
    empty = client.get("/").text
    assert boot(empty)["result"] is None and '<ol class="hits">' not in empty


def test_features_follow_the_routes_the_server_has(tmp_path, monkeypatch):
    app = create_app(make_settings(tmp_path / "kb"))
    with TestClient(app) as test_client:
        page = test_client.get("/").text
        features = boot(page)["features"]
        assert ('id="as-of"' in page) is features["as_of"]
        assert features["upload"] and features["import"] and features["ontology_check"]
        assert not features["token"]
        # The page offers answers where the server has POST /ask (by its OpenAPI schema) ...
        assert "post" in app.openapi()["paths"]["/ask"] and features["ask"] is True
    # ... and not where it has not: the same page asked for an endpoint this server lacks
    from api.routes import web

    monkeypatch.setitem(web.FEATURES, "ask", ("/no-such-ask", "POST"))
    with TestClient(create_app(make_settings(tmp_path / "bare"))) as test_client:
        assert boot(test_client.get("/").text)["features"]["ask"] is False
    # The "in force on" date appears only where POST /query takes as_of.
    from api.schemas import QueryIn

    assert features["as_of"] is ("as_of" in QueryIn.model_fields)


def test_assets_are_served_from_the_package_and_nothing_else(client):
    for name, kind in (("app.js", "text/javascript"), ("graph.js", "text/javascript"), ("app.css", "text/css")):
        response = client.get(f"/web/{name}")
        assert response.status_code == 200 and response.headers["content-type"].startswith(kind)
    assert client.get("/web/..%2Fapp.py").status_code == 404
    assert client.get("/web/index.html").status_code == 404
    page = client.get("/").text
    assert not re.search(r'(src|href)="(https?:)?//', page), "the page must not load anything from the network"


def test_import_a_relation_table_upload(guarded):
    table = "source,relation,target,source_type,target_type\nsearch-service,dependsOn,elastic-7,Service,Database\n"
    denied = guarded.post("/import", files={"file": ("relations.csv", table)})
    assert denied.status_code == 401 and guarded.get("/entities/elastic-7").status_code == 404
    done = guarded.post("/import", files={"file": ("relations.csv", table)}, headers={"Authorization": f"Bearer {TOKEN}"})
    assert done.status_code == 200, done.text
    assert done.json()["kind"] == "relations" and "1" in done.json()["summary"]
    entity = guarded.get("/entities/search-service").json()
    assert [n["label"] for n in entity["neighbours"]["dependsOn"]] == ["elastic-7"]


def test_import_errors_come_back_by_line(guarded):
    table = "source,relation,target\na,dependsOn,b\nc,depend_onn,d\ne,dependsOn,\n"
    response = guarded.post("/import", files={"file": ("my-table.csv", table)}, headers={"Authorization": f"Bearer {TOKEN}"})
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["type"] == "RelationTableError" and "nothing was imported" in error["message"]
    assert error["problems"][0] == "my-table.csv:3: relation 'depend_onn' is not in the ontology (did you mean 'dependsOn'?)"
    assert error["problems"][1].startswith("my-table.csv:4: ")
    assert guarded.get("/entities/a").status_code == 404  # all or nothing


def test_import_refuses_what_it_cannot_read(guarded):
    auth = {"Authorization": f"Bearer {TOKEN}"}
    response = guarded.post("/import", files={"file": ("notes.docx", b"PK\x03\x04")}, headers=auth)
    assert response.status_code == 400
    assert response.json()["error"]["message"].startswith("'notes.docx' cannot be imported: upload a relation table (.csv, .xlsx)")
    # A path in the file name never decides where the upload goes; the base name is what is reported.
    sneaky = guarded.post("/import", files={"file": ("../../x/bad.csv", "source,relation,target\na,zzz,b\n")}, headers=auth)
    assert sneaky.json()["error"]["problems"][0].startswith("bad.csv:2: ")


def test_import_size_limit(tmp_path):
    with TestClient(create_app(make_settings(tmp_path / "kb", import_max_bytes=100))) as small:
        response = small.post("/import", files={"file": ("relations.csv", "source,relation,target\n" + "a,dependsOn,b\n" * 20)})
    assert response.status_code == 400
    assert response.json()["error"]["message"] == "relations.csv is larger than 100 bytes: import it with `kg import`, or raise KG_IMPORT_MAX_BYTES"


def test_ontology_check_is_the_cli_record(client, tmp_path):
    from conftest import kg_in_new_process

    record = client.get("/ontology/check").json()
    assert set(record) == {"errors", "warnings", "findings"}
    cli = json.loads(kg_in_new_process("ontology", "check", "--json", "--data-dir", str(tmp_path / "kb"), cwd=tmp_path))
    assert record == cli


def test_language_choice_by_weight():
    assert pick_language(None, None, "en;q=0.3, zh-TW;q=0.8") == "zh"
    assert pick_language("en", "zh", "zh") == "en"
    assert pick_language("xx", None, "fr, de") == "en"
    assert pick_language(None, "zh", "en") == "zh"


def test_marks_and_words_follow_the_passage():
    text = "`redis_exporter` watches Redis; RedisDown fires; 缓存集群故障 redis-cluster"
    marked = str(highlight(text, ["redi", "redis-cluster", "故障", "<b>"]))
    assert marked.count("<mark>") == 3 and "<mark>Redis</mark>;" in marked and "<mark>故障</mark>" in marked
    assert "redis_exporter" in marked and "<mark>RedisDown" not in marked
    assert str(highlight("a <b> c", [])) == "a &lt;b&gt; c"
    assert shown_terms(text, ["redi", "cluster", "故障"]) == ["Redis", "cluster", "故障"]
    steps = path_steps("query: 订单服务 → dependsOn → redis-cluster → requiredBy → user-service → mentioned in chunk")
    assert steps == {"nodes": ["订单服务", "redis-cluster", "user-service"], "relations": ["dependsOn", "requiredBy"], "end": "mention"}
    why = {"bm25": {"rank": 2, "score": 1.0, "terms": ["redi"]},
           "graph": {"rank": 1, "score": 0.5, "entity": "x", "via": "about", "path": "query: a → dependsOn → b → document about it"}}
    assert why_in_words(why, "zh", "Redis") == ["匹配词语 Redis（文本排名第 2）", "从 a 经关系图到达（图谱排名第 1）；这是关于 b 的文档"]
    # a hit found by meaning says so too, and so does one moved up for diversity or brought by the second search
    meaning = {"dense": {"rank": 3, "similarity": 0.81234}, "diversity": {"from": 7, "similarity_above": 0.4},
               "hop": {"rank": 1, "similarity": 0.9, "from": None}}
    assert why_in_words(meaning, "en") == [
        "near the question in meaning (meaning rank 3, similarity 0.812)",
        "moved up from #7 so the first hits are not near-copies of one (similarity to the hits above 0.400)",
        "near in meaning to the question read with the first hit (rank 1 of that search, similarity 0.900)"]
    assert why_in_words({"dense": {"rank": 3, "similarity": 0.5}}, "zh") == ["与问题的意思相近（语义排名第 3，相似度 0.500）"]


def test_a_passage_with_markup_cannot_break_out_of_the_page(client):
    text = "# zebrafinch notes\n\nzebrafinch </script><script>alert(1)</script> <!-- <b>bold</b>\n"
    assert client.post("/documents", json={"text": text, "source": "evil.md"}).status_code == 201
    page = client.get("/", params={"q": "zebrafinch"}).text
    assert "<script>alert(1)" not in page and "<b>bold</b>" not in page
    assert "</script><script>alert(1)</script>" in boot(page)["result"]["hits"][0]["text"]
