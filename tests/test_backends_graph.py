"""The graph store contract, run against the embedded file store and a real `oxigraph serve` on loopback:
named graphs round trip, writes, the union, OWL semantics at query time by property paths, and the
demo's graph answering the same through rdflib's engine and through Oxigraph."""

from __future__ import annotations

import itertools

import pytest
from backends_servers import oxigraph_server
from rdflib import OWL, RDF, RDFS, BNode, Graph, Literal, Namespace
from rdflib.compare import isomorphic

from kg.errors import BusyError, InputError
from kg.stores import DEFAULT, ONTOLOGY, canonical, open_graph_store, pack_graph
from kg.stores.owl_paths import instances, property_path, related, related_all

EX = Namespace("https://example.org/")
_count = itertools.count()


@pytest.fixture(scope="module")
def oxigraph_url():
    with oxigraph_server() as server:
        if isinstance(server, str):
            pytest.skip(server)
        yield server.url


@pytest.fixture(params=["file", "sparql"])
def store(request, tmp_path):
    if request.param == "file":
        s = open_graph_store("file", tmp_path / "graphs")
    else:
        url = request.getfixturevalue("oxigraph_url")
        s = open_graph_store("sparql+" + url, namespace=f"t{next(_count)}")  # a knowledge base of its own
    yield s
    s.close()


def ontology() -> Graph:
    g = Graph()
    g.add((EX.relatedTo, RDF.type, OWL.SymmetricProperty))
    g.add((EX.dependsOn, RDFS.subPropertyOf, EX.relatedTo))
    g.add((EX.requiredBy, OWL.inverseOf, EX.dependsOn))
    g.add((EX.callsSync, RDFS.subPropertyOf, EX.dependsOn))
    g.add((EX.partOf, RDF.type, OWL.TransitiveProperty))
    g.add((EX.hasPart, OWL.inverseOf, EX.partOf))
    g.add((EX.Service, RDFS.subClassOf, EX.Component))
    g.add((EX.Database, RDFS.subClassOf, EX.Service))
    return g


def facts() -> Graph:
    g = Graph()
    g.add((EX.orders, RDF.type, EX.Service))
    g.add((EX.mysql, RDF.type, EX.Database))
    g.add((EX.disk, RDF.type, EX.Component))
    g.add((EX.orders, EX.callsSync, EX.payments))
    g.add((EX.mysql, EX.requiredBy, EX.orders))  # orders dependsOn mysql, said from the other end
    g.add((EX.redis, EX.relatedTo, EX.orders))  # symmetric: orders relatedTo redis
    g.add((EX.shard, EX.partOf, EX.cluster))
    g.add((EX.region, EX.hasPart, EX.cluster))  # cluster partOf region
    g.add((EX.orders, RDFS.label, Literal("订单服务", lang="zh")))
    return g


def test_named_graphs_round_trip_and_the_union_holds_them_all(store):
    store.replace(ontology(), ONTOLOGY)
    store.replace(facts(), DEFAULT)
    pack = Graph()
    pack.add((EX.runbook, RDFS.label, Literal("值班手册 \"on-call\"\n")))
    b = BNode()
    pack.add((EX.runbook, EX.step, b))
    pack.add((b, RDFS.label, Literal("重启 nginx")))
    store.replace(pack, pack_graph("ops"))
    assert store.names() == [DEFAULT, ONTOLOGY, "pack:ops"]
    assert isomorphic(store.read(ONTOLOGY), ontology())
    assert isomorphic(store.read(DEFAULT), facts())
    assert isomorphic(store.read("pack:ops"), pack)
    union = ontology() + facts() + pack
    assert isomorphic(store.read(), union)


