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
