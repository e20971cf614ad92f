"""The embedded graph store: a folder of Turtle files, one per named graph, read with rdflib; SPARQL through rdflib's own engine.

Each write replaces one file atomically (temporary file, fsync, rename), as graph.ttl is written.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path

from rdflib import Graph

from kg.stores.base import DEFAULT, Triple, check_name
from kg.turtle import serialize_turtle

__all__ = ["FileGraphStore"]


class FileGraphStore:
    def __init__(self, folder: Path) -> None:
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self._graphs: dict[str, Graph] = {}
        self._union: Graph | None = None

    def _path(self, name: str) -> Path:
        return self.folder / (check_name(name).replace(":", "-") + ".ttl")

    def names(self) -> list[str]:
        found = [p.stem.replace("pack-", "pack:", 1) for p in self.folder.glob("*.ttl")]
        return sorted(n for n in found if len(self._graph(n)))

    def _graph(self, name: str) -> Graph:
        graph = self._graphs.get(name)
        if graph is None:
            graph = Graph()
            path = self._path(name)
            if path.exists():
                graph.parse(path, format="turtle")
            self._graphs[name] = graph
        return graph

    def read(self, name: str | None = None) -> Graph:
        if name is not None:
            out = Graph()
            out += self._graph(name)
            return out
        if self._union is None:
            union = Graph()
            for each in self.names():
                union += self._graph(each)
            self._union = union
        out = Graph()
        out += self._union
        return out

    def _save(self, name: str, graph: Graph) -> None:
        path = self._path(name)
        data = serialize_turtle(graph)
        fd, tmp = tempfile.mkstemp(prefix=".graph-", suffix=".ttl", dir=self.folder)
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        self._graphs[name], self._union = graph, None

    def replace(self, graph: Graph, name: str = DEFAULT) -> None:
        copy = Graph()
        copy += graph
        self._save(name, copy)

    def replace_graphs(self, graphs: Mapping[str, Graph], drop: Iterable[str] = ()) -> None:
        for name in drop:
            self.drop(name)
        for name, graph in graphs.items():
            self.replace(graph, name)

    def add(self, triples: Iterable[Triple], name: str = DEFAULT) -> int:
        graph, n = self.read(name), 0
        for triple in triples:
            graph.add(triple)
            n += 1
        self._save(name, graph)
        return n

    def remove(self, triples: Iterable[Triple], name: str = DEFAULT) -> int:
        graph, n = self.read(name), 0
        for triple in triples:
            graph.remove(triple)
            n += 1
        self._save(name, graph)
        return n

    def drop(self, name: str) -> None:
        self._path(name).unlink(missing_ok=True)
        self._graphs.pop(name, None)
        self._union = None

    def select(self, query: str, names: list[str] | None = None) -> list[tuple]:
        if names is not None:
            graph = Graph()
            for name in names:
                graph += self._graph(name)
            return [tuple(row) for row in graph.query(query)]
        if self._union is None:
            self.read()
        return [tuple(row) for row in self._union.query(query)]

    def close(self) -> None:
        self._graphs, self._union = {}, None
