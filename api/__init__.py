"""kgrag's HTTP API: `create_app(settings)` returns the FastAPI application."""

from api.app import create_app

__all__ = ["create_app"]
