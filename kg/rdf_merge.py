"""An RDF file merged into the graph without copies of what the graph already holds: a graph and the file's triples in, the triples to add out.

rdflib gives the blank nodes of every parse new identities, so `graph += incoming` added a second copy of
every anonymous class expression, restriction, list and owl:Axiom each time the same file was imported
again (and `kg export --format turtle` imported back doubled every edge's weight and note). Here a blank
node is compared by its content: its triples, each blank object replaced by the content of its own
triples, sorted (OWL's blank nodes are trees: restrictions, lists, annotated axioms). A tree of the file
equal to one the graph already has in the same place (under the same subject and predicate, or on its own)
is not added again. What differs is added, as for named triples: an import adds, it never removes.
"""

from __future__ import annotations

from collections.abc import Iterator

from rdflib import BNode, Graph

__all__ = ["new_triples"]


def _content(graph: Graph, node: BNode, path: frozenset = frozenset()) -> str:
    if node in path:  # not a tree after all: compare no further down
        return "[...]"
    parts = []
    for p, o in graph.predicate_objects(node):
        value = _content(graph, o, path | {node}) if isinstance(o, BNode) else o.n3()
        parts.append(f"{p.n3()} {value}")
    return "[" + " ; ".join(sorted(parts)) + "]"


def _tree(graph: Graph, root: BNode) -> Iterator[tuple]:
    """The triples of `root` and of the blank nodes below it."""
    todo, seen = [root], set()
    while todo:
        node = todo.pop()
        if node in seen:
            continue
        seen.add(node)
        for triple in graph.triples((node, None, None)):
            yield triple
            if isinstance(triple[2], BNode):
                todo.append(triple[2])


def _candidates(graph: Graph, incoming: Graph, root: BNode) -> set:
    """The graph's blank nodes that could equal `root`: those sharing its most selective named (predicate,
    object) pair (an axiom's annotatedSource, a restriction's onProperty), not every blank node of the graph."""
    best: set | None = None
    for p, o in incoming.predicate_objects(root):
        if isinstance(o, BNode):
            continue
        found = {s for s in graph.subjects(p, o) if isinstance(s, BNode)}
        if best is None or len(found) < len(best):
            best = found
        if not best:
            break
    if best is None:  # only blank objects (an RDF list's cell holding a restriction): every blank subject
        best = {s for s in graph.subjects() if isinstance(s, BNode)}
    return best


def new_triples(graph: Graph, incoming: Graph) -> list[tuple]:
    """The triples of `incoming` to add to `graph`: all but the blank-node trees the graph already has in the same place."""
    under_blank = {o for s, _, o in incoming if isinstance(s, BNode) and isinstance(o, BNode)}
    roots = {s for s in incoming.subjects() if isinstance(s, BNode) and s not in under_blank}
    skip: set[tuple] = set()
    for root in roots:
        attached = [(s, p) for s, p in incoming.subject_predicates(root) if not isinstance(s, BNode)]
        content = _content(incoming, root)
        if attached:
            same = all(any(isinstance(o, BNode) and _content(graph, o) == content for o in graph.objects(s, p))
                       for s, p in attached)
        else:
            same = any(not any(True for _ in graph.subject_predicates(b)) and _content(graph, b) == content
                       for b in _candidates(graph, incoming, root))
        if same:
            skip.update(_tree(incoming, root))
            skip.update((s, p, root) for s, p in attached)
    return [t for t in incoming if t not in skip and t not in graph]
