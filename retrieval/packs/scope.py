"""A question's linked entities and words in -> its `Routing` and the documents it may be answered from (the query path's one call into packs), and hits kept to those documents."""

from __future__ import annotations

from collections.abc import Sequence

from kg.settings import Settings
from retrieval.packs.llm import LlmRouter
from retrieval.packs.routing import Routing, RoutingRules

__all__ = ["ROUTING_PROBE", "in_scope", "llm_router", "route_query", "routing_rules"]

ROUTING_PROBE = 50  # BM25 passages of the whole knowledge base that routing looks at


def route_query(kb, text: str, mentions, terms, grams, packs: Sequence[str] | None
                ) -> tuple[Routing | None, frozenset[str] | None]:
    """(routing, documents in scope); (None, None) for a knowledge base without packs (nothing changes)."""
    if not packs and not (kb.settings.routing and kb.packs):
        return None, None
    probe = [] if packs else kb.index.search(terms, ROUTING_PROBE, grams=grams)
    routing = kb.packs.route(text, mentions, probe, forced=packs, rules=routing_rules(kb.settings),
                             llm=llm_router(kb.settings))
    return routing, kb.packs.scope(routing)


def in_scope(store, hits: list, doc_ids: frozenset[str] | None) -> list:
    """The hits (anything with a `chunk_id`) whose document is in `doc_ids`; all of them when None."""
    if doc_ids is None or not hits:
        return hits
    doc_of = store.chunk_documents([h.chunk_id for h in hits])
    return [h for h in hits if doc_of.get(h.chunk_id) in doc_ids]


def routing_rules(settings: Settings) -> RoutingRules:
    return RoutingRules(second_share=settings.route_second_share, min_confidence=settings.route_min_confidence,
                        min_coverage=settings.route_min_coverage)


def llm_router(settings: Settings) -> LlmRouter | None:
    if not settings.llm_model:
        return None
    return LlmRouter(model=settings.llm_model, timeout=settings.llm_timeout, api_base=settings.llm_api_base,
                     mock_response=settings.llm_mock_response)
