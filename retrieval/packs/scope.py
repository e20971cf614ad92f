"""A question's linked entities and words in -> its `Routing` and the documents it may be answered from (the query path's one call into packs), and hits kept to those documents."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from kg.settings import Settings
from retrieval.catalog.packs import PackStore
from retrieval.graph.seeds import GraphEvidence
from retrieval.packs.llm import LlmRouter
from retrieval.packs.routing import Routing, RoutingRules

__all__ = ["ROUTING_PROBE", "Scope", "llm_router", "route_query", "routing_rules"]

ROUTING_PROBE = 50  # BM25 passages of the whole knowledge base that routing looks at


@dataclass(frozen=True)
class Scope:
    """Where one query searches: the documents (None = all), and the catalog and graph evidence that
    expansion reads (those of the chosen packs only, so an entity is as specific as in those packs alone)."""

    doc_ids: frozenset[str] | None
    store: object
    evidence: GraphEvidence


_scoped: dict[tuple, tuple[PackStore, GraphEvidence]] = {}


def route_query(kb, text: str, mentions, terms, grams, packs: Sequence[str] | None) -> tuple[Routing | None, Scope]:
    """(routing, scope); (None, the whole knowledge base) without packs (nothing changes)."""
    whole = Scope(None, kb.store, kb.evidence)
    if not packs and not (kb.settings.routing and kb.packs):
        return None, whole
    probe = [] if packs else kb.index.search(terms, ROUTING_PROBE, grams=grams)
    routing = kb.packs.route(text, mentions, probe, forced=packs, rules=routing_rules(kb.settings),
                             llm=llm_router(kb.settings))
    doc_ids = kb.packs.scope(routing)
    if doc_ids is None:
        return routing, whole
    store, evidence = _pack_evidence(kb, tuple(sorted(routing.pack_ids())))
    return routing, Scope(doc_ids, store, evidence)


def _pack_evidence(kb, packs: tuple[str, ...]) -> tuple[PackStore, GraphEvidence]:
    """One scoped store and evidence per set of packs, kept until the catalog or the graph changes."""
    db = kb.store.db
    key = (id(kb), packs, db.total_changes, db.execute("PRAGMA data_version").fetchone()[0], kb.graph.view)
    cached = _scoped.get(key)
    if cached is None:
        for old in [k for k in _scoped if k[0] == id(kb)]:
            del _scoped[old]
        store = PackStore(kb.store, packs)
        cached = _scoped[key] = (store, GraphEvidence(store, kb.graph))
    return cached


def routing_rules(settings: Settings) -> RoutingRules:
    return RoutingRules(second_share=settings.route_second_share, min_confidence=settings.route_min_confidence,
                        min_known=settings.route_min_known)


def llm_router(settings: Settings) -> LlmRouter | None:
    if not settings.llm_model:
        return None
    return LlmRouter(model=settings.llm_model, timeout=settings.llm_timeout, api_base=settings.llm_api_base,
                     mock_response=settings.llm_mock_response)
