"""Passage-level metrics against hand-computed values, and the baselines script end to end."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from retrieval.eval.metrics import (
    QuestionResult,
    all_recall_at_k,
    format_table,
    half,
    hit_at_k,
    percentile,
    recall_at_k,
    reciprocal_rank,
    summarize,
)

REPO_ROOT = Path(__file__).resolve().parents[1]
BASELINES = REPO_ROOT / "bench" / "baselines.py"


# ranked [a, b, c], gold {b, d}: b is 2nd, d never ranked.
@pytest.mark.parametrize(
    ("k", "recall", "all_recall", "hit"),
    [(1, 0.0, 0.0, 0.0), (2, 0.5, 0.0, 1.0), (3, 0.5, 0.0, 1.0), (10, 0.5, 0.0, 1.0)],
)
def test_one_of_two_gold_at_rank_two(k, recall, all_recall, hit):
    ranked, gold = ["a", "b", "c"], {"b", "d"}
    assert recall_at_k(ranked, gold, k) == recall
    assert all_recall_at_k(ranked, gold, k) == all_recall
    assert hit_at_k(ranked, gold, k) == hit
    assert reciprocal_rank(ranked, gold) == 0.5


# ranked [d, x, b], gold {b, d}: both found, at ranks 1 and 3.
@pytest.mark.parametrize(
    ("k", "recall", "all_recall", "hit"),
    [(1, 0.5, 0.0, 1.0), (2, 0.5, 0.0, 1.0), (3, 1.0, 1.0, 1.0), (5, 1.0, 1.0, 1.0)],
)
def test_both_gold_at_ranks_one_and_three(k, recall, all_recall, hit):
    ranked, gold = ("d", "x", "b"), ("b", "d")
    assert recall_at_k(ranked, gold, k) == recall
    assert all_recall_at_k(ranked, gold, k) == all_recall
    assert hit_at_k(ranked, gold, k) == hit
    assert reciprocal_rank(ranked, gold) == 1.0


def test_nothing_ranked_scores_zero():
    assert recall_at_k([], {"z"}, 5) == 0.0
    assert all_recall_at_k([], {"z"}, 5) == 0.0
    assert hit_at_k([], {"z"}, 5) == 0.0
    assert reciprocal_rank([], {"z"}) == 0.0


def test_three_gold_recall_is_a_fraction():
    assert recall_at_k(["g1", "n", "g3", "g2"], ["g1", "g2", "g3"], 3) == pytest.approx(2 / 3)


def test_empty_gold_and_bad_k_are_refused():
    with pytest.raises(ValueError, match="gold is empty"):
        recall_at_k(["a"], set(), 2)
    with pytest.raises(ValueError, match="k must be at least 1, got 0"):
        hit_at_k(["a"], {"a"}, 0)


@pytest.mark.parametrize(
    ("values", "p", "expected"),
    [
        ([1, 2, 3, 4], 50, 2.5),
        ([1, 2, 3, 4], 95, 3.85),  # position 3 * 0.95 = 2.85 -> 3 + 0.85 * (4 - 3)
        ([4, 1, 3, 2], 0, 1),
        ([4, 1, 3, 2], 100, 4),
        ([7.0], 95, 7.0),
        ([10, 20, 30], 95, 29.0),
    ],
)
def test_percentile_interpolates_linearly(values, p, expected):
    assert percentile(values, p) == pytest.approx(expected)


def test_percentile_agrees_with_numpy():
    np = pytest.importorskip("numpy")
    values = [0.3, 12.0, 1.5, 1.5, 7.25, 100.0, 2.0]
    for p in (5, 25, 50, 90, 95, 99):
        assert percentile(values, p) == pytest.approx(float(np.percentile(values, p)))


def test_percentile_of_nothing_is_an_error():
    with pytest.raises(ValueError, match="percentile of no values"):
        percentile([], 50)


def _three_results() -> list[QuestionResult]:
    return [
        QuestionResult("q1", "bridge", ("b", "d"), ("a", "b", "c"), 10.0),
        QuestionResult("q2", "comparison", ("b", "d"), ("d", "x", "b"), 20.0),
        QuestionResult("q3", "bridge", ("z",), ("y",), 30.0),
    ]


def test_summarize_by_hand():
    summary = summarize(_three_results(), ks=(1, 2, 5))
    assert summary["n"] == 3
    # per question R@1 0 / .5 / 0, R@2 .5 / .5 / 0, R@5 .5 / 1 / 0; RR .5 / 1 / 0
    assert summary["metrics"] == {
        "R@1": 16.7,
        "R@2": 33.3,
        "R@5": 50.0,
        "AR@1": 0.0,
        "AR@2": 0.0,
        "AR@5": 33.3,
        "Hit@1": 33.3,
        "Hit@2": 66.7,
        "Hit@5": 66.7,
        "MRR": 50.0,
    }
    assert summary["by_type"] == {
        "bridge": {
            "n": 2,
            "metrics": {
                "R@1": 0.0,
                "R@2": 25.0,
                "R@5": 25.0,
                "AR@1": 0.0,
                "AR@2": 0.0,
                "AR@5": 0.0,
                "Hit@1": 0.0,
                "Hit@2": 50.0,
                "Hit@5": 50.0,
                "MRR": 25.0,
            },
        },
        "comparison": {
            "n": 1,
            "metrics": {
                "R@1": 50.0,
                "R@2": 50.0,
                "R@5": 100.0,
                "AR@1": 0.0,
                "AR@2": 0.0,
                "AR@5": 100.0,
                "Hit@1": 100.0,
                "Hit@2": 100.0,
                "Hit@5": 100.0,
                "MRR": 100.0,
            },
        },
    }
    assert summary["latency_ms"] == {"p50": 20.0, "p95": 29.0}


def test_summarize_default_ks():
    metrics = summarize(_three_results())["metrics"]
    assert list(metrics) == [
        *(f"R@{k}" for k in (1, 2, 5, 10)),
        *(f"AR@{k}" for k in (1, 2, 5, 10)),
        *(f"Hit@{k}" for k in (1, 2, 5, 10)),
        "MRR",
    ]


def test_summarize_nothing_is_an_error():
    with pytest.raises(ValueError, match="no question results"):
        summarize([])


def test_chunk_level_duplicates_are_refused():
    with pytest.raises(ValueError) as info:
        QuestionResult("q9", "all", ("a",), ("a", "b", "a"), 1.0)
    assert str(info.value) == (
        'question q9: ranked has "a" more than once — rank passages, not chunks: '
        "keep each passage's best chunk only"
    )


def test_question_result_needs_gold():
    with pytest.raises(ValueError, match="question q9: empty gold list"):
        QuestionResult("q9", "all", (), ("a",), 1.0)


def test_format_table_is_an_aligned_pipe_table():
    summaries = {
        "bm25s": summarize(_three_results(), ks=(2, 5)),
        "graph mode": summarize(_three_results()[:2], ks=(2, 5)),
    }
    table = format_table(summaries, ks=(2, 5))
    lines = table.splitlines()
    assert [cell.strip() for cell in lines[0].strip("|").split("|")] == [
        "system",
        "n",
        "R@2",
        "R@5",
        "AR@2",
        "AR@5",
        "Hit@2",
        "Hit@5",
        "MRR",
        "p50 ms",
        "p95 ms",
    ]
    assert set(lines[1]) <= {"|", "-", ":"}
    assert [cell.strip() for cell in lines[2].strip("|").split("|")] == [
        "bm25s",
        "3",
        "33.3",
        "50.0",
        "0.0",
        "33.3",
        "66.7",
        "66.7",
        "50.0",
        "20.00",
        "29.00",
    ]
    assert lines[3].startswith("| graph mode |")
    # Same width and same number of cells on every line: readable in a terminal, valid Markdown.
    assert len({len(line) for line in lines}) == 1
    assert len({line.count("|") for line in lines}) == 1


def test_format_table_by_type_and_missing_values():
    summaries = {"fts5": summarize(_three_results(), ks=(2,))}
    lines = format_table(summaries, ks=(2, 5), by_type=True).splitlines()
    assert [line.split("|")[1].strip() for line in lines[2:]] == [
        "fts5",
        "fts5 · bridge",
        "fts5 · comparison",
    ]
    # R@5 was not computed: shown as "-" rather than a misleading 0.
    assert lines[2].split("|")[4].strip() == "-"


# --- the baselines script, end to end on a tiny set --------------------------------------

TINY_CORPUS = [
    {"id": "p1", "title": "Aurora", "text": "The aurora glows green over Tromsø in winter."},
    {"id": "p2", "title": "Mount Etna", "text": "Etna erupts lava on Sicily."},
    {"id": "p3", "title": "长城", "text": "长城是中国古代的军事防御工程。"},
    {"id": "p4", "title": "熊猫", "text": "大熊猫生活在四川的竹林里。"},
    {"id": "p5", "title": "Glacier", "text": "A glacier is a persistent body of dense ice."},
]
# Each question's words occur only in its gold passage(s).
TINY_QUESTIONS = [
    {"id": "q1", "question": "Where does ETNA erupt lava?", "answer": "Sicily", "gold_ids": ["p2"]},
    {
        "id": "q2",
        "question": "大熊猫生活在哪里？",
        "answer": "四川",
        "type": "zh",
        "gold_ids": ["p4"],
    },
    {"id": "q3", "question": "Aurora, glacier", "gold_ids": ["p1", "p5"], "type": "two"},
]


def _write_jsonl(path: Path, rows: list[dict]) -> None:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), "utf-8")


def test_baselines_script_on_a_tiny_set(tmp_path):
    tiny = tmp_path / "tiny"
    tiny.mkdir()
    _write_jsonl(tiny / "corpus.jsonl", TINY_CORPUS)
    _write_jsonl(tiny / "questions.jsonl", TINY_QUESTIONS)
    out = tmp_path / "out" / "tiny.json"

    proc = subprocess.run(
        [sys.executable, str(BASELINES), str(tiny), "--json", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    assert "| tiny fts5 " in proc.stdout and "| tiny bm25s " in proc.stdout

    results = json.loads(out.read_text("utf-8"))
    assert [r["system"] for r in results] == ["fts5", "bm25s"]
    for result in results:
        assert set(result) == {
            "dataset",
            "system",
            "n",
            "metrics",
            "by_type",
            "latency_ms",
            "index_seconds",
        }
        assert result["dataset"] == "tiny"
        assert result["n"] == 3
        metrics = result["metrics"]
        # Every question finds a gold passage first; q3's two gold passages fill the top 2.
        assert metrics["Hit@1"] == 100.0
        assert metrics["MRR"] == 100.0
        assert metrics["R@1"] == pytest.approx(100 * (1 + 1 + 0.5) / 3, abs=0.05)
        assert metrics["R@2"] == 100.0
        assert metrics["AR@2"] == 100.0
        assert set(result["by_type"]) == {"all", "zh", "two"}
        assert result["by_type"]["zh"]["metrics"]["Hit@1"] == 100.0
        assert 0 <= result["latency_ms"]["p50"] <= result["latency_ms"]["p95"]
        assert result["index_seconds"] >= 0


def test_baselines_script_reports_a_missing_folder(tmp_path):
    proc = subprocess.run(
        [sys.executable, str(BASELINES), str(tmp_path / "nope"), "--quiet"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 2
    assert proc.stderr.startswith("error: benchmark folder not found:")


def test_half_is_the_parity_of_the_ids_number_else_of_the_position():
    assert [half(i, 99) for i in ("opsdev-q-ent-01", "opsdev-q-ent-02", "single_text-0", "multi-hop_reasoning-7")] == \
        ["odd", "even", "even", "odd"]
    # a hex id (2wiki_dev) has no number after - or _: its 1-based position in the set decides
    assert [half("abaa3fca08e611ebbda5ac1f6bf848b6", n) for n in (1, 2)] == ["odd", "even"]
    assert half("q7", 2) == "even"  # no separator before the digits: the position again
