"""The OWL semantics expansion applies (owl:inverseOf, owl:SymmetricProperty, owl:TransitiveProperty,
rdfs:subPropertyOf, kg:expansionWeight), checked against rdflib SPARQL property paths on the same graph."""

from __future__ import annotations

from pathlib import Path

import pytest
import rdflib
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rdflib import OWL, RDF, RDFS, BNode, Literal, URIRef

from kg.graph import GraphView
from kg.store import KnowledgeGraph
from ontology import BASE_ONTOLOGY_PATH, ENT, KG, Vocabulary, load_rdf
from retrieval.graph.expand import ExpansionSettings, expand_neighbours

DATA = Path(__file__).parent / "data"
BASE = tuple(load_rdf(BASE_ONTOLOGY_PATH))
VOCAB = Vocabulary.from_graph(load_rdf(BASE_ONTOLOGY_PATH))
# Properties of the base ontology the random graphs assert: plain, a sub-property without an
# inverse, both ends of inverse pairs, symmetric, transitive and their parent relatedTo.
PROPERTIES = [
    "dependsOn",
    "runtimeDependsOn",
    "requiredBy",
    "ownedBy",
    "owns",
    "connectsTo",
    "partOf",
    "hasPart",
    "relatedTo",
]
# Large enough that only the hop limit (and the transitive depth) bounds the walk.
UNBOUNDED = {"hub_cap": 10_000, "max_entities": 10_000}


def node(i: int) -> URIRef:
    return ENT[f"n{i}"]


def build(n: int, edges: list[tuple[int, str, int, float | None]]) -> rdflib.Graph:
    """The base ontology plus n entities and the edges, an edge weight as the importer writes it."""
    g = rdflib.Graph()
    g.addN((s, p, o, g) for s, p, o in BASE)
    for i in range(n):
        g.add((node(i), RDF.type, OWL.NamedIndividual))
        g.add((node(i), RDF.type, KG.Entity))
        g.add((node(i), RDFS.label, Literal(f"n{i}")))
    for s, prop, o, weight in edges:
        g.add((node(s), KG[prop], node(o)))
        if weight is not None:
            axiom = BNode()
            g.add((axiom, RDF.type, OWL.Axiom))
            g.add((axiom, OWL.annotatedSource, node(s)))
            g.add((axiom, OWL.annotatedProperty, KG[prop]))
            g.add((axiom, OWL.annotatedTarget, node(o)))
            g.add((axiom, KG.weight, Literal(str(weight), datatype=rdflib.XSD.decimal)))
    return g


def expanded(g: rdflib.Graph, seed: int, relations, vocab: Vocabulary = VOCAB, **options):
    view = GraphView.from_rdf(g, vocab)
    hits = expand_neighbours(
        view, {str(node(seed)): 1.0}, ExpansionSettings(**{**UNBOUNDED, **options}), relations
    )
    return {h.entity: h for h in hits}


def sparql_reach(g: rdflib.Graph, seed: int, path: str) -> set[str]:
    query = f"SELECT DISTINCT ?x WHERE {{ ?seed {path} ?x }}"
    rows = g.query(query, initNs={"kg": KG}, initBindings={"seed": node(seed)})
    return {str(row.x) for row in rows}


def step(forward: list[str], backward: list[str] = ()) -> str:
    """One relation along any of `forward` or against any of `backward`."""
    terms = [f"kg:{p}" for p in forward] + [f"^kg:{p}" for p in backward]
    return "(" + "|".join(terms) + ")"


def within(hops: int, one_step: str) -> str:
    """Zero to `hops` steps: SPARQL 1.1 has no {0,n}, so n optional steps in a row."""
    return "/".join([f"{one_step}?"] * hops) if hops else "<urn:no-step>?"


@st.composite
def random_graphs(draw, properties=tuple(PROPERTIES), max_nodes: int = 9):
    n = draw(st.integers(2, max_nodes))
    index = st.integers(0, n - 1)
    # Edge weights are never 0: a weight-0 edge is one expansion is told not to follow.
    edges = draw(
        st.lists(
            st.tuples(index, st.sampled_from(properties), index, st.sampled_from([None, 0.3, 1.0])),
            max_size=3 * n,
            unique_by=lambda e: e[:3],
        )
    )
    return n, edges, draw(index)


@st.composite
def part_of_dags(draw, max_nodes: int = 9):
    """partOf always from a lower to a higher node (hasPart the other way), unit weights, and
    dependsOn noise: the part-of hierarchy is a hierarchy (a cycle is an error `kg ontology check`
    reports), and every chain has its full weight (the tests below cover weak chains and cycles)."""
    n = draw(st.integers(2, max_nodes))
    pairs = st.lists(st.integers(0, n - 1), min_size=2, max_size=2, unique=True).map(sorted)
    edges = []
    for low, high in draw(st.lists(pairs, max_size=3 * n, unique_by=tuple)):
        prop = draw(st.sampled_from(["partOf", "hasPart", "dependsOn"]))
        edges.append((high, prop, low, None) if prop == "hasPart" else (low, prop, high, None))
    return n, edges, draw(st.integers(0, n - 1))


