"""Retrieval evaluation: a tiny benchmark folder through `evaluate_dataset` and `kg eval`, and the --kb self-check."""

from __future__ import annotations

import json
from itertools import pairwise

import pytest
from click.testing import CliRunner

from kg.cli import cli
from retrieval.eval.evaluate import evaluate_dataset

CORPUS = [
    {"id": "p1", "title": "order-service", "text": "订单服务负责下单、取消和订单查询。"},
    {
        "id": "p2",
        "title": "mysql-core",
        "text": "The primary relational store; binlog is kept for 7 days.",
    },
    {"id": "p3", "title": "nginx", "text": "proxy_read_timeout is 60s for the report API."},
    {"id": "p4", "title": "redis-cluster", "text": "Six nodes, maxmemory-policy allkeys-lru."},
    {"id": "p5", "title": "LORA-02", "text": "LORA-02 的心跳间隔为 30 秒。"},
]
QUESTIONS = [
    {
        "id": "q1",
        "question": "nginx 的 proxy_read_timeout 是多少",
        "type": "lookup",
        "gold_ids": ["p3"],
        "answer": "60s",
    },
    {"id": "q2", "question": "LORA-02 心跳间隔", "type": "lookup", "gold_ids": ["p5"]},
    {
        "id": "q3",
        "question": "order-service 依赖哪些组件",
        "type": "multi-hop",
        "gold_ids": ["p1", "p2"],
    },
    {
        "id": "q4",
        "question": "没有答案的问题",
        "type": "lookup",
        "gold_ids": [],
    },  # dropped: empty gold
]
RELATIONS = (
    "source,relation,target\norder-service,dependsOn,mysql-core\nnginx,depend_on,redis-cluster\n"
)
KS = (1, 2, 5, 10)


def jsonl(rows) -> str:
    return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)


@pytest.fixture
def bench(tmp_path):
    root = tmp_path / "tiny_bench"
    root.mkdir()
    (root / "corpus.jsonl").write_text(jsonl(CORPUS), encoding="utf-8")
    (root / "questions.jsonl").write_text(jsonl(QUESTIONS), encoding="utf-8")
    (root / "relations.csv").write_text(RELATIONS, encoding="utf-8")
    return root


def kg(*args):
    return CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)


def assert_sane(summary: dict, n: int, types: set[str]) -> None:
    assert summary["n"] == n
    expected = {f"{m}@{k}" for m in ("R", "AR", "Hit") for k in KS} | {"MRR"}
    assert set(summary["metrics"]) == expected
    assert all(0.0 <= v <= 100.0 for v in summary["metrics"].values())
    for k_small, k_large in pairwise(KS):
        assert summary["metrics"][f"R@{k_small}"] <= summary["metrics"][f"R@{k_large}"]
        assert summary["metrics"][f"AR@{k_small}"] <= summary["metrics"][f"R@{k_small}"]
        assert summary["metrics"][f"R@{k_small}"] <= summary["metrics"][f"Hit@{k_small}"]
    assert set(summary["by_type"]) == types
    assert sum(block["n"] for block in summary["by_type"].values()) == n
    assert 0 < summary["latency_ms"]["p50"] <= summary["latency_ms"]["p95"]


def test_evaluate_dataset_returns_the_documented_keys_with_sane_numbers(bench):
    summary = evaluate_dataset(bench, ks=KS)
    assert set(summary) == {
        "dataset",
        "mode",
        "n",
        "metrics",
        "by_type",
        "latency_ms",
        "halves",
        "ingest_seconds",
        "kb",
    }
    assert (summary["dataset"], summary["mode"]) == ("tiny_bench", "full")
    assert set(summary["halves"]) <= {"odd", "even"} and summary["halves"]  # the same metrics on each half of the ids
    assert all(set(block) == set(summary["metrics"]) for block in summary["halves"].values())
    assert_sane(summary, 3, {"lookup", "multi-hop"})
    assert summary["by_type"]["lookup"]["metrics"]["Hit@1"] == 100.0
    # Both gold passages of the multi-hop question, mysql-core only through order-service -dependsOn->.
    assert summary["by_type"]["multi-hop"]["metrics"]["AR@5"] == 100.0
    assert summary["kb"] == {"documents": 5, "entities": 5, "edges": 1, "relation_rows_rejected": 1}
    assert summary["ingest_seconds"] >= 0


