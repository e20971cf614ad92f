"""Ontology check: an rdflib Graph and its Vocabulary in, a list of Findings (each with its fix) out.

What it looks for is what makes kgrag quietly wrong rather than fail: a misspelt relation or
class that expansion silently ignores (`unknown-term`), an edge to an IRI that is nothing
(`dangling-reference`), a part-of chain that loops (`transitive-cycle`), a name that links to two
entities (`shared-alias`), edges whose ends have the wrong class (`domain`, `range`), edges from
an entity to itself (`self-loop`), and what the ontology loader had to guess (`vocabulary`).
Everything is found in a few scans of the graph, so ten thousand entities take well under a second.
"""

from __future__ import annotations

import difflib
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import Literal as _OneOf

import networkx as nx
import rdflib
from rdflib import DCTERMS, FOAF, OWL, PROV, RDF, RDFS, SDO, SKOS, XSD, BNode, Literal, URIRef
from rdflib.namespace import DC

from kg.graph import entity_subjects, pick_label
from ontology import ENT, KG, Vocabulary, local_name

__all__ = ["CODES", "Finding", "check_ontology"]

CODES = (
    "unknown-term",
    "dangling-reference",
    "transitive-cycle",
    "domain",
    "range",
    "shared-alias",
    "self-loop",
    "vocabulary",
)

# Vocabularies that are nobody's ontology to fix: their terms are never "unknown", even when a
# Protégé file declares one of them (skos:altLabel as an owl:AnnotationProperty).
_WELL_KNOWN = tuple(str(ns) for ns in (RDF, RDFS, OWL, XSD, SKOS, DC, DCTERMS, FOAF, PROV, SDO))
_XML_NS = "http://www.w3.org/XML/1998/namespace"
_PROPERTY_TYPES = frozenset(
    (
        RDF.Property,
        OWL.ObjectProperty,
        OWL.DatatypeProperty,
        OWL.AnnotationProperty,
        OWL.OntologyProperty,
        OWL.TransitiveProperty,
        OWL.SymmetricProperty,
        OWL.AsymmetricProperty,
        OWL.ReflexiveProperty,
        OWL.IrreflexiveProperty,
        OWL.FunctionalProperty,
        OWL.InverseFunctionalProperty,
    )
)
_OWN_PREFIXES = {
    "kg": KG,
    "ent": ENT,
    "owl": OWL,
    "rdf": RDF,
    "rdfs": RDFS,
    "skos": SKOS,
    "xsd": XSD,
}
_TYPE = RDF.type
_SLOTS: dict[object, str] = {
    RDF.type: "type",
    RDFS.label: "label",
    SKOS.prefLabel: "label",
    SKOS.altLabel: "alias",
}
_CLASS_TYPES = frozenset((OWL.Class, RDFS.Class, RDFS.Datatype))
_CLASS_POSITIONS = (
    (RDF.type, "object"),
    (RDFS.subClassOf, "both"),
    (RDFS.domain, "object"),
    (RDFS.range, "object"),
)
_SUGGEST_AT_MOST = 50  # dangling IRIs that get a "did you mean" (difflib over every entity)
# kg:Entity: every entity is one, so a domain or range of Entity always holds.
_ANY_ENTITY = "Entity"


@dataclass(frozen=True)
class Finding:
    """One problem. `subject` is what it is about (an IRI, or the shared name for shared-alias);
    `message` says what is wrong and how to fix it."""

    severity: _OneOf["error", "warning"]
    code: str
    subject: str
    message: str

    def __str__(self) -> str:
        return f"{self.severity}: {self.code}: {self.message}"

    def to_json(self) -> dict:
        return asdict(self)


def check_ontology(graph: rdflib.Graph, vocab: Vocabulary) -> list[Finding]:
    """Every finding, errors first, then by code and subject."""
    checker = _Checker(graph, vocab)
    findings = [
        *checker.unknown_terms(),
        *checker.dangling_references(),
        *checker.transitive_cycles(),
        *checker.domains_and_ranges(),
        *checker.shared_names(),
        *checker.self_loops(),
        *(Finding("warning", "vocabulary", "", w) for w in vocab.warnings),
    ]
    return sorted(
        findings, key=lambda f: (f.severity != "error", CODES.index(f.code), f.subject, f.message)
    )


