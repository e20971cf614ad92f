"""The answer loop fuses its searches (the question, its rewrites, round 2) capped per section, as the query path
caps its own hits, not per document: the sections of one runbook that the search ranked stay the answer's passages."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from conftest import build_demo_kb

from retrieval.answer.loop import PER_SECTION, _fuse
from retrieval.eval.answers import answer_in


def _hit(chunk: str, doc: str, parent: str | None):
    return SimpleNamespace(chunk_id=chunk, doc_id=doc, parent={"chunk_id": parent, "text": ""} if parent else None)


def test_sections_of_one_document_all_stay_and_one_section_keeps_at_most_two_hits():
    runbook = [_hit(f"c{i}", "runbook", f"p{i}") for i in range(4)]  # four sections of one document
    assert [h.chunk_id for h in _fuse([(runbook, 1.0)], 20)] == ["c0", "c1", "c2", "c3"]
    one_section = [_hit(f"s{i}", "runbook", "p9") for i in range(4)]
    assert len(_fuse([(one_section[:2], 1.0), (one_section[2:], 0.7)], 20)) == PER_SECTION
    # A hit without a parent is a section of its own.
    assert len(_fuse([([_hit("a", "d", None), _hit("b", "d", None), _hit("c", "d", None)], 1.0)], 20)) == 3


KAFKA = "Kafka 消费积压告警响了该怎么处理？"
KAFKA_REFERENCE = "先区分生产突增、消费变慢、反复 rebalance；消费变慢时扩容消费方（不超过分区数），rebalance 调小 max.poll.records，不得重置 offset"  # demo q15


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    kb = build_demo_kb(tmp_path_factory.mktemp("answer-sections") / "kb")
    yield kb
    kb.close()


def test_the_runbook_section_holding_the_answer_is_among_the_answers_passages(demo):
    # The search ranks the Kafka runbook's consumer-lag section third; a cap of two a document dropped it.
    ranked = demo.query(KAFKA, k=5).hits
    assert any(answer_in(KAFKA_REFERENCE, h.text) for h in ranked)
    answer = demo.ask(KAFKA, llm=None)
    assert any(answer_in(KAFKA_REFERENCE, c.text) for c in answer.citations[:5])
    assert len({c.doc_id for c in answer.citations[:5]}) < 5  # several sections of one runbook, as ranked
