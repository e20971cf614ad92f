"""ASGI guards in front of every route: a request in, passed on or refused with a JSON error (a Host not allowed: 400;
a body over the limit: 413; a cross-site write: 403; /ask without the token when it is required: 401; over the ask rate: 429),
and the page's security headers (CSP, frame-ancestors) out."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import re
import threading
import time
from urllib.parse import urlsplit

from kg.settings import Settings

__all__ = ["LOCAL_HOSTS", "AskGuard", "BodyLimit", "HostAllowList", "PageHeaders", "SameOrigin", "allowed_hosts", "bound_question"]

# `testserver` is the name Starlette's TestClient sends; no public DNS name can be it.
LOCAL_HOSTS = ("localhost", "127.0.0.1", "::1", "testserver")


def allowed_hosts(settings: Settings) -> frozenset[str] | None:
    """The Host names answered (None = any): localhost names, the bind host, KG_ALLOWED_HOSTS."""
    extra = [h.strip().lower() for h in settings.allowed_hosts.split(",") if h.strip()]
    if "*" in extra:
        return None
    bind = settings.bind_host.strip().lower().strip("[]")
    hosts = {*LOCAL_HOSTS, *extra}
    if bind and bind not in ("0.0.0.0", "::"):
        hosts.add(bind)
    return frozenset(hosts)


async def _send_error(send, status: int, kind: str, message: str, headers: list | None = None) -> None:
    body = json.dumps({"error": {"type": kind, "message": message}}).encode()
    await send({"type": "http.response.start", "status": status, "headers": [
        (b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
        (b"connection", b"close"), *(headers or [])]})
    await send({"type": "http.response.body", "body": body})


def _host_name(value: str) -> str:
    value = value.strip().lower()
    if value.startswith("["):  # [::1]:8000
        return value[1:value.find("]")] if "]" in value else value
    return value.rsplit(":", 1)[0] if value.count(":") == 1 else value


class HostAllowList:
    """Refuse requests whose Host header is not one of ours: a DNS-rebinding page in a browser sends
    its own name there, and would otherwise read everything the API serves."""

    def __init__(self, app, hosts: frozenset[str] | None) -> None:
        self.app = app
        self.hosts = hosts

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http" or self.hosts is None:
            return await self.app(scope, receive, send)
        raw = dict(scope.get("headers") or []).get(b"host", b"").decode("latin-1")
        if _host_name(raw) not in self.hosts:
            shown = raw[:100].encode("ascii", "backslashreplace").decode()
            return await _send_error(send, 400, "InputError",
                                     f"Host '{shown}' is not allowed: add it to KG_ALLOWED_HOSTS (comma-separated) "
                                     "if this server is meant to answer under that name")
        return await self.app(scope, receive, send)


class BodyLimit:
    """413 for a body over `limit` bytes: at once from Content-Length, or as soon as a streamed
    (chunked) body passes the limit; the route never sees the rest."""

    def __init__(self, app, limit: int) -> None:
        self.app = app
        self.limit = limit

    def _too_large(self) -> str:
        return f"the request body is over the limit of {self.limit:,} bytes (KG_MAX_BODY_BYTES)"

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        length = dict(scope.get("headers") or []).get(b"content-length")
        if length is not None:
            try:
                declared = int(length)
            except ValueError:
                return await _send_error(send, 400, "InputError", "Content-Length is not a number")
            if declared > self.limit:
                return await _send_error(send, 413, "TooLargeError", self._too_large())
        received = 0
        over = False
        started = False

        async def limited_receive():
            nonlocal received, over
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.limit:
                    over = True
                    from starlette.exceptions import HTTPException

                    raise HTTPException(413, self._too_large())
            return message

        async def guarded_send(message) -> None:
            nonlocal started
            if over:  # whatever the route made of the cut-off body, the answer is 413
                if message["type"] == "http.response.start" and not started:
                    started = True
                    await _send_error(send, 413, "TooLargeError", self._too_large())
                return
            started = started or message["type"] == "http.response.start"
            await send(message)

        await self.app(scope, limited_receive, guarded_send)


_SAFE_METHODS = {"GET", "HEAD", "OPTIONS"}


class SameOrigin:
    """Refuse a state-changing request a browser sent from another site, token or not: with no token (the
    loopback default) any page could otherwise `POST /import` as a form (multipart needs no preflight).
    A browser says where a request comes from in `Sec-Fetch-Site` (all current ones) and `Origin`;
    clients that send neither (curl, scripts, the CLI) are not browsers and pass."""

    def __init__(self, app, hosts: frozenset[str] | None) -> None:
        self.app = app
        self.hosts = hosts

    def _refusal(self, headers: dict) -> str | None:
        site = headers.get(b"sec-fetch-site", b"").decode("latin-1").strip().lower()
        if site and site not in ("same-origin", "none"):
            return f"Sec-Fetch-Site is '{site[:40]}'"
        origin = headers.get(b"origin")
        if origin is None:
            return None
        origin = origin.decode("latin-1").strip()
        parts = urlsplit(origin) if origin.lower() != "null" else None
        if parts is None or not parts.hostname:
            return f"Origin is '{origin[:100]}'"
        host = headers.get(b"host", b"").decode("latin-1")
        if self.hosts is None:  # any Host is answered: the page must come from the one asked
            same = parts.netloc.lower() == host.strip().lower()
        else:
            same = parts.hostname.lower() in self.hosts
        return None if same else f"Origin is '{origin[:100]}'"

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http" or scope["method"] in _SAFE_METHODS:
            return await self.app(scope, receive, send)
        why = self._refusal(dict(scope.get("headers") or []))
        if why is not None:
            why = why.encode("ascii", "backslashreplace").decode()
            return await _send_error(send, 403, "AuthError",
                                     f"cross-site request refused ({why}): a page of another site cannot write to or ask "
                                     "this server; use the page this server serves, or a client that is not a browser")
        return await self.app(scope, receive, send)


ASK_PATHS = ("/ask", "/v1/chat/completions")


class AskGuard:
    """/ask and /v1/chat/completions, which may spend a paid model's tokens: the bearer token when
    KG_ASK_REQUIRES_TOKEN is set, and at most KG_ASK_RATE_LIMIT requests a minute per token (or, without
    one, per client address)."""

    def __init__(self, app, token: str | None, required: bool, per_minute: int) -> None:
        self.app = app
        self.token = token.encode("utf-8") if required and token else None
        self.per_minute = per_minute
        self.recent: dict[str, list[float]] = {}
        self.lock = threading.Lock()

    def _wait(self, key: str) -> int:
        """0 when the request may go; else the seconds until it may."""
        now = time.monotonic()
        with self.lock:
            if len(self.recent) > 10_000:  # clients come and go: forget the idle ones
                self.recent = {k: v for k, v in self.recent.items() if v and v[-1] > now - 60}
            times = [t for t in self.recent.get(key, ()) if t > now - 60]
            if len(times) >= self.per_minute:
                self.recent[key] = times
                return max(1, int(times[0] + 60 - now) + 1)
            times.append(now)
            self.recent[key] = times
            return 0

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http" or scope["path"] not in ASK_PATHS or scope["method"] in _SAFE_METHODS:
            return await self.app(scope, receive, send)
        header = dict(scope.get("headers") or []).get(b"authorization", b"")
        scheme, _, given = header.partition(b" ")
        given = given.strip() if scheme.lower() == b"bearer" else b""
        if self.token is not None and not hmac.compare_digest(given, self.token):
            return await _send_error(send, 401, "AuthError", "a valid bearer token is required for this endpoint "
                                     "(Authorization: Bearer <KG_API_TOKEN>; KG_ASK_REQUIRES_TOKEN is set)",
                                     [(b"www-authenticate", b"Bearer")])
        if self.per_minute:
            client = scope.get("client") or ("?", 0)
            key = "t:" + hashlib.sha256(given).hexdigest() if given else f"a:{client[0]}"
            wait = self._wait(key)
            if wait:
                return await _send_error(send, 429, "RateLimitError",
                                         f"more than {self.per_minute} questions a minute (KG_ASK_RATE_LIMIT): "
                                         f"try again in {wait} s", [(b"retry-after", str(wait).encode())])
        return await self.app(scope, receive, send)


_INLINE_SCRIPT = re.compile(rb"<script(?![^>]*\bsrc=)(?![^>]*type=\"application/(?:ld\+)?json\")[^>]*>(.*?)</script>", re.S)
_FRAME_HEADERS = [(b"x-frame-options", b"DENY"), (b"x-content-type-options", b"nosniff"),
                  (b"referrer-policy", b"same-origin")]


def page_policy(body: bytes) -> bytes:
    """The Content-Security-Policy of an HTML page: its own scripts and styles only, the inline scripts it
    carries allowed by their hashes (so an injected one never runs), no framing by other sites."""
    hashes = " ".join(f"'sha256-{base64.b64encode(hashlib.sha256(m).digest()).decode()}'"
                      for m in _INLINE_SCRIPT.findall(body))
    return ("default-src 'self'; script-src 'self'" + (f" {hashes}" if hashes else "") + "; "
            "style-src 'self' 'unsafe-inline'; img-src 'self' data: blob:; connect-src 'self'; "
            "object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'").encode()


class PageHeaders:
    """X-Frame-Options and nosniff on every response; a CSP (frame-ancestors 'none' included) on the
    HTML pages. The interactive API docs (/docs, /redoc) get only frame-ancestors: what they load is
    FastAPI's choice, not ours."""

    def __init__(self, app) -> None:
        self.app = app

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        docs = scope["path"].startswith(("/docs", "/redoc"))
        start: dict | None = None
        parts: list[bytes] = []

        async def with_headers(message) -> None:
            nonlocal start
            if message["type"] == "http.response.start":
                headers = [*message.get("headers", []), *_FRAME_HEADERS]
                html = dict(headers).get(b"content-type", b"").startswith(b"text/html")
                if not html or docs:
                    if html:
                        headers.append((b"content-security-policy", b"frame-ancestors 'none'"))
                    return await send({**message, "headers": headers})
                start = {**message, "headers": headers}  # held until the body is known: the CSP hashes its scripts
                return None
            if start is None:
                return await send(message)
            parts.append(message.get("body", b""))
            if message.get("more_body"):
                return None
            body = b"".join(parts)
            headers = [h for h in start["headers"] if h[0] != b"content-length"]
            headers += [(b"content-length", str(len(body)).encode()), (b"content-security-policy", page_policy(body))]
            await send({**start, "headers": headers})
            await send({"type": "http.response.body", "body": body})

        await self.app(scope, receive, with_headers)


def bound_question(text: str, settings: Settings, field: str) -> None:
    """A question of more distinct words than KG_MAX_QUERY_TERMS is a 422 naming the limit: each word is a
    posting list read and scored, so an anonymous 4,000-character question cost seconds. The words are
    counted piece by piece and the count stops at the limit, so a refusal costs a few hundred characters'
    analysis, not the whole question's (0.5 s for 4,000 Chinese characters on a loaded machine)."""
    from fastapi.exceptions import RequestValidationError

    from retrieval.index.analysis import query_terms

    limit = settings.max_query_terms
    if len(text) <= limit:  # a word is one character at least
        return
    seen: set[str] = set()
    for start in range(0, len(text), _PIECE):
        seen.update(query_terms(text[start:start + _PIECE]))  # a word cut at a piece's end counts twice at most
        if len(seen) > limit:
            raise RequestValidationError([{"type": "value_error", "loc": ("body", field), "input": None,
                                           "msg": f"more than {limit} distinct words (KG_MAX_QUERY_TERMS): "
                                                  "ask with fewer words"}])


_PIECE = 200
