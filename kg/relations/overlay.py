"""The graph as an import would leave it: an rdflib Graph in, an overlay of added and removed triples (written in one go by `commit`), the edges' weight/note axioms and the graph's label and axiom indexes out.

`Overlay.has` reads through the overlay, so rows later in a table see what earlier rows will
write, and a dry run or a refused import never touches the graph.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from decimal import Decimal

import rdflib
from rdflib import XSD, BNode, Literal, URIRef

from kg.relations.model import (
    _ALT_LABEL,
    _AXIOM,
    _COMMENT,
    _INDIVIDUAL,
    _LABEL,
    _PROPERTY,
    _SOURCE,
    _TARGET,
    _TYPE,
    _WEIGHT,
    Triple,
)
from ontology import ENT, entity_iri


class Overlay:
    """Triples to add and remove on top of `graph`, and every subject's rdf:types as they will be."""

    def __init__(self, graph: rdflib.Graph) -> None:
        self.graph = graph
        self.added: dict[Triple, None] = {}  # dicts, not sets: a deterministic write order
        self.removed: dict[Triple, None] = {}
        # Minted IRIs the graph knows nothing about: no need to ask the graph about them.
        self.fresh: set[URIRef | BNode] = set()
        self._types: dict[URIRef | BNode, set] = {}
        for subject, cls in graph.subject_objects(_TYPE):
            self._types.setdefault(subject, set()).add(cls)

    def types_of(self, iri: URIRef) -> set:
        return self._types.setdefault(iri, set())

    def has(self, triple: Triple) -> bool:
        if triple in self.added:
            return True
        if triple[0] in self.fresh or triple in self.removed:
            return False
        return triple in self.graph

    def add(self, triple: Triple) -> None:
        if triple[1] == _TYPE:
            self.types_of(triple[0]).add(triple[2])  # type: ignore[arg-type]
        if triple in self.removed:
            del self.removed[triple]
        elif not self.has(triple):
            self.added[triple] = None

    def remove(self, triple: Triple) -> None:
        if triple[1] == _TYPE:
            self.types_of(triple[0]).discard(triple[2])  # type: ignore[arg-type]
        if triple in self.added:
            del self.added[triple]
        elif triple in self.graph and triple not in self.removed:
            self.removed[triple] = None

    def commit(self) -> None:
        graph = self.graph
        try:
            for triple in self.removed:
                graph.remove(triple)
            graph.addN((s, p, o, graph) for s, p, o in self.added)
        except BaseException:
            # Put the graph back as it was: an import is all or nothing, even when interrupted.
            for triple in self.added:
                graph.remove(triple)
            for triple in self.removed:
                graph.add(triple)
            raise


class EdgeAnnotations:
    """Each edge's owl:Axiom with its kg:weight and rdfs:comment, planned into an overlay; the
    graph's axioms are read once, the first time a row brings a weight or a note."""

    def __init__(self, overlay: Overlay) -> None:
        self._overlay = overlay
        self._values: dict[tuple, list] = {}  # (axiom, predicate) -> objects, once axioms are read
        self._axioms: dict[Triple, BNode | URIRef] | None = None

    def annotate(self, edge: Triple, weight: float | None, note: str | None) -> bool:
        """Set the edge's kg:weight / rdfs:comment on its owl:Axiom; True if anything changed."""
        if weight is None and note is None:
            return False
        if self._axioms is None:
            self._axioms, values = axiom_index(self._overlay.graph)
            self._values.update(values)
        axiom = self._axioms.get(edge)
        changed = False
        if axiom is None:
            key = " ".join(str(term) for term in edge).encode()
            axiom = BNode(f"ax{hashlib.sha1(key).hexdigest()[:24]}")
            self._axioms[edge] = axiom
            self._overlay.fresh.add(axiom)
            for predicate, value in (
                (_TYPE, _AXIOM),
                (_SOURCE, edge[0]),
                (_PROPERTY, edge[1]),
                (_TARGET, edge[2]),
            ):
                self._overlay.add((axiom, predicate, value))
            changed = True
        if weight is not None:
            literal = Literal(format(Decimal(repr(weight)), "f"), datatype=XSD.decimal)
            changed |= self._set_value(axiom, _WEIGHT, literal, same_number)
        if note is not None:
            changed |= self._set_value(axiom, _COMMENT, Literal(note), same_text)
        return changed

    def drop(self, edge: Triple) -> None:
        """The edge's owl:Axioms (its weight and note; a graph an older kgrag merged twice may hold two) go with it."""
        if self._axioms is not None:
            self._axioms.pop(edge, None)
        graph = self._overlay.graph
        s, p, o = edge
        for axiom in list(graph.subjects(_SOURCE, s)):
            if (axiom, _PROPERTY, p) in graph and (axiom, _TARGET, o) in graph:
                for triple in list(graph.triples((axiom, None, None))):
                    self._overlay.remove(triple)

    def _set_value(self, subject, predicate, value, same: Callable[[object, object], bool]) -> bool:
        key = (subject, predicate)
        current = self._values.setdefault(key, [])
        if len(current) == 1 and same(current[0], value):
            return False
        for old in current:
            self._overlay.remove((subject, predicate, old))
        self._overlay.add((subject, predicate, value))
        self._values[key] = [value]
        return True


