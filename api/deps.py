"""What the endpoints share: the open knowledge base and the bearer-token check."""

from __future__ import annotations

import hmac

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from kg.errors import AuthError

__all__ = ["knowledge_base", "require_token"]

_bearer = HTTPBearer(auto_error=False)


def knowledge_base(request: Request):
    return request.app.state.kb


def require_token(request: Request, credentials: HTTPAuthorizationCredentials | None = Depends(_bearer)) -> None:  # noqa: B008 - FastAPI idiom
    token = request.app.state.settings.api_token
    if not token:
        return
    given = credentials.credentials if credentials else ""
    if not hmac.compare_digest(given.encode(), token.encode()):
        raise AuthError("a valid bearer token is required for this endpoint (Authorization: Bearer <KG_API_TOKEN>)")
