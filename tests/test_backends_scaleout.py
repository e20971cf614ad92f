"""Stateless query servers (issue 26 item 4): two real `kg serve` processes, each with a data dir of its own,
share one PostgreSQL (text index, write lock, published catalog) and one Oxigraph (the graph).

A document posted to server A is found by a query to server B; writes through A and B at the same time
queue on PostgreSQL's lock and none is lost (`kg check` clean on both data dirs); a graph import reaches
the SPARQL store and server B; a client that retries once on the other server sees no failure when one
server is killed; a PostgreSQL restart under a running server gives 503s with a message, then answers
again without restarting the server. No timing is asserted: waits are bounded polls.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import sys
import threading
import time
from pathlib import Path

import pytest
from backends_servers import http_json, kg_serve, oxigraph_server, postgres_server
from conftest import FIXTURE_RELATIONS, kg_process

pytestmark = pytest.mark.slow

FOLLOW_WAIT = 60.0  # most seconds a server may take to follow a commit made through the other (a bound, not a target)


def backend_env(pg, graph, schema: str) -> dict:
    return {**{k: v for k, v in os.environ.items() if not k.startswith("KG_")},
            "PYTHONPATH": os.pathsep.join(sys.path), "OMP_NUM_THREADS": "1",
            "KG_TEXT_BACKEND": "postgres", "KG_POSTGRES_DSN": pg.url, "KG_POSTGRES_SCHEMA": schema,
            "KG_GRAPH_STORE": f"sparql+{graph.url}", "KG_FOLLOW_INTERVAL": "0.2", "KG_WRITE_WAIT": "120"}


def kg(env: dict, *args: str, cwd: Path) -> str:
    old = dict(os.environ)
    os.environ.clear()
    os.environ.update(env)
    try:
        done = kg_process(*args, cwd=cwd)
    finally:
        os.environ.clear()
        os.environ.update(old)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def two_data_dirs(tmp_path: Path, env: dict) -> tuple[Path, Path]:
    dirs = (tmp_path / "machine-a", tmp_path / "machine-b")
    for folder in dirs:
        kg(env, "init", "--data-dir", str(folder), cwd=tmp_path)
    return dirs


def query(base: str, text: str) -> tuple[int, dict]:
    return http_json("POST", base + "/query", {"query": text, "k": 5})


def wait_until(what, timeout: float = FOLLOW_WAIT):
    deadline = time.monotonic() + timeout
    while True:
        value = what()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(0.2)


def post(base: str, source: str, text: str) -> int:
    return http_json("POST", base + "/documents", {"source": source, "text": text})[0]


def titles(base: str, text: str) -> list[str]:
    status, body = query(base, text)
    return [hit["title"] for hit in body.get("hits", [])] if status == 200 else []


@pytest.mark.parametrize("catalog", ["file", "tables"])
def test_two_servers_share_documents_writes_and_the_graph(backends, tmp_path, catalog):
    """`tables`: with KG_CATALOG, the catalog's rows in PostgreSQL and no kb.sqlite in either data dir."""
    pg, graph = backends
    schema = "scaleout" if catalog == "file" else "scaleout_tables"
    env = {**backend_env(pg, graph, schema), **({"KG_CATALOG": pg.url} if catalog == "tables" else {})}
    a_dir, b_dir = two_data_dirs(tmp_path, env)
    with kg_serve(a_dir, env, tmp_path / "a.log") as (_, a), kg_serve(b_dir, env, tmp_path / "b.log") as (_, b):
        assert post(a, "zebra", "# Zebra cluster runbook\n\nThe zebracluster restarts every night at 02:00.\n") == 201
        assert wait_until(lambda: titles(b, "zebracluster")) == ["Zebra cluster runbook"]

        # Writes through both servers at once: each waits for the other's lock, then starts from its commit.
        statuses: list[int] = []

        def write(base: str, tag: str) -> None:
            for i in range(3):
                statuses.append(post(base, f"{tag}{i}", f"# {tag} note {i}\n\nThe {tag}marker{i} appears here.\n"))

        writers = [threading.Thread(target=write, args=(base, tag)) for base, tag in ((a, "alpha"), (b, "beta"))]
        for thread in writers:
            thread.start()
        for thread in writers:
            thread.join()
        assert statuses == [201] * 6

        def documents(base: str) -> set[str]:
            return {d["title"] for d in http_json("GET", base + "/documents")[1]["documents"]}

        expected = {"Zebra cluster runbook"} | {f"{tag} note {i}" for tag in ("alpha", "beta") for i in range(3)}
        for base in (a, b):
            assert wait_until(lambda base=base: documents(base) == expected), documents(base)
        assert wait_until(lambda: titles(a, "betamarker2")) == ["beta note 2"]
        assert wait_until(lambda: titles(b, "alphamarker0")) == ["alpha note 0"]

        # A graph import through a third process (the CLI on machine A's data dir) reaches the store and server B.
        table = tmp_path / "relations.csv"
        shutil.copy(FIXTURE_RELATIONS, table)
        kg(env, "import", str(table), "--data-dir", str(a_dir), cwd=tmp_path)
        assert wait_until(lambda: http_json("GET", b + "/entities/order-service")[0] == 200)
        # The record of what the table asserted is published with graph.ttl: a row deleted from it and the table
        # imported on machine B takes its edge out, although machine A made the import that added it.
        lines = table.read_text(encoding="utf-8").splitlines(keepends=True)
        gone = [line for line in lines if line.startswith("order-service,dependsOn,mysql-core,")]
        table.write_text("".join(line for line in lines if line not in gone), encoding="utf-8")
        removed = json.loads(kg(env, "import", str(table), "--json", "--data-dir", str(b_dir), cwd=tmp_path))
        assert len(gone) == 1 and removed["report"]["removed_edges"] == 1, removed

        def depends_on(base: str) -> str:
            return json.dumps(http_json("GET", base + "/entities/order-service")[1], ensure_ascii=False)

        assert wait_until(lambda: "mysql-core" not in depends_on(a)), depends_on(a)
        from rdflib import Graph
        from rdflib.compare import isomorphic

        from kg.stores import canonical, open_graph_store

        store = open_graph_store(f"sparql+{graph.url}", namespace=schema)
        try:
            in_store = store.read()
        finally:
            store.close()
        on_disk = Graph().parse(a_dir / "graph.ttl")
        assert isomorphic(canonical(in_store), canonical(on_disk))
        assert "order-service" in {str(o) for o in in_store.objects()}

    for folder in (a_dir, b_dir):
        report = json.loads(kg(env, "check", "--json", "--data-dir", str(folder), cwd=tmp_path))
        assert report["clean"], report
        assert (folder / "kb.sqlite").exists() == (catalog == "file")
    for log in ("a.log", "b.log"):
        assert "Traceback" not in (tmp_path / log).read_text()


