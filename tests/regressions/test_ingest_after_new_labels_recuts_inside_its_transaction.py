"""A word jieba learns between two ingests (a new entity label) makes the next ingest re-cut the older
chunks that contain it, from inside the ingest's own catalog transaction: that used to fail with
"cannot start a transaction within a transaction" (the re-cut opened a second one)."""

from __future__ import annotations

from conftest import copy_fixture_corpus, make_settings

from retrieval.pipeline import KnowledgeBase


def test_ingest_after_new_labels_recuts_inside_its_transaction(tmp_path):
    docs, _ = copy_fixture_corpus(tmp_path)
    (docs / "notes" / "breaker.md").write_text("# 说明\n\n网关的熔断降级由运维负责。\n", encoding="utf-8")
    with KnowledgeBase(make_settings(tmp_path / "kb"), create=True) as kb:
        kb.ingest_paths([docs])
        assert kb.add_entities(["熔断降级"]) == 1  # a word-sized Chinese label jieba did not know
        (docs / "notes" / "later.md").write_text("# 后来\n\n新增的文档。\n", encoding="utf-8")
        report = kb.ingest_paths([docs])
        assert report.added == 1
        assert kb.check().clean
        hits = kb.query("熔断降级", mode="bm25").hits
        assert hits and hits[0].source.endswith("breaker.md")
