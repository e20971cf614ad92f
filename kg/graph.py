"""rdflib knowledge graph + Vocabulary -> GraphView: entities with their surfaces, and a networkx graph of typed edges.

The view is what linking and expansion read. It applies the ontology's semantics once, when it is
built: every asserted edge can be walked forwards under its own name and backwards under its
`owl:inverseOf` partner (or its own name when `owl:SymmetricProperty`, or `^name` at half weight
when the ontology declares neither).
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Mapping

from rdflib import OWL, RDF, RDFS, SKOS, BNode, Graph, Literal, URIRef

from kg.graph_packed import PackedGraph
from kg.graph_types import Edge, Entity, walkable_steps
from ontology import KG, Vocabulary, local_name

__all__ = ["Edge", "Entity", "GraphView", "entity_subjects", "pick_label"]

_QUALIFIER = re.compile(r"\s*[(（][^()（）]*[)）]\s*$")  # walking an edge backwards that the ontology gives no inverse for


def entity_subjects(g: Graph, vocab: Vocabulary) -> set:
    class_iris = {URIRef(c.iri) for c in vocab.classes.values()}
    subjects = set(g.subjects(RDF.type, OWL.NamedIndividual))
    for cls in class_iris:
        subjects.update(g.subjects(RDF.type, cls))
    schema = set(g.subjects(RDF.type, OWL.Class)) | set(g.subjects(RDF.type, OWL.ObjectProperty))
    schema |= set(g.subjects(RDF.type, RDFS.Class)) | set(g.subjects(RDF.type, OWL.Ontology))
    return {s for s in subjects if isinstance(s, URIRef) and s not in schema}


def pick_label(literals: list[Literal], fallback: str) -> str:
    if not literals:
        return fallback
    # Prefer an untagged label, then Chinese, then English, then anything; stable order.
    rank = {None: 0, "zh": 1, "en": 2}
    return str(sorted(literals, key=lambda lit: (rank.get(lit.language, 3), str(lit)))[0])


def _objects_by_subject(g: Graph, *predicates: URIRef) -> dict:
    found: dict = defaultdict(list)
    for predicate in predicates:
        for s, o in g.subject_objects(predicate):
            found[s].append(o)
    return found


class GraphView:
    """Read as plain dicts when built from the triples; read from a PackedGraph (graph.cache's columns)
    when unpickled, building an entity or a neighbour list on first use. Both read the same."""

    def __init__(self, vocab: Vocabulary) -> None:
        self.vocab = vocab
        self._packed: PackedGraph | None = None  # set when unpickled, until the view is changed
        self._entities: dict[str, Entity] = {}
        self._edge_weights: dict[tuple[str, str, str], float] | None = {}  # (source, relation, target) -> its own weight
        self._graph = None  # the networkx view of _edges, built when first asked for
        self._adjacency: dict[str, list[Edge]] | None = defaultdict(list)
        self._by_label: dict[str, str] | None = {}

    @classmethod
    def from_rdf(cls, g: Graph, vocab: Vocabulary) -> GraphView:
        view = cls(vocab)
        subjects = entity_subjects(g, vocab)
        class_names = {URIRef(c.iri): c.name for c in vocab.classes.values()}
        # One scan per predicate, not four look-ups per entity (63k entities: most of building the view)
        labels_of, alt_of, types_of = _objects_by_subject(g, RDFS.label, SKOS.prefLabel), _objects_by_subject(
            g, SKOS.altLabel), _objects_by_subject(g, RDF.type)
        # a set: sorted, so the view (and ties among its entities) is the same in every process; all URIRefs,
        # so by their text (what URIRef.__lt__ compares, without a Python call per comparison)
        for s in sorted(subjects, key=str):
            labels = [o for o in labels_of.get(s, ()) if isinstance(o, Literal)]
            label = pick_label(labels, local_name(s))
            aliases = {str(x) for x in labels} | {str(o) for o in alt_of.get(s, ()) if isinstance(o, Literal)}
            aliases.discard(label)
            types = sorted({class_names[t] for t in types_of.get(s, ()) if t in class_names})
            entity = Entity(str(s), label, tuple(sorted(aliases)), tuple(types))
            view._entities[entity.iri] = entity
            view.by_label.setdefault(label, entity.iri)

        edge_weights: dict[tuple[str, str, str], float] = {}
        weight_p = KG.weight
        for axiom in g.subjects(RDF.type, OWL.Axiom):
            w = g.value(axiom, weight_p)
            if w is None:
                continue
            key = (str(g.value(axiom, OWL.annotatedSource)), str(g.value(axiom, OWL.annotatedProperty)),
                   str(g.value(axiom, OWL.annotatedTarget)))
            try:
                edge_weights[key] = float(w)
            except (TypeError, ValueError):
                continue

        props = {URIRef(p.iri): p for p in vocab.properties.values()}
        entity_refs = {URIRef(i) for i in view.entities}
        edges = []
        for p, info in props.items():  # the relations' triples only, not every triple of the graph
            for s, o in g.subject_objects(p):
                if isinstance(s, BNode) or s not in entity_refs or o not in entity_refs or s == o:
                    continue
                edges.append((str(s), info.name, str(o), edge_weights.get((str(s), str(p), str(o)), 1.0)))
        # rdflib's order of triples changes from process to process (hashing): sorted, the walks and their
        # ties come out the same whichever process parsed graph.ttl
        for source, relation, target, w in sorted(edges):
            view.add_edge(source, relation, target, w)
        return view

    def add_edge(self, source: str, relation: str, target: str, weight: float = 1.0) -> None:
        self._unpack()
        forward, backward = walkable_steps(self.vocab, source, relation, target, weight)
        self._edges[(source, relation, target)] = weight
        if self._graph is not None:
            self._graph.add_edge(source, target, key=relation, weight=weight)
        self.adjacency[source].append(forward)
        self.adjacency[target].append(backward)

    # -- graph.cache: the view as columns (kg.graph_packed) ------------------------------------------
    def __getstate__(self) -> dict:
        packed = self._packed or PackedGraph.pack(self.entities, self.adjacency, self._edges)
        return {"vocab": self.vocab, "packed": packed}  # no networkx copy, no per-object entities or edges

    def __setstate__(self, state: dict) -> None:
        self.vocab, self._packed = state["vocab"], state["packed"]
        self._entities = self._packed.entities
        self._graph = self._adjacency = self._edge_weights = self._by_label = None

    def _unpack(self) -> None:
        """Plain dicts again, before a change (the packed columns describe the view as it was loaded)."""
        if self._packed is not None:
            self._entities, self._adjacency = dict(self._entities.items()), self.adjacency
            self._edge_weights, self._by_label = self._edges, self.by_label
            self._packed = None

    @property
    def entities(self) -> Mapping[str, Entity]:
        return self._entities

    @property
    def adjacency(self) -> dict[str, list[Edge]]:
        """Every node's walkable edges (all of them built: the query path asks `neighbours` instead)."""
        if self._adjacency is None:
            self._adjacency = self._packed.adjacency()
        return self._adjacency

    @property
    def _edges(self) -> dict[tuple[str, str, str], float]:
        """The asserted edges: (source, relation, target) -> the edge's own weight."""
        if self._edge_weights is None:
            self._edge_weights = self._packed.asserted_edges()
        return self._edge_weights

    @property
    def by_label(self) -> dict[str, str]:
        """Label -> the first entity (in the view's order) that has it."""
        if self._by_label is None:
            by_label: dict[str, str] = {}
            for iri, label, _ in self._rows():
                by_label.setdefault(label, iri)
            self._by_label = by_label
        return self._by_label

    def _rows(self):
        """(iri, label, aliases) of every entity in order, without building entities that are packed."""
        if self._packed is not None:
            return self._packed.rows()
        return ((e.iri, e.label, e.aliases) for e in self._entities.values())

    # -- reads -------------------------------------------------------------------------------
    @property
    def graph(self):
        """The entities and typed edges as a networkx MultiDiGraph (one edge per relation between two
        entities). Built on first use: the query path walks `adjacency` and never needs it, so a
        `kg query` process does not import networkx (~0.15 s of its start-up)."""
        if self._graph is None:
            import networkx as nx

            graph = nx.MultiDiGraph()
            graph.add_nodes_from(self.entities)
            for (source, relation, target), weight in self._edges.items():
                graph.add_edge(source, target, key=relation, weight=weight)
            self._graph = graph
        return self._graph

    def surfaces(self):
        for iri, label, aliases in self._rows():
            yield label, iri
            for alias in aliases:
                yield alias, iri

    def link_surfaces(self):
        """`surfaces()` plus each label's short form without a trailing qualifier in brackets.

        "Henry King (director)" is written "Henry King" in running text; the short form links it
        (ambiguously, if another entity shares it). Exact labels and aliases come first.
        """
        yield from self.surfaces()
        for iri, label, aliases in self._rows():
            short = _QUALIFIER.sub("", label).strip()
            if short != label and len(short) >= 2 and short not in aliases:
                yield short, iri

    def labels(self) -> dict[str, str]:
        return {iri: label for iri, label, _ in self._rows()}

    def prefetch(self, iris) -> None:
        """The entities a walk starts from: nothing to do in memory (a store's view fetches them together)."""

    def neighbours(self, iri: str) -> list[Edge]:
        if self._adjacency is None:
            return self._packed.neighbours(iri)  # built for this node alone, once
        return self._adjacency.get(iri, [])

    def resolve(self, key: str) -> Entity | None:
        """An entity by IRI, by exact label, or by local name of its IRI."""
        if key in self.entities:
            return self.entities[key]
        if key in self.by_label:
            return self.entities[self.by_label[key]]
        folded = key.casefold()
        for iri, label, _ in self._rows():
            if label.casefold() == folded or local_name(iri) == key:
                return self.entities[iri]
        return None

    def stats(self) -> dict[str, int]:
        edges = self._packed.edge_count() if self._edge_weights is None else len(self._edge_weights)
        return {"entities": len(self.entities), "edges": edges}
