"""A knowledge base, its settings and one question in -> the answer loop's options and model client, then the `Answer` (or its events) out.

`KnowledgeBase.ask` calls `ask` here; it validates the request before anything is searched or sent.
"""

from __future__ import annotations

import inspect

from kg.errors import InputError
from retrieval.answer.history import history_turns
from retrieval.answer.llm import LlmClient, llm_config
from retrieval.answer.loop import AskOptions, answer_question, ask_events

__all__ = ["FROM_SETTINGS", "MAX_QUESTION_CHARS", "ask", "ask_options", "client_for"]

FROM_SETTINGS = "settings"
MAX_QUESTION_CHARS = 4000
MAX_K = 20


def client_for(settings) -> LlmClient | None:
    """A fresh client for one request (it remembers a dead endpoint for that request only), or None offline."""
    config = llm_config(settings)
    return LlmClient(config) if config else None


def _linked_names(kb):
    """The entity surfaces a text links (a follow-up's subject), read as a query reads the graph."""
    def names(text: str) -> list[str]:
        with kb.reading():
            return [m.surface for m in sorted(kb.linker.link(text), key=lambda m: m.start)]
    return names


def ask_options(kb, k: int | None, mode: str, as_of=None, packs=None, history=None) -> AskOptions:
    settings = kb.settings
    k = settings.answer_passages if k is None else k
    if not 1 <= k <= MAX_K:
        raise InputError(f"k must be between 1 and {MAX_K} passages for an answer, got {k}")
    if mode not in ("full", "bm25", "graph"):
        raise InputError(f"unknown mode '{mode}' (use one of: full, bm25, graph)")
    filters = {name: value for name, value in (("as_of", as_of), ("packs", packs or None)) if value is not None}  # [] = no restriction
    accepted = inspect.signature(kb.query).parameters
    for name in filters:
        if name not in accepted:
            raise InputError(f"'{name}' is not supported by this knowledge base's search (leave it out)")
    facts = None
    if hasattr(kb, "_relation_matcher"):  # a knowledge base with a graph: its facts are evidence
        from retrieval.answer.facts import FactFinder
        from retrieval.provenance import edge_origins

        matcher = kb._relation_matcher()
        root = getattr(kb, "root", None)
        view = kb.walk.view() if hasattr(kb, "walk") else kb.graph.view  # the edges the queries walk (KG_GRAPH_WALK)
        origins = edge_origins(root, view, kb.graph.vocab) if root is not None else None
        facts = FactFinder(view, kb.graph.vocab, lambda text: set(matcher.find_names(text)), origins, matcher.find_spans)
    leads = None
    if hasattr(kb, "store"):  # a knowledge base with a catalog: the lead of a page about a named entity
        from retrieval.answer.leads import LeadFinder

        leads = LeadFinder(kb.store)
    turns = history_turns(history)
    names = _linked_names(kb) if turns and hasattr(kb, "linker") else None
    return AskOptions(k=k, mode=mode, citation_support=settings.citation_support, rewrites=settings.llm_rewrites,
                      source_lines=settings.answer_source_lines,
                      filters=filters, synonym_groups=kb.synonyms.groups,
                      surfaces=[s for s, _ in kb.graph.view.surfaces()], facts=facts, leads=leads, history=turns,
                      names=names)


def ask(kb, question: str, *, k: int | None = None, mode: str = "full", as_of=None, packs=None, history=None,
        llm: LlmClient | None | str = FROM_SETTINGS, stream: bool = False):
    """`history`: the conversation before the question, [{"role": "user"|"assistant", "content"}], oldest first
    (at most `history.MAX_HISTORY_MESSAGES` messages of at most `MAX_MESSAGE_CHARS` characters)."""
    question = " ".join((question or "").split())
    if not question:
        raise InputError("the question is empty: ask something, e.g. kg ask \"LORA-02 的心跳间隔是多少？\"")
    if len(question) > MAX_QUESTION_CHARS:
        raise InputError(f"the question is {len(question)} characters long; ask in at most {MAX_QUESTION_CHARS}")
    options = ask_options(kb, k, mode, as_of, packs, history)
    client = client_for(kb.settings) if llm == FROM_SETTINGS else llm
    if stream:
        return ask_events(kb, question, options, client)
    return answer_question(kb, question, options, client)
