"""/documents: list, show, versions, add (text or a base64 file; token), delete (token) -> the catalog's JSON."""

from __future__ import annotations

import base64
import binascii
from dataclasses import replace
from pathlib import PurePath

from fastapi import APIRouter, Depends

from api.deps import API_SOURCE_PREFIX, api_source, knowledge_base, require_token
from api.schemas import DocumentIn, IngestOut
from kg.errors import ConflictError, InputError

router = APIRouter()


@router.get("/documents")
def list_documents(kb=Depends(knowledge_base)) -> dict:  # noqa: B008 - FastAPI idiom
    return {"documents": kb.documents()}


@router.get("/documents/{doc_id}")
def show_document(doc_id: str, kb=Depends(knowledge_base)) -> dict:  # noqa: B008
    return kb.document(doc_id)


@router.get("/documents/{doc_id}/versions")
def document_versions(doc_id: str, kb=Depends(knowledge_base)) -> dict:  # noqa: B008
    return {"doc_id": kb.document(doc_id)["doc_id"], "versions": kb.versions(doc_id)}


@router.delete("/documents/{doc_id}", dependencies=[Depends(require_token)])
def delete_document(doc_id: str, kb=Depends(knowledge_base)) -> dict:  # noqa: B008
    [deleted] = kb.delete_documents([doc_id])
    return {"deleted": deleted}


@router.post("/documents", response_model=IngestOut, status_code=201, dependencies=[Depends(require_token)])
def add_document(body: DocumentIn, kb=Depends(knowledge_base)) -> dict:  # noqa: B008 - FastAPI idiom
    from retrieval.ingest.ocr import configured
    from retrieval.ingest.readers import SUPPORTED_SUFFIXES, parse_effective, read_source_bytes

    if (body.text is None) == (body.content_base64 is None):
        raise InputError("give the document as `text` or as `content_base64` (with `filename`), not both or neither")
    fmt = body.format
    if fmt is None and body.filename:
        fmt = SUPPORTED_SUFFIXES.get(PurePath(body.filename).suffix.lower())
        if fmt is None:
            raise InputError(f"{body.filename}: unsupported file type (kgrag reads {', '.join(sorted(SUPPORTED_SUFFIXES))}); "
                             "or say the format in `format`")
    fmt = fmt or "md"
    if body.content_base64 is not None:
        try:
            raw = base64.b64decode(body.content_base64, validate=True)
        except (binascii.Error, ValueError):
            raise InputError("content_base64 is not valid base64") from None
        source = api_source(body.source or body.filename, body.content_base64)
        ocr = configured(kb.settings.ocr, kb.settings.ocr_languages) if fmt == "pdf" else None
        src = read_source_bytes(raw, fmt, source, label=body.filename or source, ocr=ocr)
    else:
        source = api_source(body.source, body.text)
        # A JSON string is text, not a file: a NUL in it is noise, not a sign of binary content.
        body.text = body.text.replace("\x00", "")
        if fmt in ("pdf", "docx", "xlsx", "pptx"):
            what = {"pdf": "PDF", "docx": "Word document", "xlsx": "spreadsheet", "pptx": "PowerPoint deck"}[fmt]
            raise InputError(f"a {what} cannot be sent as `text`: send its bytes as `content_base64`")
        src = read_source_bytes(body.text.encode("utf-8"), fmt, source)  # long blobs cut, as from a file
    changes = {"title": body.title or src.title, "doc_key": body.doc_id or src.doc_key,
               "effective_date": parse_effective(body.effective, "effective") if body.effective else src.effective_date}
    src = replace(src, **changes)
    if src.doc_key:
        _refuse_a_files_document(kb, src.doc_key)
    report = kb.ingest_documents([src])
    return {k: getattr(report, k) for k in IngestOut.model_fields}


def _refuse_a_files_document(kb, key: str) -> None:
    """Posted documents live in their own id space: a `doc_id` or front matter `id:` that names a document
    read from a file (by its key, id or path) would make the post a new version of it, and the file's
    text would stop answering. That is a 409, not a takeover."""
    from retrieval.ingest.chunking import doc_id_for

    with kb.reading():
        ids = {doc_id_for(key), kb.history.resolve(key)} - {None}
        files = sorted({s for doc_id in ids for s in kb.history.sources(doc_id) if not s.startswith(API_SOURCE_PREFIX)})
    if files:
        raise ConflictError(
            f"'{key}' names the document of the file {files[0]}: a document posted through the API cannot become "
            "a version of a file's document; give it a doc_id (or front matter id) of its own, or edit the file "
            "and ingest it again")
