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
