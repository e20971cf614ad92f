"""What a folder's .kgignore / .gitignore leave out is not ingested, through the real CLI (and real git for the work tree)."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest
from click.testing import CliRunner

from kg.cli import cli
from retrieval.ingest.ignore import Ignores
from retrieval.ingest.readers import find_files


def _write(root, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def _sources(kb) -> list[str]:
    result = CliRunner().invoke(cli, ["documents", "--data-dir", str(kb), "--json"])
    assert result.exit_code == 0, result.output
    return sorted(d["source"].rsplit("/notes/", 1)[1] for d in json.loads(result.output)["documents"])


@pytest.fixture
def notes(tmp_path):
    root = tmp_path / "notes"
    _write(root, {
        "runbook.md": "# 值班手册\n\n告警先看面板。\n",
        "drafts/idea.md": "# 草稿\n\n还没想好。\n",
        "drafts/keep.md": "# 保留的草稿\n\n这一篇要留下。\n",
        "ops/todo.tmp.md": "# 临时\n\n删掉。\n",
        "ops/redis.md": "# Redis\n\nredis-cluster 的运维。\n",
        "ops/.kgignore": "# this folder's own rule\nlegacy/\n",
        "ops/legacy/old.md": "# 旧文档\n\n过时了。\n",
        "node_modules/pkg/README.md": "# some package\n\nnot a note\n",
        ".kgignore": "drafts/\n!drafts/keep.md\n*.tmp.md\n",
    })
    return root


def test_kgignore_rules_leave_files_out_and_the_summary_counts_them(notes, tmp_path):
    kb = tmp_path / "kb"
    result = CliRunner().invoke(cli, ["ingest", str(notes), "--data-dir", str(kb)])
    assert result.exit_code == 0, result.output
    # drafts/ is ignored as a folder, so its !keep.md cannot take a file back (as in git); node_modules always.
    assert _sources(kb) == ["ops/redis.md", "runbook.md"]
    assert "2 new" in result.output and "4 file(s)/folder(s) ignored (.kgignore, .gitignore, node_modules)" in result.output
    # --json says it too; --no-ignore reads everything (hidden files still not).
    result = CliRunner().invoke(cli, ["ingest", str(notes), "--data-dir", str(kb), "--json", "--no-ignore"])
    assert json.loads(result.output)["ignored"] == 0
    assert _sources(kb) == ["drafts/idea.md", "drafts/keep.md", "node_modules/pkg/README.md", "ops/legacy/old.md",
                            "ops/redis.md", "ops/todo.tmp.md", "runbook.md"]


def test_a_file_ignored_after_it_was_ingested_is_named_and_removed_by_sync(notes, tmp_path):
    kb = tmp_path / "kb"
    runner = CliRunner()
    assert runner.invoke(cli, ["ingest", str(notes), "--data-dir", str(kb)]).exit_code == 0
    (notes / ".kgignore").write_text("drafts/\n!drafts/keep.md\n*.tmp.md\nops/redis.md\n", encoding="utf-8")
    result = runner.invoke(cli, ["ingest", str(notes), "--data-dir", str(kb)])
    assert "1 file ingested from here is now ignored (.kgignore / .gitignore), and its text still answers" in result.output
    assert "ops/redis.md" in result.output and "kg ingest --sync" in result.output
    result = runner.invoke(cli, ["ingest", str(notes), "--sync", "--data-dir", str(kb), "--json"])
    assert [d.rsplit("/notes/", 1)[1] for d in json.loads(result.output)["deleted"]] == ["ops/redis.md"]
    assert _sources(kb) == ["runbook.md"]
    result = runner.invoke(cli, ["query", "redis-cluster 运维", "--data-dir", str(kb), "--json"])
    assert all("redis.md" not in h["source"] for h in json.loads(result.output)["hits"])
    # A file named on the command line is read whatever the rules say.
    assert runner.invoke(cli, ["ingest", str(notes / "ops" / "redis.md"), "--data-dir", str(kb)]).exit_code == 0
    assert _sources(kb) == ["ops/redis.md", "runbook.md"]


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_gitignore_counts_inside_a_git_work_tree_only(tmp_path):
    repo = tmp_path / "repo"
    _write(repo, {".gitignore": "site/\n*.log.md\n", "docs/index.md": "# 首页\n\n文档首页。\n",
                  "docs/.gitignore": "_build/\n", "docs/_build/index.html": "<h1>首页</h1><p>生成的</p>",
                  "site/index.html": "<h1>首页</h1><p>生成的站点</p>", "debug.log.md": "# log\n\nnoise\n"})
    kb = tmp_path / "kb"
    # Not a work tree yet: .gitignore files mean nothing (git would not read them either).
    assert len(find_files([repo]).files) == 4
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    found = find_files([repo])
    assert [f.relative_to(repo.resolve()).as_posix() for f in found.files] == ["docs/index.md"] and found.ignored == 3
    # Ingesting a folder inside the work tree: the .gitignore above it still counts (docs/_build/ from docs/,
    # and the top one's patterns are matched from the top).
    result = CliRunner().invoke(cli, ["ingest", str(repo / "docs"), "--data-dir", str(kb), "--json"])
    assert json.loads(result.output)["added"] == 1 and json.loads(result.output)["ignored"] == 1


def test_rules_read_as_git_reads_them(tmp_path):
    root = tmp_path / "n"
    _write(root, {".kgignore": "/top.md\nbuild\n# comment\n\\#hash.md\n", "top.md": "x", "sub/top.md": "x",
                  "a/build/x.md": "x", "#hash.md": "x", "ok.md": "x"})
    rules = Ignores(root.resolve())
    r = root.resolve()
    assert rules.ignored(r / "top.md") and not rules.ignored(r / "sub" / "top.md")  # anchored to its folder
    assert rules.ignored_file(r / "a" / "build" / "x.md")  # a folder named build anywhere, and what is in it
    assert rules.ignored(r / "#hash.md") and not rules.ignored(r / "ok.md")
    assert not Ignores(r, enabled=False).ignored_file(r / "top.md")
    assert [f.name for f in find_files([root]).files] == ["ok.md", "top.md"]


def test_a_pipe_in_place_of_a_rules_file_is_not_waited_on(tmp_path):
    import os

    root = tmp_path / "n"
    _write(root, {"a.md": "x", "b.md": "x"})
    os.mkfifo(root / ".kgignore")  # nobody writes to it: reading it would wait for ever
    assert [f.name for f in find_files([root]).files] == ["a.md", "b.md"]