def test_servers_following_the_store_answer_with_an_edit_made_there(backends, tmp_path):
    """KG_STORE_FOLLOW on both servers: an edge added in the store by another tool reaches both servers' answers and
    both data dirs' graph.ttl, with no command run; the store and graph.ttl agree afterwards."""
    pg, graph = backends
    from kg.stores import open_graph_store
    from ontology import KG, entity_iri

    env = {**backend_env(pg, graph, "storefollow"), "KG_STORE_FOLLOW": "0.3"}
    a_dir, b_dir = two_data_dirs(tmp_path, env)
    kg(env, "import", str(Path(__file__).parent / "data" / "relations.csv"), "--data-dir", str(a_dir), cwd=tmp_path)
    edge = (entity_iri("Redis"), KG.dependsOn, entity_iri("Prometheus"))

    def redis_neighbours(base: str) -> str:
        return json.dumps(http_json("GET", base + "/entities/Redis")[1], ensure_ascii=False)

    with kg_serve(a_dir, env, tmp_path / "a.log") as (_, a), kg_serve(b_dir, env, tmp_path / "b.log") as (_, b):
        assert wait_until(lambda: "缓存集群" in redis_neighbours(b)), redis_neighbours(b)
        assert "Prometheus" not in redis_neighbours(a)
        store = open_graph_store(f"sparql+{graph.url}", namespace="storefollow")
        try:
            store.add([edge])
        finally:
            store.close()
        for base in (a, b):
            assert wait_until(lambda base=base: "Prometheus" in redis_neighbours(base)), redis_neighbours(base)
    for folder in (a_dir, b_dir):
        assert "Prometheus" in kg(env, "entity", "Redis", "--data-dir", str(folder), cwd=tmp_path)
    assert "holds graph.ttl's graph" in kg(env, "store", "status", "--data-dir", str(b_dir), cwd=tmp_path)
    kg(env, "check", "--data-dir", str(a_dir), cwd=tmp_path)
    for log in ("a.log", "b.log"):
        assert "Traceback" not in (tmp_path / log).read_text()


