"""A whole graph (graph.ttl) in, its named graphs out: `ontology` (the base ontology's triples), one `pack:ID` per knowledge pack, `default` (the rest).

A pack's graph is what names the pack's entity (the `Pack` entity labelled `pack:ID` that `kg pack add`
makes): its type and label, every edge to or from it (`X documentedIn pack:ID`), and the reified edge
weights (owl:Axiom) of those edges; and the edges and aliases the pack's own tables state that no other table does
(`owned`: read from the relation-table record by the caller, `retrieval.store_sync.pack_owned`). `kg pack remove`
takes exactly these triples out of graph.ttl, so the pack's named graph is what goes with the pack. The graphs
partition the whole: their union is it.
"""

from __future__ import annotations

from rdflib import OWL, RDF, RDFS, BNode, Graph, URIRef

from kg.errors import InputError
from kg.stores.base import DEFAULT, ONTOLOGY, pack_graph

__all__ = ["named_graphs", "pack_entities"]

_PACK_LABEL = "pack:"


def pack_entities(whole: Graph, pack_class: URIRef) -> dict[URIRef, str]:
    """The graph's pack entities (of `pack_class`, labelled `pack:ID`) -> the name of their graph."""
    out: dict[URIRef, str] = {}
    for entity in whole.subjects(RDF.type, pack_class):
        for label in whole.objects(entity, RDFS.label):
            text = str(label)
            if isinstance(entity, URIRef) and text.startswith(_PACK_LABEL):
                try:
                    out[entity] = pack_graph(text[len(_PACK_LABEL):])
                except InputError:  # not a usable graph name: its triples stay in `default`
                    continue
                break
    return out


def named_graphs(whole: Graph, base: Graph, pack_class: URIRef, owned: dict[tuple, str] | None = None) -> dict[str, Graph]:
    """`ontology`, `default` and one `pack:ID` per pack entity (see the module's docstring); `owned`: triple -> the
    pack graph of the one pack whose tables alone state it."""
    packs = pack_entities(whole, pack_class)
    owned = {t: name for t, name in (owned or {}).items() if name in packs.values()}
    out: dict[str, Graph] = {ONTOLOGY: Graph(), DEFAULT: Graph(), **{name: Graph() for name in packs.values()}}
    axioms: dict[BNode, str] = {}  # a blank node goes whole to one graph: stores do not share it between requests
    for axiom in whole.subjects(RDF.type, OWL.Axiom):
        if isinstance(axiom, BNode):
            for end in (OWL.annotatedSource, OWL.annotatedTarget):
                name = packs.get(whole.value(axiom, end))
                if name is not None:
                    axioms[axiom] = name
            edge = tuple(whole.value(axiom, p) for p in (OWL.annotatedSource, OWL.annotatedProperty, OWL.annotatedTarget))
            if axiom not in axioms and edge in owned:  # the weight of a pack's own edge goes with the edge
                axioms[axiom] = owned[edge]
    for s, p, o in whole:
        if (s, p, o) in base:
            name = ONTOLOGY
        else:
            name = packs.get(s) or packs.get(o) or axioms.get(s) or owned.get((s, p, o)) or DEFAULT
        out[name].add((s, p, o))
    return out
