"""The API's documentation pages, /docs (Swagger UI) and /redoc (ReDoc), served from files installed with the
package: FastAPI's defaults load them from a CDN, so without internet /docs was a blank page, while the API's error
messages send users there. The scripts and styles are the ones the PyPI package `fastapi-offline` ships (MIT;
Swagger UI is Apache-2.0, ReDoc MIT); only its static folder is used."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from fastapi import FastAPI
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles

from kg.errors import ConfigError

__all__ = ["ASSETS_PATH", "add_docs_pages"]

ASSETS_PATH = "/docs-assets"


def _assets_dir() -> Path:
    spec = importlib.util.find_spec("fastapi_offline")
    folder = Path(next(iter(spec.submodule_search_locations or []), "")) / "static" if spec else None
    if folder is None or not (folder / "swagger-ui-bundle.js").is_file():
        raise ConfigError("the API docs' scripts are missing: `pip install -c constraints.txt -e .` "
                          "(they come with the package fastapi-offline)")
    return folder


def add_docs_pages(app: FastAPI) -> None:
    """/docs and /redoc on `app` (created with docs_url=None, redoc_url=None), their assets under /docs-assets."""
    app.mount(ASSETS_PATH, StaticFiles(directory=_assets_dir()), name="docs-assets")
    title = f"{app.title} API"

    @app.get("/docs", include_in_schema=False)
    async def swagger_ui() -> HTMLResponse:
        return get_swagger_ui_html(openapi_url=app.openapi_url, title=title,
                                   swagger_js_url=f"{ASSETS_PATH}/swagger-ui-bundle.js",
                                   swagger_css_url=f"{ASSETS_PATH}/swagger-ui.css",
                                   swagger_favicon_url=f"{ASSETS_PATH}/favicon.png",
                                   swagger_ui_parameters={"validatorUrl": None})  # no badge from validator.swagger.io

    @app.get("/redoc", include_in_schema=False)
    async def redoc() -> HTMLResponse:
        return get_redoc_html(openapi_url=app.openapi_url, title=title, redoc_js_url=f"{ASSETS_PATH}/redoc.standalone.js",
                              redoc_favicon_url=f"{ASSETS_PATH}/favicon.png", with_google_fonts=False)
