"""GraphView semantics (inverse, symmetric, ^name) and best-first expansion, checked against SPARQL."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, example, given, settings
from hypothesis import strategies as st
from rdflib import Graph, URIRef

from kg.graph import GraphView
from kg.relations import import_relation_table
from ontology import BASE_ONTOLOGY_PATH, KG, Vocabulary, entity_iri, load_rdf
from retrieval.graph.expand import ExpansionSettings, expand_neighbours

RELATIONS = """\
source,relation,target,source_type,target_type,weight
order-service,dependsOn,mysql-core,Service,Database,
order-service,runtimeDependsOn,inventory-service,Service,Service,
inventory-service,dependsOn,redis-cluster,,Cache,
payment-service,dependsOn,redis-cluster,Service,,
order-service,ownedBy,交易团队,,Team,
iot-gateway,connectsTo,LORA-02,Service,Device,
rack-a,partOf,room-1,Host,,
room-1,partOf,building-b,,,
building-b,partOf,campus-c,,,
campus-c,partOf,region-d,,,
region-d,partOf,country-e,,,
"""


def graph_from_table(table: str, path: Path) -> Graph:
    """The base ontology plus a relation table, through the same import as `kg import`."""
    g = load_rdf(BASE_ONTOLOGY_PATH)
    path.write_text(table, encoding="utf-8")
    import_relation_table(g, path, Vocabulary.from_graph(g))
    return g


def view_of(g: Graph) -> GraphView:
    return GraphView.from_rdf(g, Vocabulary.from_graph(g))


def iri(label: str) -> str:
    return str(entity_iri(label))


def expand(view: GraphView, seed: str, **options) -> dict[str, object]:
    relations = options.pop("relations", None)
    hits = expand_neighbours(
        view, {iri(seed): 1.0}, ExpansionSettings(**options), relations=relations
    )
    return {h.label: h for h in hits}


def steps(hit) -> list[tuple[str, str, str]]:
    return [(s.source, s.relation, s.target) for s in hit.path]


@pytest.fixture(scope="module")
def rdf(tmp_path_factory) -> Graph:
    return graph_from_table(RELATIONS, tmp_path_factory.mktemp("graph") / "relations.csv")


@pytest.fixture(scope="module")
def view(rdf) -> GraphView:
    return view_of(rdf)


def test_view_has_the_entities_labels_types_and_edges(view):
    order = view.entities[iri("order-service")]
    assert (order.label, order.types) == ("order-service", ("Service",))
    assert view.stats() == {"entities": 14, "edges": 11}
    assert view.resolve("order-service") is order
    assert view.resolve(iri("order-service")) is order
    assert view.resolve("ORDER-SERVICE") is order
    assert view.resolve("no-such-thing") is None


def test_an_edge_is_walked_backwards_under_its_inverse_name(view):
    back = [e for e in view.neighbours(iri("mysql-core")) if e.target == iri("order-service")]
    assert [(e.relation, e.asserted, e.forward) for e in back] == [
        ("requiredBy", "dependsOn", False)
    ]
    hits = expand(view, "mysql-core", max_hops=1)
    assert steps(hits["order-service"]) == [("mysql-core", "requiredBy", "order-service")]


def test_a_symmetric_edge_is_walked_both_ways_under_its_own_name(view):
    assert steps(expand(view, "LORA-02", max_hops=1)["iot-gateway"]) == [
        ("LORA-02", "connectsTo", "iot-gateway")
    ]
    assert steps(expand(view, "iot-gateway", max_hops=1)["LORA-02"]) == [
        ("iot-gateway", "connectsTo", "LORA-02")
    ]


def test_an_edge_without_inverse_is_walked_backwards_as_caret_name_at_lower_weight(view):
    [back] = [
        e for e in view.neighbours(iri("inventory-service")) if e.target == iri("order-service")
    ]
    [forward] = [
        e for e in view.neighbours(iri("order-service")) if e.target == iri("inventory-service")
    ]
    assert (back.relation, back.asserted, back.forward) == (
        "^runtimeDependsOn",
        "runtimeDependsOn",
        False,
    )
    assert back.weight < forward.weight
    hits = expand(view, "inventory-service", max_hops=1)
    assert steps(hits["order-service"]) == [
        ("inventory-service", "^runtimeDependsOn", "order-service")
    ]
    assert (
        hits["order-service"].score < hits["redis-cluster"].score
    )  # a forward dependsOn neighbour


def test_hops_limit_how_far_expansion_goes_and_paths_are_recorded(view):
    one = expand(view, "order-service", max_hops=1)
    assert set(one) == {"order-service", "mysql-core", "inventory-service", "交易团队"}
    two = expand(view, "order-service", max_hops=2)
    assert steps(two["redis-cluster"]) == [
        ("order-service", "runtimeDependsOn", "inventory-service"),
        ("inventory-service", "dependsOn", "redis-cluster"),
    ]
    assert "payment-service" not in two  # three relations away
    assert steps(two["order-service"]) == []  # the seed
    assert two["order-service"].score == 1.0
    assert two["inventory-service"].score > two["redis-cluster"].score
    assert expand(view, "order-service", max_hops=0).keys() == {"order-service"}


def test_a_transitive_chain_counts_as_one_hop_up_to_its_depth(view):
    hits = expand(view, "rack-a", max_hops=1, transitive_depth=4)
    # rack-a partOf room-1 partOf building-b partOf campus-c partOf region-d: four steps, one hop.
    assert set(hits) == {"rack-a", "room-1", "building-b", "campus-c", "region-d"}
    assert steps(hits["region-d"]) == [
        ("rack-a", "partOf", "room-1"),
        ("room-1", "partOf", "building-b"),
        ("building-b", "partOf", "campus-c"),
        ("campus-c", "partOf", "region-d"),
    ]
    assert "country-e" in expand(view, "rack-a", max_hops=1, transitive_depth=5)
    assert set(expand(view, "rack-a", max_hops=1, transitive_depth=1)) == {"rack-a", "room-1"}


def test_a_transitive_chain_walked_backwards_uses_the_transitive_inverse(view):
    hits = expand(view, "country-e", max_hops=1, transitive_depth=4)
    assert set(hits) == {"country-e", "region-d", "campus-c", "building-b", "room-1"}
    assert steps(hits["campus-c"]) == [
        ("country-e", "hasPart", "region-d"),
        ("region-d", "hasPart", "campus-c"),
    ]
    assert [s.relation for s in hits["room-1"].path] == ["hasPart"] * 4


def test_a_non_transitive_chain_is_not_shortened(view):
    assert "redis-cluster" not in expand(view, "order-service", max_hops=1)


def test_relation_filter_with_sub_properties(rdf, view):
    vocab = Vocabulary.from_graph(rdf)
    family = vocab.sub_properties("dependsOn")
    assert {"dependsOn", "runtimeDependsOn"} <= family
    assert "ownedBy" not in family
    hits = expand(view, "order-service", max_hops=2, relations=family)
    assert set(hits) == {"order-service", "mysql-core", "inventory-service", "redis-cluster"}
    only_depends = expand(view, "order-service", max_hops=2, relations={"dependsOn"})
    assert set(only_depends) == {"order-service", "mysql-core"}  # runtimeDependsOn is not dependsOn
    # The filter is on the asserted property, so it also walks those edges backwards.
    assert set(expand(view, "redis-cluster", max_hops=1, relations=family)) == {
        "redis-cluster",
        "inventory-service",
        "payment-service",
    }


HUB_TABLE = (
    "source,relation,target,weight\n"
    + "start,dependsOn,hub,\n"
    + "".join(f"hub,dependsOn,leaf-{i},{w}\n" for i, w in enumerate([0.2, 0.9, 0.3, 0.8, 0.7]))
)


@pytest.fixture(scope="module")
def hub_view(tmp_path_factory) -> GraphView:
    return view_of(graph_from_table(HUB_TABLE, tmp_path_factory.mktemp("hub") / "relations.csv"))


def test_a_hub_is_reached_but_not_walked_through(hub_view):
    capped = expand(hub_view, "start", max_hops=2, hub_cap=3)  # hub has 6 edges
    assert set(capped) == {"start", "hub"}
    uncapped = expand(hub_view, "start", max_hops=2, hub_cap=6)
    assert set(uncapped) == {"start", "hub"} | {f"leaf-{i}" for i in range(5)}


def test_a_seed_hub_walks_only_its_strongest_edges(hub_view):
    hits = expand(hub_view, "hub", max_hops=1, hub_cap=3)
    assert set(hits) == {
        "hub",
        "start",
        "leaf-1",
        "leaf-3",
    }  # weights 1.0 (requiredBy 0.9), 0.9, 0.8


# ---------------------------------------------------------------- differential: SPARQL


RDFS_NS = URIRef("http://www.w3.org/2000/01/rdf-schema#")


def sparql_objects(g: Graph, query: str, seed: str) -> set[str]:
    rows = g.query(query, initNs={"kg": KG, "rdfs": RDFS_NS}, initBindings={"seed": URIRef(seed)})
    return {str(row[0]) for row in rows} - {seed}


def sparql_pairs(g: Graph, query: str) -> dict[str, set[str]]:
    """The same query with ?seed unbound: seed -> objects, in one evaluation."""
    query = query.replace("SELECT DISTINCT ?o", "SELECT DISTINCT ?seed ?o")
    out: dict[str, set[str]] = {}
    for seed, o in g.query(query, initNs={"kg": KG, "rdfs": RDFS_NS}):
        if seed != o:
            out.setdefault(str(seed), set()).add(str(o))
    return out


FORWARD_ONE_HOP = "SELECT DISTINCT ?o WHERE { ?seed kg:dependsOn ?o }"
EITHER_WAY_ONE_HOP_WITH_SUB_PROPERTIES = """
PREFIX rdfs: <http://www.w3.org/2000/01/rdf-schema#>
SELECT DISTINCT ?o WHERE {
    ?p rdfs:subPropertyOf* kg:dependsOn .
    { ?seed ?p ?o } UNION { ?o ?p ?seed }
}"""
DEP = "(kg:dependsOn|kg:runtimeDependsOn|^kg:dependsOn|^kg:runtimeDependsOn)"
EITHER_WAY_TWO_HOPS = f"SELECT DISTINCT ?o WHERE {{ ?seed {DEP}/{DEP}? ?o }}"


def reached(view: GraphView, seed: str, hops: int, relations) -> set[str]:
    hits = expand_neighbours(
        view, {seed: 1.0}, ExpansionSettings(max_hops=hops, hub_cap=10_000), relations=relations
    )
    return {h.entity for h in hits} - {seed}


def test_one_hop_forward_along_depends_on_equals_sparql(rdf, view):
    for seed in view.entities:
        hits = expand_neighbours(
            view, {seed: 1.0}, ExpansionSettings(max_hops=1), relations={"dependsOn"}
        )
        forward = {h.entity for h in hits if h.path and h.path[-1].relation == "dependsOn"}
        assert forward == sparql_objects(rdf, FORWARD_ONE_HOP, seed), view.entities[seed].label


def test_one_hop_either_way_with_sub_properties_equals_sparql(rdf, view):
    family = Vocabulary.from_graph(rdf).sub_properties("dependsOn")
    for seed in view.entities:
        assert reached(view, seed, 1, family) == sparql_objects(
            rdf, EITHER_WAY_ONE_HOP_WITH_SUB_PROPERTIES, seed
        )


def test_two_hops_reach_what_two_relations_reach_even_past_a_weak_direct_edge(tmp_path):
    # s -> y directly (weight 0.4) and through a (weight 1.0 each): the best path to y is the long
    # one, but z, one relation past y, is still only two relations from s.
    table = "source,relation,target,weight\ns,dependsOn,a,\na,dependsOn,y,\ns,dependsOn,y,0.4\ny,dependsOn,z,\n"
    g = graph_from_table(table, tmp_path / "relations.csv")
    view = view_of(g)
    assert reached(view, iri("s"), 2, None) == sparql_objects(g, EITHER_WAY_TWO_HOPS, iri("s"))


LABELS = [f"n{i}" for i in range(6)]
edges = (
    st.lists(
        st.tuples(
            st.sampled_from(LABELS),
            st.sampled_from(["dependsOn", "runtimeDependsOn"]),
            st.sampled_from(LABELS),
            st.sampled_from(["", "0.3", "1.0"]),
        ),
        min_size=1,
        max_size=12,
        unique_by=lambda e: (e[0], e[1], e[2]),
    )
    .map(lambda es: [e for e in es if e[0] != e[2]])
    .filter(bool)
)


# No shrinking: the examples are small already, and shrinking a failure here takes minutes.
@settings(
    max_examples=30,
    deadline=None,
    derandomize=True,
    phases=(Phase.explicit, Phase.reuse, Phase.generate),
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(edges=edges)
# n2's best path to n0 runs through n1 (the direct edge is weak), yet n3 is two relations from n2.
@example(
    edges=[
        ("n0", "dependsOn", "n1", ""),
        ("n0", "dependsOn", "n2", "0.3"),
        ("n0", "dependsOn", "n3", ""),
        ("n1", "dependsOn", "n2", ""),
    ]
)
def test_random_graphs_expand_like_sparql_property_paths(tmp_path, edges):
    table = "source,relation,target,weight\n" + "".join(
        f"{s},{r},{t},{w}\n" for s, r, t, w in edges
    )
    g = graph_from_table(table, tmp_path / "relations.csv")
    view = view_of(g)
    family = Vocabulary.from_graph(g).sub_properties("dependsOn")
    one_hop = sparql_pairs(g, EITHER_WAY_ONE_HOP_WITH_SUB_PROPERTIES)
    two_hops = sparql_pairs(g, EITHER_WAY_TWO_HOPS)
    for seed in view.entities:
        assert reached(view, seed, 1, family) == one_hop.get(seed, set())
        assert reached(view, seed, 2, family) == two_hops.get(seed, set())
