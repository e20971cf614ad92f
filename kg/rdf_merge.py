"""An RDF file merged into the graph without copies of what the graph already holds: a graph and the file's triples in, the triples to add out.

rdflib gives the blank nodes of every parse new identities, so `graph += incoming` added a second copy of
every anonymous class expression, restriction, list and owl:Axiom each time the same file was imported
again (and `kg export --format turtle` imported back doubled every edge's weight and note). Here a blank
node is compared by its content: its triples, each blank object replaced by the content of its own
triples, sorted (OWL's blank nodes are trees: restrictions, lists, annotated axioms). A tree of the file
equal to one the graph already has in the same place (under the same subject and predicate, or on its own)
is not added again. What differs is added, as for named triples.

A file imported again also takes back what it no longer holds (`rdf_keys`, `remove_keys`): the data dir's record of
imported tables (`kg/relations/ledger.py`) keeps, per RDF file too, the triples and blank-node trees its last import
held; a triple or tree deleted from the file since (in Protégé) leaves the graph, unless another imported table or
file still holds it. A triple made anywhere else (in graph.ttl itself, by a relation table before the record existed)
is in no file's record and stays.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from rdflib import BNode, Graph, Literal, URIRef
from rdflib.util import from_n3

from kg.relations.ledger import edge_key, key_edge

__all__ = ["file_trees", "is_tree_key", "key_triple", "new_triples", "parts", "rdf_keys", "record_keys", "remove_keys",
           "triple_key"]

_SEP = "\x1f"
_N3 = "\x1en3"  # a triple whose literal has a language or a datatype, each term in N3
_TREE = "\x1etree"  # a blank-node tree: where it hangs (subject, predicate; "" for a root of its own) and its content


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


def _root_contents(graph: Graph) -> dict[str, list[BNode]]:
    """The graph's blank nodes that hang under nothing (an owl:Axiom annotating an edge), by content: read once a
    merge, since comparing each of a file's roots with every such node of the graph is quadratic (a 20k-row table's
    graph exported and imported back took 231 CPU-s that way)."""
    roots: dict[str, list[BNode]] = {}
    for b in {x for x in graph.subjects() if isinstance(x, BNode)}:
        if next(graph.subject_predicates(b), None) is None:
            roots.setdefault(_content(graph, b), []).append(b)
    return roots


def file_trees(incoming: Graph) -> list[tuple[BNode, str, list[tuple]]]:
    """The file's blank-node trees: each root (a blank node under no other), its content, and the (subject, predicate)
    pairs it hangs under (none for an owl:Axiom); read once an import, by `new_triples` and `rdf_keys` alike."""
    under_blank = {o for s, _, o in incoming if isinstance(s, BNode) and isinstance(o, BNode)}
    roots = {s for s in incoming.subjects() if isinstance(s, BNode) and s not in under_blank}
    return [(root, _content(incoming, root),
             [(s, p) for s, p in incoming.subject_predicates(root) if not isinstance(s, BNode)]) for root in roots]


def new_triples(graph: Graph, incoming: Graph, trees: list | None = None) -> list[tuple]:
    """The triples of `incoming` to add to `graph`: all but the blank-node trees the graph already has in the same place
    (`trees`: `file_trees(incoming)`, when already read)."""
    skip: set[tuple] = set()
    graph_roots: dict[str, list[BNode]] | None = None
    for root, content, attached in file_trees(incoming) if trees is None else trees:
        if attached:
            same = all(any(isinstance(o, BNode) and _content(graph, o) == content for o in graph.objects(s, p))
                       for s, p in attached)
        else:
            if graph_roots is None:
                graph_roots = _root_contents(graph)
            same = content in graph_roots
        if same:
            skip.update(_tree(incoming, root))
            skip.update((s, p, root) for s, p in attached)
    return [t for t in incoming if t not in skip and t not in graph]


def _key(triple: tuple) -> str:
    """A named triple as the relation tables' record writes an edge or an alias, when it can (so a table's row and a
    file's triple are one key); in N3 when its literal has a language or a datatype."""
    s, p, o = triple
    if isinstance(o, Literal) and (o.language or o.datatype):
        return _SEP.join((_N3, s.n3(), p.n3(), o.n3()))
    return edge_key(triple)


