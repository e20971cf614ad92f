"""The HTTP API through FastAPI's TestClient (lifespan included): shapes, errors as JSON, the token."""

from __future__ import annotations

from urllib.parse import quote

import pytest
from conftest import (
    CROSS_DOC_GOLD,
    CROSS_DOC_QUERY,
    HIT_KEYS,
    build_kb,
    make_settings,
    relative_source,
)
from fastapi.testclient import TestClient

from api.app import create_app
from ontology import entity_iri

TOKEN = "s3cret-token"


@pytest.fixture
def client(tmp_path):
    """The API over a knowledge base of the fixture corpus of the test's own."""
    build_kb(tmp_path).close()
    with TestClient(create_app(make_settings(tmp_path / "kb"))) as test_client:
        yield test_client


@pytest.fixture
def guarded(tmp_path):
    """The API with a bearer token required for writes, over an empty knowledge base."""
    with TestClient(create_app(make_settings(tmp_path / "kb", api_token=TOKEN))) as test_client:
        yield test_client


def test_query_returns_the_cli_json_shape(client, tmp_path):
    response = client.post("/query", json={"query": CROSS_DOC_QUERY, "k": 5})
    assert response.status_code == 200
    data = response.json()
    assert set(data) == {"query", "mode", "entities", "hits", "followup", "timings_ms", "as_of", "as_of_from", "packs_used",
                         "out_of_scope", "routing", "meaning", "graph"}
    assert (data["query"], data["mode"]) == (CROSS_DOC_QUERY, "full")
    assert [e["label"] for e in data["entities"]] == ["order-service"]
    assert 0 < len(data["hits"]) <= 5
    for rank, hit in enumerate(data["hits"], start=1):
        assert set(hit) == HIT_KEYS | {"version", "page", "parent"}  # + documents' keys
        assert hit["rank"] == rank
    gold = [h for h in data["hits"] if relative_source(h["source"], tmp_path) == CROSS_DOC_GOLD]
    assert gold and "dependsOn" in gold[0]["why"]["graph"]["path"]


def test_query_modes(client):
    data = client.post("/query", json={"query": CROSS_DOC_QUERY, "mode": "bm25"}).json()
    assert data["mode"] == "bm25" and data["entities"] == []
    assert all(set(h["why"]) == {"bm25"} for h in data["hits"])


def test_a_posted_document_is_found_by_the_next_query(client):
    assert client.post("/query", json={"query": "flamingo"}).json()["hits"] == []
    response = client.post(
        "/documents",
        json={
            "text": "# 压测环境\n\nflamingo 是压测环境的代号，每周三重置。",
            "source": "api:load-test",
        },
    )
    assert response.status_code == 201
    body = response.json()
    assert (body["added"], body["updated"], body["unchanged"], body["chunks_indexed"]) == (
        1,
        0,
        0,
        1,
    )
    [doc_id] = body["doc_ids"]
    [hit] = client.post("/query", json={"query": "flamingo"}).json()["hits"]
    assert (hit["doc_id"], hit["title"], hit["source"]) == (doc_id, "压测环境", "api:load-test")
    again = client.post(
        "/documents",
        json={
            "text": "# 压测环境\n\nflamingo 是压测环境的代号，每周三重置。",
            "source": "api:load-test",
        },
    ).json()
    assert (again["added"], again["unchanged"]) == (0, 1)


def test_a_document_without_source_gets_a_content_name(client):
    body = client.post(
        "/documents", json={"text": "pelican notes", "format": "txt", "title": "Pelican"}
    ).json()
    [hit] = client.post("/query", json={"query": "pelican"}).json()["hits"]
    assert hit["doc_id"] == body["doc_ids"][0]
    assert hit["title"] == "Pelican"
    assert hit["source"].startswith("api:")


def test_entity_with_neighbours(client):
    response = client.get("/entities/order-service")
    assert response.status_code == 200
    data = response.json()
    assert data["id"] == str(entity_iri("order-service"))
    assert {rel: [n["label"] for n in ns] for rel, ns in data["neighbours"].items()} == {
        "dependsOn": ["mysql-core"],
        "runtimeDependsOn": ["inventory-service"],
        "ownedBy": ["交易团队"],
    }
    by_label = client.get("/entities/" + quote("交易团队")).json()
    assert by_label["neighbours"] == {
        "owns": [
            {"id": str(entity_iri("order-service")), "label": "order-service", "asserted": False}
        ]
    }


