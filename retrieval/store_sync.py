"""graph.ttl and the SPARQL store it is copied to (KG_GRAPH_STORE=sparql+http://...): every commit that changes the
graph pushes it there, unless the store was edited since kgrag last wrote it; `kg store status|pull|push`.

The store is where other tools read the graph, and may edit it (a SPARQL update, a curation tool). A push replaces
the store's graphs whole, so an edit made there would be lost at the next commit that changes graph.ttl. After each
push the store's graphs are read back and recorded in the catalog (`store_record`: per named graph, its triples and
blank-node trees as the relation tables' record keys them); before the next push the store is read again, and when
it no longer matches, the push is refused (recorded as a failed push, so `kg check` says the store is behind) until the
user chooses: `kg store pull` applies the store's edits since the record to graph.ttl (a three-way merge: what
graph.ttl gained or lost meanwhile stays), `kg store push --force` replaces them with graph.ttl's graph.

The record is of the store's own reading, so how a store spells a value (Oxigraph keeps `"1.0"^^xsd:decimal` as
`"1"`) never looks like an edit; blank-node structures (OWL restrictions, lists) count by content. A push sends
only what differs from the store's graphs as read (named triples by DELETE DATA / INSERT DATA; a graph whose blank-node
structures changed, whole), in one update request. It costs two readings of the store a push and ~100 bytes a triple
in the catalog, only with a store configured.

A server can follow the store (KG_STORE_FOLLOW seconds): it reads the store's graphs at that interval and, when they
changed since the record, pulls them under the write lock as `kg store pull` would. SPARQL 1.1 has no change counter,
so each round reads the whole graph (~1.5 CPU-seconds for the 80k triples of a 20,000-row table).
"""

from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from kg.errors import ConflictError, InputError
from retrieval.catalog import commit
from retrieval.periodic import Periodic

if TYPE_CHECKING:
    from rdflib import Graph

__all__ = ["EDITED", "RECORD_SCHEMA", "StoreFollower", "StoreStatus", "follow_round", "graph_mark", "layout_digest", "pack_owned", "pull", "push", "record", "status", "store_graphs",
           "store_mark", "write_graph"]

EDITED = "the store's graph was changed outside kgrag since kgrag last wrote it"
CHOICE = "`kg store pull` merges its edits into graph.ttl, `kg store push --force` replaces them with graph.ttl's graph"


@dataclass
class StoreStatus:
    store: str
    triples: int  # in the store
    edited: bool | None  # changed since the last push (None: no push has recorded the store's graph)
    only_in_store: int  # named triples and blank-node structures the store holds and graph.ttl does not
    only_in_file: int  # ... and the other way round
    push_failed: str  # why the last push did not happen ("" when it did)

    @property
    def in_sync(self) -> bool:
        return not (self.only_in_store or self.only_in_file)

    def to_json(self) -> dict:
        return {"store": self.store, "triples": self.triples, "edited": self.edited, "in_sync": self.in_sync,
                "only_in_store": self.only_in_store, "only_in_file": self.only_in_file,
                "push_failed": self.push_failed or None}

    def summary(self) -> str:
        lines = [f"store {self.store}: {self.triples} triples"]
        if self.in_sync:
            lines.append("holds graph.ttl's graph")
        else:
            lines.append(f"differs from graph.ttl: {self.only_in_store} triple(s) or structure(s) only in the store, "
                         f"{self.only_in_file} only in graph.ttl")
        if self.edited:
            lines.append(f"{EDITED}: {CHOICE}")
        elif self.edited is None:
            lines.append("no push has recorded what it left in the store (the next push will)")
        if self.push_failed and not self.edited:
            lines.append(f"the last push failed: {self.push_failed}")
        return "\n".join(lines)


def store_mark(spec: str, namespace: str, digest: str) -> str:
    """What the catalog records (`store_graph`) once a graph reached a store: which store, which knowledge
    base in it, which graph; a store or schema set anew is behind until a push."""
    return f"{spec} {namespace} {digest}"


def graph_mark(kb) -> str:
    """`store_mark` of this knowledge base's graph in its configured store (see `layout_digest`)."""
    return store_mark(kb.settings.graph_store, kb.settings.postgres_schema, layout_digest(kb))


