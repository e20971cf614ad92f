"""An edit made in the SPARQL store (by another tool, a SPARQL update) is never overwritten by kgrag's next push:
the push is refused and `kg check` says why, `kg store pull` merges the store's edits into graph.ttl (keeping what
graph.ttl gained meanwhile), `kg store push --force` overwrites them. Real `oxigraph serve`, the real CLI."""

from __future__ import annotations

from pathlib import Path

from backends_servers import held
from click.testing import CliRunner
from conftest import make_settings
from rdflib import Graph

from kg.cli import cli
from kg.stores import open_graph_store
from ontology import KG, entity_iri

ROWS = Path(__file__).parent / "data" / "relations.csv"
REDIS_PROM = (entity_iri("Redis"), KG.dependsOn, entity_iri("Prometheus"))  # added in the store
ORDER_PG = (entity_iri("order-service"), KG.dependsOn, entity_iri("PostgreSQL"))  # removed in the store
NOTIFY_KAFKA = (entity_iri("notification-service"), KG.dependsOn, entity_iri("Kafka"))  # a local commit's row


def kg(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


def _store(url: str, namespace: str):
    return open_graph_store("sparql+" + url, namespace=namespace)


def on_a_store(oxigraph, tmp_path: Path, monkeypatch, schema: str) -> Path:
    """A knowledge base pushing to the store as `schema`, the test relation table imported; its data dir."""
    monkeypatch.setenv("KG_GRAPH_STORE", "sparql+" + oxigraph.url)
    monkeypatch.setenv("KG_POSTGRES_SCHEMA", schema)
    data_dir = tmp_path / "kb"
    assert kg("import", ROWS, "--data-dir", data_dir).exit_code == 0
    return data_dir


def edit_in_store(url: str, namespace: str) -> None:
    """What another tool does: one edge added, one removed, by SPARQL updates on the store."""
    store = _store(url, namespace)
    try:
        store.add([REDIS_PROM])
        (home,) = [name for name in store.names() if ORDER_PG in store.read(name)]
        store.remove([ORDER_PG], home)
    finally:
        store.close()


def graph_file(data_dir: Path) -> Graph:
    return Graph().parse(data_dir / "graph.ttl", format="turtle")


def a_local_commit(tmp_path: Path, data_dir: Path):
    row = tmp_path / "more.csv"
    row.write_text("source,relation,target\nnotification-service,dependsOn,Kafka\n", encoding="utf-8")
    return kg("import", row, "--data-dir", data_dir)


def test_an_edit_in_the_store_survives_a_commit_and_a_pull_merges_it(oxigraph, tmp_path, monkeypatch):
    data_dir = on_a_store(oxigraph, tmp_path, monkeypatch, "edits")
    status = kg("store", "status", "--data-dir", data_dir)
    assert status.exit_code == 0 and "holds graph.ttl's graph" in status.output

    edit_in_store(oxigraph.url, "edits")
    done = a_local_commit(tmp_path, data_dir)
    assert done.exit_code == 0, done.output  # the commit is kept locally ...
    store = held(oxigraph.url, "edits")
    assert REDIS_PROM in store and ORDER_PG not in store  # ... and the store keeps its edits
    assert NOTIFY_KAFKA not in store and NOTIFY_KAFKA in graph_file(data_dir)

    check = kg("check", "--data-dir", data_dir)
    assert check.exit_code != 0 and "changed outside kgrag" in check.output and "kg store pull" in check.output
    status = kg("store", "status", "--data-dir", data_dir)
    assert status.exit_code == 1
    # the store's one added edge; graph.ttl's removed edge and the local row (its edge, the new entity's type, label)
    assert "1 triple(s) or structure(s) only in the store, 8 only in graph.ttl" in status.output, status.output
    assert "changed outside kgrag" in status.output

    assert "Prometheus" not in kg("entity", "Redis", "--data-dir", data_dir).output
    pulled = kg("store", "pull", "--data-dir", data_dir)
    assert pulled.exit_code == 0, pulled.output
    assert pulled.output.startswith("graph.ttl took the store's edits: 1 triple(s) or structure(s) added there, 1 removed there")
    local = graph_file(data_dir)
    assert REDIS_PROM in local and ORDER_PG not in local and NOTIFY_KAFKA in local  # a merge, not a replace
    store = held(oxigraph.url, "edits")
    assert REDIS_PROM in store and ORDER_PG not in store and NOTIFY_KAFKA in store  # the pull's commit pushed
    assert kg("store", "status", "--data-dir", data_dir).exit_code == 0
    assert kg("check", "--data-dir", data_dir).exit_code == 0
    # the knowledge base reads the pulled graph: Redis's edges now include Prometheus (human output)
    shown = kg("entity", "Redis", "--data-dir", data_dir)
    assert shown.exit_code == 0 and "Prometheus" in shown.output, shown.output


def test_push_force_overwrites_the_store_and_a_plain_push_says_what_to_choose(oxigraph, tmp_path, monkeypatch):
    data_dir = on_a_store(oxigraph, tmp_path, monkeypatch, "force")
    edit_in_store(oxigraph.url, "force")
    assert a_local_commit(tmp_path, data_dir).exit_code == 0

    refused = kg("store", "push", "--data-dir", data_dir)
    assert refused.exit_code != 0 and "kg store push --force" in refused.output
    assert REDIS_PROM in held(oxigraph.url, "force")
    repair = kg("check", "--repair", "--data-dir", data_dir)
    assert repair.exit_code != 0 and REDIS_PROM in held(oxigraph.url, "force")  # a repair does not choose either

    forced = kg("store", "push", "--force", "--data-dir", data_dir)
    assert forced.exit_code == 0 and forced.output == "the store holds graph.ttl's graph\n", forced.output
    store = held(oxigraph.url, "force")
    assert REDIS_PROM not in store and ORDER_PG in store and NOTIFY_KAFKA in store
    assert kg("check", "--data-dir", data_dir).exit_code == 0
    # from then on, commits push as before
    row = tmp_path / "again.csv"
    row.write_text("source,relation,target\nuser-service,dependsOn,Kafka\n", encoding="utf-8")
    assert kg("import", row, "--data-dir", data_dir).exit_code == 0
    assert (entity_iri("user-service"), KG.dependsOn, entity_iri("Kafka")) in held(oxigraph.url, "force")
    # an edit in the store with no commit since: a plain push still refuses (it reads the store, not only the record)
    edit_in_store_again = _store(oxigraph.url, "force")
    try:
        edit_in_store_again.add([REDIS_PROM])
    finally:
        edit_in_store_again.close()
    assert kg("store", "push", "--data-dir", data_dir).exit_code != 0
    assert REDIS_PROM in held(oxigraph.url, "force") and kg("store", "status", "--data-dir", data_dir).exit_code == 1


def test_a_push_sends_what_changed_blank_node_structures_included(oxigraph, tmp_path, monkeypatch):
    """A push sends the difference: named triples one by one, a graph whose blank-node structures changed whole."""
    from rdflib import OWL, RDF

    data_dir = on_a_store(oxigraph, tmp_path, monkeypatch, "trees")
    ontology = tmp_path / "mine.ttl"
    restriction = ("@prefix owl: <http://www.w3.org/2002/07/owl#> . @prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .\n"
                   "@prefix kg: <https://kgrag.dev/ontology#> .\n"
                   "kg:Gateway a owl:Class ; rdfs:subClassOf [ a owl:Restriction ; owl:onProperty kg:dependsOn ;"
                   " owl:someValuesFrom kg:Database ] .\n")
    ontology.write_text(restriction, encoding="utf-8")
    assert kg("import", ontology, "--data-dir", data_dir).exit_code == 0
    assert len(list(held(oxigraph.url, "trees").subjects(RDF.type, OWL.Restriction))) == 1
    ontology.write_text(restriction.split("kg:Gateway")[0] + "kg:Gateway a owl:Class .\n", encoding="utf-8")
    assert kg("import", ontology, "--data-dir", data_dir).exit_code == 0  # the restriction is gone from the file
    store = held(oxigraph.url, "trees")
    assert not list(store.subjects(RDF.type, OWL.Restriction)) and ORDER_PG in store
    assert kg("store", "status", "--data-dir", data_dir).exit_code == 0
    assert kg("check", "--data-dir", data_dir).exit_code == 0


def test_a_pull_takes_a_blank_node_structure_made_in_the_store(oxigraph, tmp_path, monkeypatch):
    """An OWL restriction added in the store (a blank-node tree) comes into graph.ttl whole, once."""
    from rdflib import OWL, RDF, RDFS, BNode, URIRef

    data_dir = on_a_store(oxigraph, tmp_path, monkeypatch, "pulltree")
    restriction, gateway = BNode(), URIRef("https://kgrag.dev/ontology#Gateway")
    store = _store(oxigraph.url, "pulltree")
    try:
        store.add([(gateway, RDF.type, OWL.Class), (gateway, RDFS.subClassOf, restriction),
                   (restriction, RDF.type, OWL.Restriction), (restriction, OWL.onProperty, KG.dependsOn)])
    finally:
        store.close()
    pulled = kg("store", "pull", "--data-dir", data_dir)
    assert pulled.exit_code == 0, pulled.output
    local = graph_file(data_dir)
    (tree,) = local.objects(gateway, RDFS.subClassOf)
    assert (tree, RDF.type, OWL.Restriction) in local and (tree, OWL.onProperty, KG.dependsOn) in local
    again = kg("store", "pull", "--data-dir", data_dir).output  # nothing new the second time
    assert again.startswith("graph.ttl took the store's edits: 0 triple(s) or structure(s) added there, 0 removed")
    assert kg("store", "status", "--data-dir", data_dir).exit_code == 0


def test_the_store_commands_without_a_store_say_what_to_set(tmp_path, monkeypatch):
    monkeypatch.delenv("KG_GRAPH_STORE", raising=False)
    assert kg("init", "--data-dir", tmp_path / "kb").exit_code == 0
    for command in ("status", "pull", "push"):
        done = kg("store", command, "--data-dir", tmp_path / "kb")
        assert done.exit_code == 2 and "no SPARQL store is configured: set KG_GRAPH_STORE" in done.output, done.output


def test_a_round_of_following_the_store_pulls_its_edits_and_only_them(oxigraph, tmp_path, monkeypatch):
    from retrieval.pipeline import KnowledgeBase
    from retrieval.store_sync import follow_round

    data_dir = on_a_store(oxigraph, tmp_path, monkeypatch, "followed")
    with KnowledgeBase(make_settings(data_dir)) as kb:
        before = (data_dir / "graph.ttl").read_bytes()
        assert follow_round(kb) is None  # the store is as kgrag left it: nothing pulled, graph.ttl untouched
        assert (data_dir / "graph.ttl").read_bytes() == before
        edit_in_store(oxigraph.url, "followed")
        result = follow_round(kb)
        assert result is not None and (result["added"], result["removed"], result["merged"]) == (1, 1, True)
        assert REDIS_PROM in kb.graph.rdf and ORDER_PG not in kb.graph.rdf
        assert follow_round(kb) is None  # taken once
    assert REDIS_PROM in graph_file(data_dir)
    assert kg("store", "status", "--data-dir", data_dir).exit_code == 0


def test_a_server_following_the_store_answers_with_an_edit_made_there(oxigraph, tmp_path, monkeypatch):
    """KG_STORE_FOLLOW: the real app's server reads the store on its own and its answers change, no command run."""
    import time

    from fastapi.testclient import TestClient

    from api.app import create_app

    data_dir = on_a_store(oxigraph, tmp_path, monkeypatch, "serving")
    with TestClient(create_app(make_settings(data_dir, store_follow=0.2))) as client:
        def neighbours() -> list[str]:
            found = client.get("/entities/Redis")
            assert found.status_code == 200
            return [n["label"] for ns in found.json()["neighbours"].values() for n in ns]

        assert "Prometheus" not in neighbours()
        follower = client.app.state.kb._store_follower
        edit_in_store(oxigraph.url, "serving")
        deadline = time.monotonic() + 120  # a bound on waiting for the follower, not a timing assertion
        while (follower.pulls < 1 or "Prometheus" not in neighbours()) and time.monotonic() < deadline:
            time.sleep(0.1)  # the pull's commit is served before the follower counts it
        assert "Prometheus" in neighbours()
        assert follower.pulls == 1 and follower.errors == 0
    assert REDIS_PROM in graph_file(data_dir) and ORDER_PG not in graph_file(data_dir)


def test_no_store_follower_unless_asked(oxigraph, tmp_path, monkeypatch):
    from retrieval.pipeline import KnowledgeBase

    data_dir = on_a_store(oxigraph, tmp_path, monkeypatch, "unfollowed")
    with KnowledgeBase(make_settings(data_dir)) as kb:
        kb.follow()
        assert kb._store_follower is None  # KG_STORE_FOLLOW unset: the store is read on `kg store pull` only
