"""A provider model configured without its key (KG_LLM_MODEL=deepseek/deepseek-chat, DEEPSEEK_API_KEY
unset) was reported as "HTTP 500". The key variable is now checked before any call and named."""

from __future__ import annotations

from conftest import build_kb, make_settings

from retrieval.pipeline import KnowledgeBase


def test_the_missing_key_variable_is_named_and_nothing_is_called(tmp_path, monkeypatch):
    monkeypatch.delenv("DEEPSEEK_API_KEY", raising=False)
    build_kb(tmp_path).close()
    with KnowledgeBase(make_settings(tmp_path / "kb", llm_model="deepseek/deepseek-chat")) as kb:
        answer = kb.ask("LORA-02 的心跳间隔是多少？")
    assert answer.path == "rules" and answer.found
    assert "DEEPSEEK_API_KEY" in answer.path_reason and "HTTP 500" not in answer.path_reason
    assert answer.to_json()["llm_calls"] == []
