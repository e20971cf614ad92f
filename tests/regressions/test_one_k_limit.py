"""Regression: `k` was capped at 200 by the API and at 1000 by the CLI and the library, so a `-k 500` that worked
on the command line was a 422 over HTTP. Now one constant (`kg.settings.MAX_K`, 200) bounds every query, and a k
beyond it is a clear error in both: exit code 2 with the limit named, or a 422 naming it."""

from __future__ import annotations

import json

from click.testing import CliRunner
from fastapi.testclient import TestClient

from api import create_app
from kg.cli import cli
from kg.settings import MAX_K, Settings


def test_the_cli_and_the_api_share_one_k_limit(kb_dir) -> None:
    assert MAX_K == 200
    runner = CliRunner()
    fine = runner.invoke(cli, ["query", "nginx", "-k", str(MAX_K), "--json", "--data-dir", str(kb_dir)])
    assert fine.exit_code == 0 and json.loads(fine.stdout)["hits"]
    over = runner.invoke(cli, ["query", "nginx", "-k", str(MAX_K + 1), "--data-dir", str(kb_dir)])
    assert over.exit_code == 2
    assert over.stderr == f"error: k must be between 1 and {MAX_K} (the most hits a query returns), got {MAX_K + 1}\n"

    with TestClient(create_app(Settings(data_dir=kb_dir))) as client:
        assert client.post("/query", json={"query": "nginx", "k": MAX_K}).status_code == 200
        refused = client.post("/query", json={"query": "nginx", "k": MAX_K + 1})
        assert refused.status_code == 422
        assert refused.json()["error"]["problems"] == [f"body.k: Input should be less than or equal to {MAX_K}"]
        spec = client.get("/openapi.json").json()
        assert spec["components"]["schemas"]["QueryIn"]["properties"]["k"]["maximum"] == MAX_K
