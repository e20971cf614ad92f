"""Chat messages in -> the model's text out, through litellm (imported lazily, once), or `LlmUnavailable` saying why not.

Every call has a timeout and no retries (a retry storm against a dead endpoint would hold the
user's request hostage), and any failure of the endpoint (refused connection, timeout, HTTP
error, an empty or non-text reply) becomes `LlmUnavailable(reason)`, on which the caller completes
the same request on the rules path. After the first connection failure or timeout, an `LlmClient`
makes no further calls for the rest of its request: the rules path then costs nothing more.

The model, its endpoint and its key come from settings and the environment only; nothing in a
document or a question can change them.
"""

from __future__ import annotations

import math
import os
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

from kg.endpoint import endpoint_key
from kg.files import masked, without_controls

__all__ = ["LlmClient", "LlmConfig", "LlmUnavailable", "char_tokens", "estimate_tokens", "llm_config", "load_litellm", "missing_keys",
           "warm_up"]

_lock = threading.Lock()
_litellm = None
# (model, base_url) of endpoints that refused `response_format` json_schema: asked without it from then on.
_NO_SCHEMA: set[tuple[str, str | None]] = set()


def load_litellm():
    """Import litellm once per process, without its network look-ups at import (STACK.md pitfall 8)."""
    global _litellm
    if _litellm is None:
        with _lock:
            if _litellm is None:
                os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
                import litellm

                litellm.suppress_debug_info = True
                litellm.drop_params = True  # a provider that lacks e.g. temperature must not fail the call
                _litellm = litellm
    return _litellm


def warm_up() -> threading.Thread:
    """Import litellm in a background thread (a server configured with a model, at start): 6-30 s that
    the first question would otherwise wait."""
    thread = threading.Thread(target=load_litellm, name="litellm-import", daemon=True)
    thread.start()
    return thread


def char_tokens(ch: str) -> float:
    """One character's share of `estimate_tokens`."""
    if "\u3400" <= ch <= "\u9fff":
        return 0.8
    if ch.isascii() and ch.isalpha():
        return 0.25
    if ch.isspace():
        return 0.0
    return 1.0  # a digit, a punctuation mark, any other character


def estimate_tokens(text: str) -> int:
    """A model-free estimate of a text's tokens, erring high: 0.8 a CJK character, one a digit or punctuation mark
    (a tokenizer splits `max_connections=2000` finely), a quarter a letter. Fitted to Qwen2.5's tokenizer (the
    llama.cpp server's /tokenize) on the demo's documents (total 0.99 of the estimate) and confirmed on ops_dev_zh
    (0.83) and gitlab_handbook_dev (0.82); the rule it replaced (a CJK character one, four other characters one)
    read the demo 9% short, and identifier-heavy text up to 1.8x short, so prompts passed their bound."""
    return math.ceil(sum(char_tokens(ch) for ch in text))


def missing_keys(config: LlmConfig) -> list[str]:
    """The environment variables the provider needs that are not set (e.g. DEEPSEEK_API_KEY for deepseek/...)."""
    if config.api_key_env:
        return [] if os.environ.get(config.api_key_env) else [config.api_key_env]
    if config.base_url:
        return []  # a self-hosted OpenAI-compatible server: no key unless KG_LLM_API_KEY_ENV names one
    try:
        found = load_litellm().validate_environment(model=config.model)
    except Exception:  # noqa: BLE001 - an unknown provider: the call itself will say so
        return []
    return [k for k in found.get("missing_keys") or [] if isinstance(k, str)]


class LlmUnavailable(Exception):
    """The model could not give an answer; `reason` says why, for the answer's `path_reason`."""

    def __init__(self, reason: str, *, endpoint_down: bool = False) -> None:
        super().__init__(reason)
        self.reason = reason
        self.endpoint_down = endpoint_down


@dataclass(frozen=True)
class LlmConfig:
    model: str
    base_url: str | None = None
    api_key_env: str | None = None
    timeout: float = 300.0
    max_tokens: int = 800
    temperature: float = 0.0