def layout_digest(kb) -> str:
    """The graph as the store lays it out: graph.ttl's digest, and when packs have tables of their own, which edges
    those alone state (a table that comes to state, or stops stating, an edge a pack's table states too moves that
    edge between `pack:ID` and `default` without changing graph.ttl)."""
    owned = _owned_keys(kb.root)
    if not owned:
        return kb.graph.digest
    lines = sorted(f"{key}\x1e{name}" for key, name in owned.items())
    return kb.graph.digest + ":" + hashlib.sha256("\n".join(lines).encode("utf-8")).hexdigest()[:16]


def store_graphs(whole: Graph, root: Path | None = None) -> dict[str, Graph]:
    """The graph as the store's named graphs (`kg.stores.layout`: `ontology`, `default`, one `pack:ID` per pack, with
    the edges of the pack's own tables when `root`, the data dir, is given)."""
    from kg.stores.layout import named_graphs
    from ontology import BASE_ONTOLOGY_PATH, KG, load_rdf
    from retrieval.packs.shelf import PACK_CLASS

    owned = pack_owned(root) if root is not None else None
    return named_graphs(whole, load_rdf(BASE_ONTOLOGY_PATH), KG[PACK_CLASS], owned)


def pack_owned(root: Path) -> dict[tuple, str]:
    """Triple -> `pack:ID`, for the edges and aliases a pack's own tables (`retrieval.packs.tables`, in
    DATA_DIR/packs/ID) state and no other table does: the relation-table record's."""
    from kg.relations.ledger import key_edge

    return {key_edge(key): name for key, name in _owned_keys(root).items()}


def _owned_keys(root: Path) -> dict[str, str]:
    """`pack_owned` as the record keys its edges (`edge_key`), read through the record cached per change of its file
    (a push and its mark read it at every commit); empty, and cheap, without packs' tables."""
    from kg.relations.ledger import statements
    from kg.stores.base import pack_graph
    from retrieval.packs.tables import pack_of_table

    record = statements(root)
    out: dict[str, str] = {}
    for table in record.tables:
        pack = pack_of_table(table)
        if pack is None:
            continue
        try:
            name = pack_graph(pack)
        except InputError:  # no pack's name: its edges stay in `default`
            continue
        out.update(dict.fromkeys(record.only_in(table), name))
    return out


def write_graph(store, whole: Graph, root: Path | None = None) -> list[str]:
    """The graph as the store's named graphs (`store_graphs`), all replaced in one request (a SPARQL store takes it
    whole or not at all); a pack's graph whose pack is gone is dropped. Returns the names."""
    graphs = store_graphs(whole, root)
    gone = [name for name in store.names() if name.startswith("pack:") and name not in graphs]
    store.replace_graphs(graphs, drop=gone)
    return sorted(graphs)


def _keys(triples) -> set[str]:
    from kg.rdf_merge import record_keys
    from kg.stores.base import canonical_triple

    return record_keys(canonical_triple(t) for t in triples)


def _graph_keys(quads: dict[str, list]) -> dict[str, set[str]]:
    return {name: _keys(triples) for name, triples in quads.items() if triples}


RECORD_SCHEMA = ("CREATE TABLE IF NOT EXISTS store_record (graph TEXT NOT NULL, key TEXT NOT NULL, "
                 "PRIMARY KEY (graph, key)) WITHOUT ROWID")


def record(db, quads: dict[str, list]) -> None:
    """Remember the store's graphs (name -> triples, as a push or a pull left them) as the base the next push
    compares with; inside the caller's transaction."""
    db.execute(RECORD_SCHEMA)
    db.execute("DELETE FROM store_record")
    db.executemany("INSERT INTO store_record VALUES (?, ?)",
                   ((name, key) for name, keys in _graph_keys(quads).items() for key in keys))


def _base(db) -> dict[str, set[str]] | None:
    """The store's graphs as kgrag last left them; None when no push recorded them (pushed by a kgrag before)."""
    import sqlite3

    try:
        rows = db.execute("SELECT graph, key FROM store_record").fetchall()
    except sqlite3.OperationalError:  # no such table
        return None
    out: dict[str, set[str]] = {}
    for name, key in rows:
        out.setdefault(name, set()).add(key)
    return out or None


