"""The explorer's JSON through the real ASGI app on the fixture corpus: GET /graph (bounded, filtered, labels by
language), /graph/fact (the lines of graph.ttl that assert a fact), /documents/{id}/outline, /overview, /packs, /check."""

from __future__ import annotations

import pytest
from conftest import build_kb, make_settings
from fastapi.testclient import TestClient

from api.app import create_app


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    root = tmp_path_factory.mktemp("web-graph")
    build_kb(root).close()
    with TestClient(create_app(make_settings(root / "kb"))) as test_client:
        yield test_client


def test_the_whole_graph_with_labels_in_the_asked_language(client):
    zh = client.get("/graph", params={"lang": "zh"}).json()
    en = client.get("/graph", params={"lang": "en"}).json()
    assert {n["label"] for n in zh["nodes"]} >= {"order-service", "mysql-core", "redis-cluster"}
    assert zh["total_nodes"] == len(zh["nodes"]) and not zh["truncated"]
    labels = {r["name"]: r["label"] for r in zh["relations"]}
    assert labels["dependsOn"] == "依赖" and {r["name"]: r["label"] for r in en["relations"]}["dependsOn"] == "depends on"
    assert {c["name"]: c["label"] for c in zh["classes"]}["Database"] == "数据库"
    # Every edge joins two drawn nodes and is one the relation table asserts (not its walked-back inverse).
    ids = {n["id"] for n in zh["nodes"]}
    assert all(e["source"] in ids and e["target"] in ids for e in zh["edges"])
    assert {"requiredBy"}.isdisjoint(e["relation"] for e in zh["edges"])
    order = next(n for n in zh["nodes"] if n["label"] == "order-service")
    assert order["types"] == ["Service"] and order["degree"] == sum(order["id"] in (e["source"], e["target"]) for e in zh["edges"])


def test_bounded_best_connected_first(client):
    whole = client.get("/graph").json()
    two = client.get("/graph", params={"limit": 2}).json()
    assert len(two["nodes"]) == 2 and two["truncated"] and two["total_nodes"] == len(whole["nodes"])
    assert [n["degree"] for n in two["nodes"]] == sorted((n["degree"] for n in whole["nodes"]), reverse=True)[:2]
    assert client.get("/graph", params={"limit": 0}).status_code == 422


def test_filters_by_class_relation_and_search(client):
    systems = client.get("/graph", params={"class": "System"}).json()  # a class keeps its subclasses
    assert systems["nodes"] and all(set(n["types"]) & {"Service", "Database", "Cache", "MessageQueue", "System"} for n in systems["nodes"])
    assert any(n["types"] == ["Database"] for n in systems["nodes"])
    depends = client.get("/graph", params={"relation": "dependsOn"}).json()
    assert depends["edges"] and {e["relation"] for e in depends["edges"]} == {"dependsOn"}
    found = client.get("/graph", params={"q": "订单服务"}).json()  # an alias finds the entity, with its neighbours
    assert [n["label"] for n in found["nodes"] if n["matched"]] == ["order-service"]
    assert "mysql-core" in {n["label"] for n in found["nodes"]}
    unknown = client.get("/graph", params={"class": "Spaceship"})
    assert unknown.status_code == 404 and "Spaceship" in unknown.json()["error"]["message"]
    assert client.get("/graph", params={"class": ""}).json()["total_nodes"] == len(client.get("/graph").json()["nodes"])


