"""Ontology loading: an RDF file (Turtle, RDF/XML, N-Triples, JSON-LD) in, an rdflib Graph and a `Vocabulary` of its relations and classes out.

`load_rdf` reads what rdflib reads faithfully and refuses, with a fix, what it would misread
(OWL/XML, Manchester and Functional syntax, see STACK.md pitfall 7). `Vocabulary.from_graph`
turns the OWL semantics kgrag uses at query time (owl:inverseOf, owl:TransitiveProperty,
owl:SymmetricProperty, rdfs:subPropertyOf, rdfs:subClassOf, kg:expansionWeight) into plain,
precomputed dataclasses, and resolves the names and labels people type (`depends_on`,
"depends on", 依赖) to them.
"""


from __future__ import annotations

from importlib import import_module

__all__ = [
    "BASE_ONTOLOGY_PATH",
    "ENT",
    "KG",
    "ClassInfo",
    "OntologyFormatError",
    "PropertyInfo",
    "Vocabulary",
    "entity_iri",
    "load_rdf",
    "local_name",
]

# Re-exported lazily: `kg.errors` imports `ontology.errors`, and that must not load rdflib
# (`kg --help` stays instant).
_HOME = {"OntologyFormatError": "ontology.errors", "load_rdf": "ontology.loader"}


def __getattr__(name: str):
    if name not in __all__:
        raise AttributeError(f"module 'ontology' has no attribute {name!r}")
    return getattr(import_module(_HOME.get(name, "ontology.vocabulary")), name)
