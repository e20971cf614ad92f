"""A SPARQL 1.1 store as the graph store (`KG_GRAPH_STORE=sparql+http://HOST:PORT`): named graphs written by SPARQL Update (rdflib's `SPARQLUpdateStore`), read by a CONSTRUCT a graph as N-Triples.

Tested against `oxigraph serve` (its endpoints are URL/query and URL/update); the same requests are
standard SPARQL 1.1 (Protocol, Query, Update), which Jena Fuseki, GraphDB and Virtuoso answer too.
Each knowledge base keeps its graphs under its own IRI prefix, so several share one store.
Nothing relies on the store's reasoning: OWL semantics are rewritten into property paths by
`kg.stores.owl_paths`, since stores differ in what they infer.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from urllib.error import HTTPError, URLError

from rdflib import BNode, Graph

from kg.errors import BusyError, InputError
from kg.files import masked
from kg.stores.base import DEFAULT, Triple, check_name

__all__ = ["GRAPH_PREFIX", "SparqlGraphStore"]

GRAPH_PREFIX = "https://kgrag.dev/graph/"
_WHERE = re.compile(r"\bWHERE\s*\{", re.IGNORECASE)
_NAMESPACE = re.compile(r"^[A-Za-z0-9_\-]{1,64}$")


class SparqlGraphStore:
    """`SparqlGraphStore("http://127.0.0.1:7878", namespace="kgrag")`."""

    def __init__(self, url: str, namespace: str = "kgrag", timeout: float = 30.0) -> None:
        from rdflib.plugins.stores.sparqlstore import SPARQLUpdateStore

        if not _NAMESPACE.match(namespace):
            raise InputError(f"'{namespace}' cannot be part of a graph IRI: use letters, digits, '_' or '-'")
        self.url = url.rstrip("/")
        self.timeout = timeout
        self.prefix = f"{GRAPH_PREFIX}{namespace}/"
        self._store = SPARQLUpdateStore(query_endpoint=self.url + "/query", update_endpoint=self.url + "/update",
                                        returnFormat="json", autocommit=True, method="POST_FORM", timeout=timeout)

    def iri(self, name: str) -> str:
        return self.prefix + check_name(name)

    def _query(self, query: str):
        try:
            return self._store.query(query)
        except Exception as exc:
            raise _failure(exc, self.url, "start it (e.g. `oxigraph serve --location DIR --bind HOST:PORT`) "
                                          "or fix KG_GRAPH_STORE") from exc

    def _update(self, update: str) -> None:
        try:
            self._store.update(update)
        except Exception as exc:
            raise _failure(exc, self.url, "nothing was written; start it or fix KG_GRAPH_STORE, then try again") from exc

    def names(self) -> list[str]:
        # The store's list of graphs (`GRAPH ?g {}`, which lists an emptied graph too), each kept when it holds a
        # triple: `GRAPH ?g { ?s ?p ?o }` with DISTINCT read every triple (250 ms at a 100k-row table's 291k triples
        # in Oxigraph, 8 ms this way).
        rows = self._query(f'SELECT ?g WHERE {{ GRAPH ?g {{ }} FILTER(STRSTARTS(STR(?g), "{self.prefix}")) '
                           "FILTER EXISTS { GRAPH ?g { ?s ?p ?o } } }")
        return sorted({str(row[0])[len(self.prefix):] for row in rows})

    def read(self, name: str | None = None) -> Graph:
        out = Graph()
        out.addN((s, p, o, out) for s, p, o in self.triples(name))
        return out

    def triples(self, name: str | None = None) -> list[tuple]:
        """The triples of graph `name`, or of all this knowledge base's graphs, as rows (no rdflib Graph: adding
        80k triples to one is most of the time of reading them)."""
        if name is not None:
            return self._construct(name)
        return [triple for rows in self.quads().values() for triple in rows]

    def _from(self, names: list[str]) -> str:
        return " ".join(f"FROM <{self.iri(n)}>" for n in names)

    def replace(self, graph: Graph, name: str = DEFAULT) -> None:
        """DROP and INSERT DATA in one request: SPARQL stores apply one update request atomically."""
        self.change_graphs({}, {}, {name: graph})

    def replace_graphs(self, graphs: Mapping[str, Graph], drop: Iterable[str] = ()) -> None:
        """One update request of DROP / INSERT DATA operations: the store applies it whole or not at all, so a
        push cut short (a store that stops, a refused triple) leaves every graph as it was."""
        self.change_graphs({}, {}, graphs, drop)

    def change_graphs(self, removed: Mapping[str, list], added: Mapping[str, list], replaced: Mapping[str, Graph],
                      drop: Iterable[str] = ()) -> None:
        """Named triples out of and into some graphs, some graphs replaced whole and some dropped, in one update
        request (whole or not at all, as `replace_graphs`). A triple with a blank node cannot be deleted by
        DELETE DATA: a graph whose blank-node structures changed goes in `replaced`."""
        operations = [f"DROP SILENT GRAPH <{self.iri(name)}>" for name in [*drop, *replaced]]
        operations += [f"DELETE DATA {{ GRAPH <{self.iri(name)}> {{\n{_triples(triples)}\n}} }}"
                       for name, triples in removed.items() if triples]
        operations += [f"INSERT DATA {{ GRAPH <{self.iri(name)}> {{\n{_triples(triples)}\n}} }}"
                       for name, triples in [*added.items(), *replaced.items()] if len(triples)]
        if operations:
            self._update(" ;\n".join(operations))

    def quads(self) -> dict[str, list[tuple]]:
        """Every graph of this knowledge base -> its triples (graphs without any left out)."""
        return {name: rows for name in self.names() if (rows := self._construct(name))}

    def _construct(self, name: str) -> list[tuple]:
        """One graph's triples: a CONSTRUCT read as N-Triples a line at a time (a SELECT's JSON results for an
        80k-triple graph peaked at 184 MB in this process, this at 59 MB; rdflib's own result parser took 3 of the 4
        CPU-seconds of that reading)."""
        from urllib.parse import urlencode
        from urllib.request import Request, urlopen

        from rdflib.plugins.parsers.ntriples import W3CNTriplesParser

        rows: list[tuple] = []
        query = f"CONSTRUCT {{ ?s ?p ?o }} WHERE {{ GRAPH <{self.iri(name)}> {{ ?s ?p ?o }} }}"
        request = Request(self.url + "/query", data=urlencode({"query": query}).encode("utf-8"),
                          headers={"Accept": "application/n-triples", "Content-Type": "application/x-www-form-urlencoded"})
        try:
            with urlopen(request, timeout=self.timeout) as response:  # noqa: S310 - the configured store's URL
                W3CNTriplesParser(_Rows(rows)).parse(response)
        except Exception as exc:
            raise _failure(exc, self.url, "start it (e.g. `oxigraph serve --location DIR --bind HOST:PORT`) "
                                          "or fix KG_GRAPH_STORE") from exc
        return rows

    def add(self, triples: Iterable[Triple], name: str = DEFAULT) -> int:
        triples = list(triples)
        if triples:
            self._update(f"INSERT DATA {{ GRAPH <{self.iri(name)}> {{\n{_triples(triples)}\n}} }}")
        return len(triples)

    def remove(self, triples: Iterable[Triple], name: str = DEFAULT) -> int:
        triples = list(triples)
        if any(isinstance(t, BNode) for triple in triples for t in triple):
            raise InputError("SPARQL cannot DELETE DATA a triple with a blank node: replace the whole graph instead")
        if triples:
            self._update(f"DELETE DATA {{ GRAPH <{self.iri(name)}> {{\n{_triples(triples)}\n}} }}")
        return len(triples)

    def drop(self, name: str) -> None:
        self._update(f"DROP SILENT GRAPH <{self.iri(name)}>")

    def select(self, query: str, names: list[str] | None = None) -> list[tuple]:
        """The query over the union of this knowledge base's graphs, or of `names` (FROM clauses added
        before WHERE; without `names`, one more request asks which graphs there are)."""
        names = self.names() if names is None else [check_name(n) for n in names]
        if not names:
            return []
        match = _WHERE.search(query)
        if match is None:
            raise InputError("write the query with an explicit WHERE { ... } (the store adds its FROM clauses before it)")
        query = query[: match.start()] + self._from(names) + " " + query[match.start():]
        return [tuple(row) for row in self._query(query)]

    def close(self) -> None:
        self._store.close()


def _failure(exc: Exception, url: str, fix: str) -> Exception:
    """rdflib wraps every HTTP failure in a ValueError: a store that does not answer is worth a retry
    (BusyError, 503); one that refused the request says why."""
    cause = exc
    while cause is not None and not isinstance(cause, (HTTPError, URLError, OSError)):
        cause = cause.__cause__ or cause.__context__
    if isinstance(cause, HTTPError):
        detail = cause.read().decode("utf-8", "replace")[:300] if cause.fp else cause.reason
        return InputError(f"the SPARQL store at {masked(url)} refused the request (HTTP {cause.code}): {detail}")
    if cause is not None:
        return BusyError(f"the SPARQL store at {masked(url)} does not answer ({getattr(cause, 'reason', cause)}): {fix}")
    return exc


class _Rows:
    """An N-Triples parser's sink that keeps the triples as tuples."""

    def __init__(self, rows: list) -> None:
        self.rows = rows

    def triple(self, s, p, o) -> None:
        self.rows.append((s, p, o))


def _triples(triples: Iterable[Triple]) -> str:
    return "\n".join(f"{s.n3()} {p.n3()} {o.n3()} ." for s, p, o in triples)
