"""The vocabulary: an rdflib Graph in, precomputed relations and classes (with their OWL semantics) and name look-ups out."""

from __future__ import annotations

import difflib
import re
import unicodedata
from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from urllib.parse import quote

import rdflib
from rdflib import OWL, RDF, RDFS, SKOS, BNode, Literal, Namespace, URIRef

KG = Namespace("https://kgrag.dev/ontology#")
ENT = Namespace("https://kgrag.dev/entity/")
BASE_ONTOLOGY_PATH: Path = Path(__file__).with_name("kgrag.ttl")


# ---------------------------------------------------------------- IRIs


def entity_iri(label: str) -> URIRef:
    """The IRI kgrag mints for an entity label: readable, percent-encoded, the same every run."""
    words = label.split()
    if not words:
        raise ValueError("an entity label cannot be empty")
    return ENT[quote("_".join(words), safe="-._~")]


def local_name(iri: str) -> str:
    """The part of an IRI after its last '#' or '/' (after the last ':' for URNs)."""
    text = str(iri)
    cut = max(text.rfind("#"), text.rfind("/"))
    if cut < 0:
        cut = text.rfind(":")
    return text[cut + 1 :]


# ---------------------------------------------------------------- the vocabulary


@dataclass(frozen=True)
class PropertyInfo:
    iri: str
    name: str
    labels: tuple[str, ...]
    inverse: str | None
    transitive: bool
    symmetric: bool
    super_properties: frozenset[str]
    weight: float
    domain: str | None
    range: str | None


@dataclass(frozen=True)
class ClassInfo:
    iri: str
    name: str
    labels: tuple[str, ...]
    super_classes: frozenset[str]


# Terms of these vocabularies are never user relations or classes (owl:Thing, rdfs:Resource ...).
_BUILT_IN = tuple(str(ns) for ns in (RDF, RDFS, OWL, rdflib.XSD))
_PROPERTY_TYPES = (OWL.ObjectProperty, OWL.TransitiveProperty, OWL.SymmetricProperty)
_CLASS_TYPES = (OWL.Class, RDFS.Class)