class _Checker:
    def __init__(self, graph: rdflib.Graph, vocab: Vocabulary) -> None:
        self.graph, self.vocab = graph, vocab
        # kgrag's own prefixes first: a Protégé file may have bound ':' to kgrag's namespace.
        own = {str(ns): p for p, ns in _OWN_PREFIXES.items()}
        bound = {str(ns): p for p, ns in graph.namespaces() if p and str(ns) not in own}
        self.prefixes = sorted({**bound, **own}.items(), key=lambda x: -len(x[0]))
        self.entities = entity_subjects(graph, vocab)
        self.class_names: dict[object, str] = {
            URIRef(c.iri): c.name for c in vocab.classes.values()
        }
        self.properties: dict[object, str] = {
            URIRef(p.iri): p.name for p in vocab.properties.values()
        }
        # One scan of the graph collects what every check reads (one rdflib query per property
        # and label predicate costs several times more at 10k entities).
        self.predicates: set = set()
        self.types: dict[object, set] = defaultdict(set)
        self.labels: dict[object, list[Literal]] = defaultdict(list)  # rdfs:label, skos:prefLabel
        self.aliases: dict[object, list[Literal]] = defaultdict(list)  # skos:altLabel
        self.edges: list[tuple] = []  # every object-property assertion: (source, name, target)
        properties, slots = self.properties, _SLOTS
        for s, p, o in graph:
            self.predicates.add(p)
            slot = slots.get(p)  # a dict lookup: URIRef == is slow Python code
            if slot is None:
                name = properties.get(p)
                if name is not None and not isinstance(s, BNode):
                    self.edges.append((s, name, o))
            elif slot == "type":
                self.types[s].add(o)
            elif isinstance(o, Literal):
                (self.labels if slot == "label" else self.aliases)[s].append(o)
        self.edges.sort(key=lambda e: (str(e[0]), e[1], str(e[2])))

    # -- naming things in messages

    def name(self, term: object) -> str:
        """'label' for an entity (or anything labelled), a prefixed name or <IRI> otherwise."""
        if term in self.labels:
            return f"'{pick_label(self.labels[term], '')}'"
        return self.term(term)

    def term(self, term: object) -> str:
        text = str(term)
        if isinstance(term, URIRef):
            for namespace, prefix in self.prefixes:
                rest = text[len(namespace) :]
                if (
                    text.startswith(namespace)
                    and rest
                    and all(c.isalnum() or c in "-_." for c in rest)
                ):
                    return f"{prefix}:{rest}"
            return f"<{text}>"
        return repr(text) if isinstance(term, Literal) else text

    def _did_you_mean(self, names: list[str], terms: dict) -> str:
        return f" (did you mean {self.term(URIRef(terms[names[0]].iri))}?)" if names else ""

    # -- the checks

    def unknown_terms(self) -> Iterable[Finding]:
        g = self.graph
        declared_properties = {s for s, types in self.types.items() if types & _PROPERTY_TYPES}
        for p, q in g.subject_objects(OWL.inverseOf):  # the loader counts these as relations too
            declared_properties.update((p, q))
        declared_classes = {s for s, types in self.types.items() if types & _CLASS_TYPES}
        user = self._user_namespaces(declared_properties | declared_classes)

        def is_user(term: object) -> bool:
            return (
                isinstance(term, URIRef)
                and not str(term).startswith(_WELL_KNOWN)
                and any(str(term).startswith(ns) for ns in user)
            )

        for p in sorted(p for p in self.predicates if is_user(p) and p not in declared_properties):
            uses = list(g.triples((None, p, None)))
            s, _, o = min(uses)
            example = f"{self.name(s)} {self.term(p)} {self.name(o)}"
            yield Finding(
                "error",
                "unknown-term",
                str(p),
                f"{self.term(p)} is used in {_count(len(uses), 'triple')} (e.g. {example}) but is "
                f"not declared in the ontology, so kgrag ignores {_them(len(uses))}"
                f"{self._did_you_mean(self.vocab.suggest_properties(local_name(p), 1), self.vocab.properties)}; fix the name, "
                f"or declare it: {self.term(p)} a owl:ObjectProperty .",
            )
        used_classes: dict[object, list] = defaultdict(list)
        for predicate, position in _CLASS_POSITIONS:
            pairs = (
                ((s, o) for s, types in self.types.items() for o in types)
                if predicate == _TYPE
                else g.subject_objects(predicate)
            )
            for s, o in pairs:
                for cls in (o, s) if position == "both" else (o,):
                    if (
                        is_user(cls)
                        and cls not in declared_classes
                        and cls not in declared_properties
                    ):
                        used_classes[cls].append((s, predicate, o))
        for cls, uses in sorted(used_classes.items()):
            s, p, o = min(uses)
            example = f"{self.name(s)} {self.term(p)} {self.name(o)}"
            yield Finding(
                "error",
                "unknown-term",
                str(cls),
                f"class {self.term(cls)} is used in {_count(len(uses), 'triple')} (e.g. {example}) "
                "but is not declared in the ontology, so kgrag does not know it"
                f"{self._did_you_mean(self.vocab.suggest_classes(local_name(str(cls)), 1), self.vocab.classes)}; fix the name, or "
                f"declare it: {self.term(cls)} a owl:Class ; rdfs:subClassOf kg:Entity .",
            )

    def _user_namespaces(self, declared: set) -> set[str]:
        """kgrag's namespaces, those of the ontology IRIs and those the user declares terms in."""
        spaces = {str(KG), str(ENT)}
        for ontology in self.graph.subjects(RDF.type, OWL.Ontology):
            if isinstance(ontology, URIRef):
                text = str(ontology)
                spaces.update((text + "#", text + "/") if text[-1] not in "#/" else (text,))
        for term in declared:
            if isinstance(term, URIRef) and not str(term).startswith((*_WELL_KNOWN, _XML_NS)):
                text = str(term)
                spaces.add(text[: len(text) - len(local_name(text))])
        spaces.discard("")
        return spaces

    def dangling_references(self) -> Iterable[Finding]:
        labelled = set(self.labels) | set(self.aliases)
        uses: dict[URIRef, list] = defaultdict(list)
        for s, name, o in self.edges:
            if isinstance(o, URIRef) and o not in self.types and o not in labelled:
                uses[o].append((s, name))
        known = {local_name(e): e for e in sorted(self.entities)}
        for n, (iri, refs) in enumerate(sorted(uses.items())):
            s, name = min(refs)
            suggestion = ""
            if n < _SUGGEST_AT_MOST:
                close = difflib.get_close_matches(local_name(iri), list(known), n=1, cutoff=0.8)
                if close:
                    suggestion = f" (did you mean {self.term(known[close[0]])}, {self.name(known[close[0]])}?)"
            yield Finding(
                "error",
                "dangling-reference",
                str(iri),
                f"{self.term(iri)} is the target of {_count(len(refs), 'relation')} (e.g. "
                f"{self.name(s)} {name} it) but has no type and no label, so it is not an entity "
                f"and expansion stops there{suggestion}; fix the IRI, or declare the entity: "
                f'{self.term(iri)} a owl:NamedIndividual ; rdfs:label "..." .',
            )

    def transitive_cycles(self) -> Iterable[Finding]:
        done: set[str] = set()
        for name, info in sorted(self.vocab.properties.items()):
            if not info.transitive or info.symmetric or name in done:
                continue
            inverse = info.inverse if info.inverse in self.vocab.properties else None
            done.update((name, inverse or name))
            forward = self.vocab.sub_properties(name)
            backward = self.vocab.sub_properties(inverse) if inverse else frozenset()
            walk = nx.DiGraph()
            for s, p, o in self.edges:
                if s == o:
                    continue  # a self-loop, reported on its own
                if p in forward:
                    walk.add_edge(s, o)
                    walk.edges[s, o].setdefault("asserted", []).append((s, p, o, False))
                if p in backward:
                    walk.add_edge(o, s)
                    walk.edges[o, s].setdefault("asserted", []).append((s, p, o, True))
            for component in nx.strongly_connected_components(walk):
                if len(component) > 1:
                    yield self._cycle(walk.subgraph(component), name, inverse, len(component))

    def _cycle(self, walk: nx.DiGraph, name: str, inverse: str | None, size: int) -> Finding:
        start = min(walk.nodes, key=lambda n: (self.name(n), str(n)))
        cycle = [u for u, _ in nx.find_cycle(walk, source=start)]
        steps = [
            walk.edges[u, v]["asserted"][0]
            for u, v in zip(cycle, cycle[1:] + cycle[:1], strict=True)
        ]
        if inverse and sum(reverse for *_, reverse in steps) * 2 > len(steps):
            # Mostly asserted as the inverse (hasPart): tell it the way it was written.
            name, cycle = inverse, [cycle[0], *reversed(cycle[1:])]
        path = " → ".join(self.name(n) for n in [*cycle, cycle[0]])
        asserted = "; ".join(
            f"{self.name(s)} {p} {self.name(o)}"
            for s, p, o, _ in sorted(steps, key=lambda t: (self.name(t[0]), t[1], self.name(t[2])))
        )
        more = f" ({size} entities are on cycles together)" if size > len(cycle) else ""
        return Finding(
            "error",
            "transitive-cycle",
            str(cycle[0]),
            f"{name} goes round in a circle: {path} (asserted: {asserted}){more}; {name} is "
            f"transitive, so each of them would be {name} itself: remove or reverse one of these "
            "edges",
        )

    def domains_and_ranges(self) -> Iterable[Finding]:
        expected = {name: self._expected_classes(name) for name in self.vocab.properties}
        classes = {
            e: sorted(
                self.class_names[t]
                for t in self.types[e]
                if t in self.class_names and self.class_names[t] != _ANY_ENTITY
            )
            for e in self.entities
        }
        for s, name, o in self.edges:
            if s == o:
                continue
            for code, end, rules in (
                ("domain", s, expected[name][0]),
                ("range", o, expected[name][1]),
            ):
                have = classes.get(end)
                if not have:  # untyped, or only kg:Entity: nothing to contradict
                    continue
                for cls, why in rules:
                    if not any(self.vocab.is_subclass(c, cls) for c in have):
                        role = "source" if code == "domain" else "target"
                        yield Finding(
                            "warning",
                            code,
                            str(end),
                            f"{self.name(s)} {name} {self.name(o)}: the {role} should be a {cls} "
                            f"({why}), but {self.name(end)} is a {' and a '.join(have)}; give "
                            f"{self.name(end)} the class {cls} (or a subclass of it), or use "
                            "another relation",
                        )
                        break

    def _expected_classes(self, name: str) -> tuple[list, list]:
        """(domain rules, range rules) of a property: [(class, where the rule comes from)].

        Inherited from super properties, and taken from the inverse (the range of `owns` is the
        domain of `ownedBy`). A rule of kg:Entity, or of a class the ontology does not declare
        (reported as unknown-term), constrains nothing.
        """
        props = self.vocab.properties
        domains: dict[str, str] = {}
        ranges: dict[str, str] = {}
        for q in [name, *sorted(props[name].super_properties)]:
            info = props[q]
            inherited = "" if q == name else f", inherited by {name}"
            if info.domain:
                domains.setdefault(info.domain, f"the domain of {q}{inherited}")
            if info.range:
                ranges.setdefault(info.range, f"the range of {q}{inherited}")
            inverse = props.get(info.inverse or "")
            if inverse is not None:
                if inverse.range:
                    domains.setdefault(
                        inverse.range, f"the range of {inverse.name}, the inverse of {q}"
                    )
                if inverse.domain:
                    ranges.setdefault(
                        inverse.domain, f"the domain of {inverse.name}, the inverse of {q}"
                    )

        def rules(found: dict[str, str]) -> list:
            return [
                (c, why)
                for c, why in sorted(found.items())
                if c != _ANY_ENTITY and c in self.vocab.classes
            ]

        return rules(domains), rules(ranges)

    def shared_names(self) -> Iterable[Finding]:
        named: dict[str, dict] = defaultdict(dict)
        # Labels come last: a label outranks an alias of the same entity.
        for names, kind in ((self.aliases, "an alias"), (self.labels, "the label")):
            for entity in self.entities:
                for name in names.get(entity, ()):
                    if str(name).strip():
                        named[str(name).strip()][entity] = kind
        for text, owners in sorted(named.items()):
            if len(owners) < 2:
                continue
            parts = sorted(
                f"{kind} of {self.term(e)} ({self.name(e)})" for e, kind in owners.items()
            )
            yield Finding(
                "warning",
                "shared-alias",
                text,
                f"'{text}' names {len(owners)} entities: it is {_and(parts)}; a question or a "
                f"document saying '{text}' is linked to all of them: keep it on one entity and "
                "remove it from the others",
            )

    def self_loops(self) -> Iterable[Finding]:
        for s, name, o in self.edges:
            if s == o:
                yield Finding(
                    "warning",
                    "self-loop",
                    str(s),
                    f"{self.name(s)} {name} {self.name(s)}: a relation from an entity to itself "
                    "is ignored by graph expansion; delete it or fix the target",
                )


def _count(n: int, singular: str) -> str:
    return f"{n} {singular}{'' if n == 1 else 's'}"


def _them(n: int) -> str:
    return "it" if n == 1 else "them"


def _and(parts: list[str]) -> str:
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]
