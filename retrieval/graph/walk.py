"""The graph a query walks: graph.ttl's (in memory, the default) or, with KG_GRAPH_WALK=store, the SPARQL store's graph as
it is when the query runs, so an edge another tool adds to the store or takes out of it counts at once, without a pull.

`GraphWalk(kb).view()` gives one query (or one answer, one `kg entity`) its view: the in-memory `GraphView`, or a
`WalkedView` that asks the store (`kg.stores.store_view.StoreGraphView`: its graphs and its ontology once, then one
SELECT per hop of the walk). An entity only the store holds is walked to and through, named by its label there; but a
question names it, and a passage is found as being about it, only once a pull (`kg store pull`, `KG_STORE_FOLLOW`) has
brought it into graph.ttl and the chunks were linked to it. A store that does not answer within KG_GRAPH_WALK_TIMEOUT
seconds, or refuses, leaves the query to graph.ttl's graph, and the result says so (`note()`); it is not asked again
for RETRY_AFTER seconds, so the queries in between do not wait on it. One failing in the middle of a walk leaves the
rest of that walk to graph.ttl.
"""

from __future__ import annotations

import threading
import time

from kg.files import masked

__all__ = ["RETRY_AFTER", "GraphWalk", "WalkedView"]

RETRY_AFTER = 30.0  # seconds a store that failed is left alone


class GraphWalk:
    """Held by a knowledge base: which view each query walks, and when the store last failed."""

    def __init__(self, kb) -> None:
        self.kb = kb
        self._lock = threading.Lock()
        self._failed: tuple[float, str] | None = None  # (time.monotonic(), why) of the store's last failure

    @property
    def on_store(self) -> bool:
        return self.kb.settings.graph_walk == "store"

    def view(self):
        """The view one query walks (a fresh one each time: the store is read as it is now)."""
        return WalkedView(self, self.kb.graph.view) if self.on_store else self.kb.graph.view

    def store_view(self, local):
        """(a `StoreGraphView` over the store, None) or (None, why graph.ttl is walked instead)."""
        with self._lock:
            failed = self._failed
        if failed is not None and time.monotonic() - failed[0] < RETRY_AFTER:
            left = RETRY_AFTER - (time.monotonic() - failed[0])
            return None, f"{failed[1]} (asked again in {left:.0f} s)"
        from kg.stores import configured_store
        from kg.stores.store_view import StoreGraphView

        try:
            store = configured_store(self.kb.settings, timeout=self.kb.settings.graph_walk_timeout)
            return StoreGraphView(store, local.entities, discover=True), None  # asks for its graphs and ontology
        except Exception as exc:  # noqa: BLE001 - whatever the store did, the query goes on with graph.ttl
            return None, self.failed(exc)

    def failed(self, exc: Exception) -> str:
        why = masked(str(exc)) or type(exc).__name__
        with self._lock:
            self._failed = (time.monotonic(), why)
        return why

    def store_name(self) -> str:
        return masked(self.kb.settings.graph_store[len("sparql+"):])


class WalkedView:
    """One query's view with KG_GRAPH_WALK=store: the store's edges (asked on first use), graph.ttl's where it failed;
    the entities, their labels and everything else `GraphView` answers are the knowledge base's."""

    def __init__(self, walk: GraphWalk, local) -> None:
        self.walk, self.local = walk, local
        self._store = None
        self._entities = local.entities
        self._opened = False
        self.problem: str | None = None  # why graph.ttl was walked (all of it, or from some hop on)

    def _view(self):
        if not self._opened:
            self._opened = True
            self._store, self.problem = self.walk.store_view(self.local)
            if self._store is not None:
                self._entities = self._store.entities  # kept if the store fails later: the walk may have named them
        return self._store

    @property
    def entities(self):
        """The knowledge base's entities, and (walking the store) those only the store holds that the walk reached."""
        self._view()
        return self._entities

    @property
    def vocab(self):
        view = self._view()
        return view.vocab if view is not None else self.local.vocab

    def prefetch(self, iris) -> None:
        view = self._view()
        if view is not None:
            view.prefetch(iris)

    def neighbours(self, iri: str):
        view = self._view()
        if view is not None:
            try:
                return view.neighbours(iri)
            except Exception as exc:  # noqa: BLE001 - the rest of the walk goes on in graph.ttl
                self._failed_midway(exc)
        return self.local.neighbours(iri)

    def _failed_midway(self, exc: Exception) -> None:
        self.problem = self.walk.failed(exc) + " (from the middle of the walk on)"
        self._store = None

    def named(self, label: str):
        """An entity only the store holds, by its label there (None: none, or graph.ttl's graph is walked)."""
        view = self._view()
        if view is None:
            return None
        try:
            return view.named(label)
        except Exception as exc:  # noqa: BLE001 - as a failing hop: the rest goes on in graph.ttl
            self._failed_midway(exc)
            return None

    def unstated(self, edge: tuple[str, str, str]) -> str:
        """Where an edge that no table states is held: graph.ttl (made in Protégé), or only the store."""
        source = edge[0]
        return "graph.ttl" if any(e.triple() == edge for e in self.local.neighbours(source)) else "the SPARQL store"

    def __getattr__(self, name: str):
        return getattr(self.local, name)  # resolve, surfaces, labels...: the knowledge base's entities

    def note(self) -> dict | None:
        """What a result says about the graph it walked (None: nothing asked for an entity's edges)."""
        if not self._opened:
            return None
        walked = "store" if self._store is not None and self.problem is None else "graph.ttl"
        return {"walked": walked, "store": self.walk.store_name(), **({"problem": self.problem} if self.problem else {})}
