"""`kg llm check` through the real CLI (its human output and exit code), and `kg ask` without a model never importing litellm."""

from __future__ import annotations

import os
import subprocess
import sys

from click.testing import CliRunner
from conftest import build_kb
from fake_llm import FakeLLM

from kg.cli import cli


def _check(monkeypatch, **env):
    for name in ("KG_LLM_MODEL", "KG_LLM_BASE_URL", "KG_LLM_API_KEY_ENV", "DEEPSEEK_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    return CliRunner().invoke(cli, ["llm", "check"])


def test_check_without_a_model_says_how_to_set_one(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    result = _check(monkeypatch)
    assert result.exit_code != 0 and "no model configured: set KG_LLM_MODEL" in result.output


def test_check_names_a_missing_key_variable(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    result = _check(monkeypatch, KG_LLM_MODEL="deepseek/deepseek-chat")
    assert result.exit_code != 0 and "needs DEEPSEEK_API_KEY in the environment" in result.output


def test_check_names_an_unreachable_host(monkeypatch, tmp_path):
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.chdir(tmp_path)
    result = _check(monkeypatch, KG_LLM_MODEL="openai/x", KG_LLM_BASE_URL=f"http://127.0.0.1:{port}/v1")
    assert result.exit_code != 0 and "is unreachable" in result.output and "KG_LLM_BASE_URL" in result.output


def test_check_names_an_unknown_model(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    with FakeLLM() as fake:
        fake.status = 404
        result = _check(monkeypatch, KG_LLM_MODEL="openai/no-such-model", KG_LLM_BASE_URL=fake.base_url)
    assert result.exit_code != 0 and "is not a model" in result.output and "KG_LLM_MODEL" in result.output


def test_check_reports_a_model_that_answers(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    with FakeLLM() as fake:
        fake.replies["answer"] = "OK"
        result = _check(monkeypatch, KG_LLM_MODEL="openai/test-model", KG_LLM_BASE_URL=fake.base_url)
    assert result.exit_code == 0, result.output
    assert result.output.startswith(f"ok: openai/test-model at {fake.base_url} answered in ")


def test_ask_without_a_model_does_not_import_litellm(tmp_path):
    build_kb(tmp_path).close()
    env = {k: v for k, v in os.environ.items() if not k.startswith("KG_LLM")}
    script = ("import sys; from kg.cli import main; sys.argv = ['kg', 'ask', '--data-dir', sys.argv[1], 'LORA-02 的心跳间隔是多少？']\n"
              "try:\n    main()\nexcept SystemExit:\n    pass\nprint('litellm loaded' if 'litellm' in sys.modules else 'litellm not loaded')")
    done = subprocess.run([sys.executable, "-c", script, str(tmp_path / "kb")], env=env, capture_output=True, text=True)
    assert "30" in done.stdout, done.stderr[-2000:]
    assert done.stdout.strip().endswith("litellm not loaded")


def test_ask_prints_what_frames_its_sentences(tmp_path):
    """Printed sentence by sentence (to flag them), an answer keeps its words around them: "nothing found; the closest
    passages say …" above sentences that are not the answer, and the note that the sources are in another language.
    Without them a piped `kg ask` showed the closest passages as if they answered."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "runbook.md").write_text(
        "# Payment gateway runbook\n\n## Timeouts\n\nIf p99 latency to the bank exceeds 3 s, page the payments team "
        "and switch to the backup channel.\n", encoding="utf-8")
    (docs / "redis.md").write_text("# Redis 运维手册\n\n## 概述\n\n我们的 redis-cluster 有 6 个节点，三主三从。\n", encoding="utf-8")
    runner, kb = CliRunner(), ["--data-dir", str(tmp_path / "kb")]
    assert runner.invoke(cli, ["init", *kb]).exit_code == 0
    assert runner.invoke(cli, ["ingest", str(docs), *kb]).exit_code == 0

    closest = runner.invoke(cli, ["ask", "What happens if latency to the bank is too high?", "--offline", *kb])
    assert closest.exit_code == 0, closest.output
    lines = closest.stdout.splitlines()
    assert lines[0].startswith("No relevant information in the knowledge base; the closest passages say")
    assert lines[1].startswith("If p99 latency to the bank exceeds 3 s") and "(!) weakly supported" in lines[1]

    other = runner.invoke(cli, ["ask", "How many nodes does the redis-cluster have?", "--offline", *kb])
    assert other.exit_code == 0, other.output
    assert other.stdout.splitlines()[:2] == ["(The sources are in Chinese; quoted as written.)",
                                             "我们的 redis-cluster 有 6 个节点，三主三从。[1]"]


def test_the_words_after_the_last_sentence_are_its_tail():
    from retrieval.answer.record import Answer, AnswerSentence

    note = "(The answer reached the length limit, KG_LLM_MAX_TOKENS, and stops here.)"
    answer = Answer("q", f"It is 15 s. [1][R1]\n{note}", True, "en", "llm", "",
                    sentences=[AnswerSentence("It is 15 s.", [1], 1.0, False, facts=["R1"])])
    assert answer.framing() == ("", note)
    assert Answer("q", "知识库中暂无相关信息", False, "zh", "rules", "").framing() == ("", "")
