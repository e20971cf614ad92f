"""kgrag's retrieval pipeline: ingest -> index -> link -> expand -> fuse (see `retrieval.pipeline`)."""

from __future__ import annotations

__all__ = ["KnowledgeBase", "QueryResult", "SourceDocument"]


def __getattr__(name: str):
    # Lazy so that importing a stage module does not pull in the whole pipeline.
    if name == "KnowledgeBase":
        from retrieval.pipeline import KnowledgeBase

        return KnowledgeBase
    if name in ("QueryResult", "SourceDocument"):
        from retrieval import types

        return getattr(types, name)
    raise AttributeError(name)