def rdf_keys(incoming: Graph, trees: list | None = None) -> list[str]:
    """What an RDF file holds, as record keys: its named triples, and its blank-node trees by place and content."""
    keys = [_key(t) for t in incoming if not any(isinstance(x, BNode) for x in t)]
    for _root, content, attached in file_trees(incoming) if trees is None else trees:
        keys += [_tree_key(s, p, content) for s, p in attached] or [_tree_key("", "", content)]
    return list(dict.fromkeys(keys))


def _tree_key(s, p, content: str) -> str:
    """A blank-node tree's key: where it hangs (subject, predicate; "" for a root of its own) and its content."""
    return _SEP.join((_TREE, str(s), str(p), content))


def record_keys(triples: Iterable[tuple]) -> set[str]:
    """`rdf_keys` of the graph `triples` make, without making it: only the triples with a blank node go into a
    graph (for their trees); a graph of 80k named triples is keyed in a fraction of the time."""
    keys, blank = set(), Graph()
    for t in triples:
        if any(isinstance(x, BNode) for x in t):
            blank.add(t)
        else:
            keys.add(_key(t))
    if len(blank):
        keys.update(k for k in rdf_keys(blank) if k.startswith(_TREE))
    return keys


def is_tree_key(key: str) -> bool:
    return key.startswith(_TREE)


def key_triple(key: str) -> tuple:
    """The named triple a record key stands for (not a blank-node tree's key)."""
    if key.startswith(_N3):
        _, s, p, o = key.split(_SEP)
        return from_n3(s), from_n3(p), from_n3(o)
    return key_edge(key)


def parts(graph: Graph, keys: set[str]) -> Graph:
    """What of `graph` the record keys `keys` name (as `rdf_keys` makes them): its named triples and its blank-node
    trees with where they hang; `new_triples` then adds it to another graph without doubling a tree."""
    out = Graph()
    out.addN((s, p, o, out) for s, p, o in graph if not any(isinstance(x, BNode) for x in (s, p, o))
             and _key((s, p, o)) in keys)
    for root, content, attached in file_trees(graph):
        places = [(s, p) for s, p in attached if _tree_key(s, p, content) in keys]
        if places or (not attached and _tree_key("", "", content) in keys):
            out.addN((s, p, o, out) for s, p, o in _tree(graph, root))
            out.addN((s, p, root, out) for s, p in places)
    return out


def remove_keys(graph: Graph, keys: list[str]) -> int:
    """Remove from `graph` the triples and trees `keys` name (what a file held at its last import and holds no more);
    returns how many triples went."""
    before = len(graph)
    roots: dict[str, list[BNode]] | None = None
    for key in keys:
        if key.startswith(_TREE):
            _, s, p, content = key.split(_SEP, 3)
            if s:
                for o in list(graph.objects(URIRef(s), URIRef(p))):
                    if isinstance(o, BNode) and _content(graph, o) == content:
                        _drop_tree(graph, o)
                        graph.remove((URIRef(s), URIRef(p), o))
                        break
                continue
            if roots is None:  # blank roots of their own (owl:Axiom), by content: read once, only when one goes
                roots = _root_contents(graph)
            found = roots.get(content)
            if found:
                _drop_tree(graph, found.pop())
        else:
            graph.remove(key_triple(key))
    return before - len(graph)


def _drop_tree(graph: Graph, root: BNode) -> None:
    for triple in list(_tree(graph, root)):
        graph.remove(triple)


triple_key = _key  # a named triple's record key (`rdf_keys` of a graph holding only it)