def _open(kb):
    from kg.stores import configured_store

    store = configured_store(kb.settings)
    if store is None:
        raise InputError("no SPARQL store is configured: set KG_GRAPH_STORE=sparql+http://HOST:PORT (and "
                         "KG_POSTGRES_SCHEMA, the knowledge base's name in it)")
    return store


def _read(kb) -> dict[str, list]:
    """The store's graphs as they are now (name -> triples): the whole graph, seconds for a 100k-row table's."""
    store = _open(kb)
    try:
        return store.quads()
    finally:
        store.close()


def _edited(kb, keys: dict[str, set[str]]) -> bool | None:
    base = _base(kb.store.db)
    return None if base is None else keys != base


def status(kb) -> StoreStatus:
    """Reads the store (the whole graph: seconds for a graph of a 100k-row table)."""
    held = _read(kb)
    keys = _graph_keys(held)
    theirs, ours = set().union(*keys.values()), _keys(kb.graph.rdf)
    return StoreStatus(kb.settings.graph_store, sum(len(set(t)) for t in held.values()), _edited(kb, keys),
                       len(theirs - ours), len(ours - theirs), commit.get_state(kb.store.db, "store_push_failed") or "")


def _send(store, whole, held: dict[str, list], now: dict[str, set[str]], root: Path) -> dict[str, list]:
    """Make the store's graphs (`held`, keyed `now`) graph.ttl's in one update request: the named triples that
    differ, a graph whose blank-node structures differ replaced whole, the graphs of packs that are gone dropped.
    Returns the graphs sent (name -> triples)."""
    from kg.rdf_merge import is_tree_key, key_triple, triple_key
    from kg.stores.base import canonical_triple

    graphs = store_graphs(whole, root)
    removed, added, replaced = {}, {}, {}
    for name, graph in graphs.items():
        mine, theirs = _keys(graph), now.get(name, set())
        gone, new = theirs - mine, mine - theirs
        if any(is_tree_key(k) for k in gone | new):
            replaced[name] = graph
            continue
        removed[name] = [key_triple(k) for k in gone]
        added[name] = [t for t in graph if triple_key(canonical_triple(t)) in new] if new else []
    store.change_graphs(removed, added, replaced, drop=[name for name in held if name not in graphs])
    return {name: list(graph) for name, graph in graphs.items()}


def push(kb, strict: bool = False, force: bool = False, always: bool = False) -> str | None:
    """Push graph.ttl's graph when it changed since the last push (`Commits.push_graph`, after every commit; `always`:
    whether or not, as `kg store push`), or refuse when the store was edited since (unless `force`). Only what differs
    is sent. Returns why the push did not happen, None when the store holds this graph. A store that fails or was
    edited does not fail the commit (`strict`: it raises)."""
    mark = graph_mark(kb)
    if not (force or always) and commit.get_state(kb.store.db, "store_graph") == mark:
        return None
    failure, edited, left = None, False, None
    try:
        store = _open(kb)  # `kg store push` with no store configured: an error saying what to set (strict)
        try:
            held = store.quads()
            now = _graph_keys(held)
            if not force and _edited(kb, now):
                edited = True
            else:
                sent = _send(store, kb.graph.rdf, held, now, kb.root)
                try:
                    left = store.quads()
                except Exception:  # noqa: BLE001 - sent whole, not read back: what was sent is the record
                    left = sent
        finally:
            store.close()
    except Exception as exc:  # the commit is written: whatever failed, record it and let the next one retry
        if strict:
            raise
        failure = str(exc)
        logging.getLogger("kgrag").warning("committed, but the graph did not reach the SPARQL store (%s); the next "
                                           "commit pushes it again, `kg check` says the store is behind", exc)
    if edited:
        failure = f"{EDITED}: {CHOICE}"
        if strict:
            raise ConflictError(f"not pushed: {failure}")
        logging.getLogger("kgrag").warning("committed to graph.ttl, not pushed: %s", failure)
    with kb.store.transaction():
        if failure is None:
            commit.set_state(kb.store.db, "store_graph", mark)
            record(kb.store.db, left)
        commit.set_state(kb.store.db, "store_push_failed", failure or "")
    return failure


