"""One named graph per knowledge pack in the SPARQL store: a commit on the backends (PostgreSQL + a real
`oxigraph serve`) that adds a pack or relations naming it writes `pack:ID`; removing the pack drops it."""

from __future__ import annotations

import pytest
from conftest import build_kb
from rdflib import OWL, RDFS, Literal
from rdflib.compare import isomorphic

from kg.stores import canonical, open_graph_store
from ontology import KG, entity_iri, load_rdf


@pytest.mark.slow
def test_a_pack_has_its_own_named_graph_until_it_is_removed(backends, tmp_path):
    pg, ox = backends
    kb = build_kb(tmp_path, text_backend="postgres", postgres_dsn=pg.url, postgres_schema="pack_graphs",
                  graph_store="sparql+" + ox.url)
    store = open_graph_store("sparql+" + ox.url, namespace="pack_graphs")
    try:
        assert store.names() == ["default", "ontology"]
        ops = tmp_path / "ops"
        ops.mkdir()
        (ops / "PACK.md").write_text("---\nid: ops\ntitle: 值班手册\ncovers: [on-call]\n---\n", encoding="utf-8")
        (ops / "oncall.md").write_text("# 值班\n\norder-service 超时先看 Redis。\n", encoding="utf-8")
        kb.add_pack("ops", str(ops))
        pack, orders = entity_iri("pack:ops"), entity_iri("order-service")
        assert store.names() == ["default", "ontology", "pack:ops"]
        assert (pack, RDFS.label, Literal("pack:ops")) in store.read("pack:ops")

        table = tmp_path / "documented.csv"
        table.write_text("source,relation,target,weight\norder-service,documentedIn,pack:ops,0.8\n", encoding="utf-8")
        kb.import_file(table)
        in_pack = store.read("pack:ops")
        assert (orders, KG.documentedIn, pack) in in_pack
        assert not any(pack in (s, o) for s, _, o in store.read("default"))
        assert isomorphic(canonical(store.read()), canonical(load_rdf(tmp_path / "kb" / "graph.ttl")))

        kb.remove_pack("ops")
        assert store.names() == ["default", "ontology"]
        assert not any(pack in (s, o) for s, _, o in store.read())
        assert isomorphic(canonical(store.read()), canonical(load_rdf(tmp_path / "kb" / "graph.ttl")))
    finally:
        store.close()
        kb.close()


@pytest.mark.slow
def test_a_packs_own_table_edges_live_in_its_graph_and_go_with_it(backends, tmp_path):
    """The edges a pack's relations.csv alone states (and their weights) are in `pack:ID`; an edge another table states
    too is in `default`; removing the pack drops its graph and those edges from the whole."""
    pg, ox = backends
    kb = build_kb(tmp_path, text_backend="postgres", postgres_dsn=pg.url, postgres_schema="pack_tables",
                  graph_store="sparql+" + ox.url)
    store = open_graph_store("sparql+" + ox.url, namespace="pack_tables")
    try:
        quota = tmp_path / "quota"
        quota.mkdir()
        (quota / "quota.md").write_text("# quota-service\n\nThe quota-service keeps limits in limits-db.\n",
                                        encoding="utf-8")
        (quota / "relations.csv").write_text("source,relation,target,weight\nquota-service,dependsOn,limits-db,0.7\n"
                                             "quota-service,dependsOn,redis-cluster,\n", encoding="utf-8")
        own = tmp_path / "team.csv"  # the team's table states one of the pack's edges too
        own.write_text("source,relation,target\nquota-service,dependsOn,redis-cluster\n", encoding="utf-8")
        kb.import_file(own)
        kb.add_pack("quota", str(quota))
        svc, db, redis = (entity_iri(x) for x in ("quota-service", "limits-db", "redis-cluster"))
        in_pack, default = store.read("pack:quota"), store.read("default")
        assert (svc, KG.dependsOn, db) in in_pack and (svc, KG.dependsOn, db) not in default
        assert (svc, KG.dependsOn, redis) in default and (svc, KG.dependsOn, redis) not in in_pack
        assert any(p == OWL.annotatedTarget and o == db for _, p, o in in_pack)  # its weight went with it
        assert isomorphic(canonical(store.read()), canonical(load_rdf(tmp_path / "kb" / "graph.ttl")))

        # The team's table stops stating the edge, then states it again: graph.ttl does not change either time (the
        # pack's table still states it), but the edge moves to the pack's graph and back.
        graph_ttl = (tmp_path / "kb" / "graph.ttl").read_bytes()
        own.write_text("source,relation,target\n", encoding="utf-8")
        kb.import_file(own)
        assert (tmp_path / "kb" / "graph.ttl").read_bytes() == graph_ttl
        assert (svc, KG.dependsOn, redis) in store.read("pack:quota")
        assert (svc, KG.dependsOn, redis) not in store.read("default")
        own.write_text("source,relation,target\nquota-service,dependsOn,redis-cluster\n", encoding="utf-8")
        kb.import_file(own)
        assert (svc, KG.dependsOn, redis) in store.read("default")
        assert (svc, KG.dependsOn, redis) not in store.read("pack:quota")
        assert kb.check().problems == []

        kb.remove_pack("quota")
        assert store.names() == ["default", "ontology"]
        whole = store.read()
        assert (svc, KG.dependsOn, db) not in whole and (svc, KG.dependsOn, redis) in whole
        assert isomorphic(canonical(whole), canonical(load_rdf(tmp_path / "kb" / "graph.ttl")))
    finally:
        store.close()
        kb.close()
