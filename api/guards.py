"""ASGI guards in front of every route: a request in, passed on or refused with a JSON error (a Host not allowed: 400; a body over the limit: 413)."""

from __future__ import annotations

import json

from kg.settings import Settings

__all__ = ["LOCAL_HOSTS", "BodyLimit", "HostAllowList", "allowed_hosts"]

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
