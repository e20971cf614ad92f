"""Shared fixtures: one small Chinese/English knowledge base built from `tests/data/kb/`.

The fixture corpus (8 Markdown documents and a text file, plus a relation table) is small enough
to build in well under a second once spaCy and jieba are loaded. Read-only tests share the
session-scoped `kb`/`kb_dir`; a test that writes builds its own with `fresh_kb` in its tmp_path.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from kg.settings import Settings

DATA_DIR = Path(__file__).parent / "data" / "kb"
FIXTURE_DOCS = DATA_DIR / "docs"
FIXTURE_RELATIONS = DATA_DIR / "relations.csv"

# The cross-document question of the fixture corpus: it names order-service (through its alias
# 订单服务); its gold document, docs/infra/mysql-core.md, is English only and shares no word
# with it, so only the relation order-service -dependsOn-> mysql-core can bring it in.
CROSS_DOC_QUERY = "订单服务依赖哪些组件？"
CROSS_DOC_GOLD = "docs/infra/mysql-core.md"


# The keys of one hit in `kg query --json` and POST /query.
HIT_KEYS = {
    "rank",
    "doc_id",
    "title",
    "chunk_id",
    "text",
    "score",
    "why",
    "source",
    "section",
    "lines",
}


def make_settings(data_dir: Path, **overrides) -> Settings:
    return Settings(data_dir=data_dir, **overrides)


def run_in_own_process(module: str, function: str, data_dir: Path):
    """`tests/<module>.py`'s `function(data_dir)` in a fresh Python process; its JSON result.

    For tests that build the demo as a user's `kg` process does: its labels and synonyms join jieba's
    dictionary, which is per process (in this one they would stay until the knowledge base closes)."""
    script = (f"import json, sys, pathlib; sys.path.insert(0, {str(Path(__file__).parent)!r}); import {module} as t; "
              f"print(json.dumps(t.{function}(pathlib.Path({str(data_dir)!r}))))")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def copy_fixture_corpus(root: Path) -> tuple[Path, Path]:
    """Copy the fixture documents and relation table under `root`; returns (docs dir, relations.csv)."""
    docs = root / "docs"
    shutil.copytree(FIXTURE_DOCS, docs)
    relations = root / "relations.csv"
    shutil.copyfile(FIXTURE_RELATIONS, relations)
    return docs, relations


def build_kb(root: Path, **overrides):
    """A knowledge base in root/kb from a copy of the fixture corpus in root/docs (open; caller closes)."""
    from retrieval.pipeline import KnowledgeBase

    docs, relations = copy_fixture_corpus(root)
    kb = KnowledgeBase(make_settings(root / "kb", **overrides), create=True)
    kb.import_file(relations)
    kb.ingest_paths([docs])
    return kb


def build_demo_kb(data_dir: Path):
    """The bundled demo knowledge base (kg/demo: relations, synonyms, documents) in data_dir (open; caller
    closes). Teaches jieba the demo's words until it closes; `run_in_own_process` builds it as a `kg` process would."""
    from kg.cli.base import DEMO_DIR
    from retrieval.pipeline import KnowledgeBase

    kb = KnowledgeBase(make_settings(data_dir), create=True)
    for name in ("relations.csv", "synonyms.txt"):
        kb.import_file(DEMO_DIR / name)
    kb.ingest_paths([DEMO_DIR / "docs"])
    return kb


def kg_process(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    """Run the real CLI in a process of its own (jieba's dictionary is per process)."""
    return subprocess.run(
        [sys.executable, "-m", "kg.cli", *args], cwd=cwd, capture_output=True, text=True, encoding="utf-8", check=False
    )


def kg_in_new_process(*args: str, cwd: Path) -> str:
    """`kg_process` that must succeed: its stdout."""
    done = kg_process(*args, cwd=cwd)
    assert done.returncode == 0, done.stderr
    return done.stdout


def wait_until(condition, seconds: float = 120.0) -> bool:
    """Poll `condition` until true or `seconds` passed: a bound on waiting for a server's thread, not a timing assertion."""
    import time

    deadline = time.monotonic() + seconds
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.1)
    return condition()