def test_entity_with_sources_gives_each_edge_its_table_line(client):
    data = client.get("/entities/" + quote("交易团队"), params={"sources": "true"}).json()
    [owned] = data["neighbours"]["owns"]  # walked backwards: the row is "order-service,ownedBy,交易团队"
    assert owned["label"] == "order-service" and owned["origin"].startswith("relations.csv:")
    assert "origin" not in client.get("/entities/" + quote("交易团队")).json()["neighbours"]["owns"][0]


def test_entity_by_iri(client):
    response = client.get("/entities/" + str(entity_iri("mysql-core")))
    assert response.status_code == 200
    assert response.json()["label"] == "mysql-core"


def test_an_unknown_entity_is_404_json(client):
    response = client.get("/entities/no-such-thing")
    assert response.status_code == 404
    assert response.json() == {
        "error": {
            "type": "NotFoundError",
            "message": "no entity 'no-such-thing' (give its IRI, its exact label or an alias; `kg stats` counts entities)",
        }
    }


def test_a_blank_query_is_422_json(client):
    # The schema says a query has a non-space character (so the OpenAPI spec admits only what is accepted).
    response = client.post("/query", json={"query": "   "})
    assert response.status_code == 422
    assert response.json() == {
        "error": {
            "type": "InputError",
            "message": "invalid request body",
            "problems": ["body.query: String should match pattern '[^\\s\\x1c-\\x1f]'"],
        }
    }


def test_a_query_of_separator_characters_is_refused_by_the_schema_too(client):
    # U+001F passes a regex `\S` but Python strips it: the spec must not admit what the library calls empty.
    response = client.post("/query", json={"query": "\x1f"})
    assert response.status_code == 422
    assert response.json()["error"]["problems"] == ["body.query: String should match pattern '[^\\s\\x1c-\\x1f]'"]


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        ({}, "body.query: Field required"),
        ({"query": ""}, "body.query: String should have at least 1 character"),
        (
            {"query": "nginx", "mode": "semantic"},
            "body.mode: String should match pattern '^(full|bm25|graph|dense)$'",
        ),
        ({"query": "nginx", "k": 0}, "body.k: Input should be greater than or equal to 1"),
    ],
)
def test_an_invalid_query_body_is_422_json(client, body, problem):
    response = client.post("/query", json=body)
    assert response.status_code == 422
    error = response.json()["error"]
    assert (error["type"], error["message"]) == ("InputError", "invalid request body")
    assert error["problems"] == [problem]


def test_an_empty_document_is_a_json_error(client):
    response = client.post("/documents", json={"text": "  \n  ", "source": "api:blank"})
    assert response.status_code == 422  # the schema asks for a non-space character
    assert response.json() == {
        "error": {"type": "InputError", "message": "invalid request body",
                  "problems": ["body.text: String should match pattern '[^\\s\\x1c-\\x1f]'"]}
    }
    assert (
        client.post("/documents", json={"text": "egret notes", "source": "api:egret"}).status_code
        == 201
    )
    assert [h["source"] for h in client.post("/query", json={"query": "egret"}).json()["hits"]] == [
        "api:egret"
    ]


def test_health_stats_openapi_and_docs(client):
    assert client.get("/health").json() == {"status": "ok", "documents": 9, "entities": 11}
    assert client.get("/stats").json()["documents"] == 9
    schema = client.get("/openapi.json").json()
    assert {"/query", "/documents", "/entities/{key}", "/health"} <= set(schema["paths"])
    docs = client.get("/docs")
    assert docs.status_code == 200 and "swagger" in docs.text.lower()


def test_reads_need_no_token(guarded):
    assert guarded.get("/health").status_code == 200
    assert guarded.post("/query", json={"query": "nginx"}).status_code == 200


@pytest.mark.parametrize(
    "headers", [{}, {"Authorization": "Bearer wrong"}, {"Authorization": f"Basic {TOKEN}"}]
)
def test_writes_without_the_right_token_are_401_json(guarded, headers):
    response = guarded.post("/documents", json={"text": "# secret\n\nosprey"}, headers=headers)
    assert response.status_code == 401
    assert response.headers["www-authenticate"] == "Bearer"
    assert response.json() == {
        "error": {
            "type": "AuthError",
            "message": "a valid bearer token is required for this endpoint (Authorization: Bearer <KG_API_TOKEN>)",
        }
    }
    assert guarded.get("/health").json()["documents"] == 0


def test_writes_with_the_token_are_accepted(guarded):
    response = guarded.post(
        "/documents",
        json={"text": "# secret\n\nosprey"},
        headers={"Authorization": f"Bearer {TOKEN}"},
    )
    assert response.status_code == 201
    assert guarded.get("/health").json()["documents"] == 1