def test_replace_graphs_replaces_and_drops_in_one_go(store):
    """What a commit pushes: every named graph replaced and a gone pack's graph dropped (one request on a
    SPARQL store, blank nodes of several graphs included)."""
    store.replace(facts(), DEFAULT)
    store.replace(facts(), pack_graph("gone"))
    default, pack = Graph(), Graph()
    for graph in (default, pack):  # a blank node of its own in each (a store cannot share one between graphs)
        b = BNode()
        graph.add((EX.runbook, EX.step, b))
        graph.add((b, RDFS.label, Literal("重启 nginx")))
    store.replace_graphs({ONTOLOGY: ontology(), DEFAULT: default, pack_graph("ops"): pack}, drop=[pack_graph("gone")])
    assert store.names() == [DEFAULT, ONTOLOGY, "pack:ops"]
    assert isomorphic(store.read(DEFAULT), default) and isomorphic(store.read("pack:ops"), pack)
    assert isomorphic(store.read(ONTOLOGY), ontology())


def test_numeric_literals_keep_their_value(store):
    from rdflib.namespace import XSD

    g = Graph()
    g.add((EX.dependsOn, EX.expansionWeight, Literal("1.0", datatype=XSD.decimal)))
    g.add((EX.partOf, EX.expansionWeight, Literal("0.50", datatype=XSD.decimal)))
    store.replace(g, ONTOLOGY)
    assert isomorphic(canonical(store.read(ONTOLOGY)), canonical(g))
    assert {o.toPython() for o in store.read(ONTOLOGY).objects()} == {o.toPython() for o in g.objects()}


def test_add_remove_replace_and_drop_change_only_their_graph(store):
    store.replace(facts(), DEFAULT)
    store.replace(ontology(), ONTOLOGY)
    assert store.add([(EX.payments, EX.dependsOn, EX.mysql)]) == 1
    assert (EX.payments, EX.dependsOn, EX.mysql) in store.read(DEFAULT)
    store.remove([(EX.redis, EX.relatedTo, EX.orders)])
    assert (EX.redis, EX.relatedTo, EX.orders) not in store.read()
    assert len(store.read(ONTOLOGY)) == len(ontology())
    store.replace(Graph(), DEFAULT)
    assert store.names() == [ONTOLOGY]
    store.drop(ONTOLOGY)
    assert store.names() == []
    assert store.select("SELECT ?s WHERE { ?s ?p ?o }") == []


def test_owl_semantics_at_query_time_by_property_paths(store):
    store.replace(ontology(), ONTOLOGY)
    store.replace(facts(), DEFAULT)
    # sub-property + inverse: callsSync is a dependsOn; requiredBy is its inverse
    assert related(store, str(EX.orders), str(EX.dependsOn)) == {str(EX.payments), str(EX.mysql)}
    # symmetric super-property: everything orders depends on, plus redis from the other end
    assert related(store, str(EX.orders), str(EX.relatedTo)) == {str(EX.payments), str(EX.mysql), str(EX.redis)}
    # the other direction through the inverse
    assert related(store, str(EX.mysql), str(EX.requiredBy)) == {str(EX.orders)}
    # transitive, with an inverse on the way: shard partOf cluster partOf region
    assert related(store, str(EX.shard), str(EX.partOf)) == {str(EX.cluster), str(EX.region)}
    assert property_path(store, str(EX.partOf)).endswith("+")
    assert not property_path(store, str(EX.dependsOn)).endswith("+")
    # classes through rdfs:subClassOf*
    assert instances(store, str(EX.Component)) == {str(EX.orders), str(EX.mysql), str(EX.disk)}
    assert instances(store, str(EX.Service)) == {str(EX.orders), str(EX.mysql)}


def test_graph_names_are_checked_with_how_to_fix(store):
    with pytest.raises(InputError, match="'ontology', 'default' or 'pack:ID'"):
        store.replace(Graph(), "packs/../x")


def test_a_store_that_does_not_answer_says_so_and_how_to_fix_it():
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: nothing listens there
    dead = open_graph_store(f"sparql+http://127.0.0.1:{port}")
    with pytest.raises(BusyError, match="does not answer.*start it"):
        dead.names()


