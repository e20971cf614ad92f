"""A question's linked entities and words in -> its `Routing` and the documents it may be answered from (the query path's one call into packs), and hits kept to those documents."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from kg.endpoint import endpoint_key
from kg.settings import Settings
from retrieval.catalog.packs import PackStore, outside_documents
from retrieval.graph.seeds import GraphEvidence
from retrieval.index.scoped import ScopedIndex
from retrieval.packs.llm import LlmRouter
from retrieval.packs.routing import Routing, RoutingRules

__all__ = ["Scope", "llm_router", "route_query", "routing_rules"]


@dataclass(frozen=True)
class Scope:
    """Where one query searches: the documents (None = all), the text index to search them with (inside
    packs: scored with the chosen packs' own statistics, as if they were an index of their own), and the
    catalog and graph evidence that expansion reads (those of the chosen packs only, so an entity is as
    specific as in those packs alone)."""

    doc_ids: frozenset[str] | None
    store: object
    evidence: GraphEvidence
    text_hits: list | None = None  # the text search's hits when routing's probe already holds them (a fallback)
    index: object = None  # the `TextIndex` the query path searches: the knowledge base's, or a `ScopedIndex`


_scoped: dict[tuple, tuple[PackStore, GraphEvidence]] = {}


def route_query(kb, text: str, mentions, terms, grams, packs: Sequence[str] | None,
                depth: int | None = None) -> tuple[Routing | None, Scope]:
    """(routing, scope); (None, the whole knowledge base) without packs (nothing changes). `depth`: how
    many text hits the query path reads (routing judges the first `bm25_candidates` of them)."""
    whole = Scope(None, kb.store, kb.evidence, index=kb.index)
    if not packs and not (kb.settings.routing and kb.packs):
        return None, whole
    # The probe is the text search the query makes anyway: a fallback uses it as it is. Inside packs
    # the packs are searched again with their own statistics: the probe's scores are the mixture's.
    limit = kb.settings.bm25_candidates
    probe = [] if packs else kb.index.search(terms, limit, grams=grams, beyond=max(0, (depth or limit) - limit))
    routing = kb.packs.route(text, mentions, probe[:limit], forced=packs, rules=routing_rules(kb.settings),
                             llm=llm_router(kb.settings))
    if routing.out_of_scope and not packs and (outside := outside_documents(kb.store.db)):
        # No pack has a basis for it, but the user's own documents (in no pack) were never the packs' to judge:
        # they are searched, as when there are no packs; the answer stage then says whether they hold an answer.
        routing.note = "; ".join(filter(None, [routing.note, routing.out_of_scope.split(": ", 1)[-1]]))
        routing.out_of_scope, routing.outside = None, True
        store, evidence, index = _pack_evidence(kb, (), outside)
        return routing, Scope(outside, store, evidence, index=index)
    doc_ids = kb.packs.scope(routing)
    if doc_ids is None:
        return routing, Scope(None, kb.store, kb.evidence, probe if not packs else None, index=kb.index)
    store, evidence, index = _pack_evidence(kb, tuple(sorted(routing.pack_ids())), doc_ids)
    return routing, Scope(doc_ids, store, evidence, index=index)


def _pack_evidence(kb, packs: tuple[str, ...], doc_ids: frozenset[str]):
    """One scoped store, evidence and text index per set of packs, kept until the catalog or the graph
    changes (the scoped index counts its statistics again itself after an index commit)."""
    db = kb.store.db
    state = (id(kb), db.total_changes, db.execute("PRAGMA data_version").fetchone()[0], kb.graph.view)
    for old in [k for k in _scoped if k[0] == state[0] and k[1:4] != state[1:]]:
        del _scoped[old]  # written to since: every scope of this knowledge base is stale
    key = (*state, packs)
    cached = _scoped.get(key)
    if cached is None or cached[2].doc_ids != doc_ids or cached[2].index is not kb.index:
        store = PackStore(kb.store, packs)
        cached = _scoped[key] = (store, GraphEvidence(store, kb.graph),
                                     kb.index.scoped(doc_ids) if hasattr(kb.index, "scoped") else ScopedIndex(kb.index, doc_ids))
    return cached


def routing_rules(settings: Settings) -> RoutingRules:
    return RoutingRules(second_share=settings.route_second_share, min_confidence=settings.route_min_confidence,
                        min_known=settings.route_min_known, min_coverage=settings.route_min_coverage)


def llm_router(settings: Settings) -> LlmRouter | None:
    """The model that routes, or None (the rules route): not asked to (KG_ROUTE_WITH_MODEL), none configured, or its key
    variable unset (the answer says so)."""
    if not settings.route_with_model or not settings.llm_model:
        return None
    key, problem = endpoint_key(settings.llm_model, settings.llm_base_url or None, settings.llm_api_key_env or None)
    if problem:
        return None
    return LlmRouter(model=settings.llm_model, timeout=settings.llm_timeout, api_base=settings.llm_base_url or None,
                     mock_response=settings.llm_mock_response, api_key=key)
