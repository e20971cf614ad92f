"""POST /query: a question in, ranked hits with why out (the same JSON as `kg query --json`)."""

from __future__ import annotations

from fastapi import APIRouter, Depends

from api.deps import knowledge_base
from api.schemas import QueryIn, QueryOut

router = APIRouter()


@router.post("/query", response_model=QueryOut)
def query(body: QueryIn, kb=Depends(knowledge_base)) -> dict:  # noqa: B008 - FastAPI idiom
    return kb.query(body.query, k=body.k, mode=body.mode, types=body.types, packs=body.packs).to_json()
