"""HTTP requests -> KnowledgeBase calls -> JSON: `create_app(settings)` builds the FastAPI app from the routers in `api.routes`."""

from __future__ import annotations

from contextlib import asynccontextmanager

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse

from api.routes import admin, ask, documents, entities, health, openai_compat, query, web
from kg.errors import AuthError, KgError
from kg.settings import Settings, get_settings

__all__ = ["create_app"]


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
    app.state.settings = settings

    @app.exception_handler(KgError)
    async def _kg_error(request: Request, exc: KgError) -> JSONResponse:
        headers = {"WWW-Authenticate": "Bearer"} if isinstance(exc, AuthError) else None
        return JSONResponse(exc.to_json(), status_code=exc.status, headers=headers)

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        problems = [f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors()]
        body = {"error": {"type": "InputError", "message": "invalid request body", "problems": problems}}
        return JSONResponse(body, status_code=422)

    for module in (health, query, documents, entities, ask, openai_compat, admin, web):
        app.include_router(module.router)
    return app
