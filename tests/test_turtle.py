"""graph.ttl is written by kg.turtle: the very bytes rdflib's Turtle serializer writes, with each term's
prefixed name worked out once (a 100k-row import asked rdflib's namespace manager 1.2M times)."""

from __future__ import annotations

from decimal import Decimal

from rdflib import OWL, RDF, RDFS, SKOS, XSD, BNode, Graph, Literal, Namespace, URIRef
from rdflib.collection import Collection

from kg.relations import import_relation_table
from kg.turtle import serialize_turtle
from ontology import BASE_ONTOLOGY_PATH, KG, Vocabulary, load_rdf

DEMO = __import__("pathlib").Path(__file__).resolve().parents[1] / "kg" / "demo" / "relations.csv"


class CountingGraph(Graph):
    """A graph that counts how often a serializer asks it for a term's prefixed name."""

    asked = 0

    def compute_qname(self, uri, generate=True):
        CountingGraph.asked += 1
        return super().compute_qname(uri, generate)


def _demo_graph(graph: Graph) -> Graph:
    graph += load_rdf(BASE_ONTOLOGY_PATH)
    graph.bind("ent", "https://kgrag.dev/entity/")
    import_relation_table(graph, DEMO, Vocabulary.from_graph(graph))
    return graph


def _awkward_graph() -> Graph:
    """What else a graph.ttl saved from Protégé holds: nested blank nodes, lists, typed and tagged
    literals, an IRI no prefix covers, a prefix rdflib must generate, a local name rdflib cannot shorten."""
    g = _demo_graph(Graph())
    ex = Namespace("http://example.org/x#")
    g.add((ex.a, RDFS.label, Literal("服务", lang="zh")))
    g.add((ex.a, RDFS.label, Literal("service", lang="en")))
    g.add((ex.a, KG.weight, Literal(Decimal("0.50"), datatype=XSD.decimal)))
    g.add((ex.a, RDFS.comment, Literal('line one\nline "two"')))
    g.add((URIRef("http://nowhere.test/p/q."), URIRef("http://unbound.test/ns/rel"), ex.a))
    restriction = BNode()
    g.add((ex.C, RDF.type, OWL.Class))
    for top in (ex.K, ex.J):  # rdfs:Class members are written first
        g.add((top, RDF.type, RDFS.Class))
        g.add((top, RDFS.label, Literal(top[-1])))
    g.add((ex.C, RDFS.subClassOf, restriction))
    g.add((restriction, RDF.type, OWL.Restriction))
    g.add((restriction, OWL.onProperty, KG.dependsOn))
    members = BNode()
    Collection(g, members, [ex.a, ex.b, URIRef("http://example.org/x#c")])
    g.add((ex.U, OWL.unionOf, members))
    axiom = BNode()
    for p, o in ((RDF.type, OWL.Axiom), (OWL.annotatedSource, ex.a), (SKOS.note, Literal("n"))):
        g.add((axiom, p, o))
    return g


def test_the_bytes_are_rdflibs_own():
    for graph in (_demo_graph(Graph()), _awkward_graph(), load_rdf(BASE_ONTOLOGY_PATH)):
        assert serialize_turtle(graph) == graph.serialize(format="turtle", encoding="utf-8")


def test_a_terms_prefixed_name_is_worked_out_once():
    graph = _demo_graph(CountingGraph())
    terms = {t for triple in graph for t in triple if isinstance(t, URIRef)}
    terms |= {t.datatype for t in graph.objects() if isinstance(t, Literal) and t.datatype}
    CountingGraph.asked = 0
    serialize_turtle(graph)
    # once per term and role (a predicate may get a generated prefix, a subject or object not)
    assert 0 < CountingGraph.asked <= 2 * len(terms)
    CountingGraph.asked = 0
    graph.serialize(format="turtle")
    assert CountingGraph.asked > 2 * len(terms)  # what rdflib's serializer asks: once per occurrence and more
