"""The explorer's reads: GET /graph (entities and edges, bounded), /graph/fact (where a fact is written),
/documents/{id}/outline (a version's passages and what each is about), /overview (the home page), /packs."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Query, Request

from api.deps import knowledge_base
from api.web import explore
from api.web.render import pick_language

router = APIRouter()


def _language(request: Request, lang: str | None) -> str:
    return pick_language(lang, request.cookies.get("kg_lang"), request.headers.get("accept-language"))


@router.get("/graph", summary="The knowledge graph: entities and asserted edges, best connected first")
def graph(
    request: Request,
    limit: int = Query(500, ge=1, le=explore.MAX_NODES, description="At most this many entities."),
    cls: list[str] = Query([], alias="class", description="Only entities of these classes (and their subclasses)."),  # noqa: B008
    relation: list[str] = Query([], description="Only edges of these relations."),  # noqa: B008
    q: str = Query("", max_length=200, description="Entities whose label or alias contains this, with their neighbours."),
    lang: str | None = Query(None, description="Language of class and relation labels: en or zh."),
    kb=Depends(knowledge_base),  # noqa: B008 - FastAPI idiom
) -> dict:
    return explore.graph_json(kb, _language(request, lang), limit=limit, classes=cls, relations=relation, search=q)


@router.get("/graph/fact", summary="Where a fact is written: its lines in the graph file and its relation's definition")
def fact(
    request: Request,
    source: str = Query(..., max_length=2000), relation: str = Query(..., max_length=200),
    target: str = Query(..., max_length=2000), lang: str | None = Query(None),
    kb=Depends(knowledge_base),  # noqa: B008
) -> dict:
    return explore.fact_source(kb, source, relation, target, _language(request, lang))


@router.get("/documents/{doc_id}/outline", summary="A document version's passages in order, with the entities each is about")
def outline(request: Request, doc_id: str, version: str | None = Query(None, max_length=200),
            lang: str | None = Query(None), kb=Depends(knowledge_base)) -> dict:  # noqa: B008
    return explore.document_outline(kb, doc_id, version, _language(request, lang))


@router.get("/overview", summary="Counts, the documents added last and example questions from the knowledge base")
def overview(request: Request, lang: str | None = Query(None), kb=Depends(knowledge_base)) -> dict:  # noqa: B008
    return explore.overview(kb, _language(request, lang))


@router.get("/packs", summary="The knowledge packs with their cards")
def packs(kb=Depends(knowledge_base)) -> dict:  # noqa: B008
    return {"packs": [p.to_json() for p in kb.packs.list()]}


@router.get("/check", summary="`kg check`: catalog, text index, graph and mentions agree (read only; repair with the CLI)")
def consistency(kb=Depends(knowledge_base)) -> dict:  # noqa: B008
    return kb.check().to_json()
