"""graph.ttl and the SPARQL store it is copied to (KG_GRAPH_STORE=sparql+http://...): every commit that changes the
graph pushes it there, unless the store was edited since kgrag last wrote it; `kg store status|pull|push`.

The store is where other tools read the graph, and may edit it (a SPARQL update, a curation tool). A push replaces
the store's graphs whole, so an edit made there would be lost at the next commit that changes graph.ttl. After each
push the store's graph is read back and recorded in the catalog (`store_base`: its named triples and blank-node
trees as the relation tables' record keys them); before the next push the store is read again, and when it no
longer matches, the push is refused (recorded as a failed push, so `kg check` says the store is behind) until the
user chooses: `kg store pull` applies the store's edits since the record to graph.ttl (a three-way merge: what
graph.ttl gained or lost meanwhile stays), `kg store push --force` replaces them with graph.ttl's graph.

The record is of the store's own reading, so how a store spells a value (Oxigraph keeps `"1.0"^^xsd:decimal` as
`"1"`) never looks like an edit; blank-node structures (OWL restrictions, lists) count by content. It costs a
reading of the store and ~100 bytes a triple in the catalog, only with a store configured.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from kg.errors import ConflictError, InputError
from retrieval.catalog import commit

__all__ = ["EDITED", "StoreStatus", "pull", "push", "record", "status"]

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


def _keys(graph) -> set[str]:
    from kg.rdf_merge import record_keys
    from kg.stores.base import canonical_triple

    return record_keys(canonical_triple(t) for t in graph)


def record(db, graph) -> set[str]:
    """Remember `graph` (the store's triples, as a push or a pull left them) as the base the next push compares
    with; inside the caller's transaction. Returns its keys."""
    keys = _keys(graph)
    db.execute("CREATE TABLE IF NOT EXISTS store_base (key TEXT PRIMARY KEY) WITHOUT ROWID")
    db.execute("DELETE FROM store_base")
    db.executemany("INSERT INTO store_base VALUES (?)", ((k,) for k in keys))
    return keys


def _base(db) -> set[str] | None:
    """The store's graph as kgrag last left it; None when no push recorded it (a knowledge base pushed before)."""
    import sqlite3

    try:
        keys = {row[0] for row in db.execute("SELECT key FROM store_base")}
    except sqlite3.OperationalError:  # no such table
        return None
    return keys or None


def _open(kb):
    from kg.stores import configured_store

    store = configured_store(kb.settings)
    if store is None:
        raise InputError("no SPARQL store is configured: set KG_GRAPH_STORE=sparql+http://HOST:PORT (and "
                         "KG_POSTGRES_SCHEMA, the knowledge base's name in it)")
    return store


def _edited(kb, keys: set[str]) -> bool | None:
    base = _base(kb.store.db)
    return None if base is None else keys != base


def status(kb) -> StoreStatus:
    """Reads the store (the whole graph: seconds for a graph of a 100k-row table)."""
    store = _open(kb)
    try:
        held = store.triples()
    finally:
        store.close()
    theirs, ours = _keys(held), _keys(kb.graph.rdf)
    return StoreStatus(kb.settings.graph_store, len(set(held)), _edited(kb, theirs), len(theirs - ours), len(ours - theirs),
                       commit.get_state(kb.store.db, "store_push_failed") or "")


def push(kb, strict: bool = False, force: bool = False) -> str | None:
    """Push graph.ttl's graph when it changed since the last push (`Commits.push_graph`, after every commit), or
    refuse when the store was edited since (unless `force`). Returns why it did not happen, None when the store
    holds this graph. A store that fails or was edited does not fail the commit (`strict`: it raises)."""
    from kg.stores import configured_store
    from retrieval.migration import store_mark, write_graph

    mark = store_mark(kb.settings.graph_store, kb.settings.postgres_schema, kb.graph.digest)
    if not force and commit.get_state(kb.store.db, "store_graph") == mark:
        return None
    failure, edited, left = None, False, None
    try:
        store = configured_store(kb.settings)
        try:
            if not force and _edited(kb, _keys(store.triples())):
                edited = True
            else:
                write_graph(store, kb.graph.rdf)
                left = store.triples()
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
    from kg.rdf_merge import new_triples, parts, remove_keys
    from kg.stores import canonical
    from retrieval.indexing import sync_index_words
    from retrieval.migration import store_mark
    from retrieval.write_path import relink

    store = _open(kb)
    try:
        held = canonical(store.read())
    finally:
        store.close()
    if not len(held):
        raise InputError(f"the SPARQL store ({kb.settings.graph_store}) holds no graph for "
                         f"'{kb.settings.postgres_schema}': nothing to pull (`kg store push` copies graph.ttl there)")
    ours_graph = canonical(kb.graph.rdf)
    theirs, ours, base = _keys(held), _keys(ours_graph), _base(kb.store.db)
    merged = base is not None
    base = ours if base is None else base
    gained, lost = theirs - base, base - theirs
    result = {"added": len(gained - ours), "removed": len(lost & ours), "triples": len(held), "merged": merged}
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
    with kb.store.transaction():  # the store's graph as of now is the base; graph.ttl is pushed when it differs
        record(kb.store.db, held)
        commit.set_state(kb.store.db, "store_push_failed", "")
        if not (_keys(kb.graph.rdf) ^ theirs):  # the store holds graph.ttl's graph: nothing to push
            commit.set_state(kb.store.db, "store_graph",
                             store_mark(kb.settings.graph_store, kb.settings.postgres_schema, kb.graph.digest))
    result["summary"] = (f"{result['added']} triple(s) or structure(s) from the store, {result['removed']} removed as "
                         f"they were there; {result['chunks_relinked']} chunk(s) linked again"
                         + ("" if merged else " (no record of the last push: graph.ttl now holds the store's graph)"))
    return result
