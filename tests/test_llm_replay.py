"""bench/llm_replay.py: a model's replies kept by their prompt and given again. Recorded through litellm from an
OpenAI-compatible endpoint on 127.0.0.1 (tests/fake_llm.py), then replayed with no endpoint at all: the same answer,
no request; a prompt the file lacks fails as an unreachable model would, and the rules answer."""

from __future__ import annotations

from conftest import open_llm_kb
from fake_llm import cite_passage_with
from test_answers_quotes import kb_of

from bench.llm_replay import ReplayBook, ReplayClient
from retrieval.answer import LlmConfig

DOC = "# LORA-09 网关\n\n## 参数\n\nLORA-09 的心跳间隔为 15 秒，连续 3 次没有心跳即判定离线。\n"


def test_recorded_replies_are_given_again_without_the_model(tmp_path_factory, tmp_path, fake):
    data = kb_of(tmp_path_factory, "lora-09.md", DOC)
    fake.replies["answer"] = cite_passage_with("心跳间隔", "LORA-09 每 15 秒发一次心跳[{n}]。")
    book_file = tmp_path / "replies.jsonl"
    with open_llm_kb(data, fake.base_url) as kb:
        config = LlmConfig(model="openai/test-model", base_url=fake.base_url)
        recorded = kb.ask("LORA-09 的心跳间隔是多少？", llm=ReplayClient(config, book=ReplayBook(book_file)))
        asked = len(fake.requests)
        again = ReplayBook(book_file, replay_only=True)
        nowhere = LlmConfig(model="openai/test-model", base_url="http://127.0.0.1:9/v1")
        replayed = kb.ask("LORA-09 的心跳间隔是多少？", llm=ReplayClient(nowhere, book=again))
        missed = kb.ask("LORA-09 判定离线要几次？", llm=ReplayClient(nowhere, book=again))
    assert recorded.path == replayed.path == "llm" and asked >= 1 and len(fake.requests) == asked
    assert replayed.answer == recorded.answer and again.hits >= 1
    assert missed.path == "rules" and "no recorded reply" in missed.path_reason and again.misses >= 1


def test_the_bench_finds_the_model_server_listening_at_the_llm_url():
    """bench/answers.py --llm pointed at a `kg llm serve` started apart reads that server's CPU per question: the
    process listening at the URL's loopback port is found through /proc."""
    import socket
    import subprocess
    import sys
    from pathlib import Path

    import pytest

    from bench.answers_model import listening_pid

    if not Path("/proc/net/tcp").exists():
        pytest.skip("no Linux /proc here")
    child = subprocess.Popen([sys.executable, "-c", "import socket, sys, time; s = socket.socket(); "
                              "s.bind(('127.0.0.1', 0)); s.listen(); print(s.getsockname()[1], flush=True); time.sleep(60)"],
                             stdout=subprocess.PIPE, text=True)
    try:
        port = int(child.stdout.readline())
        assert listening_pid(f"http://127.0.0.1:{port}/v1") == child.pid
        assert listening_pid(f"http://localhost:{port}/v1") == child.pid
        assert listening_pid(f"http://192.0.2.1:{port}/v1") is None  # another host: nothing to read here
    finally:
        child.kill()
        child.wait()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed = s.getsockname()[1]
    assert listening_pid(f"http://127.0.0.1:{closed}/v1") is None
