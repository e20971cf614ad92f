"""A SPARQL store's graph as the read-only graph view the query-time expansion reads: an entity IRI in, its walkable typed edges (`kg.graph_types.Edge`) out, asked of the store.

`StoreGraphView(store, entities)` answers `neighbours(iri)` with one SELECT per hop of a walk: an entity
asked for is fetched together with every entity its fetched neighbours reached (`prefetch` adds the
seeds), all cached for the view's life (make one per query, or per generation). It reads the vocabulary
(properties, their inverses, symmetry, transitivity, weights) from the store's own ontology, so an
ontology edited in the store (Protégé, another tool) is the one walked. The entities (labels, aliases, classes) are the
caller's: linking needs them in memory anyway.

Conventions, the same as `kg.graph.GraphView` (a differential test holds them equal on the demo):
- one Edge per asserted triple `s p o` between two distinct entities, `p` an object property;
- walked from `s`: relation `p`, forward; from `o`: `p`'s `owl:inverseOf` partner, or `p` itself when
  `owl:SymmetricProperty`, or `^p` at half weight when the ontology declares neither;
- weight = the walked property's expansion weight x the edge's own (`kg:weight` on an owl:Axiom);
- an entity's edges in the order of its asserted triples sorted by (source, relation, target).
Sub-properties and transitive chains are the expansion's business (it filters by `sub_properties` and
chains transitive steps), as with the in-memory view; `entailed` gives the store's OWL closure of one
relation (`kg.stores.owl_paths`: sub-properties, inverses, symmetry, `+` for transitive).
"""

from __future__ import annotations

from collections import ChainMap
from collections.abc import Iterable, Mapping
from urllib.parse import unquote

from rdflib import Graph, Literal, URIRef

from kg.graph_types import Edge, Entity, walkable_steps
from kg.stores.base import GraphStore
from kg.stores.owl_paths import related
from ontology import KG, Vocabulary, local_name

__all__ = ["StoreGraphView", "store_vocabulary"]

BATCH = 500  # entities a SELECT asks about at most (a hop wider than this takes more requests)
_PREFIXES = ("PREFIX rdf: <http://www.w3.org/1999/02/22-rdf-syntax-ns#> "
             "PREFIX rdfs: <http://www.w3.org/2000/01/rdf-schema#> PREFIX owl: <http://www.w3.org/2002/07/owl#> ")


def store_vocabulary(store: GraphStore, names: list[str] | None = None) -> Vocabulary:
    """The vocabulary of the ontology in the store: every triple about a property or a class, wherever
    it is held (the base ontology's graph, or the user's when an ontology file was imported). The properties and
    classes are matched first, then their triples: the other order had Oxigraph scan every triple (260 ms against 6
    at a 100k-row table's 291k triples)."""
    rows = store.select(_PREFIXES + "SELECT DISTINCT ?s ?p ?o WHERE { "
                        "{ ?s rdf:type ?t VALUES ?t { owl:ObjectProperty owl:TransitiveProperty owl:SymmetricProperty "
                        "owl:Class rdfs:Class } } UNION { ?s owl:inverseOf ?x } UNION { ?x owl:inverseOf ?s } ?s ?p ?o }",
                        names)
    schema = Graph()
    for s, p, o in rows:
        schema.add((s, p, o))
    return Vocabulary.from_graph(schema)


