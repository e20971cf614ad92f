"""A whole knowledge base on the PostgreSQL text index (KG_TEXT_BACKEND=postgres): the demo built
through the real write path answers every demo question with the same hits as the embedded default,
and `kg check` finds catalog and index in agreement; a chunk lost from the index is found and repaired."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import build_demo_kb, run_in_own_process


def demo_rankings(data_dir: Path) -> dict:
    """In a process of its own: build the demo (with the backend the environment names), query every
    demo question; the top 10 of each, the index's size, and what `kg check` says."""
    from kg.cli.base import DEMO_DIR

    kb = build_demo_kb(data_dir)
    try:
        questions = [json.loads(line)["question"] for line in
                     (DEMO_DIR / "questions.jsonl").read_text("utf-8").splitlines() if line.strip()]
        rankings = {q: [[h.chunk_id, round(h.score, 9)] for h in kb.query(q, k=10).hits] for q in questions}
        report = kb.check()
        return {"backend": type(kb.index).__name__, "chunks": kb.index.doc_count(), "rankings": rankings,
                "clean": report.clean, "problems": report.problems}
    finally:
        kb.close()


def lose_a_chunk_and_repair(data_dir: Path) -> dict:
    """In a process of its own: open the postgres-backed demo, drop one chunk from the index behind the
    catalog's back, then `check` and `check(repair=True)`."""
    from kg.settings import Settings
    from retrieval.pipeline import KnowledgeBase

    with KnowledgeBase(Settings(data_dir=data_dir)) as kb:
        victim = sorted(kb.index.chunk_ids())[0]
        kb.index.delete_chunks([victim])
        kb.index.commit()
        before = kb.check().problems
        kb.check(repair=True)
        after = kb.check()
        return {"before": before, "clean_after": after.clean, "back": victim in kb.index.chunk_ids()}


@pytest.mark.slow
def test_the_demo_on_postgres_answers_as_the_embedded_default(pg_dsn, tmp_path, monkeypatch):
    embedded = run_in_own_process("test_backends_kb", "demo_rankings", tmp_path / "embedded")
    monkeypatch.setenv("KG_TEXT_BACKEND", "postgres")
    monkeypatch.setenv("KG_POSTGRES_DSN", pg_dsn)
    monkeypatch.setenv("KG_POSTGRES_SCHEMA", "demo_kb")
    backend = run_in_own_process("test_backends_kb", "demo_rankings", tmp_path / "postgres")
    assert (embedded["backend"], backend["backend"]) == ("WhooshIndex", "PostgresIndex")
    assert backend["chunks"] == embedded["chunks"] > 50
    assert not (tmp_path / "postgres" / "index").exists()  # nothing of the text index in the data dir
    differing = [q for q in embedded["rankings"] if embedded["rankings"][q] != backend["rankings"][q]]
    assert differing == []
    assert sum(bool(r) for r in backend["rankings"].values()) >= 0.8 * len(backend["rankings"])
    assert backend["clean"], backend["problems"]

    repaired = run_in_own_process("test_backends_kb", "lose_a_chunk_and_repair", tmp_path / "postgres")
    assert repaired["before"] == ["1 chunk(s) in the catalog are not in the text index (unsearchable)"]
    assert repaired["clean_after"] and repaired["back"]


def test_postgres_without_a_dsn_says_how_to_fix_it(tmp_path, monkeypatch):
    from kg.errors import InputError
    from kg.settings import Settings
    from retrieval.pipeline import KnowledgeBase

    monkeypatch.setenv("KG_TEXT_BACKEND", "postgres")
    monkeypatch.delenv("KG_POSTGRES_DSN", raising=False)
    with pytest.raises(InputError, match="KG_TEXT_BACKEND=postgres needs KG_POSTGRES_DSN"):
        KnowledgeBase(Settings(data_dir=tmp_path / "kb"), create=True)
