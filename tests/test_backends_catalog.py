"""The catalog as tables in PostgreSQL (KG_CATALOG): SQLite's catalog SQL translated (no server needed), the demo on
a real PostgreSQL answering as the embedded default with no catalog file in the data dir, a second server reading a
write of the first with no catalog copied to it, and `kg migrate --catalog` moving the catalog there and back."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from backends_servers import oxigraph_server
from conftest import build_kb, kg_process, run_in_own_process

from retrieval.catalog.postgres_catalog import _statements, translate


def test_sqlite_statements_become_postgresql_ones():
    assert translate("SELECT a FROM t WHERE b = ? AND c IN (?, ?)") == "SELECT a FROM t WHERE b = %s AND c IN (%s, %s)"
    assert translate("UPDATE documents SET pack = ? WHERE source LIKE ? ESCAPE '\\' AND pack IS NOT ?") == (
        "UPDATE documents SET pack = %s WHERE source LIKE %s ESCAPE '\\' AND pack IS DISTINCT FROM %s")
    assert translate("SELECT 1 FROM t WHERE x IS ?") == "SELECT 1 FROM t WHERE x IS NOT DISTINCT FROM %s"
    assert translate("INSERT OR IGNORE INTO about VALUES (?, ?)") == "INSERT INTO about VALUES (%s, %s) ON CONFLICT DO NOTHING"
    # quoted text is left alone, except the % psycopg would read as a placeholder
    assert translate("SELECT 1 FROM v WHERE source LIKE 'api:%' AND seq > ? AND note = 'why?'") == (
        "SELECT 1 FROM v WHERE source LIKE 'api:%%' AND seq > %s AND note = 'why?'")
    assert translate("SELECT 1 FROM v WHERE source LIKE 'api:%'", with_params=False) == (
        "SELECT 1 FROM v WHERE source LIKE 'api:%'")
    assert translate("SELECT v.id || char(31) || v.label FROM v") == "SELECT v.id || chr(31) || v.label FROM v"
    # SQLite's types: 64-bit integers, doubles, text that sorts byte by byte
    assert translate("CREATE TABLE IF NOT EXISTS d (id TEXT PRIMARY KEY, n INTEGER NOT NULL, at REAL) WITHOUT ROWID") == (
        'CREATE TABLE IF NOT EXISTS d (id TEXT COLLATE "C" PRIMARY KEY, n BIGINT NOT NULL, at DOUBLE PRECISION)')
    assert translate("ALTER TABLE documents ADD COLUMN pack TEXT") == 'ALTER TABLE documents ADD COLUMN pack TEXT COLLATE "C"'
    assert translate("SELECT text FROM chunks") == "SELECT text FROM chunks"  # a column named text is not a type
    with pytest.raises(sqlite3.OperationalError, match="ON CONFLICT"):
        translate("INSERT OR REPLACE INTO t VALUES (?)")
    assert _statements("BEGIN; INSERT INTO t VALUES ('a;b'); COMMIT;") == ["BEGIN", "INSERT INTO t VALUES ('a;b')", "COMMIT"]


def test_the_catalog_setting_says_what_it_needs(tmp_path):
    from kg.errors import ConfigError
    from kg.settings import Settings
    from retrieval.pipeline import KnowledgeBase

    with pytest.raises(ConfigError, match="needs KG_TEXT_BACKEND=postgres"):
        KnowledgeBase(Settings(data_dir=tmp_path / "a", catalog="postgresql://localhost/kg"), create=True)
    with pytest.raises(ConfigError, match="KG_CATALOG must be a PostgreSQL connection string"):
        KnowledgeBase(Settings(data_dir=tmp_path / "b", catalog="mysql", text_backend="postgres",
                               postgres_dsn="postgresql://localhost/kg"), create=True)


def _on_postgres(monkeypatch, dsn: str, schema: str) -> None:
    for name, value in (("KG_TEXT_BACKEND", "postgres"), ("KG_POSTGRES_DSN", dsn), ("KG_POSTGRES_SCHEMA", schema),
                        ("KG_CATALOG", dsn)):
        monkeypatch.setenv(name, value)


def _count(dsn: str, sql: str) -> int:
    import psycopg

    with psycopg.connect(dsn) as conn:
        return conn.execute(sql).fetchone()[0]


@pytest.mark.slow
def test_the_demo_with_its_catalog_in_postgres_answers_as_the_embedded_default(pg_dsn, tmp_path, monkeypatch):
    embedded = run_in_own_process("test_backends_kb", "demo_rankings", tmp_path / "embedded")
    _on_postgres(monkeypatch, pg_dsn, "demo_tables")
    tables = run_in_own_process("test_backends_kb", "demo_rankings", tmp_path / "postgres")
    assert not (tmp_path / "postgres" / "kb.sqlite").exists()  # no catalog file: its rows are in PostgreSQL
    assert _count(pg_dsn, "SELECT count(*) FROM demo_tables_catalog.chunks") == tables["chunks"] == embedded["chunks"] > 50
    assert [q for q in embedded["rankings"] if embedded["rankings"][q] != tables["rankings"][q]] == []
    assert tables["clean"], tables["problems"]
    # the real CLI on it: its human output, an as-of question (versions in force) and `kg check`
    checked = kg_process("check", "--data-dir", str(tmp_path / "postgres"), cwd=tmp_path)
    assert checked.returncode == 0 and checked.stdout.startswith("clean: "), checked.stdout + checked.stderr
    stats = json.loads(kg_process("stats", "--json", "--data-dir", str(tmp_path / "postgres"), cwd=tmp_path).stdout)
    assert stats["chunks"] == embedded["chunks"] and stats["catalog"] == "PostgreSQL schema demo_tables_catalog"


def second_server_follows(root: Path) -> dict:
    """In a process of its own: two data dirs on one PostgreSQL catalog (root/a/kb, made, and root/b, new); the first
    ingests, the second answers it."""
    from kg.settings import Settings
    from retrieval.pipeline import KnowledgeBase

    first_dir, second_dir = root / "a" / "kb", root / "b"
    with KnowledgeBase(Settings(data_dir=second_dir), create=True) as second:
        before = second.store.stats()["documents"]
        note = first_dir.parent / "wombat.md"
        note.write_text("# Wombat ledger\n\nThe wombatledger batch closes at 23:00 every day.\n", encoding="utf-8")
        with KnowledgeBase(Settings(data_dir=first_dir)) as first:
            first.ingest_paths([note])
        titles = [h.title for h in second.query("wombatledger", k=3).hits]
        with KnowledgeBase(Settings(data_dir=first_dir)) as first:
            first.delete_documents([str(note.resolve())])
        gone = [h.title for h in second.query("wombatledger", k=3).hits]
        return {"before": before, "titles": titles, "gone": gone, "after": second.store.stats()["documents"],
                "files": sorted(p.name for p in second_dir.iterdir())}


@pytest.mark.slow
def test_a_second_server_reads_a_write_of_the_first_with_no_catalog_copied(pg_dsn, tmp_path, monkeypatch):
    _on_postgres(monkeypatch, pg_dsn, "two_readers")
    build_kb(tmp_path / "a").close()
    seen = run_in_own_process("test_backends_catalog", "second_server_follows", tmp_path)
    assert seen["before"] > 0
    assert seen["titles"][:1] == ["Wombat ledger"] and "Wombat ledger" not in seen["gone"]
    assert seen["after"] == seen["before"]
    assert "kb.sqlite" not in seen["files"] and "graph.ttl" in seen["files"]
    # nothing of the catalog was published as a file: the servers read its tables
    assert _count(pg_dsn, "SELECT count(*) FROM two_readers.kb_pieces") == 0


@pytest.mark.slow
def test_kg_migrate_moves_the_catalog_into_postgres_and_back(pg_dsn, tmp_path, monkeypatch):
    with oxigraph_server() as ox:
        if isinstance(ox, str):
            pytest.skip(ox)
        graph_store = "sparql+" + ox.url
        kb = tmp_path / "kb"
        before = run_in_own_process("test_backends_migrate", "build_and_rank", kb)
        catalog_rows = sqlite3.connect(kb / "kb.sqlite").execute("SELECT count(*) FROM chunks").fetchone()[0]
        # the setting given before the move: refused, nothing read as empty (the next commit would have emptied the
        # shared text index of every chunk "not in the catalog")
        _on_postgres(monkeypatch, pg_dsn, "moved_tables")
        early = kg_process("stats", "--data-dir", str(kb), cwd=tmp_path)
        assert early.returncode != 0 and "KG_CATALOG names an empty catalog" in early.stderr, early.stdout + early.stderr
        assert "kg migrate --to postgres+sparql --catalog" in early.stderr and "Traceback" not in early.stderr
        for name in ("KG_TEXT_BACKEND", "KG_POSTGRES_DSN", "KG_POSTGRES_SCHEMA", "KG_CATALOG"):
            monkeypatch.delenv(name)
        moved = kg_process("migrate", "--to", "postgres+sparql", "--dsn", pg_dsn, "--graph-store", graph_store,
                           "--schema", "moved_tables", "--catalog", pg_dsn, "--data-dir", str(kb), "--quiet", cwd=tmp_path)
        assert moved.returncode == 0, moved.stdout + moved.stderr
        assert "note: catalog: " in moved.stdout and " rows copied to the schema moved_tables_catalog" in moved.stdout
        assert f"KG_CATALOG='{pg_dsn}'" in moved.stdout.splitlines()[-1]
        assert _count(pg_dsn, "SELECT count(*) FROM moved_tables_catalog.chunks") == catalog_rows

        _on_postgres(monkeypatch, pg_dsn, "moved_tables")
        monkeypatch.setenv("KG_GRAPH_STORE", graph_store)
        # whatever is read now comes from PostgreSQL; the file goes away as a user's `mv` would take it, leaving its WAL
        # (a process that wrote it and died): the way back must not read that WAL as its new file's
        import subprocess
        import sys

        subprocess.run([sys.executable, "-c", "import os, sqlite3; db = sqlite3.connect(os.sys.argv[1]); "
                        "db.execute('PRAGMA journal_mode=WAL'); db.execute('PRAGMA wal_autocheckpoint=0'); "
                        "db.execute(\"INSERT INTO kb_state VALUES ('left', 'x') ON CONFLICT DO NOTHING\"); db.commit(); "
                        "os._exit(0)", str(kb / "kb.sqlite")], check=True)
        assert (kb / "kb.sqlite-wal").stat().st_size > 0
        (kb / "kb.sqlite").rename(kb / "kb.sqlite.before")
        checked = kg_process("check", "--data-dir", str(kb), cwd=tmp_path)
        assert checked.returncode == 0 and checked.stdout.startswith("clean: "), checked.stdout + checked.stderr
        from test_backends_migrate import differences

        assert differences(before, run_in_own_process("test_backends_migrate", "rank", kb)) == {}

        back = kg_process("migrate", "--to", "embedded", "--data-dir", str(kb), "--quiet", cwd=tmp_path)
        assert back.returncode == 0, back.stdout + back.stderr
        assert "rows copied to kb.sqlite in the data dir" in back.stdout
        assert back.stdout.splitlines()[-1].endswith("KG_GRAPH_STORE and KG_CATALOG unset")
        for name in ("KG_TEXT_BACKEND", "KG_POSTGRES_DSN", "KG_POSTGRES_SCHEMA", "KG_GRAPH_STORE", "KG_CATALOG"):
            monkeypatch.delenv(name)
        checked = kg_process("check", "--data-dir", str(kb), cwd=tmp_path)
        assert checked.returncode == 0 and checked.stdout.startswith("clean: "), checked.stdout + checked.stderr
        after = run_in_own_process("test_backends_migrate", "rank", kb)
        assert after["backend"] == "WhooshIndex" and differences(before, after) == {}


@pytest.mark.slow
@pytest.mark.parametrize("step,seen", [("journal", False), ("index", True)])
def test_a_writer_killed_mid_commit_leaves_one_state_in_the_shared_catalog(backends, tmp_path, step, seen):
    """With the catalog's tables shared, a writer killed before its catalog transaction leaves nothing to see, one
    killed after it (catalog and text index committed, nothing published) a whole document every machine reads at
    once (the state after, not the state before as with the catalog file); either way the other machine writes
    at once, both answer alike, `kg check` is clean on both and no journal row or lock is left."""
    from test_backends_scaleout import backend_env
    from test_backends_writer_killed import (
        CRASH_EXIT,
        WRITE_WAIT,
        clean,
        found,
        machines,
        run_kg,
        shared_leftovers,
    )

    pg, graph = backends
    schema = f"tables_killed_{step}"
    env = {**backend_env(pg, graph, schema), "KG_WRITE_WAIT": WRITE_WAIT, "KG_CATALOG": pg.url}
    a_dir, b_dir = machines(tmp_path, env)
    killed = run_kg({**env, "KG_CRASH_AT": f"ingest:{step}"}, "ingest", "quokka.md", "--data-dir", str(a_dir), "-q",
                    cwd=tmp_path)
    assert killed.returncode == CRASH_EXIT, (killed.returncode, killed.stderr[-2000:])
    visible = ["Quokka ledger runbook"] if seen else []
    assert found(env, b_dir, "quokkaledger", tmp_path) == visible
    written = run_kg(env, "ingest", "wombat.md", "--data-dir", str(b_dir), "-q", cwd=tmp_path)
    assert written.returncode == 0, written.stderr[-2000:]
    for data_dir in (a_dir, b_dir):
        assert found(env, data_dir, "quokkaledger", tmp_path) == visible, data_dir.name
        assert found(env, data_dir, "wombatqueue", tmp_path) == ["Wombat queue runbook"], data_dir.name
        assert not (data_dir / "kb.sqlite").exists()
    for data_dir in (a_dir, b_dir):
        clean(env, data_dir, tmp_path)
        assert not (data_dir / "commit.json").exists(), data_dir.name
    assert shared_leftovers(pg, schema) == (None, 0)


def test_a_catalog_published_as_a_file_is_not_read_as_empty_tables(pg_dsn, tmp_path):
    """A shared knowledge base whose catalog is published as a file, opened on a new server with KG_CATALOG set before
    `kg migrate --catalog` moved it: refused saying what to run (its first commit would have dropped the published
    catalog and emptied the text index), and the published catalog still there."""
    from kg.errors import ConfigError
    from kg.settings import Settings
    from retrieval.pipeline import KnowledgeBase

    shared = {"text_backend": "postgres", "postgres_dsn": pg_dsn, "postgres_schema": "published_file"}
    build_kb(tmp_path / "a", **shared).close()
    with pytest.raises(ConfigError, match="holds a catalog published as a file: move it there first with `kg migrate"):
        KnowledgeBase(Settings(data_dir=tmp_path / "b", catalog=pg_dsn, **shared), create=True)
    assert _count(pg_dsn, "SELECT count(*) FROM published_file.kb_pieces") > 0
    with KnowledgeBase(Settings(data_dir=tmp_path / "c", **shared), create=True) as third:  # without it: as before
        assert third.store.stats()["chunks"] > 0