class StoreGraphView:
    """The neighbour questions of `GraphView`, answered by a SPARQL (or file) graph store."""

    def __init__(self, store: GraphStore, entities: Mapping[str, Entity], vocab: Vocabulary | None = None,
                 discover: bool = False) -> None:
        self.store = store
        # `discover`: an edge's other end that `entities` lacks (added in the store by another tool) is an entity too,
        # with its label and classes read from the store (`found`); else such edges are left out.
        self.found: dict[str, Entity] = {}
        self.entities = ChainMap(self.found, entities) if discover else entities
        self._discover = discover
        self._graphs = store.names()  # read once: a view answers for the graphs as they were when it was made
        self.vocab = vocab if vocab is not None else store_vocabulary(store, self._graphs)
        self._by_iri = {p.iri: p for p in self.vocab.properties.values()}
        self._neighbours: dict[str, list[Edge]] = {}
        self._frontier: set[str] = set()  # reached through a fetched edge, not fetched yet

    def prefetch(self, iris: Iterable[str]) -> None:
        """The entities a walk starts from (its seeds): asked for together with the next one asked."""
        self._frontier.update(i for i in iris if i in self.entities and i not in self._neighbours)

    def neighbours(self, iri: str) -> list[Edge]:
        cached = self._neighbours.get(iri)
        if cached is None:
            if iri not in self.entities or not self._by_iri:
                cached = self._neighbours[iri] = []
            else:
                self._fetch([iri, *sorted(self._frontier - {iri})[: BATCH - 1]])
                cached = self._neighbours[iri]
        return cached

    def entailed(self, iri: str, relation: str) -> set[str]:
        """The entities `iri relation ?x` entails under the store's ontology (the OWL closure)."""
        return {x for x in related(self.store, iri, self.vocab.properties[relation].iri) if x in self.entities}

    def _fetch(self, batch: list[str]) -> None:
        """The edges of every entity of `batch` in one SELECT; their targets become the frontier, which the
        next miss fetches whole. A best-first walk asks for an entity's neighbours only after reaching it from
        one already asked for, so the walk's k-th hop is one request: about max_hops + 1 a question."""
        # Every IRI-valued triple of the batch, its properties kept here: a `VALUES ?p { … }` of the object properties
        # beside `VALUES ?e` made Oxigraph join every pair (50 entities: 379 ms against 9 at a 100k-row table's graph).
        values = "VALUES ?e { " + " ".join(f"<{iri}>" for iri in batch) + " }"
        rows = self.store.select(
            _PREFIXES + f"SELECT DISTINCT ?e ?s ?p ?o ?w WHERE {{ {{ {values} ?e ?p ?o FILTER(isIRI(?o)) BIND(?e AS ?s) }} "
            f"UNION {{ {values} ?s ?p ?e BIND(?e AS ?o) }} "
            "OPTIONAL { ?axiom owl:annotatedSource ?s ; owl:annotatedTarget ?o ; owl:annotatedProperty ?p ; "
            f"rdf:type owl:Axiom ; <{KG.weight}> ?w }} }}", names=self._graphs)
        grouped: dict[str, list[tuple]] = {iri: [] for iri in batch}
        for e, *row in rows:
            if str(e) in grouped and str(row[1]) in self._by_iri:
                grouped[str(e)].append(tuple(row))
        if self._discover:
            self._find({str(x) for found in grouped.values() for s, _, o, _ in found for x in (s, o)
                        if isinstance(x, URIRef) and str(x) not in self.entities})
        for iri, found in grouped.items():
            edges = self._neighbours[iri] = self._edges(iri, found)
            self._frontier.update(edge.target for edge in edges if edge.target not in self._neighbours)
        self._frontier.difference_update(batch)

    def named(self, label: str) -> Entity | None:
        """An entity only the store holds, by its exact rdfs:label (None: none, or several): so `kg entity` shows it."""
        if not self._discover:
            return None
        rows = self.store.select(_PREFIXES + "SELECT DISTINCT ?x WHERE { ?x rdfs:label ?label "
                                 f"FILTER(STR(?label) = {Literal(label).n3()}) }}", names=self._graphs)
        iris = {str(x) for (x,) in rows if isinstance(x, URIRef)}
        if len(iris) != 1:
            return None
        iri = iris.pop()
        if iri not in self.entities:
            self._find({iri})
        return self.entities[iri]

    def _find(self, iris: set[str]) -> None:
        """Entities only the store holds: each with its rdfs:label (the IRI's last part where it has none) and classes."""
        if not iris:
            return
        classes = {info.iri: name for name, info in self.vocab.classes.items()}
        rows = self.store.select(
            _PREFIXES + "SELECT ?x ?label ?type WHERE { VALUES ?x { " + " ".join(f"<{i}>" for i in sorted(iris)) + " } "
            "OPTIONAL { ?x rdfs:label ?label } OPTIONAL { ?x rdf:type ?type } }", names=self._graphs)
        labels: dict[str, str] = {}
        types: dict[str, set[str]] = {iri: set() for iri in iris}
        for x, label, kind in rows:
            if label is not None:
                labels.setdefault(str(x), str(label))
            if kind is not None and str(kind) in classes:
                types[str(x)].add(classes[str(kind)])
        for iri in sorted(iris):
            name = labels.get(iri) or unquote(local_name(iri.rstrip("/#")))
            self.found[iri] = Entity(iri, name, (), tuple(sorted(types[iri])))

    def _edges(self, iri: str, rows: list[tuple]) -> list[Edge]:
        asserted: dict[tuple[str, str, str], float] = {}
        for s, p, o, w in rows:
            if not isinstance(s, URIRef) or not isinstance(o, URIRef) or s == o:
                continue
            source, target = str(s), str(o)
            if source not in self.entities or target not in self.entities:
                continue
            key = (source, self._by_iri[str(p)].name, target)
            try:
                asserted[key] = float(w) if w is not None else asserted.get(key, 1.0)
            except (TypeError, ValueError):
                asserted.setdefault(key, 1.0)
        edges = []
        for (source, relation, target), weight in sorted(asserted.items()):
            forward, backward = walkable_steps(self.vocab, source, relation, target, weight)
            edges.append(forward if source == iri else backward)
        return edges
