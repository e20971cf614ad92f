"""Regression: a running server never saw what `kg ingest` / `kg import` in a terminal wrote (new
documents invisible, a re-ingested one gone from its results) until its own next write, and an
unauthenticated GET /health after an outside edit of graph.ttl ran the whole relink inside the request.
Now the server follows the catalog's generation in a background thread."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from conftest import build_kb, make_settings, relative_source
from fastapi.testclient import TestClient
from rdflib import OWL, RDF, RDFS, Literal, URIRef

from api.app import create_app
from kg.lock import DataDirLock
from ontology import entity_iri, load_rdf


def _kg(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("KG_")}
    return subprocess.run([sys.executable, "-m", "kg.cli", *args], cwd=cwd, env=environ, capture_output=True,
                          text=True, encoding="utf-8", check=False, timeout=300)


def _eventually(predicate, seconds: float = 120.0):  # the bound only ends a hung wait: a loaded machine is slow
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.1)
    return predicate()


def test_the_cli_documents_answer_through_the_running_server(tmp_path):
    build_kb(tmp_path).close()
    (tmp_path / "new.md").write_text("# 苍鹭服务\n\nheron 是订单服务的新伙伴。\n", encoding="utf-8")
    nginx = tmp_path / "docs/infra/nginx.md"
    with TestClient(create_app(make_settings(tmp_path / "kb", follow_interval=0.1))) as client:
        assert client.post("/query", json={"query": "heron"}).json()["hits"] == []
        assert client.post("/query", json={"query": "nginx"}).json()["hits"]
        done = _kg("ingest", "new.md", "--data-dir", "kb", "-q", cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        nginx.write_text(nginx.read_text(encoding="utf-8") + "\n## 变更\n\nnginx 迁到 osprey 机房。\n", encoding="utf-8")
        done = _kg("ingest", str(nginx), "--data-dir", "kb", "-q", cwd=tmp_path)
        assert done.returncode == 0 and "1 updated" in done.stdout, done.stdout + done.stderr

        def hits(question):
            return [relative_source(h["source"], tmp_path) for h in client.post("/query", json={"query": question}).json()["hits"]]

        assert _eventually(lambda: hits("heron")) == ["new.md"]
        # The re-ingested document is found by its new words and still by its old ones.
        assert hits("osprey") == ["docs/infra/nginx.md"]
        assert "docs/infra/nginx.md" in hits("nginx")


def test_health_after_an_outside_graph_edit_does_not_relink_inside_the_request(tmp_path):
    build_kb(tmp_path).close()
    data_dir = tmp_path / "kb"
    with TestClient(create_app(make_settings(data_dir, follow_interval=0.1))) as client:
        kb = client.app.state.kb
        before = client.get("/health").json()
        mentions = kb.store.stats()["mentions"]
        graph = load_rdf(data_dir / "graph.ttl")  # as Protégé would: a new entity the notes name
        new = URIRef(entity_iri("report API"))
        graph.add((new, RDF.type, OWL.NamedIndividual))
        graph.add((new, RDFS.label, Literal("report API")))
        with DataDirLock(data_dir, wait=0):  # the relink is a write: while another process writes, it waits
            graph.serialize(destination=str(data_dir / "graph.ttl"), format="turtle")
            for _ in range(5):
                response = client.get("/health")
                assert response.status_code == 200
                assert response.json()["documents"] == before["documents"]
            assert kb.store.stats()["mentions"] == mentions  # no relink ran, in a request or elsewhere
        # The background follower relinks once the lock is free; the request path never did.
        assert _eventually(lambda: client.get("/health").json()["entities"] == before["entities"] + 1)
        assert _eventually(lambda: kb.store.mention_count(str(new)) == 1)  # docs/infra/nginx.md names it
        assert not kb.commits.needs_relink() and kb.check().clean