# ---------------------------------------------------------------- differential: reachability

# Relation families a question may ask along, as the query path passes them to expansion
# (asserted properties and their sub-properties), with the SPARQL step that means the same:
# an asserted edge is walked forwards and backwards (under its owl:inverseOf name).
FAMILIES = {
    "dependsOn": (
        VOCAB.sub_properties("dependsOn"),
        step(["dependsOn", "runtimeDependsOn"], ["dependsOn", "runtimeDependsOn"]),
    ),
    # With the inverse partner's own assertions: x requiredBy y is y dependsOn x.
    "dependsOn and requiredBy": (
        VOCAB.sub_properties("dependsOn") | VOCAB.sub_properties("requiredBy"),
        step(
            ["dependsOn", "runtimeDependsOn", "requiredBy"],
            ["dependsOn", "runtimeDependsOn", "requiredBy"],
        ),
    ),
    "ownedBy and owns": (
        VOCAB.sub_properties("ownedBy") | VOCAB.sub_properties("owns"),
        step(["ownedBy", "owns"], ["ownedBy", "owns"]),
    ),
    "connectsTo": (VOCAB.sub_properties("connectsTo"), step(["connectsTo"], ["connectsTo"])),
}


def test_the_families_are_what_the_ontology_says() -> None:
    assert VOCAB.sub_properties("dependsOn") == {"dependsOn", "runtimeDependsOn"}
    assert VOCAB.properties["dependsOn"].inverse == "requiredBy"
    assert VOCAB.properties["runtimeDependsOn"].inverse is None
    assert VOCAB.properties["connectsTo"].symmetric
    assert not any(VOCAB.properties[p].transitive for p, _ in _family_members())


def _family_members():
    return [(p, name) for name, (family, _) in FAMILIES.items() for p in family]


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(graph=random_graphs(), family=st.sampled_from(sorted(FAMILIES)), hops=st.integers(0, 3))
def test_reach_within_the_hop_limit_equals_sparql(graph, family: str, hops: int) -> None:
    n, edges, seed = graph
    relations, one_step = FAMILIES[family]
    g = build(n, edges)
    reached = set(expanded(g, seed, relations, max_hops=hops))
    assert reached == sparql_reach(g, seed, within(hops, one_step))


