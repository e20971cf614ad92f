"""A GraphView's entities and edges -> columns (string lists, numeric arrays) and back, one entity or
one neighbour list at a time.

graph.cache used to hold the view as ~67k `Entity` and ~200k `Edge` objects for a 100k-row relation
table: unpickling them was most of a cold `kg query` (issue 25). In columns it unpickles several times
faster, and a process builds only the entities it looks up and the neighbour lists it walks; each is
built from the same values in the same order as the view it was packed from.
"""

from __future__ import annotations

from array import array
from collections import defaultdict
from collections.abc import Iterator, Mapping

from kg.graph_types import Edge, Entity

__all__ = ["PackedEntities", "PackedGraph"]


class PackedGraph:
    """The view's nodes (its entities first, in their order), their surfaces, the walkable edges of each
    node (compressed rows: `offsets[k]:offsets[k + 1]` are the edges of `walk_nodes[k]`, in the order
    they were added) and the asserted edges with their own weights."""

    def __init__(self) -> None:
        self.nodes: list[str] = []
        self.entity_count = 0
        self.labels: list[str] = []
        self.aliases: list[tuple[str, ...]] = []
        self.type_table: list[tuple[str, ...]] = []
        self.types = array("i")
        self.names: list[str] = []  # relation names (as walked and as asserted)
        self.walk_nodes = array("i")
        self.offsets = array("q", [0])
        self.targets = array("i")
        self.relations = array("i")
        self.asserted = array("i")
        self.forward = array("b")
        self.weights = array("d")
        self.edge_weights = array("d")
        self.edge_sources, self.edge_relations, self.edge_targets = array("i"), array("i"), array("i")
        self.edge_own_weights = array("d")
        self._index: dict[str, int] | None = None
        self._slots: dict[int, int] | None = None
        self._neighbours: dict[str, list[Edge]] = {}
        self._entities: PackedEntities | None = None

    @classmethod
    def pack(cls, entities: Mapping[str, Entity], adjacency: Mapping[str, list[Edge]],
             edges: Mapping[tuple[str, str, str], float]) -> PackedGraph:
        packed = cls()
        nodes = packed.nodes
        index: dict[str, int] = {}
        names: dict[str, int] = {}
        type_codes: dict[tuple[str, ...], int] = {}

        def node(iri: str) -> int:
            if iri not in index:
                index[iri] = len(nodes)
                nodes.append(iri)
            return index[iri]

        def name(relation: str) -> int:
            return names.setdefault(relation, len(names))

        for entity in entities.values():
            node(entity.iri)
            packed.labels.append(entity.label)
            packed.aliases.append(entity.aliases)
            packed.types.append(type_codes.setdefault(entity.types, len(type_codes)))
        packed.entity_count = len(nodes)
        for source, out in adjacency.items():
            packed.walk_nodes.append(node(source))
            for edge in out:  # every edge of a list starts at its key (GraphView.add_edge)
                packed.targets.append(node(edge.target))
                packed.relations.append(name(edge.relation))
                packed.asserted.append(name(edge.asserted))
                packed.forward.append(edge.forward)
                packed.weights.append(edge.weight)
                packed.edge_weights.append(edge.edge_weight)
            packed.offsets.append(len(packed.targets))
        for (source, relation, target), weight in edges.items():
            packed.edge_sources.append(node(source))
            packed.edge_relations.append(name(relation))
            packed.edge_targets.append(node(target))
            packed.edge_own_weights.append(weight)
        packed.names = list(names)
        packed.type_table = list(type_codes)
        return packed

    # Only the columns go to graph.cache; what is built from them is built again where it is needed.
    _COLUMNS = ("nodes", "entity_count", "labels", "aliases", "type_table", "types", "names", "walk_nodes",
                "offsets", "targets", "relations", "asserted", "forward", "weights", "edge_weights",
                "edge_sources", "edge_relations", "edge_targets", "edge_own_weights")

    def __getstate__(self) -> dict:
        return {name: getattr(self, name) for name in self._COLUMNS}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._index = self._slots = self._entities = None
        self._neighbours = {}

    # -- reads ---------------------------------------------------------------------------------------
    @property
    def index(self) -> dict[str, int]:
        if self._index is None:
            self._index = dict(zip(self.nodes, range(len(self.nodes)), strict=True))
        return self._index

    @property
    def entities(self) -> PackedEntities:
        if self._entities is None:
            self._entities = PackedEntities(self)
        return self._entities

    def entity(self, i: int) -> Entity:
        return Entity(self.nodes[i], self.labels[i], self.aliases[i], self.type_table[self.types[i]])

    def rows(self) -> Iterator[tuple[str, str, tuple[str, ...]]]:
        """(iri, label, aliases) of every entity, without building the entities."""
        return zip(self.nodes[: self.entity_count], self.labels, self.aliases, strict=True)

    def neighbours(self, iri: str) -> list[Edge]:
        built = self._neighbours.get(iri)
        if built is not None:
            return built
        if self._slots is None:
            self._slots = dict(zip(self.walk_nodes, range(len(self.walk_nodes)), strict=True))
        i = self.index.get(iri)
        slot = None if i is None else self._slots.get(i)
        if slot is None:
            return []
        built = self._neighbours[iri] = self._edges_of(iri, slot)
        return built

    def _edges_of(self, source: str, slot: int) -> list[Edge]:
        nodes, names = self.nodes, self.names
        return [
            Edge(source, names[self.relations[k]], nodes[self.targets[k]], self.weights[k],
                 names[self.asserted[k]], bool(self.forward[k]), self.edge_weights[k])
            for k in range(self.offsets[slot], self.offsets[slot + 1])
        ]

    def adjacency(self) -> defaultdict[str, list[Edge]]:
        """Every node's walkable edges, keyed in the order the view first gave each node an edge."""
        out: defaultdict[str, list[Edge]] = defaultdict(list)
        for slot, i in enumerate(self.walk_nodes):
            iri = self.nodes[i]
            out[iri] = self._neighbours.get(iri) or self._edges_of(iri, slot)
        return out

    def asserted_edges(self) -> dict[tuple[str, str, str], float]:
        nodes, names = self.nodes, self.names
        return {
            (nodes[s], names[r], nodes[t]): w
            for s, r, t, w in zip(self.edge_sources, self.edge_relations, self.edge_targets, self.edge_own_weights,
                                  strict=True)
        }

    def edge_count(self) -> int:
        return len(self.edge_sources)


class PackedEntities(Mapping):
    """IRI -> Entity over a PackedGraph, in the view's order; an entity is built when first looked up."""

    def __init__(self, packed: PackedGraph) -> None:
        self._packed = packed
        self._built: dict[str, Entity] = {}

    def __getitem__(self, iri: str) -> Entity:
        entity = self._built.get(iri)
        if entity is None:
            i = self._packed.index.get(iri)
            if i is None or i >= self._packed.entity_count:
                raise KeyError(iri)
            entity = self._built[iri] = self._packed.entity(i)
        return entity

    def __contains__(self, iri: object) -> bool:
        i = self._packed.index.get(iri)  # type: ignore[arg-type]
        return i is not None and i < self._packed.entity_count

    def __iter__(self) -> Iterator[str]:
        return iter(self._packed.nodes[: self._packed.entity_count])

    def __len__(self) -> int:
        return self._packed.entity_count
