"""HTTP requests -> KnowledgeBase calls -> JSON: `create_app(settings)` builds the FastAPI app."""

from __future__ import annotations

import hashlib
import hmac
from contextlib import asynccontextmanager

from fastapi import Depends, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from api.schemas import DocumentIn, IngestOut, QueryIn, QueryOut
from kg.errors import AuthError, KgError
from kg.settings import Settings, get_settings

__all__ = ["create_app"]

_bearer = HTTPBearer(auto_error=False)


def create_app(settings: Settings | None = None) -> FastAPI:
    settings = settings or get_settings()

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        from retrieval.pipeline import KnowledgeBase

        app.state.kb = KnowledgeBase(settings, create=True)
        try:
            yield
        finally:
            app.state.kb.close()

    app = FastAPI(
        title="kgrag",
        version="0.1.0",
        description="Graph- and ontology-augmented retrieval: ranked passages that say why they were found.",
        lifespan=lifespan,
    )

    @app.exception_handler(KgError)
    async def _kg_error(request: Request, exc: KgError) -> JSONResponse:
        headers = {"WWW-Authenticate": "Bearer"} if isinstance(exc, AuthError) else None
        return JSONResponse(exc.to_json(), status_code=exc.status, headers=headers)

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        problems = [f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors()]
        body = {"error": {"type": "InputError", "message": "invalid request body", "problems": problems}}
        return JSONResponse(body, status_code=422)

    def kb(request: Request):
        return request.app.state.kb

    def require_token(credentials: HTTPAuthorizationCredentials | None = Depends(_bearer)) -> None:  # noqa: B008 - FastAPI idiom
        if not settings.api_token:
            return
        given = credentials.credentials if credentials else ""
        if not hmac.compare_digest(given.encode(), settings.api_token.encode()):
            raise AuthError("a valid bearer token is required for this endpoint (Authorization: Bearer <KG_API_TOKEN>)")

    @app.get("/health")
    def health(request: Request) -> dict:
        stats = kb(request).stats()
        return {"status": "ok", "documents": stats["documents"], "entities": stats["entities"]}

    @app.post("/query", response_model=QueryOut)
    def query(body: QueryIn, request: Request) -> dict:
        return kb(request).query(body.query, k=body.k, mode=body.mode, types=body.types).to_json()

    @app.post("/documents", response_model=IngestOut, status_code=201, dependencies=[Depends(require_token)])
    def add_document(body: DocumentIn, request: Request) -> dict:
        from retrieval.types import SourceDocument

        source = body.source or "api:" + hashlib.sha256(body.text.encode("utf-8")).hexdigest()[:16]
        report = kb(request).ingest_documents(
            [SourceDocument(source=source, text=body.text, format=body.format, title=body.title)]
        )
        return {k: getattr(report, k) for k in IngestOut.model_fields}

    @app.get("/entities/{key:path}")
    def get_entity(key: str, request: Request) -> dict:
        return kb(request).entity(key)

    @app.get("/stats")
    def stats(request: Request) -> dict:
        return kb(request).stats()

    return app
