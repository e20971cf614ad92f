"""POST /query: a question in, ranked hits with why out (the same JSON as `kg query --json`)."""

from __future__ import annotations

from fastapi import APIRouter, Depends

from api.deps import knowledge_base
from api.guards import bound_question
from api.schemas import QueryIn, QueryOut

router = APIRouter()


@router.post("/query", response_model=QueryOut)
def query(body: QueryIn, kb=Depends(knowledge_base)) -> dict:  # noqa: B008 - FastAPI idiom
    bound_question(body.query, kb.settings, "query")
    types = [t for t in body.types or () if t.strip()] or None  # `"types": [""]` asks for no restriction
    return kb.query(body.query, k=body.k, mode=body.mode, types=types, as_of=body.as_of, packs=body.packs).to_json()
