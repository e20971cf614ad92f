"""Serving: `kg serve` (the HTTP API), on loopback by default; open writes on another address only when asked."""

from __future__ import annotations

import ipaddress
import os
from pathlib import Path

import click

from kg.cli.base import (
    cli,
    data_dir_option,
    settings_for,
)
from kg.errors import ConfigError


def _is_loopback(host: str) -> bool:
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # a host name: it may resolve to anything


@cli.command()
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to bind (loopback by default).")
@click.option("--port", default=8000, show_default=True, type=int)
@click.option("--workers", default=1, show_default=True, type=click.IntRange(1, 64),
              help="Worker processes; each follows the others' commits (one writer at a time across them).")
@click.option("--allow-open-writes", is_flag=True,
              help="Serve on a non-loopback address without KG_API_TOKEN (anyone who can reach it can write).")
@click.option("--no-access-log", is_flag=True, help="Do not log every request (under load the log costs CPU).")
@data_dir_option
def serve(host: str, port: int, workers: int, allow_open_writes: bool, no_access_log: bool, data_dir: Path | None) -> None:
    """Serve the HTTP API (OpenAPI docs at /docs). Set KG_API_TOKEN to protect write endpoints.

    \b
    On an address other than loopback, a token is required unless --allow-open-writes is given.
    Host names other than localhost and the bind address are refused unless listed in
    KG_ALLOWED_HOSTS (against DNS rebinding).
    """
    import uvicorn

    from api import create_app

    settings = settings_for(data_dir, bind_host=host)
    if settings.api_token is not None and not settings.api_token.strip():
        raise ConfigError("KG_API_TOKEN is set but empty, which would leave every write open: set a real token or unset it")
    if not _is_loopback(host) and settings.api_token is None:
        if not allow_open_writes:
            raise ConfigError(
                f"refusing to serve on {host} without a token: anyone who can reach it could change the knowledge base. "
                "Set KG_API_TOKEN=<secret>, or bind to 127.0.0.1, or pass --allow-open-writes if that is what you want"
            )
        click.echo(f"warning: serving on {host} with NO token: every write endpoint is open to anyone who can reach it",
                   err=True)
    if workers == 1:
        uvicorn.run(create_app(settings), host=host, port=port, log_level="info", access_log=not no_access_log)
        return
    # Worker processes import the app themselves: hand them the settings through the environment.
    os.environ["KG_DATA_DIR"] = str(settings.data_dir.resolve())
    os.environ["KG_BIND_HOST"] = host
    create_app(settings)  # fail here, once, on a bad setting rather than in every worker
    uvicorn.run("api.app:create_app_from_env", factory=True, host=host, port=port, workers=workers, log_level="info",
                access_log=not no_access_log)
