"""The answer loop with a real model: llama.cpp's server and SmolLM2-135M on 127.0.0.1 (tests/local_llm.py).

SmolLM2 is a plumbing model: every assertion is on mechanics (a reply arrives through litellm,
streamed in pieces, a verdict parses, rounds stay bounded, citations are checked), never on content.
"""

from __future__ import annotations

from local_llm import local_llm  # noqa: F401 - the session fixture

from retrieval.answer.llm import LlmClient, LlmConfig


def client(server, **kw) -> LlmClient:
    return LlmClient(LlmConfig(model="openai/smollm2", base_url=server.base_url, timeout=120, **kw))


def test_the_local_server_answers_through_litellm_whole_and_streamed(local_llm):  # noqa: F811
    llm = client(local_llm)
    messages = [{"role": "user", "content": "Say hello."}]
    whole = llm.complete("answer", messages, max_tokens=8)
    pieces = list(llm.stream("answer", messages, max_tokens=8))
    assert whole.strip()
    assert len(pieces) > 1  # streamed as generated, not one block
    assert llm.calls == 2 and llm.tasks == ["answer", "answer"]


def test_a_reply_stopped_at_max_tokens_is_known_to_be_cut(local_llm):  # noqa: F811
    llm = client(local_llm)
    messages = [{"role": "user", "content": "Write a long story about a lighthouse keeper."}]
    llm.complete("answer", messages, max_tokens=4)
    list(llm.stream("answer", messages, max_tokens=4))
    assert [u["cut"] for u in llm.usage] == [True, True]  # llama.cpp's finish_reason "length", whole and streamed


# ---------------------------------------------------------------- the whole loop, end to end, with the real model

import pytest  # noqa: E402
from conftest import build_kb, make_settings  # noqa: E402

SHORT = "LORA-02 的心跳间隔和固件签名算法是什么？"  # the rules find its passages short: the model judges


@pytest.fixture(scope="module")
def fixture_kb(tmp_path_factory):
    root = tmp_path_factory.mktemp("answers-real")
    build_kb(root).close()
    return root / "kb"


def _kb(data_dir, server, **overrides):
    from retrieval.pipeline import KnowledgeBase

    settings = {"llm_model": "openai/smollm2", "llm_base_url": server.base_url, "llm_timeout": 300, "llm_max_tokens": 120}
    return KnowledgeBase(make_settings(data_dir, **{**settings, **overrides}))


def test_the_loop_runs_end_to_end_with_a_real_model(fixture_kb, local_llm):  # noqa: F811
    with _kb(fixture_kb, local_llm, llm_rewrites=True) as kb:  # every call the loop can make
        events = list(kb.ask(SHORT, stream=True))
    answer = events[-1][1]
    calls = answer.to_json()["llm_calls"]
    tasks = [c["task"] for c in calls]
    assert tasks[0] == "rewrite" and "judge" in tasks and len(tasks) <= 3  # at most three model calls a question
    assert answer.rounds[0].verdict["by"] == "llm"  # the json_schema verdict parsed
    assert 1 <= len(answer.rounds) <= 2
    assert all(c["prompt_tokens"] <= 1600 for c in calls)  # the prompt stays bounded (estimate: ~1,500)
    assert not any(c.get("estimated") for c in calls if c["task"] == "judge")  # the server counted its tokens
    # whatever it wrote, what reached the user cites only passages that exist
    shown = "".join(v for k, v in events if k == "delta")
    existing = {c.n for c in answer.citations}
    assert all(set(s.citations) <= existing for s in answer.sentences)
    for n in answer.removed_citations:
        assert f"[{n}]" not in shown or n in existing
    if answer.path == "llm":
        assert shown == answer.answer and answer.sentences
    else:  # a small model's empty or unusable answer: the rules answered, and said why
        assert "the rules path completed the request" in answer.path_reason


def test_a_timeout_against_the_real_model_falls_back_to_the_rules(fixture_kb, local_llm):  # noqa: F811
    with _kb(fixture_kb, local_llm, llm_timeout=0.01) as kb:
        answer = kb.ask(SHORT)
    assert answer.path == "rules" and "timed out" in answer.path_reason
    assert len(answer.to_json()["llm_calls"]) == 0  # the first call timed out; no further call was made
    assert answer.found or answer.answer.startswith("知识库中暂无相关信息")


def test_a_follow_up_with_its_history_runs_end_to_end_with_a_real_model(fixture_kb, local_llm):  # noqa: F811
    history = [{"role": "user", "content": "LORA-02 网关是什么？"},
               {"role": "assistant", "content": "LORA-02 是第二代 LoRa 网关。[1]"}]
    with _kb(fixture_kb, local_llm) as kb:
        events = list(kb.ask("它的心跳间隔是多少？", history=history, stream=True))
    answer = events[-1][1]
    calls = answer.to_json()["llm_calls"]
    assert calls and calls[0]["task"] == "rewrite" and len(calls) <= 3  # the conversation costs no extra call
    assert all(c["prompt_tokens"] <= 1600 for c in calls)
    assert answer.question == "它的心跳间隔是多少？" and answer.rounds[0].query
    # whatever the model made of it (its own standalone question, or the rules' when it wrote none), the record says
    # what was searched: the pronoun points back, so the question as asked is never searched unexplained
    assert f'the follow-up was searched as "{answer.rounds[0].query}"' in answer.path_reason


def test_an_answer_cut_by_the_length_limit_says_so_with_a_real_model(fixture_kb, local_llm):  # noqa: F811
    from retrieval.answer.loop import CUT_NOTE

    with _kb(fixture_kb, local_llm, llm_max_tokens=16) as kb:
        events = list(kb.ask(SHORT, stream=True))
    answer = events[-1][1]
    answer_calls = [c for c in answer.to_json()["llm_calls"] if c["task"] == "answer"]
    assert answer_calls and answer_calls[-1]["completion_tokens"] <= 16
    if answer.path == "llm":  # sixteen tokens end no answer: what reached the user says it stops at the limit
        assert answer.answer.endswith(CUT_NOTE["zh"]) and "KG_LLM_MAX_TOKENS" in answer.path_reason
        assert "".join(v for k, v in events if k == "delta") == answer.answer
    else:  # no whole sentence in sixteen tokens: the rules answered, and said why
        assert "the rules path completed the request" in answer.path_reason
