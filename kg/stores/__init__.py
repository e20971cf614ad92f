"""Where the graph lives: `open_graph_store(spec, folder)` -> a `GraphStore` (a folder of Turtle files, or a SPARQL 1.1 store)."""

from __future__ import annotations

from pathlib import Path

from kg.errors import InputError
from kg.stores.base import DEFAULT, ONTOLOGY, GraphStore, canonical, check_name, pack_graph

__all__ = ["DEFAULT", "ONTOLOGY", "GraphStore", "canonical", "check_name", "configured_store", "open_graph_store",
           "pack_graph"]


def open_graph_store(spec: str, folder: Path | None = None, namespace: str = "kgrag", timeout: float = 30.0) -> GraphStore:
    """`file` (Turtle files in `folder`) or `sparql+http://HOST:PORT[/PATH]` (the store's /query and
    /update endpoints under that URL; `oxigraph serve` answers at http://HOST:PORT)."""
    if spec == "file":
        if folder is None:
            raise InputError("the file graph store needs a folder")
        from kg.stores.file_store import FileGraphStore

        return FileGraphStore(folder)
    if spec.startswith(("sparql+http://", "sparql+https://")):
        from kg.stores.sparql_store import SparqlGraphStore

        return SparqlGraphStore(spec[len("sparql+"):], namespace=namespace, timeout=timeout)
    raise InputError(f"unknown graph store '{spec}': use 'file' or 'sparql+http://HOST:PORT' (KG_GRAPH_STORE)")


def configured_store(settings, timeout: float = 30.0) -> GraphStore | None:
    """The SPARQL store `KG_GRAPH_STORE` names, with this knowledge base's graphs (`KG_POSTGRES_SCHEMA`), each request
    given `timeout` seconds; None for the embedded default (graph.ttl in the data dir). The caller closes it."""
    if not settings.graph_store.startswith("sparql+"):
        return None
    return open_graph_store(settings.graph_store, namespace=settings.postgres_schema, timeout=timeout)
