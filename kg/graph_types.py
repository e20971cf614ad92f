"""The values a GraphView hands out: an entity with its surfaces, and one walkable step along a typed edge."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Edge", "Entity"]


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
