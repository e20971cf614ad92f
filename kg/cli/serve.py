"""Serving: `kg serve` (the HTTP API)."""

from __future__ import annotations

from pathlib import Path

import click

from kg.cli.base import (
    cli,
    data_dir_option,
    settings_for,
)


@cli.command()
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", default=8000, show_default=True, type=int)
@data_dir_option
def serve(host: str, port: int, data_dir: Path | None) -> None:
    """Serve the HTTP API (OpenAPI docs at /docs). Set KG_API_TOKEN to protect write endpoints."""
    import uvicorn

    from api import create_app

    app = create_app(settings_for(data_dir))
    uvicorn.run(app, host=host, port=port, log_level="info")


