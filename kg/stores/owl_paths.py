"""OWL semantics at query time, for any graph store: a property -> the SPARQL 1.1 property path that walks it with its sub-properties, inverses, symmetry and transitivity; a class -> its instances through rdfs:subClassOf*.

Stores differ in what they infer (Oxigraph infers nothing; Fuseki and GraphDB only with a reasoner
configured), so kgrag asks for the closure in the query itself, from the ontology held in the store.
"""

from __future__ import annotations

from rdflib import URIRef

from kg.stores.base import GraphStore

__all__ = ["instances", "property_path", "related", "related_all"]

_PREFIXES = ("PREFIX rdf: <http://www.w3.org/1999/02/22-rdf-syntax-ns#> "
             "PREFIX rdfs: <http://www.w3.org/2000/01/rdf-schema#> PREFIX owl: <http://www.w3.org/2002/07/owl#> ")


def _iris(rows) -> list[str]:
    return sorted({str(r[0]) for r in rows if isinstance(r[0], URIRef)})


def _values(iris: list[str]) -> str:
    return " ".join(f"<{i}>" for i in iris)


def property_path(store: GraphStore, prop: str) -> str:
    """`(<p>|<sub>|^<inverse>|^<sub of inverse>|^<symmetric>)` and `+` when `prop` is transitive:
    every triple that entails `s prop o` under rdfs:subPropertyOf, owl:inverseOf, owl:SymmetricProperty
    and owl:TransitiveProperty."""
    subs = _iris(store.select(_PREFIXES + f"SELECT DISTINCT ?p WHERE {{ ?p rdfs:subPropertyOf* <{prop}> }}")) or [prop]
    inverses = _iris(store.select(
        _PREFIXES + f"SELECT DISTINCT ?i WHERE {{ VALUES ?p {{ {_values(subs)} }} "
        "{ ?p owl:inverseOf ?i } UNION { ?i owl:inverseOf ?p } }"))
    backwards = set()
    if inverses:
        backwards |= set(_iris(store.select(
            _PREFIXES + f"SELECT DISTINCT ?q WHERE {{ VALUES ?i {{ {_values(inverses)} }} ?q rdfs:subPropertyOf* ?i }}")))
        backwards |= set(inverses)
    backwards |= set(_iris(store.select(
        _PREFIXES + f"SELECT DISTINCT ?p WHERE {{ VALUES ?p {{ {_values(subs)} }} ?p a owl:SymmetricProperty }}")))
    steps = [f"<{p}>" for p in subs] + [f"^<{q}>" for q in sorted(backwards)]
    transitive = store.select(_PREFIXES + f"SELECT ?t WHERE {{ VALUES ?t {{ <{prop}> }} ?t a owl:TransitiveProperty }}")
    return "(" + "|".join(steps) + ")" + ("+" if transitive else "")


def related(store: GraphStore, subject: str, prop: str) -> set[str]:
    """Everything `subject prop ?o` entails under the ontology in the store."""
    path = property_path(store, prop)
    rows = store.select(f"SELECT DISTINCT ?o WHERE {{ <{subject}> {path} ?o FILTER(?o != <{subject}>) }}")
    return {str(r[0]) for r in rows}


def related_all(store: GraphStore, subjects: list[str], prop: str) -> dict[str, set[str]]:
    """`related` for many subjects in one query: subject -> what it entails along `prop`."""
    path = property_path(store, prop)
    out: dict[str, set[str]] = {s: set() for s in subjects}
    if not subjects:
        return out
    rows = store.select(f"SELECT DISTINCT ?s ?o WHERE {{ VALUES ?s {{ {_values(subjects)} }} ?s {path} ?o FILTER(?o != ?s) }}")
    for s, o in rows:
        out[str(s)].add(str(o))
    return out


def instances(store: GraphStore, cls: str) -> set[str]:
    """The members of `cls` and of its sub-classes (rdf:type/rdfs:subClassOf*)."""
    rows = store.select(_PREFIXES + f"SELECT DISTINCT ?x WHERE {{ ?x rdf:type/rdfs:subClassOf* <{cls}> }}")
    return {str(r[0]) for r in rows}
