"""A password or token in a configured address (the PostgreSQL DSN, the model's endpoint) is never part of what kgrag
prints, serves or returns in an error: a 503 for PostgreSQL down reached every API client with the DSN's password, and
an answer's `path_reason` (shown on the page) named the model's endpoint with its credentials. (A git pack's origin:
tests/test_packs.py.)"""

from __future__ import annotations

import socket

import pytest
from conftest import build_kb, make_settings

from kg.errors import BusyError
from kg.files import masked


@pytest.mark.parametrize(("address", "shown"), [
    ("https://oauth2:glpat-X1@gitlab.example.com/team/pack.git", "https://***@gitlab.example.com/team/pack.git"),
    ("https://ghp_X1@github.com/team/pack.git", "https://***@github.com/team/pack.git"),
    ("postgresql://kgrag:S3cret@db:5432/kb", "postgresql://kgrag:***@db:5432/kb"),
    ("host=db user=kgrag password=S3cret dbname=kb", "host=db user=kgrag password=*** dbname=kb"),
    ("host=db password='a secret' dbname=kb", "host=db password=*** dbname=kb"),
    ("git@github.com:team/pack.git", "git@github.com:team/pack.git"),  # ssh: a user name, no secret
    ("http://127.0.0.1:8080/v1", "http://127.0.0.1:8080/v1"),
    ("/home/me/notes", "/home/me/notes"),
])
def test_masked_hides_credentials_and_nothing_else(address, shown):
    assert masked(address) == shown


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_postgresql_down_is_a_503_without_the_dsns_password():
    pytest.importorskip("psycopg", reason="the PostgreSQL backend needs psycopg ([postgres] extra)")
    from retrieval.index.postgres_conn import connect

    port = _closed_port()
    for dsn in (f"postgresql://kgrag:S3cret@127.0.0.1:{port}/kb",
                f"host=127.0.0.1 port={port} user=kgrag password=S3cret dbname=kb"):
        with pytest.raises(BusyError) as caught:
            connect(dsn)
        assert "S3cret" not in str(caught.value) and "***" in str(caught.value)
        assert "does not answer" in str(caught.value)


def test_a_model_endpoint_down_is_named_without_its_credentials(tmp_path):
    from retrieval.pipeline import KnowledgeBase

    build_kb(tmp_path).close()
    url = f"http://proxyuser:S3cret@127.0.0.1:{_closed_port()}/v1"
    with KnowledgeBase(make_settings(tmp_path / "kb", llm_model="openai/test-model", llm_base_url=url,
                                     llm_timeout=5)) as kb:
        answer = kb.ask("LORA-02 的心跳间隔是多少？")
    assert answer.path == "rules"
    assert "127.0.0.1" in answer.path_reason and "***" in answer.path_reason
    assert "S3cret" not in str(answer.to_json())


def test_a_sparql_store_that_does_not_answer_is_named_without_credentials():
    from urllib.error import URLError

    from kg.stores.sparql_store import _failure

    wrapped = ValueError("wrapped")
    wrapped.__cause__ = URLError("Connection refused")
    error = _failure(wrapped, "http://graph:S3cret@127.0.0.1:7878/query", "start it")
    assert isinstance(error, BusyError) and "S3cret" not in str(error)
    assert str(error).startswith("the SPARQL store at http://***@127.0.0.1:7878/query does not answer")