def label_index(
    graph: rdflib.Graph,
) -> tuple[dict[str, URIRef], dict[str, URIRef], dict[URIRef, set[str]]]:
    """rdfs:label -> entity, skos:altLabel -> entity, entity -> its rdfs:labels; once per import.

    Only entities count (owl:NamedIndividuals and kgrag's own entity IRIs), so a row naming
    "service" does not land on the class of that name. If several entities share a name, the
    one with the IRI kgrag would mint wins, then the smallest IRI: the same choice every run.
    """
    individuals = set(graph.subjects(_TYPE, _INDIVIDUAL))
    own_prefix = str(ENT)
    labels_of: dict[URIRef, set[str]] = {}
    indexes = []
    for predicate in (_LABEL, _ALT_LABEL):
        found: dict[str, URIRef] = {}
        for subject, label in graph.subject_objects(predicate):
            if not isinstance(subject, URIRef) or not isinstance(label, Literal):
                continue
            if subject not in individuals and not subject.startswith(own_prefix):
                continue
            key = str(label).strip()
            if not key:
                continue
            if key not in found or _preferred(subject, found[key], key):
                found[key] = subject
            if predicate == _LABEL:
                labels_of.setdefault(subject, set()).add(key)
        indexes.append(found)
    return indexes[0], indexes[1], labels_of


def _preferred(new: URIRef, old: URIRef, label: str) -> bool:
    minted = entity_iri(label)
    if old == minted or new == minted:
        return new == minted
    return str(new) < str(old)


def axiom_index(graph: rdflib.Graph) -> tuple[dict[Triple, BNode | URIRef], dict[tuple, list]]:
    """(source, property, target) -> its owl:Axiom, and the axioms' kg:weight / rdfs:comment values."""
    axioms = set(graph.subjects(_TYPE, _AXIOM))
    parts = [
        {a: o for a, o in graph.subject_objects(predicate) if a in axioms}
        for predicate in (_SOURCE, _PROPERTY, _TARGET)
    ]
    index: dict[Triple, BNode | URIRef] = {}
    for axiom in sorted(axioms):  # sorted: the same axiom wins every run if an edge has two
        edge = tuple(part.get(axiom) for part in parts)
        if None not in edge:
            index.setdefault(edge, axiom)  # type: ignore[arg-type]
    values: dict[tuple, list] = {}
    for predicate in (_WEIGHT, _COMMENT):
        for axiom, value in graph.subject_objects(predicate):
            if axiom in axioms:
                values.setdefault((axiom, predicate), []).append(value)
    return index, values


def same_number(a: object, b: object) -> bool:
    try:
        return float(a) == float(b)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return False


def same_text(a: object, b: object) -> bool:
    return (
        isinstance(a, Literal)
        and isinstance(b, Literal)
        and str(a) == str(b)
        and a.language == b.language
    )