@settings(
    max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(graph=part_of_dags(), depth=st.integers(1, 4))
def test_a_transitive_chain_is_the_bounded_closure_of_part_of(graph, depth: int) -> None:
    """One hop along partOf is up to `depth` partOf steps (kg:partOf{1,depth}), either way: up the
    partOf chain (partOf edges, hasPart edges backwards) or down it (the hasPart chain)."""
    n, edges, seed = graph
    g = build(n, edges)
    relations = VOCAB.sub_properties("partOf") | VOCAB.sub_properties("hasPart")
    up = step(["partOf"], ["hasPart"])
    down = step(["hasPart"], ["partOf"])
    expected = sparql_reach(g, seed, within(depth, up)) | sparql_reach(g, seed, within(depth, down))
    assert set(expanded(g, seed, relations, max_hops=1, transitive_depth=depth)) == expected


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(graph=part_of_dags(max_nodes=7))
def test_with_a_deep_enough_limit_the_chain_is_sparql_part_of_plus(graph) -> None:
    n, edges, seed = graph
    g = build(n, edges)
    hits = expanded(g, seed, {"partOf"}, max_hops=1, transitive_depth=n)
    up = sparql_reach(g, seed, "kg:partOf+")
    down = sparql_reach(g, seed, "^kg:partOf+")
    assert set(hits) == up | down | {str(node(seed))}
    for iri in up:
        assert {s.relation for s in hits[iri].path} == {"partOf"}
    for iri in down:
        assert {s.relation for s in hits[iri].path} == {"hasPart"}  # partOf's owl:inverseOf


# Found while writing the differential tests (weighted and cyclic part-of graphs): an entity first
# reached by a chain keeps that chain's state (its length and direction) even when a weaker path
# reaches it at a shorter chain in the same hop, so what lies past it within the depth is lost.


def test_a_weak_short_chain_still_reaches_past_its_end() -> None:
    # n0 partOf n1 directly (weight 0.3) and through n2; n1 partOf n3: n3 is two steps up.
    edges = [
        (0, "partOf", 1, 0.3),
        (0, "partOf", 2, None),
        (2, "partOf", 1, None),
        (1, "partOf", 3, None),
    ]
    g = build(4, edges)
    hits = expanded(g, 0, {"partOf"}, max_hops=1, transitive_depth=2)
    assert set(hits) == sparql_reach(g, 0, within(2, "kg:partOf")) | sparql_reach(
        g, 0, within(2, "^kg:partOf")
    )


def test_a_part_of_cycle_still_reaches_up_the_chain() -> None:
    # n0 partOf n1 partOf n2 partOf n3, and n2 partOf n0: n2 is one step down and two steps up.
    edges = [
        (0, "partOf", 1, None),
        (1, "partOf", 2, None),
        (2, "partOf", 3, None),
        (2, "partOf", 0, None),
    ]
    g = build(4, edges)
    hits = expanded(g, 0, {"partOf"}, max_hops=1, transitive_depth=3)
    assert str(node(3)) in sparql_reach(g, 0, within(3, "kg:partOf"))
    assert str(node(3)) in hits


# ---------------------------------------------------------------- names, directions, filters, weights


def path(hit) -> list[tuple[str, str, str]]:
    return [(s.source, s.relation, s.target) for s in hit.path]


def test_walking_depends_on_backwards_is_required_by() -> None:
    g = build(3, [(0, "dependsOn", 1, None), (2, "runtimeDependsOn", 1, None)])
    hits = expanded(g, 1, None, max_hops=1)
    assert path(hits[str(node(0))]) == [("n1", "requiredBy", "n0")]
    # runtimeDependsOn declares no inverse: walked backwards as ^runtimeDependsOn at half weight.
    assert path(hits[str(node(2))]) == [("n1", "^runtimeDependsOn", "n2")]
    requires = VOCAB.properties["requiredBy"].weight * 0.5
    assert hits[str(node(0))].score == pytest.approx(requires)
    assert hits[str(node(2))].score == pytest.approx(
        VOCAB.properties["runtimeDependsOn"].weight * 0.5 * 0.5
    )


def test_a_symmetric_relation_is_the_same_both_ways() -> None:
    g = build(2, [(0, "connectsTo", 1, None)])
    forward = expanded(g, 0, None, max_hops=1)[str(node(1))]
    backward = expanded(g, 1, None, max_hops=1)[str(node(0))]
    assert path(forward) == [("n0", "connectsTo", "n1")]
    assert path(backward) == [("n1", "connectsTo", "n0")]
    weight = VOCAB.properties["connectsTo"].weight
    assert forward.score == backward.score == pytest.approx(weight * 0.5)


def test_the_sub_property_filter_follows_a_users_sub_property() -> None:
    """lab.ttl declares calibratedBy rdfs:subPropertyOf kg:dependsOn: a dependsOn question walks it."""
    g = rdflib.Graph()
    g.addN((s, p, o, g) for s, p, o in BASE)
    g += load_rdf(DATA / "lab.ttl")
    lab = Vocabulary.from_graph(g)
    assert lab.sub_properties("dependsOn") == {"dependsOn", "runtimeDependsOn", "calibratedBy"}
    view = GraphView.from_rdf(g, lab)
    scope, alice = "http://example.org/lab#scope-7", "http://example.org/lab#alice"

    def reached(relations) -> set[str]:
        hits = expand_neighbours(view, {scope: 1.0}, ExpansionSettings(max_hops=1), relations)
        return {h.entity for h in hits}

    assert reached(lab.sub_properties("dependsOn")) == {scope, alice}
    assert reached(lab.sub_properties("ownedBy")) == {scope}
    assert reached(lab.sub_properties("relatedTo")) == {scope, alice}
    [hit] = [h for h in expand_neighbours(view, {alice: 1.0}, relations=None) if h.entity == scope]
    assert path(hit) == [("王爱丽", "calibrates", "Scope 7")]  # calibratedBy's own inverse


def test_an_expansion_weight_edited_in_graph_ttl_changes_scores(tmp_path: Path) -> None:
    store = KnowledgeGraph(tmp_path)
    store.rdf += build(3, [(0, "dependsOn", 1, None), (0, "runtimeDependsOn", 2, None)])
    store.save()

    def scores() -> dict[str, float]:
        hits = expand_neighbours(store.view, {str(node(0)): 1.0}, ExpansionSettings(max_hops=1))
        return {h.label: h.score for h in hits}

    assert scores() == {"n0": 1.0, "n1": 0.5, "n2": 0.5}
    # The edit a user makes in Protégé: kg:dependsOn kg:expansionWeight 1.0 -> 0.2.
    edited = load_rdf(tmp_path / "graph.ttl")
    edited.set((KG.dependsOn, KG.expansionWeight, Literal("0.2", datatype=rdflib.XSD.decimal)))
    edited.serialize(tmp_path / "graph.ttl", format="turtle")
    assert store.refresh_if_changed()
    assert store.vocab.properties["dependsOn"].weight == 0.2
    # runtimeDependsOn has a weight of its own (1.0), so only the dependsOn edge changes.
    assert scores() == pytest.approx({"n0": 1.0, "n1": 0.1, "n2": 0.5})
