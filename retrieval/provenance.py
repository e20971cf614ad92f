"""Where each edge of the graph is stated: the relation-table record's tables, named as a reader knows them
("relations.csv", "pack ops's relations.csv"), each with the line of its row where the file is here to read
(`kg.relations.lines`); "" for an edge no table states (made in Protégé: a fact's source says graph.ttl), or "the SPARQL
store" for one only the store holds (KG_GRAPH_WALK=store). Read by an
answer's graph facts ([R1]) and by `kg entity`."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from rdflib import URIRef

from kg.relations.ledger import statements
from kg.relations.lines import WantedEdge, row_lines
from kg.relations.sheet import is_workbook
from retrieval.packs.tables import table_name

__all__ = ["edge_origins"]

Edge = tuple[str, str, str]  # (subject IRI, property name, object IRI)


def edge_origins(root: Path, view, vocab) -> Callable[[Sequence[Edge]], list[str]]:
    """[(subject IRI, property name, object IRI)] -> where each is stated ("relations.csv:3, pack ops's
    relations.csv:7"), in the knowledge base in `root` with graph view `view` and vocabulary `vocab`; every table is
    read once a call."""

    def surfaces(iri: str) -> frozenset[str]:
        entity = view.entities.get(iri)
        return frozenset(s.casefold() for s in (entity.label, *entity.aliases)) if entity else frozenset()

    def origins(edges: Sequence[Edge]) -> list[str]:
        record = statements(root)
        tables = [record.of((URIRef(s), URIRef(vocab.properties[p].iri), URIRef(o))) if p in vocab.properties else []
                  for s, p, o in edges]
        lines: dict[tuple[str, int], int] = {}
        for table in dict.fromkeys(t for found in tables for t in found):
            path = Path(table)
            if not (path.suffix.lower() == ".csv" or is_workbook(path)) or not path.is_file():  # RDF, an upload, elsewhere
                continue
            at = [i for i, found in enumerate(tables) if table in found]
            wanted = [WantedEdge(surfaces(edges[i][0]), edges[i][1], surfaces(edges[i][2])) for i in at]
            for i, line in zip(at, row_lines(path, vocab, wanted), strict=True):
                if line is not None:
                    lines[table, i] = line
        named = [", ".join(table_name(t) + (f":{lines[t, i]}" if (t, i) in lines else "") for t in found)
                 for i, found in enumerate(tables)]
        unstated = getattr(view, "unstated", None)  # a walk of the SPARQL store: an edge only the store holds says so
        return [name or (unstated(edges[i]) if unstated else "") for i, name in enumerate(named)]

    return origins
