"""The values a GraphView hands out: an entity with its surfaces, and one walkable step along a typed edge."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["REVERSE_WITHOUT_INVERSE", "Edge", "Entity", "walkable_steps"]

REVERSE_WITHOUT_INVERSE = 0.5  # a relation walked backwards that the ontology gives no inverse or symmetry


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

    def triple(self) -> tuple[str, str, str]:
        """The edge as the graph asserts it, whichever end it was walked from: (subject IRI, property name, object IRI)."""
        return (self.source, self.asserted, self.target) if self.forward else (self.target, self.asserted, self.source)


def walkable_steps(vocab, source: str, relation: str, target: str, weight: float = 1.0) -> tuple[Edge, Edge]:
    """The two steps an asserted edge `source relation target` gives (`vocab`: ontology.Vocabulary): forward, and
    backward from the target under the relation's inverse, itself when symmetric, else `^relation` at
    REVERSE_WITHOUT_INVERSE of its weight. Every graph view (in memory, in a SPARQL store) walks these."""
    info = vocab.properties[relation]
    if info.symmetric:
        back, back_weight = relation, info.weight
    elif info.inverse and info.inverse in vocab.properties:
        back, back_weight = info.inverse, vocab.properties[info.inverse].weight
    else:
        back, back_weight = "^" + relation, info.weight * REVERSE_WITHOUT_INVERSE
    return (Edge(source, relation, target, info.weight * weight, relation, True, weight),
            Edge(target, back, source, back_weight * weight, relation, False, weight))