def llm_config(settings) -> LlmConfig | None:
    """The configured model, or None when KG_LLM_MODEL is unset (the offline rules path)."""
    model = (settings.llm_model or "").strip()
    if not model:
        return None
    return LlmConfig(model=model, base_url=settings.llm_base_url or None, api_key_env=settings.llm_api_key_env or None,
                     timeout=settings.llm_timeout, max_tokens=settings.llm_max_tokens,
                     temperature=settings.llm_temperature)


@dataclass
class LlmClient:
    """One request's access to the model. `mock` maps a task ("judge", "rewrite", "answer") to a reply
    handed to litellm's own `mock_response=` (tests and dry runs: litellm's real code path, no network)."""

    config: LlmConfig
    mock: Mapping[str, str] = field(default_factory=dict)
    down: str | None = None  # set after a connection failure or timeout: no more calls in this request
    calls: int = 0
    tasks: list[str] = field(default_factory=list)  # the tasks called, in order (for the record and tests)
    usage: list[dict] = field(default_factory=list)  # per call: task, prompt and completion tokens, ms

    @property
    def model(self) -> str:
        return self.config.model

    def _kwargs(self, task: str, max_tokens: int | None) -> dict:
        cfg = self.config
        kwargs: dict = {"model": cfg.model, "timeout": cfg.timeout, "max_retries": 0, "num_retries": 0,
                        "temperature": cfg.temperature, "max_tokens": max_tokens or cfg.max_tokens}
        if cfg.base_url:
            kwargs["api_base"] = cfg.base_url
        key, problem = endpoint_key(cfg.model, cfg.base_url, cfg.api_key_env)
        if problem:
            raise LlmUnavailable(problem)
        if key:
            kwargs["api_key"] = key
        elif not self.mock and (missing := missing_keys(cfg)):
            # Said before the call: a provider reached without its key answers with an opaque error (HTTP 500).
            raise LlmUnavailable(f"{cfg.model} needs {', '.join(missing)} in the environment, which is not set")
        if self.mock:
            if task not in self.mock:  # a dry run never reaches a real endpoint by accident
                raise LlmUnavailable(f"no mock reply for the {task} task")
            kwargs["mock_response"] = self.mock[task]
        return kwargs

    def _call(self, task: str, max_tokens: int | None):
        """(litellm, the call's arguments) for one call, counted; raises LlmUnavailable once the endpoint is down."""
        if self.down:
            raise LlmUnavailable(self.down, endpoint_down=True)
        litellm = load_litellm()
        kwargs = self._kwargs(task, max_tokens)
        self.calls += 1
        self.tasks.append(task)
        return litellm, kwargs

    def complete(self, task: str, messages: list[dict], *, max_tokens: int | None = None,
                 schema: dict | None = None) -> str:
        """The model's whole reply to `messages`; raises LlmUnavailable. With `schema`, the reply is asked for as
        JSON of that schema (`response_format` json_schema: llama.cpp and vLLM enforce it by grammar, OpenAI
        by structured output); an endpoint that refuses the parameter is asked again without it, once."""
        litellm, kwargs = self._call(task, max_tokens)
        key = (self.config.model, self.config.base_url)
        if schema is not None and key not in _NO_SCHEMA:
            kwargs["response_format"] = {"type": "json_schema",
                                         "json_schema": {"name": task, "schema": schema, "strict": True}}
        started = time.perf_counter()
        try:
            try:
                response = litellm.completion(messages=messages, **kwargs)
            except Exception as exc:  # noqa: BLE001
                if "response_format" not in kwargs or getattr(exc, "status_code", None) not in (400, 422):
                    raise
                _NO_SCHEMA.add(key)
                kwargs.pop("response_format")
                self.calls += 1
                self.tasks.append(task)
                response = litellm.completion(messages=messages, **kwargs)
        except Exception as exc:  # noqa: BLE001 - every failure of the endpoint degrades to the rules path
            raise self._failed(exc) from exc
        self._count(task, messages, response, started)
        try:
            text = response.choices[0].message.content
        except (AttributeError, IndexError, TypeError):
            text = None
        if not isinstance(text, str) or not text.strip():
            raise LlmUnavailable(f"{self.model} returned no text")
        return without_controls(text)[0]

    def stream(self, task: str, messages: list[dict], *, max_tokens: int | None = None) -> Iterator[str]:
        """The model's reply piece by piece; raises LlmUnavailable (before or during the stream)."""
        litellm, kwargs = self._call(task, max_tokens)
        started, usage, written, finish = time.perf_counter(), None, [], None
        try:
            chunks = litellm.completion(messages=messages, stream=True, stream_options={"include_usage": True}, **kwargs)
            for chunk in chunks:
                usage = getattr(chunk, "usage", None) or usage
                try:
                    piece = chunk.choices[0].delta.content
                    finish = chunk.choices[0].finish_reason or finish
                except (AttributeError, IndexError, TypeError):
                    piece = None
                if piece:
                    # A piece holds part of a terminal escape at most: its ESC removed, the rest prints as text.
                    piece = without_controls(piece)[0]
                    written.append(piece)
                    yield piece
        except LlmUnavailable:
            raise
        except Exception as exc:  # noqa: BLE001 - see complete()
            raise self._failed(exc) from exc
        finally:
            self._record(task, messages, usage, "".join(written), started, finish)
        if not "".join(written).strip():
            raise LlmUnavailable(f"{self.model} returned no text")

    def _count(self, task: str, messages: list[dict], response, started: float) -> None:
        try:
            text = response.choices[0].message.content or ""
            finish = response.choices[0].finish_reason
        except (AttributeError, IndexError, TypeError):
            text, finish = "", None
        self._record(task, messages, getattr(response, "usage", None), text, started, finish)

    def _record(self, task: str, messages: list[dict], usage, text: str, started: float, finish=None) -> None:
        """Tokens of one call: the endpoint's count where it gives one, else an estimate (`estimated`); `cut` when the
        reply stopped at max_tokens (finish_reason "length"), not where the model ended it."""
        prompt = getattr(usage, "prompt_tokens", None) if usage is not None else None
        completion = getattr(usage, "completion_tokens", None) if usage is not None else None
        estimated = not isinstance(prompt, int) or prompt <= 1
        if estimated:
            prompt = sum(estimate_tokens(str(m.get("content") or "")) for m in messages)
            completion = estimate_tokens(text)
        self.usage.append({"task": task, "prompt_tokens": prompt, "completion_tokens": completion or 0,
                           "ms": round((time.perf_counter() - started) * 1e3, 1), "estimated": estimated,
                           "cut": finish == "length"})

    def _failed(self, exc: Exception) -> LlmUnavailable:
        litellm = load_litellm()
        name = type(exc).__name__
        text = " ".join(str(exc).split())[:200]
        where = masked(self.config.base_url) if self.config.base_url else "the provider's default endpoint"
        if isinstance(exc, litellm.exceptions.Timeout):
            self.down = f"{self.model} at {where} timed out after {self.config.timeout:g} s (KG_LLM_TIMEOUT)"
            return LlmUnavailable(self.down, endpoint_down=True)
        if isinstance(exc, litellm.exceptions.APIConnectionError) or "connection error" in text.lower():
            self.down = f"{self.model} at {where} is unreachable ({name})"
            return LlmUnavailable(self.down, endpoint_down=True)
        status = getattr(exc, "status_code", None)
        if isinstance(exc, litellm.exceptions.AuthenticationError) or status in (401, 403):
            self.down = f"{self.model} at {where} refused the key (HTTP {status or 401}): check {self._key_name()}"
            return LlmUnavailable(self.down, endpoint_down=True)
        if isinstance(exc, litellm.exceptions.NotFoundError) or status == 404 or "model not found" in text.lower():
            self.down = f"{self.model} is not a model {where} knows (HTTP {status or 404}): check KG_LLM_MODEL"
            return LlmUnavailable(self.down, endpoint_down=True)
        if isinstance(status, int) and status >= 500:
            self.down = f"{self.model} at {where} failed with HTTP {status}: {text[:120]}"
            return LlmUnavailable(self.down, endpoint_down=True)
        return LlmUnavailable(f"{self.model} call failed: {name}: {text}")

    def _key_name(self) -> str:
        if self.config.api_key_env:
            return f"{self.config.api_key_env} (KG_LLM_API_KEY_ENV)"
        return "the provider's key variable (or KG_LLM_API_KEY_ENV)"