def test_a_facts_source_is_its_statement_in_graph_ttl(client):
    fact = client.get("/graph/fact", params={"source": "order-service", "relation": "dependsOn", "target": "mysql-core",
                                             "lang": "zh"}).json()
    assert fact["relation_label"] == "依赖" and fact["inverse"] == "requiredBy"
    st = fact["statement"]
    assert st["file"] == "graph.ttl"
    marked = [line["text"] for line in st["lines"] if line["fact"]]
    assert any(":dependsOn" in text for text in marked) and any("mysql-core" in text for text in marked)
    # The line numbers are those of the file a user opens.
    data_dir = client.app.state.settings.data_dir
    lines = (data_dir / "graph.ttl").read_text(encoding="utf-8").splitlines()
    assert all(lines[line["n"] - 1] == line["text"] for line in st["lines"])
    assert fact["definition"]["text"].startswith(":dependsOn")
    assert fact["origin"].startswith("relations.csv:")  # and the table row it was imported from
    missing = client.get("/graph/fact", params={"source": "mysql-core", "relation": "dependsOn", "target": "order-service"})
    assert missing.status_code == 404 and "does not assert" in missing.json()["error"]["message"]


def test_a_facts_lines_follow_an_edit_of_graph_ttl(tmp_path):
    """The file's lines are read once per version of graph.ttl (api/web/explore.py `_turtle_file`): an edit made in
    an editor since the last card (two comment lines above everything: every line moves down) shows at the next."""
    build_kb(tmp_path).close()
    params = {"source": "order-service", "relation": "dependsOn", "target": "mysql-core"}
    graph_file = tmp_path / "kb" / "graph.ttl"
    with TestClient(create_app(make_settings(tmp_path / "kb"))) as client:
        before = client.get("/graph/fact", params=params).json()["statement"]
        graph_file.write_text("# edited by hand\n# twice\n" + graph_file.read_text(encoding="utf-8"), encoding="utf-8")
        after = client.get("/graph/fact", params=params).json()["statement"]
    assert after["line"] == before["line"] + 2 and after["first_line"] == before["first_line"] + 2
    lines = graph_file.read_text(encoding="utf-8").splitlines()
    assert all(lines[line["n"] - 1] == line["text"] for line in after["lines"])


def test_a_documents_outline(client):
    docs = client.get("/documents").json()["documents"]
    doc = max(docs, key=lambda d: d["chunks"])
    outline = client.get(f"/documents/{doc['doc_id']}/outline").json()
    assert len(outline["chunks"]) == doc["chunks"]
    assert [c["ordinal"] for c in outline["chunks"]] == sorted(c["ordinal"] for c in outline["chunks"])
    assert sum(len(s["chunks"]) for s in outline["sections"]) == len(outline["chunks"])
    assert outline["version_id"] == doc["version"]["version_id"]
    about = [a for c in outline["chunks"] for a in c["about"]]
    assert about and all({"label", "strength", "reason"} <= set(a) for a in about)
    wrong = client.get(f"/documents/{doc['doc_id']}/outline", params={"version": "v-none"})
    assert wrong.status_code == 404 and doc["version"]["version_id"] in wrong.json()["error"]["message"]


def test_overview_packs_and_check(client):
    home = client.get("/overview", params={"lang": "en"}).json()
    stats = client.get("/stats").json()
    assert home["stats"]["documents"] == stats["documents"] and "data_dir" not in home["stats"]
    assert home["recent"] and home["examples"]
    labels = {n["label"] for n in client.get("/graph").json()["nodes"]}
    assert all(any(label in q for label in labels) for q in home["examples"])
    assert client.get("/packs").json() == {"packs": []}
    check = client.get("/check").json()
    assert check["clean"] is True and check["counts"]["documents"] == stats["documents"]


def test_page_assets_and_favicon(client):
    assert client.get("/web/vendor/cytoscape.min.js").headers["content-type"].startswith("text/javascript")
    assert client.get("/web/vendor/LICENSE-marked.txt").status_code == 200
    assert client.get("/web/vendor/..%2Fapp.js").status_code == 404  # a client resolves a literal "/../" itself
    assert client.get("/web/vendor/..%2F..%2Frender.py").status_code == 404
    assert client.get("/web/other/app.js").status_code == 404
    assert client.get("/favicon.ico").headers["content-type"].startswith("image/svg+xml")