def test_a_client_that_retries_once_on_the_other_server_loses_nothing_when_one_is_killed(backends, tmp_path):
    pg, graph = backends
    env = backend_env(pg, graph, "killed")
    a_dir, b_dir = two_data_dirs(tmp_path, env)
    with kg_serve(a_dir, env, tmp_path / "a.log") as (a_process, a), kg_serve(b_dir, env, tmp_path / "b.log") as (_, b):
        assert post(a, "yak", "# Yak service runbook\n\nThe yakservice pages the on-call engineer.\n") == 201
        assert wait_until(lambda: titles(b, "yakservice")) == ["Yak service runbook"]
        results: list[tuple[float, str, int, list]] = []  # (when the request started, who answered, status, titles)
        stop = threading.Event()

        def client(first: str, second: str) -> None:
            while not stop.is_set():
                started = time.monotonic()
                for base in (first, second):  # the first server, then once the other
                    try:
                        status, body = query(base, "yakservice")
                    except OSError:
                        continue
                    results.append((started, base, status, [h["title"] for h in body.get("hits", [])]))
                    break
                else:
                    results.append((started, "none", 0, []))

        clients = [threading.Thread(target=client, args=pair) for pair in ((a, b), (b, a), (a, b))]
        for thread in clients:
            thread.start()
        assert wait_until(lambda: len(results) >= 30)
        os.kill(a_process.pid, signal.SIGKILL)
        a_process.wait(30)
        dead_at = time.monotonic()  # a request started after this cannot have reached A
        assert wait_until(lambda: sum(r[0] > dead_at for r in results) >= 30)
        stop.set()
        for thread in clients:
            thread.join()
    assert results and all(r[2:] == (200, ["Yak service runbook"]) for r in results), \
        [r for r in results if r[2:] != (200, ["Yak service runbook"])][:5]
    assert {r[1] for r in results if r[0] < dead_at} == {a, b}  # both answered before the kill
    assert {r[1] for r in results if r[0] > dead_at} == {b}  # after it, only B


def test_a_postgresql_restart_gives_503s_with_a_message_then_the_same_server_answers_again(tmp_path):
    with postgres_server() as pg, oxigraph_server() as graph:
        for server in (pg, graph):
            if isinstance(server, str):
                pytest.skip(server)
        env = backend_env(pg, graph, "restart")
        a_dir = tmp_path / "machine-a"
        kg(env, "init", "--data-dir", str(a_dir), cwd=tmp_path)
        with kg_serve(a_dir, env, tmp_path / "a.log") as (process, a):
            assert post(a, "ibis", "# Ibis gateway runbook\n\nThe ibisgateway drops idle sessions.\n") == 201
            assert titles(a, "ibisgateway") == ["Ibis gateway runbook"]
            pg.stop()
            status, body = query(a, "ibisgateway")
            assert status == 503, body
            assert "PostgreSQL" in body["error"]["message"] and "does not answer" in body["error"]["message"], body
            assert "Traceback" not in json.dumps(body)
            assert post(a, "heron", "# Heron\n\nheronqueue\n") == 503
            pg.start_again()
            assert wait_until(lambda: titles(a, "ibisgateway")) == ["Ibis gateway runbook"]
            assert post(a, "heron", "# Heron queue notes\n\nThe heronqueue is drained hourly.\n") == 201
            assert titles(a, "heronqueue") == ["Heron queue notes"]
            assert process.poll() is None  # the same server process throughout
        assert "Traceback" not in (tmp_path / "a.log").read_text()
        report = json.loads(kg(env, "check", "--json", "--data-dir", str(a_dir), cwd=tmp_path))
        assert report["clean"], report
        shutil.rmtree(a_dir)
