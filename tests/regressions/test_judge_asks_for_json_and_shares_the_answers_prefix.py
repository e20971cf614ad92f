"""The judge was not asked for JSON-schema output (a 135M model's verdicts parsed 0 of 4 times without it,
4 of 4 with it), and the judge and answer prompts shared no prefix (each its own system message, the
question before the passages), so a llama.cpp server re-read every passage for the answer. Now the judge
sends `response_format` json_schema, and both calls send the same system message and passages + question,
the task last."""

from __future__ import annotations

from conftest import build_kb, make_settings
from fake_llm import FakeLLM, task_of

from retrieval.pipeline import KnowledgeBase

SHORT = "LORA-02 的心跳间隔和固件签名算法是什么？"  # the rules find its passages short: the model judges


def _requests(tmp_path):
    build_kb(tmp_path).close()
    with FakeLLM() as fake:
        fake.replies["answer"] = "LORA-02 的心跳间隔为 30 秒[1]。"
        settings = make_settings(tmp_path / "kb", llm_model="openai/test-model", llm_base_url=fake.base_url)
        with KnowledgeBase(settings) as kb:
            kb.ask(SHORT)
        return {task_of(b): b for b in fake.requests}


def test_the_judge_asks_for_the_verdicts_json_schema(tmp_path):
    judge = _requests(tmp_path)["judge"]
    schema = judge["response_format"]["json_schema"]["schema"]
    assert judge["response_format"]["type"] == "json_schema"
    assert set(schema["required"]) == {"sufficient", "missing", "followup_query"}


def test_judge_and_answer_share_system_passages_and_question(tmp_path):
    requests = _requests(tmp_path)
    judge, answer = requests["judge"]["messages"], requests["answer"]["messages"]
    assert judge[0] == answer[0]
    prefix = judge[1]["content"].split("Task:")[0]
    assert prefix.index("<passage") < prefix.index("<question>")  # passages first
    assert answer[1]["content"].startswith(prefix)
