"""The no-hit answer's reason said "no model was called" after the model had rewritten the question (the 1.5B
bench run logged calls=2 beside that sentence on every unanswerable question): with a model configured it now
says the model was not asked to answer, and without one it still says no model was called."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from conftest import build_kb, make_settings  # noqa: E402
from fake_llm import FakeLLM  # noqa: E402

UNKNOWN = "MongoDB 的副本集怎么配置？"


def test_the_reason_names_the_rewrite_call(tmp_path):
    from retrieval.pipeline import KnowledgeBase

    build_kb(tmp_path).close()
    with FakeLLM() as fake:
        with KnowledgeBase(make_settings(tmp_path / "kb", llm_model="openai/test-model", llm_base_url=fake.base_url,
                                         llm_rewrites=True)) as kb:
            answer = kb.ask(UNKNOWN)
        assert not answer.found and "rewrite" in fake.tasks() and "answer" not in fake.tasks()
        assert "the model was not asked to answer" in answer.path_reason and "no model was called" not in answer.path_reason
        fake.requests.clear()
        with KnowledgeBase(make_settings(tmp_path / "kb", llm_model="openai/test-model", llm_base_url=fake.base_url)) as kb:
            answer = kb.ask(UNKNOWN)  # without keyword rewrites (the default) the model judged the passages, no more
        assert not answer.found and fake.tasks() == ["judge"] and "the model was not asked to answer" in answer.path_reason
    with KnowledgeBase(make_settings(tmp_path / "kb")) as kb:
        assert "no model was called" in kb.ask(UNKNOWN).path_reason
