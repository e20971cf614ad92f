"""A real small model for the answer tests: llama.cpp's server (xllamacpp) with SmolLM2-135M on 127.0.0.1, started once per test run.

SmolLM2 is for plumbing only: tests that use it assert on the loop's mechanics (a verdict parsed,
rounds bounded, citations checked, the stream), never on what it says. Where xllamacpp or the
weights are not installed the tests skip, saying the pip line (`.ci/run` installs both).
"""

from __future__ import annotations

import pytest

from retrieval.answer.local_server import MODELS, LocalServer, server_available

MODEL = "smollm2"


def why_not(name: str = MODEL) -> str | None:
    missing = server_available()
    if missing:
        return missing
    if not MODELS[name].installed():
        return f"the {name} weights are not installed: {MODELS[name].install}"
    return None


@pytest.fixture(scope="session")
def local_llm(tmp_path_factory):
    """The running server (`.base_url` is its /v1 URL); skips with the reason when it cannot run here."""
    reason = why_not()
    if reason:
        pytest.skip(f"real-model test skipped: {reason}")
    log = tmp_path_factory.mktemp("local-llm") / "server.log"
    with LocalServer(MODEL, threads=1, n_ctx=4096, log=log) as server:
        yield server
