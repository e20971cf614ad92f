"""GET /entities/{id or label}[?sources=true]: an entity with its neighbours (with `sources`, each with the table and line
that state its edge: `origin`) and mentions (404 when unknown)."""

from __future__ import annotations

from fastapi import APIRouter, Depends

from api.deps import knowledge_base

router = APIRouter()


@router.get("/entities/{key:path}")
def get_entity(key: str, sources: bool = False, kb=Depends(knowledge_base)) -> dict:  # noqa: B008 - FastAPI idiom
    return kb.entity(key, sources=sources)
