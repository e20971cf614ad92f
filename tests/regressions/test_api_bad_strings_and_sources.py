"""Regressions: a lone surrogate in `source`, `title`, `query` or `types` gave a plain-text 500 and a
dropped connection; an API `source` equal to a file's path replaced that file's document."""

from __future__ import annotations

import json

import pytest
from conftest import build_kb, make_settings
from fastapi.testclient import TestClient

from api.app import create_app


@pytest.fixture
def client(tmp_path):
    build_kb(tmp_path).close()
    with TestClient(create_app(make_settings(tmp_path / "kb"))) as test_client:
        yield test_client


def _post(client, path: str, raw_json: str):
    # json.dumps would refuse nothing here: "\\ud800" is valid JSON text for a lone surrogate.
    return client.post(path, content=raw_json.encode("ascii"), headers={"content-type": "application/json"})


@pytest.mark.parametrize(("path", "body", "field"), [
    ("/documents", '{"text": "# a\\n\\nb", "source": "x\\ud800"}', "body.source"),
    ("/documents", '{"text": "# a\\n\\nb", "title": "\\udfff"}', "body.title"),
    ("/documents", '{"text": "\\ud800"}', "body.text"),
    ("/query", '{"query": "nginx\\ud800"}', "body.query"),
    ("/query", '{"query": "nginx", "types": ["\\ud83d"]}', "body.types.0"),
])
def test_a_lone_surrogate_is_422_json(client, path, body, field):
    response = _post(client, path, body)
    assert response.status_code == 422, response.text
    [problem] = response.json()["error"]["problems"]
    # pydantic refuses a string that is nothing but a surrogate itself; ours catches the rest
    assert problem.startswith((f"{field}: Value error, contains a lone surrogate",
                               f"{field}: Input should be a valid string, unable to parse raw data as a unicode string"))
    assert client.get("/health").status_code == 200


def test_an_api_source_never_replaces_a_files_document(client):
    kb = client.app.state.kb
    [nginx] = [d for d in kb.store.documents() if d.source.endswith("docs/infra/nginx.md")]
    response = client.post("/documents", json={"text": "# hijack\n\nflamingo", "source": nginx.source})
    assert response.status_code == 201
    assert response.json()["added"] == 1
    assert kb.store.document(nginx.doc_id).sha256 == nginx.sha256  # the file's document is untouched
    assert kb.store.document_by_source("api:" + nginx.source) is not None
    hits = client.post("/query", json={"query": "flamingo", "mode": "bm25"}).json()["hits"]
    assert hits[0]["source"] == "api:" + nginx.source
    assert nginx.source not in [h["source"] for h in hits]
    assert json.dumps(hits)  # and the answer is plain JSON
