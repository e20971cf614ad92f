"""The API's guards through the real ASGI app: errors always JSON with their documented status, body limit,
Host allow-list, the token on every state-changing route, UTF-8 tokens, the start-up checks."""

from __future__ import annotations

import re

import pytest
from conftest import make_settings
from fastapi.testclient import TestClient

from api.app import create_app
from kg.errors import ConfigError

# POST routes that only read (the question is the body); everything else not GET needs the token.
READ_ONLY_POSTS = {"/query", "/ask", "/v1/chat/completions"}


@pytest.fixture
def client(tmp_path):
    with TestClient(create_app(make_settings(tmp_path / "kb", max_body_bytes=10_000))) as test_client:
        yield test_client


def test_unknown_paths_and_methods_are_json_errors(client):
    response = client.get("/nope")
    assert response.status_code == 404
    assert response.json() == {"error": {"type": "NotFoundError", "message": "no endpoint /nope (see /docs for the API)"}}
    response = client.delete("/query")
    assert response.status_code == 405
    assert response.json() == {"error": {"type": "MethodNotAllowed",
                                         "message": "DELETE is not allowed on /query (use POST; see /docs)"}}
    assert response.headers["allow"] == "POST"


def test_an_unparsable_body_is_400_json(client):
    response = client.post("/query", content=b'{"query": ', headers={"content-type": "application/json"})
    assert response.status_code == 400
    assert response.json() == {"error": {"type": "InputError", "message": "the request body is not valid JSON"}}


def test_a_body_over_the_limit_is_413_from_content_length(client):
    response = client.post("/documents", content=b"x" * 20_000, headers={"content-type": "application/json"})
    assert response.status_code == 413
    assert response.json() == {"error": {"type": "TooLargeError",
                                         "message": "the request body is over the limit of 10,000 bytes (KG_MAX_BODY_BYTES)"}}
    assert client.get("/health").status_code == 200


def test_a_streamed_body_over_the_limit_is_413(client):
    def chunks():  # no Content-Length: chunked transfer
        for _ in range(5):
            yield b'{"text": "' + b"y" * 4000

    response = client.post("/documents", content=chunks(), headers={"content-type": "application/json"})
    assert response.status_code == 413
    assert response.json()["error"]["type"] == "TooLargeError"
    assert client.app.state.kb.store.stats()["documents"] == 0


def test_a_document_over_the_document_limit_is_413(tmp_path):
    settings = make_settings(tmp_path / "kb", max_document_bytes=100)
    with TestClient(create_app(settings)) as client:
        response = client.post("/documents", json={"text": "# big\n\n" + "字" * 100, "source": "big"})
        assert response.status_code == 413
        assert response.json()["error"]["message"] == (
            "api:big: 307 bytes is over the document size limit of 100 bytes: split it, or raise KG_MAX_DOCUMENT_BYTES"
        )


def test_a_foreign_host_header_is_refused(tmp_path):
    with TestClient(create_app(make_settings(tmp_path / "kb")), base_url="http://evil.example") as client:
        response = client.post("/query", json={"query": "nginx"})
        assert response.status_code == 400
        assert response.json()["error"]["message"].startswith("Host 'evil.example' is not allowed: add it to KG_ALLOWED_HOSTS")
    settings = make_settings(tmp_path / "kb", allowed_hosts="kb.example.org")
    with TestClient(create_app(settings), base_url="http://kb.example.org:8000") as client:
        assert client.get("/health").status_code == 200
    with TestClient(create_app(make_settings(tmp_path / "kb")), base_url="http://localhost:8000") as client:
        assert client.get("/health").status_code == 200
    with TestClient(create_app(make_settings(tmp_path / "kb")), base_url="http://[::1]:8000") as client:
        assert client.get("/health").status_code == 200


def test_an_empty_token_is_a_start_up_error(tmp_path):
    with pytest.raises(ConfigError) as error:
        create_app(make_settings(tmp_path / "kb", api_token=""))
    assert str(error.value).startswith("KG_API_TOKEN is set but empty")


def test_every_state_changing_route_requires_the_token(tmp_path):
    # Whatever routes other modules add: each POST/PUT/PATCH/DELETE in the spec that is not a read
    # must refuse a request without the token before looking at its body.
    with TestClient(create_app(make_settings(tmp_path / "kb", api_token="t"))) as client:
        spec = client.get("/openapi.json").json()
        writes = [(m, p) for p, ops in spec["paths"].items() for m in ops
                  if m in ("post", "put", "patch", "delete") and p not in READ_ONLY_POSTS]
        assert ("post", "/documents") in writes
        for method, path in writes:
            url = re.sub(r"{[^}]+}", "x", path)
            response = client.request(method.upper(), url, json={})
            assert response.status_code == 401, f"{method.upper()} {path} is open without the token"
            assert response.json()["error"]["type"] == "AuthError"
        for path in READ_ONLY_POSTS & set(spec["paths"]):
            assert client.post(path, json={}).status_code != 401


def test_a_utf8_token_works_and_a_wrong_one_is_401(tmp_path):
    token = "口令-sécret"
    with TestClient(create_app(make_settings(tmp_path / "kb", api_token=token))) as client:
        body = {"text": "# t\n\nheron", "source": "t"}
        raw = ("Bearer " + token).encode("utf-8")  # the bytes a client sends
        assert client.post("/documents", json=body, headers={"Authorization": raw}).status_code == 201
        response = client.post("/documents", json=body, headers={"Authorization": "Bearer wrong"})
        assert response.status_code == 401
        assert response.headers["www-authenticate"] == "Bearer"
        assert client.post("/documents", json=body).json()["error"]["type"] == "AuthError"


def test_blank_types_mean_no_restriction(tmp_path):
    with TestClient(create_app(make_settings(tmp_path / "kb"))) as client:
        response = client.post("/query", json={"query": "nginx", "types": [""]})
        assert response.status_code == 200


def test_the_openapi_spec_documents_the_error_statuses(client):
    spec = client.get("/openapi.json").json()
    for path, operations in spec["paths"].items():
        for method, operation in operations.items():
            assert {"400", "401", "404", "413", "422", "500", "503"} <= set(operation["responses"]), (method, path)


def test_with_any_host_allowed_a_write_must_come_from_the_host_asked(tmp_path):
    """KG_ALLOWED_HOSTS=*: there is no list to check an Origin against, so the page must be the server's own."""
    settings = make_settings(tmp_path / "kb", allowed_hosts="*")
    with TestClient(create_app(settings), base_url="http://kb.example.org:8000") as client:
        body = {"text": "# a\n\nb", "source": "a"}
        assert client.post("/documents", json=body, headers={"Origin": "http://kb.example.org:8000"}).status_code == 201
        response = client.post("/documents", json=body, headers={"Origin": "http://kb.example.org:9000"})
        assert response.status_code == 403
        assert response.json()["error"]["message"].startswith("cross-site request refused (Origin is 'http://kb.example.org:9000')")
        assert client.post("/documents", json=body, headers={"Origin": "http://evil.example"}).status_code == 403
