"""Packs as the unit of sharding (issue 26): with KG_PACK_DATABASES a pack's text index lives on a PostgreSQL database
of its own (`retrieval/index/postgres_shards.py`). Against a real PostgreSQL: the pack's chunks are there and nowhere
else; whole-knowledge-base and routed searches rank as one schema holding everything does; removing the pack empties
its database; a pack moved by a change of the setting is found by `kg check` and put in place by `--repair`."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from backends_servers import postgres_server
from conftest import build_kb, kg_process
from test_backends_text import same_within_ties

from kg.cli.base import DEMO_DIR
from retrieval.catalog.packs import pack_documents
from retrieval.index.analysis import cjk_bigrams, query_terms

QUESTIONS = [json.loads(line)["question"] for line in (DEMO_DIR / "questions.jsonl").read_text("utf-8").splitlines()
             if line.strip()]


@pytest.fixture(scope="module")
def dsns():
    """(the knowledge base's database, a second database for packs) on one real PostgreSQL."""
    with postgres_server() as server:
        if isinstance(server, str):
            pytest.skip(server)
        import psycopg
        from psycopg.conninfo import make_conninfo

        with psycopg.connect(server.url, autocommit=True) as conn:
            conn.execute("CREATE DATABASE kg_packs")
        yield server.url, make_conninfo(server.url, dbname="kg_packs")


def _chunks(dsn: str, schema: str) -> int:
    import psycopg

    with psycopg.connect(dsn) as conn:
        if not conn.execute("SELECT to_regclass(%s) IS NOT NULL", (f"{schema}.chunks",)).fetchone()[0]:
            return 0
        return conn.execute(f"SELECT count(*) FROM {schema}.chunks").fetchone()[0]


def _with_ops_pack(root: Path, **settings):
    """The fixture knowledge base, and the demo's documents as the pack `ops`."""
    kb = build_kb(root, **settings)
    ops = root / "ops"
    shutil.copytree(DEMO_DIR / "docs", ops)
    (ops / "PACK.md").write_text("---\nid: ops\ntitle: 星河物流运维\ncovers: [故障处理, 值班]\n---\n", encoding="utf-8")
    kb.add_pack("ops", str(ops))
    return kb


def _rankings(kb) -> dict:
    """Per demo question: the text index's top 10 over everything and inside the pack, and the fused top 10."""
    scope = kb.index.scoped(pack_documents(kb.store.db, ["ops"]))
    out = {}

    def named(hits):  # chunk ids differ between two data dirs (they hash the file's path): title, place and text do not
        chunks = kb.store.chunks([h.chunk_id for h in hits])
        return [(f"{chunks[h.chunk_id].title}:{chunks[h.chunk_id].ordinal}:{chunks[h.chunk_id].sha256}", h.score)
                for h in hits]

    for q in QUESTIONS:
        terms = [(t, 1.0) for t in query_terms(q)]
        grams = [(g, 0.5) for g in dict.fromkeys(cjk_bigrams(q))]
        out[q] = {"all": named(kb.index.search(terms, 10, grams=grams)),
                  "pack": named(scope.search(terms, 10, grams=grams)),
                  "fused": [name for name, _ in named(kb.query(q, k=10).hits)]}
    return out


@pytest.mark.slow
def test_a_pack_on_its_own_database_ranks_as_one_schema_and_goes_with_the_pack(dsns, tmp_path, monkeypatch):
    main, packs = dsns
    one = _with_ops_pack(tmp_path, text_backend="postgres", postgres_dsn=main, postgres_schema="one_schema")
    try:
        expected, total = _rankings(one), one.index.doc_count()
    finally:
        one.close()
    shutil.rmtree(tmp_path)  # the same paths again: chunk ids hash them, and equal graph scores are ordered by id
    kb = _with_ops_pack(tmp_path, text_backend="postgres", postgres_dsn=main, postgres_schema="sharded",
                        pack_databases=f"ops={packs}")
    try:
        assert type(kb.index).__name__ == "ShardedIndex"
        in_pack, in_main = _chunks(packs, "sharded_ops"), _chunks(main, "sharded")
        assert in_pack > 50 and in_main > 5 and in_pack + in_main == total == kb.index.doc_count()
        assert _chunks(main, "sharded_ops") == 0 and _chunks(packs, "sharded") == 0  # each chunk in one place
        inside = pack_documents(kb.store.db, ["ops"])
        assert [n for n, _ in kb.index.scoped(inside).index.shards] == [1]  # a routed search reads the pack's alone
        got = _rankings(kb)
        for part in ("all", "pack"):
            differing = [q for q in QUESTIONS if not same_within_ties(expected[q][part], got[q][part])]
            assert differing == [], part
            assert sum(bool(got[q][part]) for q in QUESTIONS) >= 0.8 * len(QUESTIONS)
        assert [q for q in QUESTIONS if expected[q]["fused"] != got[q]["fused"]] == []  # kg query's hits, in order
        assert kb.check().clean

        # the real CLI says where the pack's text index lives (the password masked), and a named pack not added
        for name, value in (("KG_TEXT_BACKEND", "postgres"), ("KG_POSTGRES_DSN", main), ("KG_POSTGRES_SCHEMA", "sharded"),
                            ("KG_PACK_DATABASES", f"ops={packs} password=secret; vendor={packs}")):
            monkeypatch.setenv(name, value)
        listed = kg_process("pack", "list", "--data-dir", str(tmp_path / "kb"), cwd=tmp_path)
        assert listed.returncode == 0, listed.stderr
        assert "    text index: its own database, " in listed.stdout and "(schema sharded_ops)" in listed.stdout
        assert "secret" not in listed.stdout + listed.stderr
        assert "KG_PACK_DATABASES names pack 'vendor', which is not added" in listed.stderr

        kb.remove_pack("ops")
        assert _chunks(packs, "sharded_ops") == 0 and _chunks(main, "sharded") == in_main
        assert kb.check().clean
    finally:
        kb.close()


@pytest.mark.slow
def test_a_pack_the_setting_moves_is_found_by_check_and_moved_by_repair(dsns, tmp_path):
    from kg.settings import Settings
    from retrieval.pipeline import KnowledgeBase

    main, packs = dsns
    settings = {"text_backend": "postgres", "postgres_dsn": main, "postgres_schema": "moved"}
    _with_ops_pack(tmp_path, **settings).close()  # indexed while the pack had no database of its own
    in_main = _chunks(main, "moved")
    with KnowledgeBase(Settings(data_dir=tmp_path / "kb", pack_databases=f"ops={packs}", **settings)) as kb:
        report = kb.check()
        [problem] = report.problems
        assert "in the knowledge base's own database" in problem and "--repair" in problem
        assert kb.index.scoped(pack_documents(kb.store.db, ["ops"])).doc_count() == 0  # its database is empty
        repaired = kb.check(repair=True)
        assert any("written anew" in line for line in repaired.repaired)
        assert kb.check().clean
        in_pack = _chunks(packs, "moved_ops")
        assert in_pack > 50 and _chunks(main, "moved") == in_main - in_pack
        assert kb.query("LORA-02 的心跳间隔是几秒？", k=5).hits  # a pack document found through its own database


def test_pack_databases_need_the_postgres_backend_and_say_how_to_write_them(tmp_path):
    from kg.errors import ConfigError, InputError
    from kg.settings import Settings
    from retrieval.index.postgres_shards import pack_databases, pack_namespace
    from retrieval.pipeline import KnowledgeBase

    with pytest.raises(ConfigError, match="KG_TEXT_BACKEND=postgres"):
        KnowledgeBase(Settings(data_dir=tmp_path / "kb", pack_databases="ops=host=/tmp dbname=x"), create=True)
    assert pack_databases("ops=host=/tmp dbname=x; vendor = postgresql://db2/kgrag ;") == {
        "ops": "host=/tmp dbname=x", "vendor": "postgresql://db2/kgrag"}
    with pytest.raises(InputError, match="PACK=DSN") as refused:
        pack_databases("postgresql://kg:secret@db2/kgrag")
    assert "secret" not in str(refused.value)
    with pytest.raises(InputError, match="twice"):
        pack_databases("a=x;a=y")
    assert pack_namespace("kgrag", "ops") == "kgrag_ops"
    odd = {pack_namespace("kgrag", p) for p in ("Ops.v2", "ops-v2", "ops_v2")}
    assert len(odd) == 3 and all(len(n) <= 63 and n.replace("_", "").isalnum() for n in odd)


def build_with_pack(root: Path) -> dict:
    """In a process of its own (as `kg` runs): the fixture knowledge base with the pack `ops`, embedded; its ranks."""
    _with_ops_pack(root).close()
    return rank(root / "kb")


def rank(data_dir: Path) -> dict:
    """In a process of its own: kg query's top 10 for every demo question, with the settings of the environment."""
    from kg.settings import Settings
    from retrieval.pipeline import KnowledgeBase

    with KnowledgeBase(Settings(data_dir=data_dir)) as kb:
        return {"backend": type(kb.index).__name__,
                "rankings": {q: [h.chunk_id for h in kb.query(q, k=10).hits] for q in QUESTIONS}}


@pytest.mark.slow
def test_kg_migrate_puts_a_pack_on_its_own_database(backends, tmp_path, monkeypatch):
    """`kg migrate --to postgres+sparql` (the real CLI) with KG_PACK_DATABASES set: the pack's chunks go to its
    database, `kg check` is clean there, and every demo question gets the same top 10 as before the move."""
    import psycopg
    from conftest import run_in_own_process
    from psycopg.conninfo import make_conninfo

    pg, ox = backends
    with psycopg.connect(pg.url, autocommit=True) as conn:
        conn.execute("CREATE DATABASE kg_migrated_packs")
    packs = make_conninfo(pg.url, dbname="kg_migrated_packs")
    before = run_in_own_process("test_backends_pack_shards", "build_with_pack", tmp_path)
    assert before["backend"] == "WhooshIndex"

    monkeypatch.setenv("KG_PACK_DATABASES", f"ops={packs}")
    kb = str(tmp_path / "kb")
    moved = kg_process("migrate", "--to", "postgres+sparql", "--dsn", pg.url, "--graph-store", "sparql+" + ox.url,
                       "--schema", "migrated", "--data-dir", kb, "--quiet", cwd=tmp_path)
    assert moved.returncode == 0, moved.stdout + moved.stderr
    assert moved.stdout.splitlines()[1].endswith(f"KG_PACK_DATABASES='ops={packs}'")
    in_pack, in_main = _chunks(packs, "migrated_ops"), _chunks(pg.url, "migrated")
    assert in_pack > 50 and in_main > 5

    for name, value in (("KG_TEXT_BACKEND", "postgres"), ("KG_POSTGRES_DSN", pg.url),
                        ("KG_POSTGRES_SCHEMA", "migrated"), ("KG_GRAPH_STORE", "sparql+" + ox.url)):
        monkeypatch.setenv(name, value)
    checked = kg_process("check", "--data-dir", kb, cwd=tmp_path)
    assert checked.returncode == 0 and checked.stdout.startswith("clean: "), checked.stdout + checked.stderr
    after = run_in_own_process("test_backends_pack_shards", "rank", tmp_path / "kb")
    assert after["backend"] == "ShardedIndex"
    assert [q for q in QUESTIONS if before["rankings"][q] != after["rankings"][q]] == []


@pytest.mark.slow
def test_a_commit_that_fails_between_two_databases_is_mended_from_the_catalog(dsns, tmp_path, monkeypatch):
    """The pack's database committed, the knowledge base's own did not (PostgreSQL gone in between): the write fails
    saying so and is undone whole (the pack's database mended from the catalog as it was), `kg check` is clean, and
    the same ingest run again lands in both databases."""
    from kg.errors import BusyError
    from kg.settings import Settings
    from retrieval.pipeline import KnowledgeBase

    main, packs = dsns
    settings = {"text_backend": "postgres", "postgres_dsn": main, "postgres_schema": "torn", "pack_databases": f"ops={packs}"}
    kb = _with_ops_pack(tmp_path, **settings)
    try:
        before_main, before_pack = _chunks(main, "torn"), _chunks(packs, "torn_ops")
        (tmp_path / "docs" / "new.md").write_text("# 新增文档\n\n撕裂的提交 zqxjtorn：主库这一段。\n", encoding="utf-8")
        pack_file = next(f for f in sorted((tmp_path / "kb" / "packs" / "ops").rglob("*.md")) if f.name != "PACK.md")
        pack_file.write_text(pack_file.read_text(encoding="utf-8") + "\n\n撕裂的提交 zqxjtorn：包库这一段。\n", encoding="utf-8")

        def gone(*args, **kwargs):
            raise BusyError("PostgreSQL at 'main' does not answer (simulated)")

        monkeypatch.setattr(kb.index.main, "commit", gone)
        with pytest.raises(BusyError):
            kb.ingest_paths([tmp_path / "docs" / "new.md", pack_file])
        assert _chunks(packs, "torn_ops") > before_pack and _chunks(main, "torn") == before_main  # torn
    finally:
        monkeypatch.undo()
        kb.close()
    with KnowledgeBase(Settings(data_dir=tmp_path / "kb", **settings)) as kb:
        assert kb.check().clean, kb.check().problems
        assert (_chunks(main, "torn"), _chunks(packs, "torn_ops")) == (before_main, before_pack)
        assert not kb.index.search([(t, 1.0) for t in query_terms("zqxjtorn")], 5)
        kb.ingest_paths([tmp_path / "docs" / "new.md", pack_file])
        hits = kb.index.search([(t, 1.0) for t in query_terms("zqxjtorn")], 5)  # everywhere (kg query routes)
        sources = {kb.store.document(kb.store.chunks([h.chunk_id])[h.chunk_id].doc_id).source for h in hits}
        assert {str(tmp_path / "docs" / "new.md"), str(pack_file)} <= sources
        assert _chunks(main, "torn") > before_main and _chunks(packs, "torn_ops") > before_pack
        assert kb.check().clean


@pytest.mark.slow
def test_a_second_server_finds_the_pack_in_its_database(dsns, tmp_path):
    """Two data dirs (two `kg serve` machines) sharing the databases: the second restores the published catalog and
    finds the pack's chunks in the pack's database, over everything and routed, and a write through the first."""
    from kg.settings import Settings
    from retrieval.pipeline import KnowledgeBase

    main, packs = dsns
    settings = {"text_backend": "postgres", "postgres_dsn": main, "postgres_schema": "two_servers",
                "pack_databases": f"ops={packs}"}
    first = _with_ops_pack(tmp_path / "a", **settings)
    try:
        with KnowledgeBase(Settings(data_dir=tmp_path / "b", **settings), create=True) as second:
            inside = pack_documents(second.store.db, ["ops"])
            assert inside == pack_documents(first.store.db, ["ops"]) and inside
            terms = [(t, 1.0) for t in query_terms("LORA-02 的心跳间隔")]
            assert [h.chunk_id for h in second.index.scoped(inside).search(terms, 5)] == \
                [h.chunk_id for h in first.index.scoped(inside).search(terms, 5)] != []
            pack_file = next(f for f in sorted((tmp_path / "a" / "kb" / "packs" / "ops").rglob("*.md"))
                             if f.name != "PACK.md")
            pack_file.write_text(pack_file.read_text(encoding="utf-8") + "\n\n第二台 zqxjfollow 服务器。\n",
                                 encoding="utf-8")
            first.ingest_paths([pack_file])
            second.commits.catch_up()  # what a server's follower does every KG_FOLLOW_INTERVAL seconds
            [hit] = second.index.search([("zqxjfollow", 1.0)], 5)
            import psycopg

            with psycopg.connect(packs) as conn:  # found in the pack's database
                assert conn.execute("SELECT count(*) FROM two_servers_ops.chunks WHERE chunk_id = %s",
                                    (hit.chunk_id,)).fetchone()[0] == 1
            assert second.query("LORA-02 的心跳间隔是几秒？", k=5).hits
    finally:
        first.close()


@pytest.mark.slow
def test_a_packs_database_that_stops_answering_fails_only_the_searches_that_read_it(dsns, tmp_path):
    """Two packs on their databases; one of them goes away (its reader breaks and cannot connect again): a question
    routed to the other pack is answered, a search over everything fails with a 503 naming the setting."""
    from kg.errors import BusyError

    main, packs = dsns
    kb = _with_ops_pack(tmp_path, text_backend="postgres", postgres_dsn=main, postgres_schema="down",
                        pack_databases=f"ops={packs}; notes={packs}")
    try:
        notes = tmp_path / "notes"
        notes.mkdir()
        (notes / "a.md").write_text("# 笔记\n\n笔记里的 zqxjdown 一段。\n", encoding="utf-8")
        kb.add_pack("notes", str(notes))
        inside = pack_documents(kb.store.db, ["ops"])
        terms = [(t, 1.0) for t in query_terms("LORA-02 的心跳间隔")]
        before = [h.chunk_id for h in kb.index.scoped(inside).search(terms, 5)]
        gone = kb.index.packs["notes"]
        gone._reader.close()
        gone.dsn = "host=/nonexistent-kgrag-socket-dir dbname=x connect_timeout=2"
        assert [h.chunk_id for h in kb.index.scoped(inside).search(terms, 5)] == before != []
        with pytest.raises(BusyError, match="KG_PACK_DATABASES"):
            kb.index.search(terms, 5)
    finally:
        kb.close()