class Vocabulary:
    """The relations and classes of a loaded ontology, keyed by local name."""

    def __init__(
        self,
        properties: Mapping[str, PropertyInfo],
        classes: Mapping[str, ClassInfo],
        warnings: Iterable[str] = (),
        preferred_labels: Mapping[str, Iterable[str]] | None = None,
    ) -> None:
        """`preferred_labels`: IRI -> its rdfs:labels, which outrank its skos:altLabels when
        resolving text (default: every label counts as an rdfs:label)."""
        self.properties: dict[str, PropertyInfo] = dict(properties)
        self.classes: dict[str, ClassInfo] = dict(classes)
        # Things a user may want to fix in the ontology (name clashes, bad weights); not fatal.
        self.warnings: list[str] = list(warnings)
        self._property_index = _NameIndex(self.properties, preferred_labels)
        self._class_index = _NameIndex(self.classes, preferred_labels)
        subs: dict[str, set[str]] = {name: {name} for name in self.properties}
        for name, info in self.properties.items():
            for parent in info.super_properties:
                subs.setdefault(parent, {parent}).add(name)
        self._sub_properties = {name: frozenset(names) for name, names in subs.items()}

    @classmethod
    def from_graph(cls, g: rdflib.Graph) -> Vocabulary:
        """Read object properties and classes of any namespace; one indexed lookup per fact."""
        warnings: list[str] = []
        prop_iris = _typed_iris(g, _PROPERTY_TYPES)
        inverse_pairs = [
            (p, q)
            for p, q in g.subject_objects(OWL.inverseOf)
            if _is_user_term(p) and _is_user_term(q)
        ]
        prop_iris.update(iri for pair in inverse_pairs for iri in pair)
        prop_names = _names_for(prop_iris, warnings, "relation")
        class_iris = _typed_iris(g, _CLASS_TYPES)
        class_names = _names_for(class_iris, warnings, "class")

        inverse: dict[URIRef, URIRef] = {}
        for p, q in inverse_pairs:
            inverse.setdefault(p, q)
            inverse.setdefault(q, p)
        parents = _parent_map(g, RDFS.subPropertyOf, prop_names)
        own_weight = {p: _weight(g, p, prop_names[p], warnings) for p in prop_names}

        properties: dict[str, PropertyInfo] = {}
        for iri, name in prop_names.items():
            types = set(g.objects(iri, RDF.type))
            properties[name] = PropertyInfo(
                iri=str(iri),
                name=name,
                labels=_labels(g, iri),
                inverse=prop_names.get(inverse[iri]) if iri in inverse else None,
                transitive=OWL.TransitiveProperty in types,
                symmetric=OWL.SymmetricProperty in types,
                super_properties=frozenset(prop_names[p] for p in _closure(iri, parents)),
                weight=_inherited_weight(iri, own_weight, parents),
                domain=_class_name(g.value(iri, RDFS.domain), class_names),
                range=_class_name(g.value(iri, RDFS.range), class_names),
            )
        class_parents = _parent_map(g, RDFS.subClassOf, class_names)
        classes = {
            name: ClassInfo(
                iri=str(iri),
                name=name,
                labels=_labels(g, iri),
                super_classes=frozenset(class_names[c] for c in _closure(iri, class_parents)),
            )
            for iri, name in class_names.items()
        }
        preferred = {
            info.iri: [str(o) for o in g.objects(URIRef(info.iri), RDFS.label)]
            for infos in (properties, classes)
            for info in infos.values()
        }
        return cls(properties, classes, warnings, preferred)

    def resolve_property(self, text: str) -> PropertyInfo | None:
        """Local name, full IRI or any label; case, '_', '-' and spaces do not matter.

        A name beats an rdfs:label, which beats a skos:altLabel; text that names several
        relations at the same rank is ambiguous and resolves to None (see property_candidates).
        """
        name = self._property_index.resolve(text)
        return self.properties[name] if name else None

    def property_candidates(self, text: str) -> list[str]:
        """Every relation `text` names at its best rank: one name, several if it is ambiguous."""
        return self._property_index.candidates(text)

    def suggest_properties(self, text: str, n: int = 3) -> list[str]:
        return self._property_index.suggest(text, n)

    def resolve_class(self, text: str) -> ClassInfo | None:
        name = self._class_index.resolve(text)
        return self.classes[name] if name else None

    def class_candidates(self, text: str) -> list[str]:
        return self._class_index.candidates(text)

    def suggest_classes(self, text: str, n: int = 3) -> list[str]:
        return self._class_index.suggest(text, n)

    def sub_properties(self, name: str) -> frozenset[str]:
        """`name` and every property below it (what a query on `name` should also follow)."""
        return self._sub_properties.get(name, frozenset({name}))

    def is_subclass(self, cls: str, of: str) -> bool:
        if cls == of:
            return True
        info = self.classes.get(cls)
        return info is not None and of in info.super_classes

    def __repr__(self) -> str:
        return f"Vocabulary({len(self.properties)} properties, {len(self.classes)} classes)"


def _is_user_term(term: object) -> bool:
    return isinstance(term, URIRef) and not str(term).startswith(_BUILT_IN)


def _typed_iris(g: rdflib.Graph, types: Iterable[URIRef]) -> set[URIRef]:
    return {s for t in types for s in g.subjects(RDF.type, t) if _is_user_term(s)}


def _names_for(iris: set[URIRef], warnings: list[str], kind: str) -> dict[URIRef, str]:
    """IRI -> local name; on a clash kgrag's own term wins, then the smallest IRI."""
    chosen: dict[str, URIRef] = {}
    for iri in sorted(iris, key=lambda i: (not str(i).startswith(str(KG)), str(i))):
        name = local_name(iri)
        if not name:
            continue
        if name in chosen:
            warnings.append(
                f"{kind} <{iri}> has the same name '{name}' as <{chosen[name]}>; kgrag uses the "
                "latter. Rename one of them in the ontology."
            )
            continue
        chosen[name] = iri
    return {iri: name for name, iri in chosen.items()}


def _labels(g: rdflib.Graph, iri: URIRef) -> tuple[str, ...]:
    labels: list[str] = []
    for predicate in (RDFS.label, SKOS.altLabel):
        found = sorted(
            (o for o in g.objects(iri, predicate) if isinstance(o, Literal)),
            key=lambda lit: (lit.language or "", str(lit)),
        )
        labels.extend(str(lit) for lit in found if str(lit) not in labels)
    return tuple(labels)


def _parent_map(g: rdflib.Graph, predicate: URIRef, known: Mapping[URIRef, str]) -> dict:
    parents: dict[URIRef, list[URIRef]] = {}
    for child, parent in g.subject_objects(predicate):
        if child in known and parent in known and child != parent:
            parents.setdefault(child, []).append(parent)
    for values in parents.values():
        values.sort()
    return parents