@pytest.mark.slow
def test_the_demo_graph_answers_the_same_in_rdflib_and_in_oxigraph(oxigraph_url, tmp_path):
    """Every entity of the demo along every relation of the ontology: the same entailed objects from
    rdflib's engine over the file store and from Oxigraph."""
    from kg.cli.base import DEMO_DIR
    from kg.store import KnowledgeGraph
    from ontology import BASE_ONTOLOGY_PATH, load_rdf

    kg = KnowledgeGraph(tmp_path / "kb")
    kg.import_relations(DEMO_DIR / "relations.csv")
    base = load_rdf(BASE_ONTOLOGY_PATH)
    whole = kg.rdf
    user = Graph()
    for triple in whole:
        if triple not in base:
            user.add(triple)
    stores = [open_graph_store("file", tmp_path / "graphs"), open_graph_store("sparql+" + oxigraph_url, namespace="demo")]
    try:
        for s in stores:
            s.replace(base, ONTOLOGY)
            s.replace(user, DEFAULT)
        assert isomorphic(canonical(stores[0].read()), canonical(stores[1].read()))
        assert isomorphic(canonical(stores[1].read()), canonical(base + user))
        props = sorted({str(p) for p in base.subjects(RDF.type, OWL.ObjectProperty)})
        entities = sorted({str(s) for s, p, o in user if p == RDFS.label})[:25]
        answers = [{p: related_all(s, entities, p) for p in props} for s in stores]
        assert sum(bool(objects) for by_subject in answers[0].values() for objects in by_subject.values()) > 20
        assert answers[0] == answers[1]
        # and one by one, as `related` asks
        assert {e: related(stores[1], e, props[0]) for e in entities[:5]} == \
            {e: answers[0][props[0]][e] for e in entities[:5]}
    finally:
        for s in stores:
            s.close()


def _sparql_update(url: str, update: str) -> None:
    """A SPARQL 1.1 Protocol update, as another tool (Protégé's plugins, a script) would send it."""
    import urllib.parse
    import urllib.request

    body = urllib.parse.urlencode({"update": update}).encode()
    request = urllib.request.Request(url + "/update", data=body, method="POST",
                                     headers={"Content-Type": "application/x-www-form-urlencoded"})
    with urllib.request.urlopen(request, timeout=30) as response:
        assert response.status in (200, 204)


def test_kg_export_reads_the_store_with_what_other_tools_changed(oxigraph_url, tmp_path, monkeypatch):
    """With KG_GRAPH_STORE a SPARQL store, `kg export` writes what the store holds (numeric literals by
    value), so an edit made in the store by another tool shows in the export; graph.ttl is not read."""
    from pathlib import Path

    from click.testing import CliRunner

    from kg.cli import cli
    from kg.stores.sparql_store import GRAPH_PREFIX
    from ontology import entity_iri, load_rdf
    from retrieval.store_sync import write_graph

    def kg(*args):
        return CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)

    data_dir = tmp_path / "kb"
    assert kg("import", Path(__file__).parent / "data" / "relations.csv", "--data-dir", data_dir).exit_code == 0
    on_disk = load_rdf(data_dir / "graph.ttl")
    store = open_graph_store("sparql+" + oxigraph_url, namespace="exported")
    try:
        write_graph(store, on_disk)
        default = f"{GRAPH_PREFIX}exported/default"
        orders, redis, kafka = (entity_iri(n) for n in ("order-service", "Redis", "Kafka"))
        _sparql_update(oxigraph_url, f"""PREFIX kg: <https://kgrag.dev/ontology#> PREFIX rdfs: <{RDFS}>
            INSERT DATA {{ GRAPH <{default}> {{ <{kafka}> a kg:MessageQueue ; rdfs:label "Kafka" .
                                              <{orders}> kg:dependsOn <{kafka}> . }} }} ;
            DELETE DATA {{ GRAPH <{default}> {{ <{orders}> kg:dependsOn <{redis}> . }} }}""")
        held = store.read()
    finally:
        store.close()
    monkeypatch.setenv("KG_GRAPH_STORE", "sparql+" + oxigraph_url)
    monkeypatch.setenv("KG_POSTGRES_SCHEMA", "exported")

    printed = kg("export", "--format", "turtle", "--data-dir", data_dir)
    assert printed.exit_code == 0, printed.output
    exported = Graph().parse(data=printed.stdout, format="turtle")
    assert isomorphic(canonical(exported), canonical(held))
    assert (orders, None, kafka) in exported and (orders, None, redis) not in exported
    table = kg("export", "--data-dir", data_dir).stdout.splitlines()
    assert any(row.startswith("order-service,dependsOn,Kafka,") and ",MessageQueue," in row for row in table)
    assert not any(row.startswith("order-service,dependsOn,Redis") for row in table)
    assert isomorphic(load_rdf(data_dir / "graph.ttl"), on_disk)  # the working copy is left as it was

    monkeypatch.setenv("KG_POSTGRES_SCHEMA", "never_migrated")
    empty = CliRunner().invoke(cli, ["export", "--data-dir", str(data_dir)])
    assert empty.exit_code == 2
    assert "holds no graph for 'never_migrated'" in empty.stderr and "kg migrate --to postgres+sparql" in empty.stderr


