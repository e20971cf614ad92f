"""A writer killed mid-commit on a shared knowledge base (issue 26): machines A and B, each with a data dir of
its own, share one PostgreSQL (text index, write lock, published catalog) and one Oxigraph (the graph).

`kg ingest` on A dies at a step of its commit (KG_CRASH_AT=<op>:<step> exits like kill -9 while it holds the
PostgreSQL write lock). Then B can write at once (PostgreSQL dropped the dead session's advisory lock; a
short KG_WRITE_WAIT turns a leaked lock into exit 75, not a hang), and both machines see one state: the
killed document on both or on neither (on both only when its commit was published), B's document on both,
`kg check --json` clean on both data dirs, no journal left in the shared record, no lock held. The same
with a `kg serve` killed inside a POST /documents. No timing is asserted: waits are bounded polls.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from backends_servers import http_json, kg_serve
from test_backends_scaleout import backend_env, post, titles, wait_until

pytestmark = pytest.mark.slow

CRASH_EXIT = 86  # retrieval.catalog.commit.CRASH_EXIT
BUSY_EXIT = 75
WRITE_WAIT = "15"  # B's bound on waiting for the lock: a lock the dead writer leaked fails B, it does not hang it

KILLED_DOC = "# Quokka ledger runbook\n\nThe quokkaledger reconciles payments every hour.\n"
B_DOC = "# Wombat queue runbook\n\nThe wombatqueue buffers refunds during outages.\n"

# The steps of an ingest's commit on the shared backend (retrieval/writing.py, retrieval/write_path.py), and
# whether the killed write is then visible: only a published commit is the truth the other machines follow.
STEPS = {
    "journal": False,     # the shared journal row is set, nothing else changed
    "index": False,       # A's catalog and PostgreSQL's text index committed, nothing published
    "generation": False,  # ... and A's local generation bumped, still nothing published
    "publish": True,      # published (catalog, files, generation), A's local journal not yet removed
}


def run_kg(env: dict, *args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kg.cli", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, encoding="utf-8", check=False, timeout=600)


def kg_ok(env: dict, *args: str, cwd: Path) -> str:
    done = run_kg(env, *args, cwd=cwd)
    assert done.returncode == 0, (args, done.returncode, done.stderr[-2000:])
    assert "Traceback" not in done.stderr, done.stderr[-2000:]
    return done.stdout


def found(env: dict, data_dir: Path, word: str, cwd: Path) -> list[str]:
    """The titles `kg query --json` finds for `word` on one machine (the real CLI, a process of its own)."""
    answer = json.loads(kg_ok(env, "query", word, "--mode", "bm25", "--json", "--data-dir", str(data_dir), cwd=cwd))
    return [hit["title"] for hit in answer["hits"]]


def clean(env: dict, data_dir: Path, cwd: Path) -> dict:
    report = json.loads(kg_ok(env, "check", "--json", "--data-dir", str(data_dir), cwd=cwd))
    assert report["clean"], report
    return report


def shared_leftovers(pg, schema: str) -> tuple:
    """(the shared record's journal row, advisory locks still granted): both empty once every writer is gone."""
    import psycopg

    with psycopg.connect(pg.url) as conn:
        journal = conn.execute(f"SELECT journal, writer FROM {schema}.kb_commit").fetchone()
        locks = conn.execute("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted").fetchone()[0]
    return (journal[0] and journal, locks)


def machines(tmp_path: Path, env: dict) -> tuple[Path, Path]:
    dirs = (tmp_path / "machine-a", tmp_path / "machine-b")
    for folder in dirs:
        kg_ok(env, "init", "--data-dir", str(folder), cwd=tmp_path)
    (tmp_path / "quokka.md").write_text(KILLED_DOC, encoding="utf-8")
    (tmp_path / "wombat.md").write_text(B_DOC, encoding="utf-8")
    return dirs


@pytest.mark.parametrize("step", list(STEPS))
def test_an_ingest_killed_mid_commit_never_blocks_or_splits_the_other_machine(backends, tmp_path, step):
    pg, graph = backends
    schema = f"killed_cli_{step}"
    env = {**backend_env(pg, graph, schema), "KG_WRITE_WAIT": WRITE_WAIT}
    a_dir, b_dir = machines(tmp_path, env)

    killed = run_kg({**env, "KG_CRASH_AT": f"ingest:{step}"}, "ingest", "quokka.md", "--data-dir", str(a_dir), "-q",
                    cwd=tmp_path)
    assert killed.returncode == CRASH_EXIT, (killed.returncode, killed.stderr[-2000:])
    assert "Traceback" not in killed.stderr

    # A reader on B before anyone writes again: never a half write (what PostgreSQL's index holds unpublished).
    visible = ["Quokka ledger runbook"] if STEPS[step] else []
    assert found(env, b_dir, "quokkaledger", tmp_path) == visible

    written = run_kg(env, "ingest", "wombat.md", "--data-dir", str(b_dir), "-q", cwd=tmp_path)
    assert written.returncode != BUSY_EXIT, f"the killed writer's lock was not released: {written.stderr[-1000:]}"
    assert written.returncode == 0, written.stderr[-2000:]

    # A first: reopening its data dir finishes or undoes its own journal against the published state.
    for data_dir in (a_dir, b_dir):
        assert found(env, data_dir, "quokkaledger", tmp_path) == visible, data_dir.name
        assert found(env, data_dir, "wombatqueue", tmp_path) == ["Wombat queue runbook"], data_dir.name
    for data_dir in (a_dir, b_dir):
        clean(env, data_dir, tmp_path)
        assert not (data_dir / "commit.json").exists(), data_dir.name
    assert shared_leftovers(pg, schema) == (None, 0)


def test_a_server_killed_inside_a_post_leaves_the_other_server_writing(backends, tmp_path):
    pg, graph = backends
    schema = "killed_serve"
    env = {**backend_env(pg, graph, schema), "KG_WRITE_WAIT": WRITE_WAIT}
    a_dir, b_dir = machines(tmp_path, env)
    crashing = {**env, "KG_CRASH_AT": "ingest:index"}  # POST /documents is an ingest: the server dies in it
    with kg_serve(a_dir, crashing, tmp_path / "a.log") as (a_process, a), \
            kg_serve(b_dir, env, tmp_path / "b.log") as (_, b):
        with pytest.raises(OSError):  # the server died before it answered
            post(a, "quokka", KILLED_DOC)
        a_process.wait(60)
        assert a_process.returncode == CRASH_EXIT, (tmp_path / "a.log").read_text()[-2000:]
        assert post(b, "wombat", B_DOC) == 201  # 503 after KG_WRITE_WAIT if the lock had leaked
        assert titles(b, "wombatqueue") == ["Wombat queue runbook"]
        assert titles(b, "quokkaledger") == []

    # Machine A comes back (without the crash switch): it undoes its unpublished write and follows B's.
    with kg_serve(a_dir, env, tmp_path / "a-again.log") as (_, a):
        assert wait_until(lambda: titles(a, "wombatqueue")) == ["Wombat queue runbook"]
        assert titles(a, "quokkaledger") == []
        status, listed = http_json("GET", a + "/documents")
        assert status == 200 and {d["title"] for d in listed["documents"]} == {"Wombat queue runbook"}, listed
    for data_dir in (a_dir, b_dir):
        clean(env, data_dir, tmp_path)
    assert shared_leftovers(pg, schema) == (None, 0)
    for log in ("a.log", "b.log", "a-again.log"):
        assert "Traceback" not in (tmp_path / log).read_text(), log
