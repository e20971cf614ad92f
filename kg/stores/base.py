"""The graph store contract: named graphs of triples in (the base ontology, the user's graph, one per pack), SPARQL SELECT over their union out.

Names: `ontology` (kgrag's base ontology), `default` (the user's entities and relations, what
graph.ttl holds beside the ontology) and `pack:ID` (a knowledge pack's own graph).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from decimal import Decimal, InvalidOperation
from typing import Protocol, runtime_checkable

from rdflib import Graph, Literal
from rdflib.namespace import XSD
from rdflib.term import Node

from kg.errors import InputError

__all__ = ["DEFAULT", "ONTOLOGY", "GraphStore", "Triple", "canonical", "check_name", "pack_graph"]

Triple = tuple[Node, Node, Node]
DEFAULT = "default"
ONTOLOGY = "ontology"
_NAME = re.compile(r"^(ontology|default|pack:[A-Za-z0-9][A-Za-z0-9_.\-]{0,99})$")


def pack_graph(pack_id: str) -> str:
    return check_name(f"pack:{pack_id}")


def check_name(name: str) -> str:
    if not _NAME.match(name):
        raise InputError(f"'{name}' is not a graph name: use 'ontology', 'default' or 'pack:ID' "
                         "(ID of letters, digits, '_', '.', '-')")
    return name


@runtime_checkable
class GraphStore(Protocol):
    def names(self) -> list[str]:
        """The named graphs that hold triples, sorted."""

    def read(self, name: str | None = None) -> Graph:
        """One named graph's triples, or (None) the union of all of them."""

    def replace(self, graph: Graph, name: str = DEFAULT) -> None:
        """The named graph becomes exactly `graph` (one request / one atomic file write)."""

    def replace_graphs(self, graphs: Mapping[str, Graph], drop: Iterable[str] = ()) -> None:
        """Each named graph of `graphs` becomes exactly its graph and those of `drop` go: one request (a SPARQL
        store applies it whole or not at all), or one atomic file write per graph."""

    def add(self, triples: Iterable[Triple], name: str = DEFAULT) -> int:
        """Add triples to one named graph; returns how many were sent."""

    def remove(self, triples: Iterable[Triple], name: str = DEFAULT) -> int:
        """Remove triples from one named graph; returns how many were sent."""

    def drop(self, name: str) -> None:
        """Remove a named graph and everything in it (a pack that is gone)."""

    def select(self, query: str, names: list[str] | None = None) -> list[tuple]:
        """Rows of a SPARQL 1.1 SELECT over the union of the named graphs `names` (default: all of them,
        which costs a SPARQL store one more request); write the query without FROM."""

    def close(self) -> None: ...


_NUMERIC = frozenset(XSD[name] for name in ("decimal", "double", "float"))


def canonical(graph: Graph) -> Graph:
    """The graph with numeric literals in their canonical form: SPARQL stores keep a literal's value, not
    always its spelling (Oxigraph stores "1.0"^^xsd:decimal as "1"), so round trips compare values."""
    out = Graph()
    out.addN((*canonical_triple(t), out) for t in graph)
    return out


def canonical_triple(triple: tuple) -> tuple:
    """One triple as `canonical` writes it."""
    s, p, o = triple
    if isinstance(o, Literal) and o.datatype in _NUMERIC:
        try:
            return s, p, Literal(format(Decimal(str(o)).normalize(), "f"), datatype=o.datatype)
        except InvalidOperation:
            pass
    return triple
