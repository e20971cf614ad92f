"""GET /health and GET /stats: liveness and counts (read from the snapshot being served; never a reload or relink)."""

from __future__ import annotations

from fastapi import APIRouter, Depends

from api.deps import knowledge_base

router = APIRouter()


@router.get("/health")
def health(kb=Depends(knowledge_base)) -> dict:  # noqa: B008 - FastAPI idiom
    stats = kb.stats()
    out = {"status": "ok", "documents": stats["documents"], "entities": stats["entities"]}
    warnings = []  # an edit of graph.ttl or synonyms.txt that cannot be read: what was read before still serves
    if stats.get("graph_unread"):
        warnings.append(f"{stats['graph_unread']}; queries use the graph read before it changed")
    if stats.get("synonyms_unread"):
        warnings.append(f"{stats['synonyms_unread']}; queries use the synonyms read before it changed")
    if warnings:
        out["warnings"] = warnings
    return out


@router.get("/stats")
def stats(kb=Depends(knowledge_base)) -> dict:  # noqa: B008 - FastAPI idiom
    return kb.stats()
