"""GET / (the page: search rendered on the server, the rest by its scripts against the JSON API), GET /web/{asset}
(the page's files and vendored libraries: nothing is fetched from another host) and /favicon.ico."""

from __future__ import annotations

import json
import re
from functools import lru_cache
from pathlib import Path

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import FileResponse, HTMLResponse

from api.deps import knowledge_base
from api.web.explore import vocabulary_labels
from api.web.render import STATIC_DIR, highlight, messages, path_steps, pick_language, why_in_words
from kg.errors import KgError, NotFoundError

router = APIRouter(include_in_schema=False)

_TEMPLATES = Path(__file__).parent.parent / "web" / "templates"
_MEDIA_TYPES = {".js": "text/javascript", ".css": "text/css", ".json": "application/json", ".svg": "image/svg+xml",
                ".txt": "text/plain; charset=utf-8", ".md": "text/markdown; charset=utf-8"}
_FOLDERS = ("", "vendor/")
MODES = ("full", "bm25", "graph")

# What each part of the page needs: (path with its parameters blanked, method). A part whose
# endpoint this server lacks is hidden or says "not available in this version".
FEATURES = {
    "ask": ("/ask", "POST"),
    "documents_list": ("/documents", "GET"),
    "document_versions": ("/documents/{}/versions", "GET"),
    "document_delete": ("/documents/{}", "DELETE"),
    "upload": ("/documents", "POST"),
    "import": ("/import", "POST"),
    "ontology_check": ("/ontology/check", "GET"),
    "graph": ("/graph", "GET"),
    "outline": ("/documents/{}/outline", "GET"),
    "overview": ("/overview", "GET"),
    "packs": ("/packs", "GET"),
    "check": ("/check", "GET"),
}


@lru_cache(maxsize=1)
def _environment():
    import jinja2

    return jinja2.Environment(loader=jinja2.FileSystemLoader(_TEMPLATES), autoescape=True, trim_blocks=True, lstrip_blocks=True)


def features(request: Request) -> dict[str, bool]:
    served = _served(request.app.routes)
    try:
        # The OpenAPI document lists every documented endpoint whatever the router nesting.
        for path, operations in request.app.openapi().get("paths", {}).items():
            served.update((re.sub(r"\{[^}]*\}", "{}", path), method.upper()) for method in operations)
    except Exception:  # noqa: BLE001 - a schema that cannot be built only hides page parts
        pass
    found = {name: need in served for name, need in FEATURES.items()}
    found["token"] = bool(request.app.state.settings.api_token)
    # "in force on" a date: where POST /query takes `as_of` (the documents work adds it).
    found["as_of"] = "as_of" in _body_fields(request.app, "/query")
    # A conversation's earlier turns go to POST /ask where it takes them (else the page asks a follow-up with the question before it).
    found["ask_history"] = "history" in _body_fields(request.app, "/ask")
    return found


def _body_fields(app, path: str) -> set[str]:
    try:
        schema = app.openapi()
        body = schema["paths"][path]["post"]["requestBody"]["content"]["application/json"]["schema"]
        name = body.get("$ref", "").rsplit("/", 1)[-1]
        return set(schema["components"]["schemas"][name]["properties"]) if name else set(body.get("properties", {}))
    except (KeyError, TypeError, ValueError):
        return set()


def _served(routes, prefix: str = "") -> set[tuple[str, str]]:
    served = set()
    for route in routes:
        inner = getattr(route, "original_router", None) or getattr(route, "router", None)
        if inner is not None and hasattr(inner, "routes") and not hasattr(route, "methods"):
            served |= _served(inner.routes, prefix + getattr(route, "prefix", ""))
            continue
        path = re.sub(r"\{[^}]*\}", "{}", prefix + getattr(route, "path", ""))
        served.update((path, method) for method in getattr(route, "methods", None) or ())
    return served


