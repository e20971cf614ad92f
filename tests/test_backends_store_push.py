"""Every commit that changes the graph pushes it to the SPARQL store (KG_GRAPH_STORE=sparql+http://...),
with the embedded text index too (no PostgreSQL); a store that is down does not fail the commit: `kg check`
says the store is behind, and the next commit or `kg check --repair` pushes it. Real `oxigraph serve`."""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from pathlib import Path

from backends_servers import ends_with_parent, held
from click.testing import CliRunner

from kg.cli import cli
from ontology import KG, entity_iri

ROWS = Path(__file__).parent / "data" / "relations.csv"


def kg(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


def start_again(server) -> None:
    """`oxigraph serve` again on the same data and port (what an operator does after an outage)."""
    port = int(server.url.rsplit(":", 1)[1])
    server.process = subprocess.Popen([shutil.which("oxigraph"), "serve", "--location", str(server.folder),
                                       "--bind", f"127.0.0.1:{port}"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                      preexec_fn=ends_with_parent())
    for _attempt in range(300):  # a bounded wait for the port, not a timing check: ~30 s of 0.1 s polls
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            if server.process.poll() is not None:
                break
            time.sleep(0.1)
    raise RuntimeError("oxigraph did not start again on the same data and port")


def test_a_commit_without_postgres_pushes_the_graph_to_the_store(oxigraph, tmp_path, monkeypatch):
    monkeypatch.setenv("KG_GRAPH_STORE", "sparql+" + oxigraph.url)
    monkeypatch.setenv("KG_POSTGRES_SCHEMA", "whoosh_kb")
    data_dir = tmp_path / "kb"
    done = kg("import", ROWS, "--data-dir", data_dir)
    assert done.exit_code == 0, done.output
    orders, pg = entity_iri("order-service"), entity_iri("PostgreSQL")
    assert (orders, KG.dependsOn, pg) in held(oxigraph.url, "whoosh_kb")

    row = tmp_path / "more.csv"
    row.write_text("source,relation,target\npayment-service,dependsOn,Kafka\n", encoding="utf-8")
    assert kg("import", row, "--data-dir", data_dir).exit_code == 0
    assert (entity_iri("payment-service"), KG.dependsOn, entity_iri("Kafka")) in held(oxigraph.url, "whoosh_kb")
    assert kg("check", "--data-dir", data_dir).exit_code == 0


def test_a_store_that_is_down_is_behind_until_the_next_commit_or_a_repair(oxigraph, tmp_path, monkeypatch):
    monkeypatch.setenv("KG_GRAPH_STORE", "sparql+" + oxigraph.url)
    monkeypatch.setenv("KG_POSTGRES_SCHEMA", "outage")
    data_dir = tmp_path / "kb"
    assert kg("import", ROWS, "--data-dir", data_dir).exit_code == 0
    row = tmp_path / "more.csv"
    row.write_text("source,relation,target\npayment-service,dependsOn,Kafka\n", encoding="utf-8")
    payments = (entity_iri("payment-service"), KG.dependsOn, entity_iri("Kafka"))

    oxigraph.stop()
    done = kg("import", row, "--data-dir", data_dir)
    assert done.exit_code == 0, done.output  # committed: graph.ttl has the row, the store is behind
    assert "payment-service" in (data_dir / "graph.ttl").read_text(encoding="utf-8")
    checked = kg("check", "--data-dir", data_dir)
    assert checked.exit_code == 1
    assert (f"problem: the SPARQL store (sparql+{oxigraph.url}) is behind graph.ttl (the last push failed: "
            f"the SPARQL store at {oxigraph.url} does not answer") in checked.output
    assert "the next commit pushes it, or `kg check --repair` now" in checked.output
    repaired = kg("check", "--repair", "--data-dir", data_dir)
    assert repaired.exit_code == 75 and "does not answer" in repaired.output  # still down: says so, exit 75

    start_again(oxigraph)
    assert payments not in held(oxigraph.url, "outage")  # the store kept the graph it had
    repaired = kg("check", "--repair", "--data-dir", data_dir)
    assert repaired.exit_code == 0, repaired.output
    assert f"repaired: pushed graph.ttl's graph to the SPARQL store (sparql+{oxigraph.url})" in repaired.output
    assert payments in held(oxigraph.url, "outage")
    assert kg("check", "--data-dir", data_dir).output.startswith("clean: ")

    oxigraph.stop()  # again; now the next commit, one that does not touch the graph, catches the store up
    row.write_text("source,relation,target\npayment-service,runsOn,host-02\n", encoding="utf-8")
    assert kg("import", row, "--data-dir", data_dir).exit_code == 0
    start_again(oxigraph)
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "note.md").write_text("# 值班\n\npayment-service 的值班说明。\n", encoding="utf-8")
    assert kg("ingest", docs, "--data-dir", data_dir).exit_code == 0
    assert (entity_iri("payment-service"), KG.runsOn, entity_iri("host-02")) in held(oxigraph.url, "outage")
    assert kg("check", "--data-dir", data_dir).output.startswith("clean: ")
