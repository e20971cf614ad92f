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

import rdflib
from rdflib import DCTERMS, FOAF, OWL, PROV, RDF, RDFS, SDO, SKOS, XSD, BNode, Literal, URIRef
from rdflib.namespace import DC

from kg.check_edges import domains_and_ranges, self_loops, transitive_cycles
from kg.findings import Finding
from kg.graph import entity_subjects, pick_label
from ontology import ENT, KG, Vocabulary, local_name

__all__ = ["CODES", "Finding", "check_ontology", "import_warnings"]

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


def check_ontology(graph: rdflib.Graph, vocab: Vocabulary) -> list[Finding]:
    """Every finding, errors first, then by code and subject."""
    checker = _Checker(graph, vocab)
    findings = [
        *checker.unknown_terms(),
        *checker.dangling_references(),
        *transitive_cycles(checker),
        *domains_and_ranges(checker),
        *checker.shared_names(),
        *self_loops(checker),
        *(Finding("warning", "vocabulary", "", w) for w in vocab.warnings),
    ]
    return sorted(
        findings, key=lambda f: (f.severity != "error", CODES.index(f.code), f.subject, f.message)
    )


def import_warnings(incoming: rdflib.Graph, view, vocab: Vocabulary, vocab_before: Iterable[str]) -> list[str]:
    """What an imported ontology made quietly wrong, found without checking the whole graph (a Protégé file whose
    classes are named as kgrag's own, whose individual is labelled as an entity the graph already has): the loader's
    new `vocabulary` warnings, and each of the file's labels that now names two entities."""
    before = set(vocab_before)
    found = [w for w in vocab.warnings if w not in before]
    labelled = {str(o).strip() for p in (RDFS.label, SKOS.prefLabel, SKOS.altLabel)
                for s, o in incoming.subject_objects(p) if isinstance(s, URIRef) and str(o).strip()}
    owners: dict[str, set[str]] = defaultdict(set)
    for surface, iri in view.surfaces():
        if surface in labelled:
            owners[surface].add(iri)
    for name, iris in sorted(owners.items()):
        if len(iris) > 1:
            found.append(f"'{name}' names {len(iris)} entities ({', '.join(f'<{i}>' for i in sorted(iris))}): a question "
                         f"or document saying it is linked to all of them; `kg ontology check` says how to keep it on one")
    return found


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

def _count(n: int, singular: str) -> str:
    return f"{n} {singular}{'' if n == 1 else 's'}"


def _them(n: int) -> str:
    return "it" if n == 1 else "them"


def _and(parts: list[str]) -> str:
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]
