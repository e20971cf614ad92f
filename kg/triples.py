"""An rdflib Graph and the triples an import adds and removes in, the graph as the import leaves it out, in plain dicts: what the Turtle writer (kg.turtle), `Vocabulary.from_graph` and `GraphView.from_rdf` read, without the triples going through rdflib's store.

Adding ~290k triples to rdflib's in-memory store (an event, three indexes and a context set per
triple) was a sixth of a 100k-row `kg import` (issue 25), and reading them back out of it as much
again, for a graph that the import writes to graph.ttl and then reads only to derive the view.
`TripleTable` answers the handful of look-ups those readers make (rdflib's names and argument
order) from a subject index and, when first asked by predicate, a predicate index; prefixes,
base and prefixed names come from the rdflib Graph it was made from, so a prefix the writer binds
lands where rdflib's own serializer would bind it.
"""

from __future__ import annotations

from collections.abc import Container, Iterable, Iterator

from rdflib import Graph

__all__ = ["TripleTable"]


class TripleTable:
    """The triples of `graph` without `removed`, then `added` (none of them already in `graph`),
    indexed by subject; read-only."""

    def __init__(self, graph: Graph, added: Iterable[tuple], removed: Container[tuple] = ()) -> None:
        self.graph = graph
        by_subject: dict = {}
        for s, p, o in graph.triples((None, None, None)):
            if (s, p, o) not in removed:
                by_subject.setdefault(s, []).append((p, o))
        for s, p, o in added:
            by_subject.setdefault(s, []).append((p, o))
        self.by_subject: dict[object, list[tuple]] = by_subject  # subject -> [(predicate, object)]
        self._by_predicate: dict[object, dict[object, list]] | None = None  # predicate -> object -> [subject]

    # -- what the serializer asks of its graph besides the triples: rdflib's own answers
    @property
    def base(self):
        return self.graph.base

    @property
    def store(self):
        return self.graph.store

    @property
    def namespace_manager(self):
        return self.graph.namespace_manager

    def namespaces(self):
        return self.graph.namespaces()

    def compute_qname(self, uri, generate: bool = True):
        return self.graph.compute_qname(uri, generate=generate)

    # -- reads, as rdflib.Graph's
    def __len__(self) -> int:
        return sum(len(pairs) for pairs in self.by_subject.values())

    def __contains__(self, triple: tuple) -> bool:
        s, p, o = triple
        return (p, o) in self.by_subject.get(s, ())

    def triples(self, pattern: tuple) -> Iterator[tuple]:
        s, p, o = pattern
        if s is not None:
            for pp, oo in self.by_subject.get(s, ()):
                if (p is None or pp == p) and (o is None or oo == o):
                    yield s, pp, oo
        elif p is not None:
            by_object = self._predicate_index().get(p, {})
            for oo, subjects in ([(o, by_object.get(o, ()))] if o is not None else by_object.items()):
                for ss in subjects:
                    yield ss, p, oo
        else:
            for ss, pairs in self.by_subject.items():
                for pp, oo in pairs:
                    if o is None or oo == o:
                        yield ss, pp, oo

    def subjects(self, predicate=None, object=None) -> Iterator:  # noqa: A002 - rdflib's argument names
        return (s for s, _, _ in self.triples((None, predicate, object)))

    def objects(self, subject=None, predicate=None) -> Iterator:
        return (o for _, _, o in self.triples((subject, predicate, None)))

    def subject_objects(self, predicate=None) -> Iterator[tuple]:
        return ((s, o) for s, _, o in self.triples((None, predicate, None)))

    def predicate_objects(self, subject=None) -> Iterator[tuple]:
        return ((p, o) for _, p, o in self.triples((subject, None, None)))

    def value(self, subject=None, predicate=None, object=None, default=None):  # noqa: A002
        """The first match's missing term, as `Graph.value(..., any=True)`."""
        for s, p, o in self.triples((subject, predicate, object)):
            return s if subject is None else p if predicate is None else o
        return default

    def _predicate_index(self) -> dict[object, dict[object, list]]:
        if self._by_predicate is None:
            index: dict[object, dict[object, list]] = {}
            for s, pairs in self.by_subject.items():
                for p, o in pairs:
                    index.setdefault(p, {}).setdefault(o, []).append(s)
            self._by_predicate = index
        return self._by_predicate