@router.get("/", response_class=HTMLResponse)
def page(
    request: Request,
    q: str = Query("", max_length=4000),
    mode: str = Query("full"),
    type: str = Query(""),  # noqa: A002 - the form field's name
    lang: str | None = Query(None),
    as_of: str = Query("", max_length=10),
    kb=Depends(knowledge_base),  # noqa: B008 - FastAPI idiom
) -> HTMLResponse:
    """The page; `?q=` runs the search on the server so that it works without JavaScript."""
    language = pick_language(lang, request.cookies.get("kg_lang"), request.headers.get("accept-language"))
    mode = mode if mode in MODES else "full"
    found = features(request)
    result, error = None, None
    if q.strip():
        options = {"as_of": as_of} if as_of and found["as_of"] else {}
        try:
            result = kb.query(q.strip(), mode=mode, types=[type] if type else None, **options).to_json()
        except KgError as exc:
            error = exc.message
    with kb.lock:
        classes = sorted(kb.graph.vocab.classes)
        vocab = {code: dict(zip(("classes", "relations"), vocabulary_labels(kb, code), strict=True)) for code in ("en", "zh")}
        vocab["inverse"] = {name: info.inverse for name, info in kb.graph.vocab.properties.items() if info.inverse}
    hits = [_hit_view(hit, language, vocab[language]["relations"]) for hit in (result or {}).get("hits", [])]
    html = _environment().get_template("index.html").render(
        lang=language,
        other_lang="zh" if language == "en" else "en",
        m=messages(language),
        q=q,
        mode=mode,
        type=type,
        modes=MODES,
        classes=classes,
        result=result,
        hits=hits,
        error=error,
        as_of=as_of,
        features=found,
        boot=_script_json({"lang": language, "messages": {code: messages(code) for code in ("en", "zh")},
                           "features": found, "result": result, "vocab": vocab}),
    )
    response = HTMLResponse(html)
    if lang == language:
        response.set_cookie("kg_lang", language, max_age=365 * 86400, samesite="lax")
    return response


@router.get("/web/{name:path}")
def asset(name: str) -> FileResponse:
    folder, _, file = name.rpartition("/")
    path = STATIC_DIR / name
    if folder + "/" * bool(folder) not in _FOLDERS or not file or file.startswith(".") or path.suffix not in _MEDIA_TYPES \
            or not path.is_file():
        raise NotFoundError(f"no page asset '{name}'")
    return FileResponse(path, media_type=_MEDIA_TYPES[path.suffix], headers={"Cache-Control": "max-age=3600"})


@router.get("/favicon.ico")
def favicon() -> FileResponse:
    return FileResponse(STATIC_DIR / "favicon.svg", media_type="image/svg+xml", headers={"Cache-Control": "max-age=86400"})


def _hit_view(hit: dict, lang: str, relation_labels: dict[str, str]) -> dict:
    why = hit.get("why", {})
    terms = [t for key in ("bm25", "followup") for t in why.get(key, {}).get("terms", [])]
    graph = why.get("graph")
    return {
        **hit,
        "marked": highlight(hit["text"], terms),
        "why_words": why_in_words(why, lang, "\n".join((hit["title"], hit["section"], hit["text"]))),  # words as written where they matched
        "steps": _labelled(path_steps(graph["path"]), relation_labels) if graph else None,
    }


def _labelled(steps: dict, labels: dict[str, str]) -> dict:
    """A path's relations by their labels in the page's language ("^name", walked backwards, with an arrow)."""
    named = [("← " + labels.get(r[1:], r[1:])) if r.startswith("^") else labels.get(r, r) for r in steps["relations"]]
    return {**steps, "relations": named}


def _script_json(data: dict) -> str:
    # Inside <script type="application/json"> "</script" or "<!--" in a passage would end or
    # confuse the element: every "<" becomes the JSON escape \u003c (the same string to JSON.parse).
    return json.dumps(data, ensure_ascii=False).replace("<", "\\u003c")
