"""KG_LLM_TIMEOUT defaulted to 20 s and was capped at 600 s: every call to a model on CPU (a 1.5B model
reads a 1,500-token prompt in ~50 s and writes ~9 tokens/s) timed out and silently fell back to the
rules, and a slow machine could not be given more time."""

from __future__ import annotations

from kg.settings import Settings


def test_the_default_timeout_leaves_a_cpu_model_minutes(tmp_path, monkeypatch):
    monkeypatch.delenv("KG_LLM_TIMEOUT", raising=False)
    assert Settings(data_dir=tmp_path).llm_timeout >= 180


def test_a_timeout_past_ten_minutes_is_accepted(tmp_path, monkeypatch):
    monkeypatch.setenv("KG_LLM_TIMEOUT", "1800")
    assert Settings(data_dir=tmp_path).llm_timeout == 1800