def background_embedding_waits_for(other_lock, settings) -> None:
    """With `other_lock` held (another process's turn to embed), a server's background embedding defers its rounds and
    leaves the chunk a post adds without a vector; once it is let go, the next round embeds that chunk. `settings`: a
    knowledge base `kg embed` has embedded (the background keeps only such a one up to date); the lock is released."""
    from fastapi.testclient import TestClient

    from api.app import create_app

    with TestClient(create_app(settings)) as client:
        kb = client.app.state.kb
        background = kb._background_embedder
        posted = client.post("/documents", json={"source": "late.md", "text": "# Late\n\nA late note.\n"})
        assert posted.status_code == 201, posted.text
        assert wait_until(lambda: background.deferred >= 2)
        status = kb.vectors.status()
        assert status["chunks_with_vectors"] == status["chunks"] - 1 and background.embedded == 0
        other_lock.release()
        assert wait_until(lambda: kb.vectors.status()["chunks_with_vectors"] == status["chunks"])
        assert background.embedded == 1


def relative_source(source: str, root: Path) -> str:
    """A document's source (an absolute path) relative to the corpus root, e.g. 'docs/infra/nginx.md'."""
    return Path(source).relative_to(root.resolve()).as_posix()


@pytest.fixture(autouse=True, scope="module")
def _jiebas_own_dictionary() -> None:
    """Each test module starts from jieba's own dictionary. jieba has one per process, and the words that
    earlier modules taught it (entity labels, synonyms) changed how later ones cut: after one taught it
    看门狗超时, another's chunk no longer held 看门狗 and its search failed, in the full suite only.
    Knowledge bases still open (the session's `kb`) teach their words again on their next use."""
    from retrieval.index.analysis import reset_user_words

    reset_user_words()


@pytest.fixture(autouse=True)
def _no_kg_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """KG_* variables of the shell running pytest must not leak into Settings()."""
    for name in list(os.environ):
        if name.startswith("KG_"):
            monkeypatch.delenv(name)


@pytest.fixture(scope="session")
def kb_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Root of the shared corpus: root/docs (documents), root/relations.csv, root/kb (data dir)."""
    root = tmp_path_factory.mktemp("shared")
    build_kb(root).close()
    return root


@pytest.fixture(scope="session")
def kb_dir(kb_root: Path) -> Path:
    return kb_root / "kb"


@pytest.fixture(scope="session")
def kb(kb_dir: Path) -> Iterator:
    """The shared knowledge base, opened once. Tests using it must not write to it."""
    from retrieval.pipeline import KnowledgeBase

    with KnowledgeBase(make_settings(kb_dir)) as opened:
        yield opened


@pytest.fixture
def fresh_kb(tmp_path: Path) -> Iterator:
    """A knowledge base of the fixture corpus of the test's own (tmp_path/docs, tmp_path/kb)."""
    kb = build_kb(tmp_path)
    try:
        yield kb
    finally:
        kb.close()


@pytest.fixture
def fake():
    """An OpenAI-compatible endpoint on 127.0.0.1 (tests/fake_llm.py): the loop's model path through litellm."""
    from fake_llm import FakeLLM

    with FakeLLM() as server:
        yield server


def open_llm_kb(data_dir: Path, base_url: str, **overrides):
    """The knowledge base in data_dir with its model at base_url (`openai/test-model`), open; caller closes."""
    from retrieval.pipeline import KnowledgeBase

    return KnowledgeBase(make_settings(data_dir, llm_model="openai/test-model", llm_base_url=base_url, **overrides))


@pytest.fixture(scope="module")
def backends():
    """(PostgreSQL, Oxigraph) servers of this module's own on loopback (tests/backends_servers.py); skips saying
    what is missing where either cannot start."""
    from backends_servers import oxigraph_server, postgres_server

    with postgres_server() as pg, oxigraph_server() as graph:
        for server in (pg, graph):
            if isinstance(server, str):
                pytest.skip(server)
        yield pg, graph


@pytest.fixture(scope="module")
def pg_dsn():
    """The connection string of a PostgreSQL of this module's own (tests/backends_servers.py); skips saying why where
    it cannot start."""
    from backends_servers import postgres_server

    with postgres_server() as server:
        if isinstance(server, str):
            pytest.skip(server)
        yield server.url


@pytest.fixture
def oxigraph():
    """A real `oxigraph serve` on loopback (tests/backends_servers.py); skipped with the reason where it cannot start."""
    from backends_servers import oxigraph_server

    with oxigraph_server() as server:
        if isinstance(server, str):
            pytest.skip(server)
        yield server
