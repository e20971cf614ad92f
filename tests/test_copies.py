"""A passage kept in two files (a backup folder, a copied note) is one hit that names the other copy, not two hits
that push the rest out and an answer that says the same sentence twice."""

from __future__ import annotations

import json
import shutil

from click.testing import CliRunner

from kg.cli import cli

RUNBOOK = "# Redis 运维\n\nredis-cluster 内存告警时先看 maxmemory 配置，默认 8GB。\n\n## 扩容\n\n扩容前先确认槽位迁移完成。\n"


def _kb(tmp_path):
    notes = tmp_path / "notes"
    (notes / "backup").mkdir(parents=True)
    (notes / "redis.md").write_text(RUNBOOK, encoding="utf-8")
    shutil.copy(notes / "redis.md", notes / "backup" / "redis.md")
    (notes / "other.md").write_text("# 其他\n\nmaxmemory 与内存告警无关的说明。\n", encoding="utf-8")
    kb = tmp_path / "kb"
    assert CliRunner().invoke(cli, ["ingest", str(notes), "--data-dir", str(kb), "-q"]).exit_code == 0
    return notes, kb


def test_a_copied_passage_is_one_hit_that_names_the_copy(tmp_path):
    notes, kb = _kb(tmp_path)
    runner = CliRunner()
    result = runner.invoke(cli, ["query", "redis 内存告警 maxmemory", "--data-dir", str(kb), "--json", "-k", "3"])
    hits = json.loads(result.output)["hits"]
    texts = [h["text"] for h in hits]
    assert len(texts) == len(set(texts)) == 3  # the other note and the second section get the places the copy took
    first = hits[0]
    assert "maxmemory 配置" in first["text"]
    copies = [c["source"] for c in first["why"]["copies"]]
    assert len(copies) == 1 and {copies[0], first["source"]} == {str((notes / "redis.md").resolve()),
                                                                  str((notes / "backup" / "redis.md").resolve())}
    human = runner.invoke(cli, ["query", "redis 内存告警 maxmemory", "--data-dir", str(kb), "-k", "3"]).output
    assert human.count("redis-cluster 内存告警时先看 maxmemory") == 1
    assert f"same text also in: {copies[0]}" in human

    answer = runner.invoke(cli, ["ask", "redis 内存告警怎么办", "--data-dir", str(kb)]).output
    assert answer.count("先看 maxmemory 配置") == 1 and "[2]" not in answer.split("sources:")[0]


def test_an_edited_copy_is_its_own_hit_again(tmp_path):
    notes, kb = _kb(tmp_path)
    (notes / "backup" / "redis.md").write_text(RUNBOOK.replace("默认 8GB", "默认 16GB"), encoding="utf-8")
    runner = CliRunner()
    assert runner.invoke(cli, ["ingest", str(notes), "--data-dir", str(kb), "-q"]).exit_code == 0
    hits = json.loads(runner.invoke(cli, ["query", "redis 内存告警 maxmemory", "--data-dir", str(kb), "--json"]).output)["hits"]
    about = [h for h in hits if "maxmemory 配置" in h["text"]]
    assert len(about) == 2 and not any(h["why"].get("copies") for h in about)


def test_the_api_says_the_copies_too(tmp_path):
    from conftest import make_settings
    from fastapi.testclient import TestClient

    from api.app import create_app

    _notes, kb = _kb(tmp_path)
    with TestClient(create_app(make_settings(kb))) as client:
        hits = client.post("/query", json={"query": "redis 内存告警 maxmemory", "k": 3}).json()["hits"]
    assert hits[0]["why"]["copies"][0]["title"] == "Redis 运维"
