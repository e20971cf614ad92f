"""A write killed at every step of its commit (KG_CRASH_AT=<op>:<step> exits the process there, like kill -9):
the next open finishes or undoes it, `kg check` is then clean, and the state equals the state either
before or after the command. Real processes, real stores."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import build_kb
from rdflib.compare import to_isomorphic

CRASH_EXIT = 86

MORE_RELATIONS = """source,relation,target,source_type,target_type,source_aliases,target_aliases,weight,note
order-service,dependsOn,kafka-bus,,Service,,消息总线,,
kafka-bus,ownedBy,交易团队,,Team,,,,
"""
SYNONYMS = "限流, 流控\n"


def run_kg(*args: str, cwd: Path, crash_at: str | None = None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("KG_")}
    env["PYTHONPATH"] = os.environ.get("PYTHONPATH", str(Path(__file__).parent.parent))
    if crash_at:
        env["KG_CRASH_AT"] = crash_at
    return subprocess.run([sys.executable, "-m", "kg.cli", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, encoding="utf-8", check=False, timeout=300)


def state(data_dir: Path) -> dict:
    """Everything a write can change, read straight from the files."""
    from whoosh import index as whoosh_index

    from ontology import load_rdf

    db = sqlite3.connect(data_dir / "kb.sqlite")
    try:
        out = {
            "documents": sorted(db.execute("SELECT source, sha256, n_chunks FROM documents")),
            "chunks": sorted(r[0] for r in db.execute("SELECT chunk_id FROM chunks")),
            "mentions": sorted(db.execute('SELECT chunk_id, entity, start, "end" FROM mentions')),
            "about": sorted(db.execute("SELECT doc_id, entity FROM about")),
        }
    finally:
        db.close()
    ix = whoosh_index.open_dir(data_dir / "index")
    with ix.searcher() as searcher:
        out["indexed"] = sorted(f["chunk_id"] for f in searcher.all_stored_fields())
    out["graph"] = to_isomorphic(load_rdf(data_dir / "graph.ttl"))
    synonyms = data_dir / "synonyms.txt"
    out["synonyms"] = synonyms.read_text(encoding="utf-8") if synonyms.exists() else ""
    return out


@pytest.fixture(scope="module")
def workspace(tmp_path_factory) -> tuple[Path, Path]:
    """(work dir, pristine copy): the fixture corpus ingested in the work dir, plus the inputs of the
    writes below. Sources are absolute paths, so every case runs in the same work dir, reset first."""
    top = tmp_path_factory.mktemp("crash")
    work = top / "work"
    build_kb(work).close()
    (work / "more.csv").write_text(MORE_RELATIONS, encoding="utf-8")
    (work / "synonyms-in.txt").write_text(SYNONYMS, encoding="utf-8")
    new = work / "new-docs"
    new.mkdir()
    (new / "kafka-bus.md").write_text("# kafka-bus\n\nkafka-bus 是订单服务的消息总线，限流由网关负责。\n", encoding="utf-8")
    pristine = top / "pristine"
    shutil.copytree(work, pristine)
    return work, pristine


COMMANDS = {
    "ingest": (["ingest", "new-docs", "docs/infra/nginx.md", "--data-dir", "kb", "-q"],
               ["journal", "prepared", "catalog", "index", "generation"]),
    "import": (["import", "more.csv", "--data-dir", "kb", "-q"],
               ["journal", "graph", "mentions", "generation"]),
    "import-synonyms": (["import", "synonyms-in.txt", "--data-dir", "kb", "-q"], ["synonyms", "generation"]),
    "delete": (["delete", "docs/services/order-service.md", "--data-dir", "kb"],
               ["journal", "prepared", "catalog", "index", "generation"]),
}


def _reset(workspace: tuple[Path, Path], name: str) -> Path:
    work, pristine = workspace
    shutil.rmtree(work)
    shutil.copytree(pristine, work)
    if name == "ingest":  # an update too: the unsearchable chunks came from a document ingested again
        nginx = work / "docs/infra/nginx.md"
        nginx.write_text(nginx.read_text(encoding="utf-8") + "\n## 变更\n\nnginx 升级到 1.27，限流规则不变。\n",
                         encoding="utf-8")
    return work


@pytest.fixture(scope="module")
def after(workspace) -> dict[str, dict]:
    """The state each command leaves when it is not interrupted."""
    states = {}
    for name, (args, _) in COMMANDS.items():
        root = _reset(workspace, name)
        done = run_kg(*args, cwd=root)
        assert done.returncode == 0, done.stderr
        states[name] = state(root / "kb")
        if name == "ingest":
            assert "1 new, 1 updated" in done.stdout
    return states


CASES = [(name, step) for name, (_, steps) in COMMANDS.items() for step in steps]


@pytest.mark.slow
@pytest.mark.parametrize(("name", "step"), CASES, ids=[f"{n}-{s}" for n, s in CASES])
def test_a_commit_killed_at_any_step_is_finished_or_undone_on_the_next_open(workspace, after, name, step):
    args, _ = COMMANDS[name]
    root = _reset(workspace, name)
    before = state(root / "kb")
    op = {"import-synonyms": "import"}.get(name, name)
    if step == "mentions":
        op = "relink"  # the import's relink is where mentions are committed
    killed = run_kg(*args, cwd=root, crash_at=f"{op}:{step}")
    assert killed.returncode == CRASH_EXIT, (killed.returncode, killed.stderr)
    assert "Traceback" not in killed.stderr

    checked = run_kg("check", "--json", "--data-dir", "kb", cwd=root)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    report = json.loads(checked.stdout)
    assert report["clean"] is True, report
    assert not (root / "kb/commit.json").exists()
    assert not list((root / "kb").glob(".graph-*"))
    now = state(root / "kb")
    assert now == before or now == after[name], f"{name} killed at {step}: state is neither before nor after"
    if step in ("catalog", "index", "graph", "mentions", "synonyms", "generation"):
        assert now == after[name]  # the truth had committed: the next open rolls forward