def test_bm25_mode_misses_the_passage_only_the_relation_reaches(bench):
    summary = evaluate_dataset(bench, ks=KS, mode="bm25")
    assert summary["mode"] == "bm25"
    assert summary["by_type"]["multi-hop"]["metrics"]["AR@10"] == 0.0
    assert summary["by_type"]["lookup"]["metrics"]["Hit@1"] == 100.0


def test_limit_keeps_the_first_questions(bench):
    summary = evaluate_dataset(bench, ks=(1,), limit=1)
    assert summary["n"] == 1 and set(summary["by_type"]) == {"lookup"}


def test_kg_eval_prints_a_table_and_writes_json(bench, tmp_path):
    out = tmp_path / "results" / "tiny.json"
    result = kg("eval", bench, "--json", out, "--quiet")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0].startswith("| system") and "R@1" in lines[0] and "MRR" in lines[0]
    assert lines[2].startswith("| tiny_bench (full) ")
    assert any(line.startswith("| tiny_bench (full) · multi-hop ") for line in lines)
    assert lines[-1] == f"results written to {out}"
    saved = json.loads(out.read_text(encoding="utf-8"))
    assert saved["dataset"] == "tiny_bench"
    assert_sane(saved, 3, {"lookup", "multi-hop"})


def test_kg_eval_json_to_stdout(bench):
    result = kg("eval", bench, "--json", "-", "--k", "1,5", "--mode", "bm25")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["mode"] == "bm25"
    assert set(data["metrics"]) == {"R@1", "R@5", "AR@1", "AR@5", "Hit@1", "Hit@5", "MRR"}


def test_a_malformed_question_line_exits_2_with_its_line_number(bench):
    lines = (bench / "questions.jsonl").read_text(encoding="utf-8").splitlines()
    lines[1] = '{"id": "q2", "question": "LORA-02 心跳间隔", "gold_ids": ["p5"]'  # missing }
    (bench / "questions.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    result = kg("eval", bench, "--quiet")
    assert result.exit_code == 2
    assert result.stderr.startswith("error: questions.jsonl:2: not valid JSON (")
    assert "each line must be one JSON object" in result.stderr


def test_bad_cutoffs_are_a_usage_error(bench):
    result = kg("eval", bench, "--k", "0,5")
    assert result.exit_code == 2
    assert "give positive cut-offs, e.g. 1,2,5,10" in result.stderr


def test_eval_kb_with_gold_given_as_source_paths(kb_dir, tmp_path):
    questions = tmp_path / "self-check.jsonl"
    questions.write_text(
        jsonl(
            [
                {
                    "id": "s1",
                    "question": "proxy_read_timeout",
                    "type": "config",
                    "gold_ids": ["docs/infra/nginx.md"],
                },
                {
                    "id": "s2",
                    "question": "订单服务依赖哪些组件？",
                    "type": "graph",
                    "gold_ids": ["docs/infra/mysql-core.md", "./docs/services/order-service.md"],
                },
            ]
        ),
        encoding="utf-8",
    )
    result = kg("eval", "--kb", kb_dir, questions, "--json", "-", "--k", "1,2,5,10")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert (data["dataset"], data["mode"], data["n"]) == ("self-check.jsonl", "full", 2)
    assert_sane(data, 2, {"config", "graph"})
    assert data["by_type"]["config"]["metrics"]["Hit@1"] == 100.0
    assert data["by_type"]["graph"]["metrics"]["AR@10"] == 100.0


def test_eval_kb_with_an_unknown_gold_path_exits_2(kb_dir, tmp_path):
    questions = tmp_path / "self-check.jsonl"
    questions.write_text(
        jsonl([{"id": "s1", "question": "nginx", "gold_ids": ["docs/nope.md"]}]), encoding="utf-8"
    )
    result = kg("eval", "--kb", kb_dir, questions, "--quiet")
    assert result.exit_code == 2
    assert result.stderr == (
        "error: self-check.jsonl: gold ids not in the knowledge base: docs/nope.md "
        "(give document ids or source paths of ingested documents)\n"
    )


def test_eval_answers_on_a_benchmark_folder_with_a_question_without_gold(bench, tmp_path):
    # q4 lists no gold passage: retrieval metrics drop it, and so must the answer run, which needs no gold ids
    # (it used to stop with `"gold_ids" is empty` before answering anything).
    out = tmp_path / "answers.json"
    result = kg("eval", "--answers", bench, "--json", out, "-q")
    assert result.exit_code == 0, result.output
    summary = json.loads(out.read_text(encoding="utf-8"))
    assert summary["measurable"] == 1  # q1, the one question with a reference answer
    assert summary["answer_in_cited_pct"] == 100.0
