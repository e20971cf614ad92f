"""Regression: a PostgreSQL text index kept its broken connection for ever. Once PostgreSQL restarted,
every search of a running server raised psycopg's OperationalError (a 500), and went on doing so after
the database was back, until the process restarted. Now a search or commit fails with a 503-kind
BusyError saying what to check, nothing half-written, and the same index object serves again."""

from __future__ import annotations

import hashlib

import pytest
import test_text_index as contract
from backends_servers import postgres_server


def open_postgres(dsn, path):
    from retrieval.index.postgres_index import PostgresIndex

    return PostgresIndex(dsn, "t_" + hashlib.sha1(str(path).encode()).hexdigest()[:16])


def test_a_restarted_postgres_fails_searches_clearly_then_serves_again(tmp_path):
    """PostgreSQL stopped under a running index: a search fails with a 503-kind error saying what to
    check, a commit fails without writing; started again, the same index object searches again."""
    from kg.errors import BusyError

    with postgres_server() as server:
        if isinstance(server, str):
            pytest.skip(server)
        index = open_postgres(server.url, tmp_path)
        try:
            index.add_chunks(contract.CORPUS)
            index.commit()
            assert contract.ids(contract.search(index, "LORA-02")) == ["c-lora"]
            server.stop()
            with pytest.raises(BusyError, match="does not answer.*is the server running"):
                contract.search(index, "LORA-02")
            index.add_chunks([contract.chunk("c-late", "LORA-02 写于停机之时。")])
            with pytest.raises(BusyError):
                index.commit()
            server.start_again()
            assert contract.ids(contract.search(index, "LORA-02")) == ["c-lora"]
            assert index.doc_count() == 3
        finally:
            index.close()
