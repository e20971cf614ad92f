"""Regression: with no token (the loopback default) a page on any origin could `POST /import` as a form
(multipart needs no preflight): `Origin: http://evil.example` -> 200 and the relation was imported.
The page had no Content-Security-Policy and no frame headers either."""

from __future__ import annotations

import base64
import hashlib
import re

import pytest
from conftest import make_settings
from fastapi.testclient import TestClient

from api.app import create_app

ROW = b"source,relation,target\nevil-service,dependsOn,mysql-core\n"


@pytest.fixture
def client(tmp_path):
    with TestClient(create_app(make_settings(tmp_path / "kb")), base_url="http://localhost:8000") as test_client:
        yield test_client


def _import(client, headers):
    return client.post("/import", files={"file": ("relations.csv", ROW, "text/csv")}, headers=headers)


@pytest.mark.parametrize("headers", [
    {"Origin": "http://evil.example"},
    {"Origin": "null"},  # a sandboxed frame or a file:// page
    {"Sec-Fetch-Site": "cross-site"},
    {"Sec-Fetch-Site": "same-site", "Origin": "http://localhost:3000"},  # another local app's page
    {"Origin": "http://evil.example", "Sec-Fetch-Site": "cross-site", "Content-Type": "text/plain"},
])
def test_a_cross_site_import_is_403_and_imports_nothing(client, headers):
    response = _import(client, headers)
    assert response.status_code == 403, response.text
    error = response.json()["error"]
    assert error["type"] == "AuthError"
    assert error["message"].startswith("cross-site request refused (")
    assert client.get("/entities/evil-service").status_code == 404


def test_cross_site_deletes_and_posts_are_refused_too(client):
    evil = {"Origin": "http://evil.example"}
    assert client.post("/documents", json={"text": "# x\n\ny"}, headers=evil).status_code == 403
    assert client.delete("/documents/x", headers=evil).status_code == 403
    assert client.post("/ask", json={"question": "nginx"}, headers=evil).status_code == 403
    assert client.get("/health", headers=evil).status_code == 200  # reads are not writes


@pytest.mark.parametrize("headers", [
    {},  # curl, scripts, the CLI: no browser headers
    {"Origin": "http://localhost:8000", "Sec-Fetch-Site": "same-origin"},  # the server's own page
    {"Sec-Fetch-Site": "none"},  # typed by the user
])
def test_same_origin_and_non_browser_imports_pass(client, headers):
    response = _import(client, headers)
    assert response.status_code == 200, response.text
    assert client.get("/entities/evil-service").status_code == 200


def test_the_page_has_a_csp_that_allows_its_own_inline_script_only(client):
    response = client.get("/")
    assert response.status_code == 200
    assert response.headers["x-frame-options"] == "DENY"
    policy = response.headers["content-security-policy"]
    assert "frame-ancestors 'none'" in policy and "object-src 'none'" in policy
    script_src = re.search(r"script-src ([^;]*)", policy).group(1).split()
    assert script_src[0] == "'self'" and "'unsafe-inline'" not in script_src
    inline = [m for m in re.findall(r"<script(?![^>]*\bsrc=)([^>]*)>(.*?)</script>", response.text, re.S)
              if "application/json" not in m[0]]
    hashes = {f"'sha256-{base64.b64encode(hashlib.sha256(body.encode()).digest()).decode()}'" for _, body in inline}
    assert hashes == set(script_src[1:])
    assert int(response.headers["content-length"]) == len(response.content)
    assert client.get("/health").headers["x-frame-options"] == "DENY"
