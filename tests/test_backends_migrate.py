"""`kg migrate` as the real CLI: the demo moved to a real PostgreSQL + `oxigraph serve` and back, checked
by `kg check` on each side and by the same top 10 for every demo question before, on the backends and after."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from backends_servers import oxigraph_server, postgres_server
from conftest import kg_process, run_in_own_process


@pytest.fixture(scope="module")
def backends():
    with postgres_server() as pg, oxigraph_server() as ox:
        for server in (pg, ox):
            if isinstance(server, str):
                pytest.skip(server)
        yield pg.url, "sparql+" + ox.url


def build_and_rank(data_dir: Path) -> dict:
    from conftest import build_demo_kb

    build_demo_kb(data_dir).close()
    return rank(data_dir)


def rank(data_dir: Path) -> dict:
    """In a process of its own: the top 10 of every demo question, and which text index answered."""
    from kg.cli.base import DEMO_DIR
    from kg.settings import Settings
    from retrieval.pipeline import KnowledgeBase

    with KnowledgeBase(Settings(data_dir=data_dir)) as kb:
        questions = [json.loads(line)["question"] for line in
                     (DEMO_DIR / "questions.jsonl").read_text("utf-8").splitlines() if line.strip()]
        return {"backend": type(kb.index).__name__,
                "rankings": {q: [[h.chunk_id, round(h.score, 9)] for h in kb.query(q, k=10).hits] for q in questions}}


def differences(a: dict, b: dict) -> dict:
    """Questions whose top 10 differ in their chunks, rank by rank."""
    out = {}
    for q, ranking in a["rankings"].items():
        ids_a, ids_b = [c for c, _ in ranking], [c for c, _ in b["rankings"][q]]
        if ids_a != ids_b:
            out[q] = (ranking, b["rankings"][q])
    return out


@pytest.mark.slow
def test_the_demo_moves_to_postgres_and_sparql_and_back(backends, tmp_path, monkeypatch):
    dsn, graph_store = backends
    kb = tmp_path / "kb"
    before = run_in_own_process("test_backends_migrate", "build_and_rank", kb)

    moved = kg_process("migrate", "--to", "postgres+sparql", "--dsn", dsn, "--graph-store", graph_store,
                       "--schema", "moved", "--data-dir", str(kb), "--quiet", cwd=tmp_path)
    assert moved.returncode == 0, moved.stdout + moved.stderr
    lines = moved.stdout.splitlines()
    assert lines[0].startswith("copied: ") and "triples in graphs default, ontology; " in lines[0]
    assert " searches compared" in lines[0] and " 0 searches" not in lines[0]
    assert lines[1] == (f"use it with: KG_TEXT_BACKEND=postgres KG_POSTGRES_DSN='{dsn}' KG_POSTGRES_SCHEMA=moved "
                        f"KG_GRAPH_STORE={graph_store}")

    for name, value in (("KG_TEXT_BACKEND", "postgres"), ("KG_POSTGRES_DSN", dsn), ("KG_POSTGRES_SCHEMA", "moved"),
                        ("KG_GRAPH_STORE", graph_store)):
        monkeypatch.setenv(name, value)
    checked = kg_process("check", "--data-dir", str(kb), cwd=tmp_path)
    assert checked.returncode == 0 and checked.stdout.startswith("clean: "), checked.stdout + checked.stderr
    on_backends = run_in_own_process("test_backends_migrate", "rank", kb)
    assert on_backends["backend"] == "PostgresIndex"
    assert differences(before, on_backends) == {}

    # a graph write on the backends reaches the store in its own commit (no second migrate needed) ...
    extra = tmp_path / "extra.csv"
    extra.write_text("source,relation,target\norder-service,dependsOn,extra-cache\n", encoding="utf-8")
    assert kg_process("import", str(extra), "--data-dir", str(kb), "--quiet", cwd=tmp_path).returncode == 0
    from kg.stores import open_graph_store

    store = open_graph_store(graph_store, namespace="moved")
    try:
        pushed = [t for t in store.read("default") if "extra-cache" in str(t[2])]
        assert pushed
        # ... and back while graph.ttl holds more than the store (changed behind kgrag's back): graph.ttl is kept
        store.remove(pushed)
    finally:
        store.close()
    kept = kg_process("migrate", "--to", "embedded", "--data-dir", str(kb), "--quiet", cwd=tmp_path)
    assert kept.returncode == 0, kept.stdout + kept.stderr
    assert "note: graph.ttl (" in kept.stdout and "graph.ttl, the working copy, was kept" in kept.stdout
    assert "extra-cache" in (kb / "graph.ttl").read_text("utf-8")
    again = kg_process("migrate", "--to", "postgres+sparql", "--data-dir", str(kb), "--quiet", cwd=tmp_path)
    assert again.returncode == 0 and again.stdout.startswith("copied: "), again.stdout + again.stderr

    # back: the data dir without its embedded index and graph, rebuilt from the backends
    shutil.rmtree(kb / "index")
    for name in ("graph.ttl", "graph.cache"):
        (kb / name).unlink(missing_ok=True)
    back = kg_process("migrate", "--to", "embedded", "--data-dir", str(kb), "--quiet", cwd=tmp_path)
    assert back.returncode == 0, back.stdout + back.stderr
    assert back.stdout.splitlines()[-1] == "use it with KG_TEXT_BACKEND, KG_POSTGRES_DSN and KG_GRAPH_STORE unset"
    for name in ("KG_TEXT_BACKEND", "KG_POSTGRES_DSN", "KG_POSTGRES_SCHEMA", "KG_GRAPH_STORE"):
        monkeypatch.delenv(name)
    checked = kg_process("check", "--data-dir", str(kb), cwd=tmp_path)
    assert checked.returncode == 0 and checked.stdout.startswith("clean: "), checked.stdout + checked.stderr
    after = run_in_own_process("test_backends_migrate", "rank", kb)
    assert after["backend"] == "WhooshIndex"
    assert differences(before, after) == {}


def test_migrating_without_a_store_says_what_to_give(tmp_path):
    from conftest import build_kb

    build_kb(tmp_path).close()
    done = kg_process("migrate", "--to", "postgres+sparql", "--data-dir", str(tmp_path / "kb"), cwd=tmp_path)
    assert done.returncode != 0
    assert "needs a PostgreSQL DSN (--dsn or KG_POSTGRES_DSN) and a SPARQL store" in done.stderr
