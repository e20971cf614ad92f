"""A model's streamed answer of "" or "[1]" alone was accepted: `complete()` refused an empty reply but the
streaming path (`stream()` in loop.py) did not, so the user got an empty answer on the "llm" path. Now a
stream that yields no sentence completes the request on the rules path and says why."""

from __future__ import annotations

import pytest
from conftest import build_kb, make_settings
from fake_llm import FakeLLM

from retrieval.pipeline import KnowledgeBase


@pytest.mark.parametrize("reply", ["[1]", "。[1][2]"])
def test_an_answer_without_a_sentence_is_replaced_by_the_rules_answer(tmp_path, reply):
    build_kb(tmp_path).close()
    with FakeLLM() as fake:
        fake.replies["answer"] = reply
        settings = make_settings(tmp_path / "kb", llm_model="openai/test-model", llm_base_url=fake.base_url)
        with KnowledgeBase(settings) as kb:
            events = list(kb.ask("LORA-02 的心跳间隔是多少？", stream=True))
    answer = events[-1][1]
    assert answer.path == "rules" and "wrote no answer sentence" in answer.path_reason
    assert answer.sentences and "30" in answer.answer
    assert "".join(v for k, v in events if k == "delta").strip() == answer.answer
