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
from kg.errors import ConfigError, NotFoundError

DEMO_DATA_DIR = Path(".kgrag-demo")  # where `kg demo` builds it


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
@click.option("--keep-alive", "keep_alive", type=click.IntRange(1, 3600), default=300, show_default=True,
              help="Seconds an idle connection stays open (uvicorn's 5 s closed busy clients' connections mid-request).")
@click.option("--demo", is_flag=True, help="Serve the bundled demo knowledge base (./.kgrag-demo, or --data-dir; "
              "built first when it is not there).")
@data_dir_option
def serve(host: str, port: int, workers: int, allow_open_writes: bool, no_access_log: bool, keep_alive: int, demo: bool,
          data_dir: Path | None) -> None:
    """Serve the HTTP API (OpenAPI docs at /docs). Set KG_API_TOKEN to protect write endpoints.

    \b
    On an address other than loopback, a token is required unless --allow-open-writes is given.
    Host names other than localhost and the bind address are refused unless listed in
    KG_ALLOWED_HOSTS (against DNS rebinding). A data dir without a knowledge base is refused
    (`kg ingest PATH` or `kg init` makes one); `--demo` serves the bundled demo.
    """
    if demo and click.get_current_context().get_parameter_source("data_dir") != click.core.ParameterSource.COMMANDLINE:
        data_dir = DEMO_DATA_DIR  # not $KG_DATA_DIR: --demo means the demo, whatever the shell has set
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
    _port_free(host, port)
    _knowledge_base_or_demo(settings, demo)
    import uvicorn

    from api import create_app

    if workers == 1:
        uvicorn.run(create_app(settings), host=host, port=port, log_level="info", access_log=not no_access_log,
                    timeout_keep_alive=keep_alive)
        return
    # Worker processes import the app themselves: hand them the settings through the environment.
    os.environ["KG_DATA_DIR"] = str(settings.data_dir.resolve())
    os.environ["KG_BIND_HOST"] = host
    create_app(settings)  # fail here, once, on a bad setting rather than in every worker
    uvicorn.run("api.app:create_app_from_env", factory=True, host=host, port=port, workers=workers, log_level="info",
                access_log=not no_access_log, timeout_keep_alive=keep_alive)


def _port_free(host: str, port: int) -> None:
    """A port another server holds, said before anything loads: uvicorn finds it only once the app has started, as one
    ERROR line among its INFO lines, and exits 3."""
    import errno
    import socket

    try:
        family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
    except socket.gaierror as exc:
        raise ConfigError(f"cannot serve on {host}: {exc.strerror} (give an address or a host name of this machine)") from exc
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds: a port in TIME_WAIT is free
        try:
            probe.bind(address)
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                raise ConfigError(f"port {port} on {host} is in use (another kg serve?): stop that server or choose "
                                  "another port with --port") from exc
            raise ConfigError(f"cannot serve on {host}:{port}: {exc.strerror}") from exc


def _knowledge_base_or_demo(settings, demo: bool) -> None:
    """Refuse to serve a folder that holds no knowledge base (the server would create an empty one and answer
    nothing), or build the demo there when --demo asks for it."""
    from retrieval.pipeline import MARKER

    root = Path(settings.data_dir)
    if (root / MARKER).exists():
        return
    if demo:
        from kg.cli.base import open_kb
        from kg.cli.evaluate import build_demo

        click.echo(f"building the demo knowledge base in {root} ...", err=True)
        with open_kb(root, create=True) as kb:
            build_demo(kb, quiet=False)
        return
    demo_hint = (f"`kg serve --data-dir {DEMO_DATA_DIR}` serves the demo `kg demo` built" if DEMO_DATA_DIR.joinpath(MARKER).exists()
                 else "`kg serve --demo` serves the bundled demo")
    raise NotFoundError(
        f"no knowledge base in '{root}', so there is nothing to serve: index your notes there first with "
        f"`kg ingest PATH` (or `kg init` to start empty and add documents through the page or the API), "
        f"point --data-dir / KG_DATA_DIR at an existing one, or try the demo: {demo_hint}"
    )
