"""Regression: after a large relation import every later command re-parsed graph.ttl (100 s and 3.7 GB
for a 78 MB file). The derived view is cached by graph.ttl's content hash; `stats` reads only the
cache's header, and an edit of graph.ttl makes the cache stale at once."""

from __future__ import annotations

from rdflib import OWL, RDF, RDFS, Literal, URIRef

from kg.store import CACHE_FILE, KnowledgeGraph
from ontology import entity_iri, load_rdf


def test_the_graph_cache_follows_the_content_of_graph_ttl(fresh_kb):
    root = fresh_kb.root
    assert (root / CACHE_FILE).exists()
    graph = KnowledgeGraph(root)
    assert graph._rdf is None and graph._view is None  # nothing parsed or unpickled on open
    stats = graph.view_stats()
    assert stats == fresh_kb.graph.view.stats()
    assert graph._rdf is None and graph._view is None  # the counts came from the cache's header
    assert graph.view.entities.keys() == fresh_kb.graph.view.entities.keys()
    assert graph._rdf is None  # the view came from the cache too

    edited = load_rdf(root / "graph.ttl")  # an outside edit: the cache no longer matches
    new = URIRef(entity_iri("billing-service"))
    edited.add((new, RDF.type, OWL.NamedIndividual))
    edited.add((new, RDFS.label, Literal("billing-service")))
    edited.serialize(destination=str(root / "graph.ttl"), format="turtle")
    again = KnowledgeGraph(root)
    assert again.view_stats()["entities"] == stats["entities"] + 1
    assert str(new) in again.view.entities
