"""POST /documents: one document in (token required when set), what the ingest changed out."""

from __future__ import annotations

from fastapi import APIRouter, Depends

from api.deps import api_source, knowledge_base, require_token
from api.schemas import DocumentIn, IngestOut

router = APIRouter()


@router.post("/documents", response_model=IngestOut, status_code=201, dependencies=[Depends(require_token)])
def add_document(body: DocumentIn, kb=Depends(knowledge_base)) -> dict:  # noqa: B008 - FastAPI idiom
    from retrieval.types import SourceDocument

    source = api_source(body.source, body.text)
    report = kb.ingest_documents([SourceDocument(source=source, text=body.text, format=body.format, title=body.title)])
    return {k: getattr(report, k) for k in IngestOut.model_fields}
