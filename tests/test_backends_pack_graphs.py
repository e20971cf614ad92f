"""One named graph per knowledge pack in the SPARQL store: a commit on the backends (PostgreSQL + a real
`oxigraph serve`) that adds a pack or relations naming it writes `pack:ID`; removing the pack drops it."""

from __future__ import annotations

import pytest
from conftest import build_kb
from rdflib import RDFS, Literal
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
