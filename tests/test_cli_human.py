"""Every `kg` command's human output (not `--json`, not `--quiet`). The commands that draw progress bars or
stream (ingest, a large import, ask, eval, pack add/update, demo) run as the real CLI in a process of their own
with stdout and stderr on a pseudo-terminal, as a person at a terminal sees them; the others print tables and
text, and run through click's runner in this process. The other tests read `--json` or run quietly; click 8.5
broke `kg pack add`'s bar and none of them saw it. A new command fails `test_every_command_has_a_human_case`
until it gets a case here (or a reason to be exempt)."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import click
import pytest
from click.testing import CliRunner
from conftest import copy_fixture_corpus
from terminal import kg_on_a_terminal

from kg.cli import cli

pytestmark = [pytest.mark.slow, pytest.mark.skipif(not hasattr(os, "openpty"), reason="needs a pseudo-terminal (POSIX)")]

EXEMPT = {
    "serve": "a server that runs until stopped: tests/test_web_browser.py and the serve regressions start it",
    "mcp": "JSON-RPC over stdio, no human output: tests/test_mcp.py drives it",
    "llm serve": "a model server that runs until stopped: the real-model tests start it",
    "migrate": "needs PostgreSQL and a SPARQL store: tests/test_backends_migrate.py runs it as the real CLI and reads its output",
    "store status": "needs a SPARQL store: tests/test_backends_store_edits.py runs it and reads its human output",
    "store pull": "needs a SPARQL store: tests/test_backends_store_edits.py runs it and reads its human output",
    "store push": "needs a SPARQL store: tests/test_backends_store_edits.py runs it and reads its human output",
}
EXIT_CODES = {"llm check": 1}  # no model is configured here: it says what to set
_ESCAPES = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def on_a_terminal(args: list[str], cwd: Path) -> tuple[int, str]:
    """Run `kg ARGS` with a pseudo-terminal as stdout and stderr; (exit code, what the terminal showed)."""
    code, shown = kg_on_a_terminal(args, cwd)
    return code, _ESCAPES.sub("", shown).replace("\r\n", "\n")


def _leaf_commands(group: click.Group, prefix: str = "") -> set[str]:
    names = set()
    for name, command in group.commands.items():
        if isinstance(command, click.Group):
            names |= _leaf_commands(command, f"{prefix}{name} ")
        else:
            names.add(f"{prefix}{name}")
    return names


TERMINAL, RUNNER = True, False
# (command, its arguments (--data-dir KB is added unless --kb is given), on a terminal?, what it must show); in order.
CASES = [
    ("init", [], RUNNER, ["knowledge base"]),
    ("import", ["relations.csv"], RUNNER, ["imported"]),
    ("ingest", ["docs"], TERMINAL, ["ingesting", "new"]),
    ("query", ["订单服务依赖哪些组件？", "-k", "3"], RUNNER, ["why:", " 1. "]),
    ("ask", ["nginx 的超时时间是多少？", "--offline"], TERMINAL, ["rules path", "round 1:"]),  # an answer or none: both human
    ("documents", [], RUNNER, ["nginx"]),
    ("versions", ["docs/infra/nginx.md"], RUNNER, ["*"]),
    ("entity", ["order-service"], RUNNER, ["order-service"]),
    ("stats", [], RUNNER, ["documents"]),
    ("export", [], RUNNER, ["source,relation,target"]),
    ("ontology check", [], RUNNER, []),
    ("check", [], RUNNER, ["clean"]),
    ("eval", ["--kb", "{kb}", "questions.jsonl"], TERMINAL, ["asking (full)", "Hit@1"]),
    ("embed", ["--model", "hash"], TERMINAL, ["embedding with hash-384", "embedded, 0 reused"]),
    ("pack add", ["garden", "garden"], TERMINAL, ["ingesting", "garden"]),
    ("pack list", [], RUNNER, ["garden", "covers:"]),
    ("pack update", ["garden"], TERMINAL, ["garden"]),
    ("pack remove", ["garden"], RUNNER, ["garden"]),
    ("delete", ["docs/infra/nginx.md"], RUNNER, ["deleted"]),
    ("llm check", [], RUNNER, ["no model configured: set KG_LLM_MODEL"]),
    ("import", ["big.csv", "--data-dir", "{big}"], TERMINAL, ["importing", "5000"]),  # the bar needs >= 5,000 rows
]


def in_this_process(args: list[str], cwd: Path) -> tuple[int, str]:
    here = Path.cwd()
    os.chdir(cwd)  # the relative paths of the cases
    try:
        result = CliRunner().invoke(cli, args, catch_exceptions=True)
    finally:
        os.chdir(here)
    shown = result.stdout + result.stderr
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        import traceback

        shown += "Traceback\n" + "".join(traceback.format_exception(result.exception))
    return result.exit_code, shown


def test_every_command_has_a_human_case() -> None:
    covered = {name for name, _, _, _ in CASES} | {"demo"}
    assert _leaf_commands(cli) - set(EXEMPT) == covered


def test_each_command_prints_its_human_output_on_a_terminal(tmp_path: Path) -> None:
    copy_fixture_corpus(tmp_path)
    rows = ["source,relation,target"] + [f"svc-{i},dependsOn,db-{i % 50}" for i in range(5_000)]
    (tmp_path / "big.csv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    (tmp_path / "questions.jsonl").write_text(json.dumps(
        {"id": "q1", "question": "nginx 超时", "gold_ids": ["docs/infra/nginx.md"]}, ensure_ascii=False) + "\n",
        encoding="utf-8")
    garden = tmp_path / "garden"
    garden.mkdir()
    (garden / "tomatoes.md").write_text("# Tomatoes\n\nTomato seedlings need 8 hours of sun.\n", encoding="utf-8")
    (garden / "PACK.md").write_text("---\nid: garden\ntitle: Garden notes\ncovers: [tomatoes]\n---\n", encoding="utf-8")
    kb, big = str(tmp_path / "kb"), str(tmp_path / "big")
    failures = []
    for name, args, terminal, expected in CASES:
        argv = [*name.split(), *[a.replace("{kb}", kb).replace("{big}", big) for a in args]]
        if "--kb" not in argv and "--data-dir" not in argv:
            argv += ["--data-dir", kb]
        code, shown = (on_a_terminal if terminal else in_this_process)(argv, tmp_path)
        if code != EXIT_CODES.get(name, 0) or "Traceback" in shown or not all(text in shown for text in expected):
            failures.append(f"kg {' '.join(argv)} -> exit {code}, expected {expected}:\n{shown[-1500:]}")
    assert not failures, "\n\n".join(failures)


def test_demo_prints_its_tables_on_a_terminal(tmp_path: Path) -> None:
    code, shown = on_a_terminal(["demo", "-k", "1", "--data-dir", str(tmp_path / "demo")], tmp_path)
    assert code == 0 and "Traceback" not in shown, shown[-3000:]
    assert "ingesting demo documents" in shown and "| full " in shown and "why:" in shown
    assert f"kg serve --data-dir {tmp_path / 'demo'} for the web page" in shown  # the next step, with its data dir


def test_a_full_bar_says_what_comes_next_once(capsys):
    """`kg migrate` and `kg check --repair` commit (and check) for minutes after their bar is full at 1M chunks:
    the bar says so when it fills, once, and says nothing when quiet."""
    from kg.cli.base import Progress

    with Progress(3, "copying", False, then="committing the copy…") as bar:
        bar(2)
        assert "committing" not in capsys.readouterr().err
        bar(1)
        bar(1)
    err = capsys.readouterr().err
    assert err.count("committing the copy…") == 1 and err.endswith("committing the copy…\n")  # not a terminal: a line
    with Progress(3, "copying", True, then="committing the copy…") as bar:
        bar(3)
    assert capsys.readouterr().err == ""