@pytest.mark.slow
def test_the_store_view_walks_the_demo_as_the_in_memory_view(oxigraph_url, tmp_path):
    """The demo's graph migrated to Oxigraph: for every entity, the store view's typed edges (relation as
    walked, target, weight, asserted property, direction, in order) equal the in-memory view's, with the
    vocabulary read from the store's ontology; each step the view walks under a relation's own name is
    in the OWL closure the store computes for that relation (owl_paths: inverse, symmetric, sub-property);
    and an expansion from one seed reaches the same entities in about max_hops + 1 SELECTs (one per hop)."""
    from kg.cli.base import DEMO_DIR
    from kg.store import KnowledgeGraph
    from kg.stores.store_view import StoreGraphView
    from retrieval.graph.expand import ExpansionSettings, expand_neighbours
    from retrieval.store_sync import write_graph

    kg = KnowledgeGraph(tmp_path / "kb")
    kg.import_relations(DEMO_DIR / "relations.csv")
    local = kg.view
    store = open_graph_store("sparql+" + oxigraph_url, namespace="demo_view")
    try:
        write_graph(store, kg.rdf)
        remote = StoreGraphView(store, local.entities)
        assert remote.vocab.properties == local.vocab.properties
        walked = [iri for iri in local.entities if local.neighbours(iri)]
        assert len(walked) > 50
        assert {iri: remote.neighbours(iri) for iri in local.entities} == \
            {iri: local.neighbours(iri) for iri in local.entities}
        assert any(not e.forward and e.relation.startswith("^") for iri in walked for e in remote.neighbours(iri))
        assert any(not e.forward and not e.relation.startswith("^") for iri in walked for e in remote.neighbours(iri))
        for iri in walked[:12]:
            for edge in local.neighbours(iri):
                if not edge.relation.startswith("^"):
                    assert edge.target in remote.entailed(iri, edge.relation), (iri, edge)

        # A walk asks one SELECT per hop, not one per entity it reaches (transitive chains may add a few).
        settings = ExpansionSettings()
        asked = []
        for iri in walked[:20]:
            counting = _CountingStore(store)
            hits = expand_neighbours(StoreGraphView(counting, local.entities, remote.vocab), {iri: 1.0}, settings)
            assert hits == expand_neighbours(local, {iri: 1.0}, settings)
            asked.append((counting.selects, len(hits)))
        assert max(n for n, _ in asked) <= settings.max_hops + 1 + settings.transitive_depth, asked
        assert sorted(n for n, _ in asked)[len(asked) // 2] <= settings.max_hops + 1, asked
        assert max(reached for _, reached in asked) > 3 * (settings.max_hops + 1)  # one per entity would be many more
    finally:
        store.close()


class _CountingStore:
    """A graph store that counts the SELECTs asked of it."""

    def __init__(self, store) -> None:
        self.store, self.selects = store, 0

    def names(self):
        return self.store.names()

    def select(self, query, names=None):
        self.selects += 1
        return self.store.select(query, names)


def test_select_over_some_named_graphs(store):
    store.replace(ontology(), ONTOLOGY)
    store.replace(facts(), DEFAULT)
    query = "SELECT ?s WHERE { ?s ?p ?o }"
    assert {r[0] for r in store.select(query, names=[ONTOLOGY])} == set(ontology().subjects())
    assert len(store.select(query, names=[ONTOLOGY, DEFAULT])) == len(store.select(query)) == len(ontology() + facts())
