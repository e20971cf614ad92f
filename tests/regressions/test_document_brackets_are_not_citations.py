"""Bracketed numbers in a document ("[0, 10]", "[5]") were read as citation markers when the extractive
answer quoted the sentence: [0] and [10] were "removed" as invented, [5] became a citation of
passage 5. The extractive answer now quotes them in full-width brackets."""

from __future__ import annotations

from conftest import make_settings

from retrieval.pipeline import KnowledgeBase
from retrieval.types import SourceDocument


def test_bracketed_numbers_in_a_document_stay_text(tmp_path):
    text = "# 合并策略\n\n时间窗口合并时，SST 文件 [0, 10] 和 [5] 的时间范围重叠，所以归入同一个有序组。\n"
    with KnowledgeBase(make_settings(tmp_path / "kb"), create=True) as kb:
        kb.ingest_documents([SourceDocument(source="api:twcs", text=text)])
        answer = kb.ask("SST 文件的时间范围重叠时怎么归组？")
    assert answer.found and answer.removed_citations == []
    assert answer.sentences[0].citations == [1]
    assert "［0, 10］ 和 ［5］" in answer.sentences[0].text
