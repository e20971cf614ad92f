"""Regression: `mode: "dense"` is in the API's schema, but a knowledge base with no vectors answered it with
a 400 "bad input" (schemathesis: a schema-valid request rejected). The request is valid; the knowledge base
cannot serve it yet, which is a 409 that says how to get vectors, in the API and in the CLI."""

from __future__ import annotations

from click.testing import CliRunner
from conftest import build_kb, make_settings
from fastapi.testclient import TestClient

from api.app import create_app
from kg.cli import cli


def test_dense_without_vectors_is_a_conflict_saying_how_to_embed(tmp_path):
    build_kb(tmp_path).close()
    with TestClient(create_app(make_settings(tmp_path / "kb"))) as client:
        response = client.post("/query", json={"query": "redis-cluster", "mode": "dense"})
        assert response.status_code == 409, response.text
        assert "kg embed" in response.json()["error"]["message"]
        assert client.post("/query", json={"query": "redis-cluster", "mode": "bm25"}).status_code == 200
    result = CliRunner().invoke(cli, ["query", "redis-cluster", "--mode", "dense", "--data-dir", str(tmp_path / "kb")],
                                env={"KG_EMBED_MODEL": ""})
    assert result.exit_code != 0
    assert "needs vectors" in result.output and "kg embed" in result.output