def _closure(start: URIRef, parents: Mapping[URIRef, list[URIRef]]) -> list[URIRef]:
    """Every ancestor, nearest first (breadth-first), cycle-safe, without `start`."""
    seen = {start}
    order: list[URIRef] = []
    queue = deque(parents.get(start, ()))
    while queue:
        node = queue.popleft()
        if node in seen:
            continue
        seen.add(node)
        order.append(node)
        queue.extend(parents.get(node, ()))
    return order


def _weight(g: rdflib.Graph, iri: URIRef, name: str, warnings: list[str]) -> float | None:
    value = g.value(iri, KG.expansionWeight)
    if value is None:
        return None
    try:
        weight = float(value)
    except (TypeError, ValueError):
        warnings.append(f"relation '{name}': expansionWeight '{value}' is not a number; using 1.0")
        return None
    if not 0.0 <= weight <= 1.0:  # also rejects NaN
        clamped = min(max(weight, 0.0), 1.0) if weight == weight else 1.0
        warnings.append(
            f"relation '{name}': expansionWeight {value} is outside 0-1; using {clamped}"
        )
        return clamped
    return weight


def _inherited_weight(iri: URIRef, own: Mapping[URIRef, float | None], parents: Mapping) -> float:
    """Own weight, else the weight of the nearest super property that has one (the largest on a tie)."""
    if own.get(iri) is not None:
        return own[iri]  # type: ignore[return-value]
    level = list(parents.get(iri, ()))
    seen = {iri}
    while level:
        weights = [own[p] for p in level if own.get(p) is not None]
        if weights:
            return max(weights)  # type: ignore[type-var]
        seen.update(level)
        level = [q for p in level for q in parents.get(p, ()) if q not in seen]
    return 1.0


def _class_name(term: object, class_names: Mapping[URIRef, str]) -> str | None:
    if term is None or isinstance(term, BNode):  # e.g. an owl:unionOf domain: no single class
        return None
    return class_names.get(term) or local_name(term)  # type: ignore[arg-type]


@lru_cache(maxsize=65536)
def _normalise(text: str) -> str:
    """What makes `depends_on`, "Depends on" and "depends-on" the same key."""
    return re.sub(r"[\s_\-]+", "", unicodedata.normalize("NFKC", text).casefold())


class _NameIndex:
    """Normalised names, rdfs:labels and skos:altLabels -> local names, searched in that order."""

    def __init__(
        self,
        infos: Mapping[str, PropertyInfo | ClassInfo],
        preferred: Mapping[str, Iterable[str]] | None,
    ) -> None:
        self.iris = {info.iri: name for name, info in infos.items()}
        self.ranks: tuple[dict[str, set[str]], ...] = ({}, {}, {})
        for name, info in infos.items():
            primary = set(
                info.labels if preferred is None else preferred.get(info.iri, info.labels)
            )
            keyed = [(0, name)] + [(1 if label in primary else 2, label) for label in info.labels]
            for rank, text in keyed:
                key = _normalise(text)
                if key:
                    self.ranks[rank].setdefault(key, set()).add(name)
        self.all_keys: dict[str, set[str]] = {}
        for rank in self.ranks:
            for key, names in rank.items():
                self.all_keys.setdefault(key, set()).update(names)

    def candidates(self, text: str) -> list[str]:
        if text.strip() in self.iris:
            return [self.iris[text.strip()]]
        key = _normalise(text)
        for rank in self.ranks:
            if key in rank:
                return sorted(rank[key])
        return []

    def resolve(self, text: str) -> str | None:
        names = self.candidates(text)
        return names[0] if len(names) == 1 else None

    def suggest(self, text: str, n: int) -> list[str]:
        key = _normalise(text)
        if not key or n <= 0:
            return []
        # One wrong character in a two-character Chinese word is a ratio of 0.5; longer keys need
        # difflib's usual 0.6 or "flies to" starts suggesting "relies on".
        cutoff = 0.5 if len(key) <= 3 else 0.6
        names: list[str] = []
        for match in difflib.get_close_matches(key, list(self.all_keys), n=n * 4, cutoff=cutoff):
            names.extend(name for name in sorted(self.all_keys[match]) if name not in names)
        return names[:n]
