"""schemathesis against the served OpenAPI spec (bounded examples): every response is one the spec
documents, with its schema, and no input makes a 5xx."""

from __future__ import annotations

import pytest

schemathesis = pytest.importorskip("schemathesis")

from conftest import build_kb, make_settings  # noqa: E402
from fastapi.testclient import TestClient  # noqa: E402
from hypothesis import HealthCheck, settings  # noqa: E402

from api.app import create_app  # noqa: E402

TOKEN = "st-token"


@pytest.fixture(scope="module")
def api_schema(tmp_path_factory):
    root = tmp_path_factory.mktemp("schemathesis")
    build_kb(root).close()
    app = create_app(make_settings(root / "kb", api_token=TOKEN))
    with TestClient(app):  # runs the lifespan, so the knowledge base is open while schemathesis calls
        yield schemathesis.openapi.from_asgi("/openapi.json", app)


schema = schemathesis.pytest.from_fixture("api_schema")


# The same examples on every run (derandomize): a random draw once produced `GET /graph?class=&lang=` as
# "schema-violating" (`class` drawn as a string, `lang` as an object), but those values serialize to the
# same query string as an empty class list and an empty language, which the API rightly answers. A gate
# that fails one run in many on such a draw says nothing about the API.
@schema.parametrize()
@settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
def test_the_api_keeps_to_its_openapi_spec(case):
    excluded = []
    if (case.operation.method.upper(), case.operation.path) in (("POST", "/import"), ("POST", "/documents")):
        # An upload is valid by its content (a .csv table, a .ttl ontology, a PDF's bytes, a page with
        # text in it), which an OpenAPI schema cannot say: schema-valid random content is rightly a 400.
        # Every other check (no 5xx, documented statuses and bodies) still runs on them.
        excluded.append(schemathesis.checks.positive_data_acceptance)
    case.call_and_validate(headers={"Authorization": f"Bearer {TOKEN}"}, excluded_checks=excluded)
