"""Regression: `KG_API_TOKEN=""` silently disabled auth and nothing warned that writes were open on a
public address. Now `kg serve` off loopback needs a token (or --allow-open-writes), and an empty
token is a start-up error."""

from __future__ import annotations

from click.testing import CliRunner

from kg.cli import cli


def test_serve_on_a_public_address_without_a_token_refuses(tmp_path):
    result = CliRunner().invoke(cli, ["serve", "--host", "0.0.0.0", "--data-dir", str(tmp_path / "kb")])
    assert result.exit_code == 1
    assert result.stderr.startswith(
        "error: refusing to serve on 0.0.0.0 without a token: anyone who can reach it could change the knowledge base. "
        "Set KG_API_TOKEN=<secret>, or bind to 127.0.0.1, or pass --allow-open-writes"
    )


def test_an_empty_token_is_refused_at_start_up(tmp_path):
    result = CliRunner().invoke(cli, ["serve", "--data-dir", str(tmp_path / "kb")], env={"KG_API_TOKEN": ""})
    assert result.exit_code == 1
    assert result.stderr.startswith("error: KG_API_TOKEN is set but empty")
