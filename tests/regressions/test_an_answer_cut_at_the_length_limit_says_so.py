"""A model's answer that stopped at KG_LLM_MAX_TOKENS (finish_reason "length") was shown as if the model had ended
it: a list cut after its fourth item read as the whole list, its last sentence half written. Now the answer says
that it stops at the length limit, streamed and in the record, and `path_reason` gives the count. An answer the
model ended itself carries no such note."""

from __future__ import annotations

import pytest
from conftest import build_kb, make_settings
from fake_llm import FakeLLM

from retrieval.answer.loop import CUT_NOTE
from retrieval.pipeline import KnowledgeBase


@pytest.mark.parametrize("finish", ["length", "stop"])
def test_an_answer_cut_at_max_tokens_says_where_it_stops(tmp_path, finish):
    build_kb(tmp_path).close()
    with FakeLLM() as fake:
        fake.finish = finish
        fake.replies["answer"] = "LORA-02 的心跳间隔是 30 秒。[1] 连续 3 次未收到心跳即判定"
        settings = make_settings(tmp_path / "kb", llm_model="openai/test-model", llm_base_url=fake.base_url)
        with KnowledgeBase(settings) as kb:
            events = list(kb.ask("LORA-02 的心跳间隔是多少？", stream=True))
            whole = kb.ask("LORA-02 的心跳间隔是多少？")
    answer = events[-1][1]
    assert answer.path == "llm" == whole.path
    streamed = "".join(v for k, v in events if k == "delta")
    if finish == "length":
        assert answer.answer.endswith(CUT_NOTE["zh"]) and whole.answer.endswith(CUT_NOTE["zh"])
        assert streamed.strip().endswith(CUT_NOTE["zh"])
        assert "stopped at the length limit" in answer.path_reason and "KG_LLM_MAX_TOKENS" in answer.path_reason
        assert answer.llm_usage[-1]["cut"] is True
    else:
        assert CUT_NOTE["zh"] not in answer.answer and CUT_NOTE["zh"] not in streamed
        assert "length limit" not in answer.path_reason and answer.llm_usage[-1]["cut"] is False
    assert "30 秒" in answer.answer
