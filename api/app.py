"""HTTP requests -> KnowledgeBase calls -> JSON: `create_app(settings)` builds the FastAPI app from the routers in `api.routes`.

Every error leaves as `{"error": {"type", "message", "problems"?}}` with its documented status:
the library's KgError tree, FastAPI's validation errors (422; an unparsable body is 400), unknown
paths and methods (404, 405), a body over `KG_MAX_BODY_BYTES` (413, decided from Content-Length
before anything is read, or while the body streams in), a Host header that is not allowed (400,
against DNS rebinding) and anything unexpected (500, logged, never a traceback to the client).
"""

from __future__ import annotations

import logging
import re
from contextlib import asynccontextmanager

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from api.docs_pages import add_docs_pages
from api.guards import AskGuard, BodyLimit, HostAllowList, PageHeaders, SameOrigin, allowed_hosts
from api.routes import admin, ask, documents, entities, graph, health, openai_compat, query, web
from api.schemas import ERROR_RESPONSES
from kg.errors import AuthError, BusyError, ConfigError, KgError, StorageError
from kg.files import disk_full
from kg.settings import Settings, get_settings

__all__ = ["create_app", "create_app_from_env"]

log = logging.getLogger("kgrag")
_HTTP_TYPES = {404: "NotFoundError", 405: "MethodNotAllowed", 413: "TooLargeError", 401: "AuthError"}


def create_app(settings: Settings | None = None) -> FastAPI:
    settings = settings or get_settings()
    if settings.api_token is not None and not settings.api_token.strip():
        raise ConfigError(
            "KG_API_TOKEN is set but empty, which would leave every write open: set a real token, or unset "
            "KG_API_TOKEN (and serve on a loopback address only)"
        )
    if settings.ask_requires_token and not settings.api_token:
        raise ConfigError("KG_ASK_REQUIRES_TOKEN is set but KG_API_TOKEN is not: set the token that /ask should require")

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        from retrieval.pipeline import KnowledgeBase

        app.state.kb = KnowledgeBase(settings, create=True)
        app.state.kb.linker  # noqa: B018 - spaCy and the entity linker load now, not in the first queries
        app.state.kb.follow()  # other processes' commits reach this server without a restart
        if settings.llm_model:  # litellm (6-30 s to import) loads in the background, not in the first /ask
            from retrieval.answer.llm import warm_up

            warm_up()
        try:
            yield
        finally:
            app.state.kb.close()

    app = FastAPI(
        title="kgrag",
        version="0.1.0",
        description="Graph- and ontology-augmented retrieval: ranked passages that say why they were found.",
        lifespan=lifespan,
        docs_url=None,  # served from the package's files, not a CDN: api/docs_pages.py
        redoc_url=None,
    )
    app.state.settings = settings
    add_docs_pages(app)

    @app.exception_handler(KgError)
    async def _kg_error(request: Request, exc: KgError) -> JSONResponse:
        headers = None
        if isinstance(exc, AuthError):
            headers = {"WWW-Authenticate": "Bearer"}
        elif isinstance(exc, BusyError):
            headers = {"Retry-After": str(exc.retry_after)}
        return JSONResponse(exc.to_json(), status_code=exc.status, headers=headers)

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        errors = exc.errors()
        if any(e.get("type") == "json_invalid" for e in errors):
            body = {"error": {"type": "InputError", "message": "the request body is not valid JSON"}}
            return JSONResponse(body, status_code=400)
        problems = [f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in errors]
        where = "body" if all(e["loc"][:1] == ("body",) for e in errors) else "parameters"
        body = {"error": {"type": "InputError", "message": f"invalid request {where}", "problems": problems}}
        return JSONResponse(body, status_code=422)

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        message = exc.detail if isinstance(exc.detail, str) else "request failed"
        if exc.status_code == 404 and message == "Not Found":
            message = f"no endpoint {request.url.path} (see /docs for the API)"
        headers = getattr(exc, "headers", None)
        if exc.status_code == 405:
            # Starlette's Allow names the first route on the path only (GET /documents, not POST too).
            allowed = _allowed_methods(app, request.url.path)
            headers = {**(headers or {}), "Allow": ", ".join(allowed)} if allowed else headers
            message = f"{request.method} is not allowed on {request.url.path} (use {', '.join(allowed) or 'another method'}; see /docs)"
        kind = _HTTP_TYPES.get(exc.status_code, "InputError" if exc.status_code < 500 else "KgError")
        return JSONResponse({"error": {"type": kind, "message": message}}, status_code=exc.status_code, headers=headers)

    @app.exception_handler(Exception)
    async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
        full = disk_full(exc)
        if full is not None:  # a write outside a journaled commit (vectors, a cache): the disk, not a bug
            log.error("%s %s: the data dir's disk is full (%s)", request.method, request.url.path, full)
            return await _kg_error(request, StorageError(f"the disk of the knowledge base is full ({full}); free some space"))
        log.exception("unexpected error on %s %s", request.method, request.url.path)
        body = {"error": {"type": "InternalError", "message": f"internal error ({type(exc).__name__}); see the server log"}}
        return JSONResponse(body, status_code=500)

    for module in (health, query, documents, entities, graph, ask, openai_compat, admin, web):
        app.include_router(module.router, responses=ERROR_RESPONSES)
    _document_class_names(app)
    # Outermost first: refuse a foreign Host, a cross-site write, an unauthorised or too frequent question,
    # then an oversized body, before any route runs; the page's security headers on the way out.
    app.add_middleware(BodyLimit, limit=settings.max_body_bytes)
    app.add_middleware(AskGuard, token=settings.api_token, required=settings.ask_requires_token,
                       per_minute=settings.ask_rate_limit)
    app.add_middleware(SameOrigin, hosts=allowed_hosts(settings))
    app.add_middleware(HostAllowList, hosts=allowed_hosts(settings))
    app.add_middleware(PageHeaders)
    return app


def _document_class_names(app: FastAPI) -> None:
    """The spec lists the ontology's class names for `types` (read from the open knowledge base each
    time the spec is served, so an imported class shows up); labels of classes are accepted too.
    The spec itself is built once (it took seconds, and every 405 and page view asks for it): only
    the class list is refreshed."""
    build = app.openapi

    def openapi() -> dict:
        spec = build()  # FastAPI keeps the first build in app.openapi_schema
        kb = getattr(app.state, "kb", None)
        field = spec.get("components", {}).get("schemas", {}).get("QueryIn", {}).get("properties", {}).get("types")
        if kb is not None and field:
            for option in field.get("anyOf", []):
                if option.get("type") == "array":
                    option["items"]["enum"] = sorted(kb.graph.vocab.classes)
        return spec

    app.openapi = openapi


def create_app_from_env() -> FastAPI:
    """For `kg serve --workers N`: each worker process builds its app from KG_* variables."""
    return create_app(Settings())


def _allowed_methods(app: FastAPI, path: str) -> list[str]:
    """Every method the OpenAPI spec lists for the path templates that match `path`."""
    methods: set[str] = set()
    for template, operations in app.openapi().get("paths", {}).items():
        pattern = re.sub(r"\\\{[^}]*:path\\\}", ".+", re.escape(template))
        pattern = re.sub(r"\\\{[^}]*\\\}", "[^/]+", pattern)
        if re.fullmatch(pattern, path):
            methods.update(m.upper() for m in operations if m in ("get", "post", "put", "patch", "delete"))
    return sorted(methods)
