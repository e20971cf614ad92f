"""What the endpoints share: the open knowledge base, the bearer-token check (`dependencies=[Depends(require_token)]` on every state-changing route) and the namespace of API-posted sources."""

from __future__ import annotations

import hashlib
import hmac

from fastapi import Request

from kg.errors import AuthError

__all__ = ["API_SOURCE_PREFIX", "api_source", "knowledge_base", "require_token"]

API_SOURCE_PREFIX = "api:"


def knowledge_base(request: Request):
    return request.app.state.kb


def require_token(request: Request) -> None:
    """The bearer token, when KG_API_TOKEN is set. Header bytes are compared as sent, so a UTF-8
    token works (Starlette hands headers over as latin-1 text; encoding back gives the raw bytes)."""
    token = request.app.state.settings.api_token
    if token is None:
        return
    header = request.headers.get("authorization", "")
    scheme, _, given = header.partition(" ")
    if scheme.lower() != "bearer" or not hmac.compare_digest(given.strip().encode("latin-1"), token.encode("utf-8")):
        raise AuthError("a valid bearer token is required for this endpoint (Authorization: Bearer <KG_API_TOKEN>)")


def api_source(source: str | None, text: str) -> str:
    """The source name of a document posted through the API: always under `api:`, so a post can
    never replace (or read back as) a file's document, whose source is its path."""
    if not source:
        return API_SOURCE_PREFIX + hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]
    return source if source.startswith(API_SOURCE_PREFIX) else API_SOURCE_PREFIX + source
