"""Regressions: /ask and /v1/chat/completions stayed open when a token was set (with a paid model anyone
reaching the port spent its tokens) and had no rate limit; every 405 rebuilt the OpenAPI document; a
4,000-character question of hundreds of words was searched word by word (5.7 s each); `k: "10"` and
`k: true` were accepted; a lone surrogate in /ask `packs`, the chat `model` or a chat content part's
`text` was a 500 that dropped the connection."""

from __future__ import annotations

import pytest
from conftest import make_settings
from fastapi.testclient import TestClient

from api.app import create_app
from kg.errors import ConfigError

CHAT = "/v1/chat/completions"


def _chat(text: str) -> dict:
    return {"messages": [{"role": "user", "content": text}]}


@pytest.fixture
def client(tmp_path):
    with TestClient(create_app(make_settings(tmp_path / "kb"))) as test_client:
        yield test_client


def test_ask_and_chat_can_require_the_token(tmp_path):
    settings = make_settings(tmp_path / "kb", api_token="s3cret", ask_requires_token=True)
    with TestClient(create_app(settings)) as client:
        for path, body in (("/ask", {"question": "nginx"}), (CHAT, _chat("nginx"))):
            response = client.post(path, json=body)
            assert response.status_code == 401, response.text
            assert response.headers["www-authenticate"] == "Bearer"
            assert "KG_ASK_REQUIRES_TOKEN" in response.json()["error"]["message"]
            assert client.post(path, json=body, headers={"Authorization": "Bearer wrong"}).status_code == 401
            assert client.post(path, json=body, headers={"Authorization": "Bearer s3cret"}).status_code == 200
        assert client.post("/query", json={"query": "nginx"}).status_code == 200  # search stays open
    with pytest.raises(ConfigError, match="KG_ASK_REQUIRES_TOKEN is set but KG_API_TOKEN is not"):
        create_app(make_settings(tmp_path / "kb", ask_requires_token=True))


def test_questions_are_rate_limited_per_token(tmp_path):
    settings = make_settings(tmp_path / "kb", api_token="s3cret", ask_requires_token=True, ask_rate_limit=2)
    with TestClient(create_app(settings)) as client:
        auth = {"Authorization": "Bearer s3cret"}
        assert client.post("/ask", json={"question": "nginx"}, headers=auth).status_code == 200
        assert client.post(CHAT, json=_chat("nginx"), headers=auth).status_code == 200
        response = client.post("/ask", json={"question": "nginx"}, headers=auth)
        assert response.status_code == 429
        assert response.json()["error"]["type"] == "RateLimitError"
        assert "more than 2 questions a minute (KG_ASK_RATE_LIMIT)" in response.json()["error"]["message"]
        assert 1 <= int(response.headers["retry-after"]) <= 61
        assert client.post("/query", json={"query": "nginx"}).status_code == 200


def test_a_405_does_not_rebuild_the_openapi_document(client):
    assert client.put("/query").status_code == 405
    spec = client.app.openapi_schema
    assert spec is not None
    for _ in range(3):
        assert client.put("/query").status_code == 405
        assert client.get("/openapi.json").status_code == 200
        assert client.app.openapi_schema is spec


def test_a_question_of_too_many_words_is_422_naming_the_limit(client):
    words = " ".join(f"word{i}" for i in range(100))
    for path, body, field in (("/query", {"query": words}, "body.query"), ("/ask", {"question": words}, "body.question"),
                              (CHAT, _chat(words), "body.messages")):
        response = client.post(path, json=body)
        assert response.status_code == 422, response.text
        [problem] = response.json()["error"]["problems"]
        assert problem == f"{field}: more than 64 distinct words (KG_MAX_QUERY_TERMS): ask with fewer words"
    chinese = "".join(chr(0x4E00 + i * 7) for i in range(1500))  # 1,500 characters no word repeats
    response = client.post("/query", json={"query": chinese})
    assert response.status_code == 422
    assert "more than 64 distinct words (KG_MAX_QUERY_TERMS)" in response.json()["error"]["problems"][0]
    repeated = " ".join(["nginx cache"] * 300)  # long, but two words
    assert client.post("/query", json={"query": repeated}).status_code == 200


@pytest.mark.parametrize("k", ["10", True, 2.5])
def test_k_must_be_a_json_integer(client, k):
    for path, body in (("/query", {"query": "nginx", "k": k}), ("/ask", {"question": "nginx", "k": k})):
        response = client.post(path, json=body)
        assert response.status_code == 422, response.text
        assert response.json()["error"]["problems"][0].startswith("body.k: Value error, must be a")


def test_k_as_a_whole_float_is_the_json_integer_it_means(client):
    # JSON Schema's "integer" includes 10.0, so a schema-valid client may send it (schemathesis does).
    for path, body in (("/query", {"query": "nginx", "k": 3.0}), ("/ask", {"question": "nginx", "k": 3.0})):
        assert client.post(path, json=body).status_code == 200


def _raw(client, path: str, raw_json: str):
    return client.post(path, content=raw_json.encode("ascii"), headers={"content-type": "application/json"})


@pytest.mark.parametrize(("path", "body", "field"), [
    ("/ask", '{"question": "nginx", "packs": ["x\\ud800"]}', "body.packs.0"),
    (CHAT, '{"model": "m\\ud800", "messages": [{"role": "user", "content": "nginx"}]}', "body.model"),
    (CHAT, '{"messages": [{"role": "user", "content": [{"type": "text", "text": "a\\udfff"}]}]}',
     "body.messages.0.content"),
])
def test_a_lone_surrogate_in_ask_or_chat_is_422(client, path, body, field):
    response = _raw(client, path, body)
    assert response.status_code == 422, response.text
    problems = response.json()["error"]["problems"]
    assert any(p.startswith(field) and "lone surrogate" in p for p in problems), problems
    assert client.get("/health").status_code == 200
