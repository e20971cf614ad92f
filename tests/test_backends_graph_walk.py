"""KG_GRAPH_WALK=store: a query, `kg entity` and an answer's graph facts walk the SPARQL store's graph as it is at each
query, so an edge another tool adds to the store or takes out of it counts at once, without `kg store pull`; a store
that stops answering leaves them to graph.ttl's graph, which the output says, and is asked again later. Real `oxigraph
serve`, the real CLI (its human output)."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner
from conftest import make_settings
from test_backends_store_edits import ROWS, edit_in_store
from test_backends_store_push import start_again

import retrieval.graph.walk as walk
from kg.cli import cli

SCHEMA = "walk"


def kg(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


def on_a_store(oxigraph, tmp_path: Path, monkeypatch) -> Path:
    """The test relation table pushed to the store, and a page about Prometheus and one about 缓存集群 (Redis is
    partOf it), which a query naming Redis reaches only through the graph; then another tool's edit in the store:
    Redis dependsOn Prometheus added, order-service dependsOn PostgreSQL removed. Its data dir."""
    monkeypatch.setenv("KG_GRAPH_STORE", "sparql+" + oxigraph.url)
    monkeypatch.setenv("KG_POSTGRES_SCHEMA", SCHEMA)
    data_dir, docs = tmp_path / "kb", tmp_path / "docs"
    docs.mkdir()
    (docs / "prometheus.md").write_text("# Prometheus\n\nPrometheus 每 15 秒抓取一次指标，告警规则放在 rules 目录。\n",
                                        encoding="utf-8")
    (docs / "cache.md").write_text("# 缓存集群\n\n缓存集群由三台机器组成。\n", encoding="utf-8")
    (docs / "heartbeat.md").write_text("# 心跳间隔\n\n网关每 15 秒发送一次心跳。\n", encoding="utf-8")
    assert kg("import", ROWS, "--data-dir", data_dir).exit_code == 0
    assert kg("ingest", docs, "--data-dir", data_dir).exit_code == 0
    edit_in_store(oxigraph.url, SCHEMA)
    return data_dir


def graph_hits(output: str) -> list[str]:
    return [line.strip() for line in output.splitlines() if line.strip().startswith("why: graph")]


def test_an_edge_edited_in_the_store_is_walked_at_once(oxigraph, tmp_path, monkeypatch):
    data_dir = on_a_store(oxigraph, tmp_path, monkeypatch)

    local = kg("query", "Redis", "--mode", "graph", "--data-dir", data_dir)
    assert local.exit_code == 0, local.output
    assert graph_hits(local.output) == ["why: graph #1: query: Redis → partOf → 缓存集群 → document about it"]
    assert "graph:" not in local.output  # the default walks graph.ttl and says nothing about it

    monkeypatch.setenv("KG_GRAPH_WALK", "store")
    walked = kg("query", "Redis", "--mode", "graph", "--data-dir", data_dir)
    assert walked.exit_code == 0, walked.output
    assert f"graph: the SPARQL store's at {oxigraph.url}" in walked.output.splitlines()
    assert graph_hits(walked.output) == ["why: graph #1: query: Redis → dependsOn → Prometheus → document about it",
                                         "why: graph #2: query: Redis → partOf → 缓存集群 → document about it"]

    shown = kg("entity", "Redis", "--sources", "--data-dir", data_dir)
    assert shown.exit_code == 0, shown.output
    assert "  dependsOn: Prometheus (the SPARQL store)" in shown.output.splitlines()  # not a row, not graph.ttl
    assert "  partOf: 缓存集群 (relations.csv:6)" in shown.output.splitlines()
    order = kg("entity", "order-service", "--data-dir", data_dir).output.splitlines()
    assert not any(line.startswith("  dependsOn:") and "PostgreSQL" in line for line in order)  # removed there

    answer = kg("ask", "Redis 依赖什么？", "--data-dir", data_dir)
    assert answer.exit_code == 0, answer.output
    assert "Redis 依赖：Prometheus。[R1]" in answer.output and "[R1] the SPARQL store: Redis dependsOn Prometheus" in answer.output

    from fastapi.testclient import TestClient

    from api.app import create_app

    with TestClient(create_app(make_settings(data_dir))) as client:  # the API's /query says which graph it walked
        body = client.post("/query", json={"query": "Redis", "mode": "graph"}).json()
        page = client.get("/", params={"q": "Redis", "mode": "graph", "lang": "en"}).text  # the page without JavaScript
    assert body["graph"] == {"walked": "store", "store": oxigraph.url}
    assert [h["title"] for h in body["hits"]] == ["Prometheus", "缓存集群"]
    assert f'<p class="note graph-walk">Relations walked in the SPARQL store at {oxigraph.url}, as it is now.</p>' in page

    # graph.ttl is untouched: the store was only read
    monkeypatch.delenv("KG_GRAPH_WALK")
    assert "Prometheus" not in kg("entity", "Redis", "--data-dir", data_dir).output


def test_an_entity_only_the_store_holds_is_walked_by_its_label_there(oxigraph, tmp_path, monkeypatch):
    """Another tool adds an entity and an edge to it in the store: the walk reaches it at once, named as the store
    labels it, in `kg entity`, in an answer's facts and in a query's graph paths; graph.ttl knows nothing of it."""
    from rdflib import RDF, RDFS, Literal

    from kg.stores import open_graph_store
    from ontology import KG, entity_iri

    data_dir = on_a_store(oxigraph, tmp_path, monkeypatch)
    sentinel = entity_iri("redis-sentinel")
    store = open_graph_store("sparql+" + oxigraph.url, namespace=SCHEMA)
    try:
        store.add([(sentinel, RDF.type, KG.Service), (sentinel, RDFS.label, Literal("Redis Sentinel")),
                   (entity_iri("Redis"), KG.dependsOn, sentinel), (sentinel, KG.dependsOn, entity_iri("Prometheus")),
                   (sentinel, KG.configuredBy, entity_iri("心跳间隔"))])
    finally:
        store.close()
    monkeypatch.setenv("KG_GRAPH_WALK", "store")

    shown = kg("entity", "Redis", "--sources", "--data-dir", data_dir).output.splitlines()
    assert "  dependsOn: Prometheus (the SPARQL store), Redis Sentinel (the SPARQL store)" in shown
    answer = kg("ask", "Redis 依赖什么？", "--data-dir", data_dir)
    assert "Redis 依赖：Prometheus、Redis Sentinel。[R1]" in answer.output, answer.output
    itself = kg("entity", "Redis Sentinel", "--data-dir", data_dir)  # by its label in the store
    assert itself.exit_code == 0, itself.output
    lines = itself.output.splitlines()
    assert lines[:2] == [f"Redis Sentinel  <{sentinel}>", "types: Service    aliases: -"]
    assert "  configuredBy: 心跳间隔" in lines and "  dependsOn: Prometheus" in lines and "  requiredBy: Redis" in lines
    walked = kg("query", "Redis", "--mode", "graph", "--json", "--data-dir", data_dir)
    paths = [h["why"]["graph"]["path"] for h in json.loads(walked.output)["hits"]]
    # through it to a page graph.ttl cannot reach from Redis (心跳间隔 configures LORA-02 there)
    assert "query: Redis → dependsOn → Redis Sentinel → configuredBy → 心跳间隔 → document about it" in paths
    assert "query: Redis → dependsOn → Prometheus → document about it" in paths  # the shorter way there wins
    from retrieval.pipeline import KnowledgeBase

    with KnowledgeBase(make_settings(data_dir)) as kb:
        view = kb.walk.view()
        assert str(sentinel) in {e.target for e in view.neighbours(str(entity_iri("Redis")))}  # reached: now known
        assert view.entities[str(sentinel)].types == ("Service",)
        assert {e.target for e in view.neighbours(str(sentinel))} == {
            str(entity_iri(name)) for name in ("Redis", "Prometheus", "心跳间隔")}
    monkeypatch.delenv("KG_GRAPH_WALK")
    assert "Sentinel" not in kg("entity", "Redis", "--data-dir", data_dir).output
    assert kg("entity", "Redis Sentinel", "--data-dir", data_dir).exit_code != 0  # graph.ttl has no such entity
    local = kg("query", "Redis", "--mode", "graph", "--data-dir", data_dir).output
    assert "心跳间隔" not in local


def test_a_store_that_stops_answering_leaves_the_queries_to_graph_ttl(oxigraph, tmp_path, monkeypatch):
    data_dir = on_a_store(oxigraph, tmp_path, monkeypatch)
    monkeypatch.setenv("KG_GRAPH_WALK", "store")
    monkeypatch.setenv("KG_GRAPH_WALK_TIMEOUT", "2")
    oxigraph.stop()

    down = kg("query", "Redis", "--mode", "graph", "--data-dir", data_dir)
    assert down.exit_code == 0, down.output  # the query is answered, from graph.ttl's graph, and says so
    assert any(line.startswith(f"graph: graph.ttl's; the SPARQL store at {oxigraph.url} does not answer")
               for line in down.output.splitlines()), down.output
    assert graph_hits(down.output) == ["why: graph #1: query: Redis → partOf → 缓存集群 → document about it"]
    answer = kg("ask", "Redis 依赖什么？", "--data-dir", data_dir)
    assert answer.exit_code == 0 and "Prometheus" not in answer.output, answer.output

    from retrieval.pipeline import KnowledgeBase

    monkeypatch.setattr(walk, "RETRY_AFTER", 3600.0)  # a window no busy machine outlasts between two queries
    with KnowledgeBase(make_settings(data_dir)) as kb:
        first = kb.query("Redis", mode="graph").graph
        again = kb.query("Redis", mode="graph").graph  # not asked meanwhile: no query waits on a store that failed
        assert first["walked"] == again["walked"] == "graph.ttl"
        assert "does not answer" in first["problem"] and "asked again in" in again["problem"]

        start_again(oxigraph)
        monkeypatch.setattr(walk, "RETRY_AFTER", 0.0)
        back = kb.query("Redis", mode="graph")
        assert back.graph == {"walked": "store", "store": oxigraph.url}
        assert [h.title for h in back.hits] == ["Prometheus", "缓存集群"]


def test_walking_the_store_needs_one(tmp_path, monkeypatch):
    monkeypatch.delenv("KG_GRAPH_STORE", raising=False)
    monkeypatch.setenv("KG_GRAPH_WALK", "store")
    done = kg("query", "Redis", "--data-dir", tmp_path / "kb")
    assert done.exit_code == 1
    assert "KG_GRAPH_WALK=store walks the graph of the SPARQL store that KG_GRAPH_STORE names" in done.output
    assert not (tmp_path / "kb").exists()  # refused before anything is made