def pull(kb) -> dict:
    """The store's edits since the last push applied to graph.ttl (a commit: the chunks are linked again, as after an
    import); what graph.ttl gained or lost since stays. Without a record of the last push, graph.ttl becomes the
    store's graph. Call inside `kb.writing()` (`kg store pull`)."""
    from rdflib import Graph

    from kg.rdf_merge import new_triples, parts, remove_keys
    from kg.stores import canonical
    from kg.stores.base import canonical_triple
    from retrieval.indexing import sync_index_words
    from retrieval.write_path import relink

    quads = _read(kb)
    held = Graph()
    held.addN((*canonical_triple(t), held) for triples in quads.values() for t in triples)
    if not len(held):
        raise InputError(f"the SPARQL store ({kb.settings.graph_store}) holds no graph for "
                         f"'{kb.settings.postgres_schema}': nothing to pull (`kg store push` copies graph.ttl there)")
    ours_graph = canonical(kb.graph.rdf)
    recorded = _base(kb.store.db)
    theirs, ours = _keys(held), _keys(ours_graph)
    base = ours if recorded is None else set().union(*recorded.values())
    gained, lost = theirs - base, base - theirs
    result = {"added": len(gained - ours), "removed": len(lost & ours), "triples": len(held),
              "merged": recorded is not None}
    if result["added"] or result["removed"]:
        kb.graph.view  # noqa: B018 - queries keep reading the view built before the triples change
        remove_keys(ours_graph, sorted(lost & ours))
        ours_graph.addN((s, p, o, ours_graph) for s, p, o in new_triples(ours_graph, parts(held, gained - ours)))
        for prefix, namespace in kb.graph.rdf.namespaces():  # graph.ttl keeps its prefixes
            ours_graph.bind(prefix, namespace, override=True, replace=True)
        kb.graph.rdf = ours_graph
        kb.graph.save()
        kb.graph.invalidate()
        kb.commits.mark("store-pull", "graph")
        kb._graph_changed()
        result["chunks_relinked"] = relink(kb)
        kb.commits.mark("store-pull", "mentions")
        result["chunks_reindexed"] = sync_index_words(kb)
    else:
        result["chunks_relinked"] = result["chunks_reindexed"] = 0
    with kb.store.transaction():  # the store's graphs as of now are the base; graph.ttl is pushed when it differs
        record(kb.store.db, quads)
        commit.set_state(kb.store.db, "store_push_failed", "")
        local = _keys(kb.graph.rdf) if result["added"] or result["removed"] else ours  # graph.ttl unchanged: its keys
        if not (local ^ theirs):  # the store holds graph.ttl's graph: nothing to push
            commit.set_state(kb.store.db, "store_graph", graph_mark(kb))
    result["summary"] = (f"graph.ttl took the store's edits: {result['added']} triple(s) or structure(s) added there, "
                         f"{result['removed']} removed there; {result['chunks_relinked']} chunk(s) linked again"
                         + ("" if result["merged"] else " (no record of the last push: graph.ttl now holds the store's graph)"))
    return result



def follow_round(kb) -> dict | None:
    """One reading of the store by a server following it: when its graphs changed since kgrag last wrote or read
    them, the edits are pulled into graph.ttl (a commit, under the write lock; `pull` reads the store again there, so a
    push under way is finished first). None when the store is as recorded, or holds no record to compare with (no push
    since the record was kept: the next commit's push makes one)."""
    keys = _graph_keys(_read(kb))
    with kb.reading():
        if not _edited(kb, keys):
            return None
    with kb.writing("store-pull"):  # caught up with the other servers' commits: one of them may have pulled it
        return pull(kb) if _edited(kb, keys) else None


class StoreFollower(Periodic):
    """`follow_round` every `interval` seconds (KG_STORE_FOLLOW) in a long-running process."""

    name = "kg-store-follower"

    def __init__(self, kb, interval: float) -> None:
        super().__init__(interval)
        self.kb, self.pulls = kb, 0

    def round(self) -> None:
        log = logging.getLogger("kgrag")
        try:
            result = follow_round(self.kb)
        except Exception as exc:  # noqa: BLE001 - the store down, a lock held: the server keeps serving; next round
            self.errors += 1
            log.warning("could not follow the SPARQL store this round: %s", exc)
            return
        self.rounds += 1
        if result is not None:
            self.pulls += 1
            log.info("followed the SPARQL store: %s", result["summary"])
