"""rdflib knowledge graph + Vocabulary -> GraphView: entities with their surfaces, and a networkx graph of typed edges.

The view is what linking and expansion read. It applies the ontology's semantics once, when it is
built: every asserted edge can be walked forwards under its own name and backwards under its
`owl:inverseOf` partner (or its own name when `owl:SymmetricProperty`, or `^name` at half weight
when the ontology declares neither).
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass

from rdflib import OWL, RDF, RDFS, SKOS, BNode, Graph, Literal, URIRef

from ontology import KG, Vocabulary, local_name

__all__ = ["Edge", "Entity", "GraphView", "entity_subjects", "pick_label"]

REVERSE_WITHOUT_INVERSE = 0.5
_QUALIFIER = re.compile(r"\s*[(（][^()（）]*[)）]\s*$")  # walking an edge backwards that the ontology gives no inverse for


@dataclass(frozen=True)
class Entity:
    iri: str
    label: str
    aliases: tuple[str, ...]
    types: tuple[str, ...]  # class names

    def to_json(self) -> dict:
        return {"id": self.iri, "label": self.label, "aliases": list(self.aliases), "types": list(self.types)}


@dataclass(frozen=True)
class Edge:
    """One walkable step: from `source` along `relation` (as walked) to `target`."""

    source: str
    relation: str
    target: str
    weight: float  # property expansion weight x the edge's own weight
    asserted: str  # the property actually asserted in the graph
    forward: bool  # False when walked from the object end
    edge_weight: float = 1.0


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


class GraphView:
    def __init__(self, vocab: Vocabulary) -> None:
        self.vocab = vocab
        self.entities: dict[str, Entity] = {}
        self._edges: dict[tuple[str, str, str], float] = {}  # (source, relation, target) -> its own weight
        self._graph = None  # the networkx view of _edges, built when first asked for
        self.adjacency: dict[str, list[Edge]] = defaultdict(list)
        self.by_label: dict[str, str] = {}

    @classmethod
    def from_rdf(cls, g: Graph, vocab: Vocabulary) -> GraphView:
        view = cls(vocab)
        subjects = entity_subjects(g, vocab)
        class_names = {URIRef(c.iri): c.name for c in vocab.classes.values()}
        for s in sorted(subjects):  # a set: sorted, so the view (and ties among its entities) is the same in every process
            labels = [o for o in g.objects(s, RDFS.label) if isinstance(o, Literal)]
            labels += [o for o in g.objects(s, SKOS.prefLabel) if isinstance(o, Literal)]
            label = pick_label(labels, local_name(s))
            aliases = {str(x) for x in labels} | {
                str(o) for o in g.objects(s, SKOS.altLabel) if isinstance(o, Literal)
            }
            aliases.discard(label)
            types = sorted({class_names[t] for t in g.objects(s, RDF.type) if t in class_names})
            entity = Entity(str(s), label, tuple(sorted(aliases)), tuple(types))
            view.entities[entity.iri] = entity
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
        for s, p, o in g.triples((None, None, None)):
            info = props.get(p)
            if info is None or isinstance(s, BNode) or s not in entity_refs or o not in entity_refs or s == o:
                continue
            edges.append((str(s), info.name, str(o), edge_weights.get((str(s), str(p), str(o)), 1.0)))
        # rdflib's order of triples changes from process to process (hashing): sorted, the walks and their
        # ties come out the same whichever process parsed graph.ttl
        for source, relation, target, w in sorted(edges):
            view.add_edge(source, relation, target, w)
        return view

    def add_edge(self, source: str, relation: str, target: str, weight: float = 1.0) -> None:
        info = self.vocab.properties[relation]
        self._edges[(source, relation, target)] = weight
        if self._graph is not None:
            self._graph.add_edge(source, target, key=relation, weight=weight)
        self.adjacency[source].append(Edge(source, relation, target, info.weight * weight, relation, True, weight))
        if info.symmetric:
            back, back_weight = relation, info.weight
        elif info.inverse and info.inverse in self.vocab.properties:
            back, back_weight = info.inverse, self.vocab.properties[info.inverse].weight
        else:
            back, back_weight = "^" + relation, info.weight * REVERSE_WITHOUT_INVERSE
        self.adjacency[target].append(Edge(target, back, source, back_weight * weight, relation, False, weight))

    def __getstate__(self) -> dict:
        return {**self.__dict__, "_graph": None}  # graph.cache holds the edges, not a networkx copy of them

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
        for entity in self.entities.values():
            yield entity.label, entity.iri
            for alias in entity.aliases:
                yield alias, entity.iri

    def link_surfaces(self):
        """`surfaces()` plus each label's short form without a trailing qualifier in brackets.

        "Henry King (director)" is written "Henry King" in running text; the short form links it
        (ambiguously, if another entity shares it). Exact labels and aliases come first.
        """
        yield from self.surfaces()
        for entity in self.entities.values():
            short = _QUALIFIER.sub("", entity.label).strip()
            if short != entity.label and len(short) >= 2 and short not in entity.aliases:
                yield short, entity.iri

    def labels(self) -> dict[str, str]:
        return {iri: e.label for iri, e in self.entities.items()}

    def neighbours(self, iri: str) -> list[Edge]:
        return self.adjacency.get(iri, [])

    def resolve(self, key: str) -> Entity | None:
        """An entity by IRI, by exact label, or by local name of its IRI."""
        if key in self.entities:
            return self.entities[key]
        if key in self.by_label:
            return self.entities[self.by_label[key]]
        folded = key.casefold()
        for entity in self.entities.values():
            if entity.label.casefold() == folded or local_name(entity.iri) == key:
                return entity
        return None

    def stats(self) -> dict[str, int]:
        return {"entities": len(self.entities), "edges": len(self._edges)}
