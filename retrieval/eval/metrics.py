"""Ranked passage ids + gold ids per question in -> passage-level retrieval metrics (R@k, AR@k, Hit@k, MRR, latency percentiles) and a table out.

Definitions follow the shared benchmark README; a passage's rank is the rank of its best
chunk, so `ranked` must hold passage (document) ids, deduplicated, best first:

    R@k    mean over questions of |gold in top k| / |gold|   (HippoRAG's "Recall@k")
    AR@k   share of questions with all gold passages in the top k
    Hit@k  share of questions with at least one gold passage in the top k
    MRR    mean of 1 / rank of the first gold passage (0 when none is ranked)

The per-question functions return fractions in [0, 1]; `summarize` reports percentages
(0-100, one decimal, MRR too) so every table reads the same way as the published anchors.
"""

from __future__ import annotations

import math
import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass

__all__ = [
    "QuestionResult",
    "all_recall_at_k",
    "format_table",
    "half",
    "hit_at_k",
    "percentile",
    "recall_at_k",
    "reciprocal_rank",
    "summarize",
]

DEFAULT_KS = (1, 2, 5, 10)


def recall_at_k(ranked: Sequence[str], gold: Collection[str], k: int) -> float:
    """Share of the gold passages found in the top k."""
    gold_set = _gold_set(gold)
    return len(gold_set.intersection(ranked[: _check_k(k)])) / len(gold_set)


def all_recall_at_k(ranked: Sequence[str], gold: Collection[str], k: int) -> float:
    """1.0 if every gold passage is in the top k, else 0.0."""
    return 1.0 if _gold_set(gold).issubset(ranked[: _check_k(k)]) else 0.0


def hit_at_k(ranked: Sequence[str], gold: Collection[str], k: int) -> float:
    """1.0 if at least one gold passage is in the top k, else 0.0."""
    gold_set = _gold_set(gold)
    return 1.0 if any(pid in gold_set for pid in ranked[: _check_k(k)]) else 0.0


def reciprocal_rank(ranked: Sequence[str], gold: Collection[str]) -> float:
    """1 / rank of the first gold passage in the whole ranked list; 0.0 if none is there.

    Only as deep as the list a system returns: with top-10 lists this is MRR@10.
    """
    gold_set = _gold_set(gold)
    for rank, pid in enumerate(ranked, start=1):
        if pid in gold_set:
            return 1.0 / rank
    return 0.0


def percentile(values: Iterable[float], p: float) -> float:
    """The p-th percentile (0-100) with linear interpolation between closest ranks.

    Same definition as numpy's default (`method="linear"`): position (n - 1) * p / 100 in
    the sorted values.
    """
    ordered = sorted(values)
    if not ordered:
        raise ValueError("percentile of no values")
    if not 0 <= p <= 100:
        raise ValueError(f"percentile p must be between 0 and 100, got {p}")
    position = (len(ordered) - 1) * p / 100
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


@dataclass
class QuestionResult:
    id: str
    type: str
    gold: tuple[str, ...]
    ranked: tuple[str, ...]
    latency_ms: float

    def __post_init__(self) -> None:
        if not self.gold:
            raise ValueError(f"question {self.id}: empty gold list, recall is undefined")
        seen: set[str] = set()
        for pid in self.ranked:
            if pid in seen:
                # Chunk-level hits must be folded to passages before scoring, else one long
                # passage fills the top k and the metrics mean something else.
                raise ValueError(
                    f'question {self.id}: ranked has "{pid}" more than once — rank '
                    "passages, not chunks: keep each passage's best chunk only"
                )
            seen.add(pid)


def half(question_id: str, position: int) -> str:
    """A question's half, "odd" or "even", for choosing a threshold on one and confirming it on the other: the parity
    of the number its id ends with after a - or _ (opsdev-q-ent-01 is odd), else of its 1-based position in the set."""
    digits = re.search(r"[-_](\d+)$", question_id)  # not a hex id's tail
    number = int(digits.group(1)) if digits else position
    return "odd" if number % 2 else "even"


def summarize(results: Sequence[QuestionResult], ks: Sequence[int] = DEFAULT_KS) -> dict:
    """Metrics over all questions and per `type`, as percentages, plus latency p50/p95 in ms."""
    if not results:
        raise ValueError("no question results to summarize")
    ks = tuple(_check_k(k) for k in ks)
    by_type: dict[str, list[QuestionResult]] = {}
    for result in results:
        by_type.setdefault(result.type, []).append(result)
    latencies = [r.latency_ms for r in results]
    halves: dict[str, list[QuestionResult]] = {}
    for position, result in enumerate(results, start=1):
        halves.setdefault(half(result.id, position), []).append(result)
    return {
        "n": len(results),
        "metrics": _metric_block(results, ks),
        "by_type": {
            qtype: {"n": len(group), "metrics": _metric_block(group, ks)}
            for qtype, group in sorted(by_type.items())
        },
        "latency_ms": {
            "p50": round(percentile(latencies, 50), 2),
            "p95": round(percentile(latencies, 95), 2),
        },
        "halves": {side: _metric_block(halves[side], ks) for side in ("odd", "even") if side in halves},
    }


def format_table(
    summaries: Mapping[str, dict],
    ks: Sequence[int] = (2, 5),
    *,
    by_type: bool = False,
) -> str:
    """A pipe table (rows = systems or modes, columns = metrics) that reads in a terminal
    and pastes into Markdown as is. With `by_type`, each system is followed by one row per
    question type. Missing values show as "-".
    """
    columns = [f"R@{k}" for k in ks] + [f"AR@{k}" for k in ks] + [f"Hit@{k}" for k in ks] + ["MRR"]
    header = ["system", "n", *columns, "p50 ms", "p95 ms"]
    rows: list[list[str]] = []
    for name, summary in summaries.items():
        latency = summary.get("latency_ms", {})
        rows.append(
            [name, str(summary.get("n", "-"))]
            + [_cell(summary.get("metrics", {}).get(c)) for c in columns]
            + [_cell(latency.get("p50"), ".2f"), _cell(latency.get("p95"), ".2f")]
        )
        if by_type:
            for qtype, block in summary.get("by_type", {}).items():
                rows.append(
                    [f"{name} · {qtype}", str(block.get("n", "-"))]
                    + [_cell(block.get("metrics", {}).get(c)) for c in columns]
                    + ["", ""]
                )
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]

    def line(cells: list[str]) -> str:
        padded = [
            cell.ljust(widths[0]) if i == 0 else cell.rjust(widths[i])
            for i, cell in enumerate(cells)
        ]
        return "| " + " | ".join(padded) + " |"

    # ":" on the right aligns numbers right when rendered as Markdown.
    rule = (
        "|"
        + "|".join("-" * (w + 2) if i == 0 else "-" * (w + 1) + ":" for i, w in enumerate(widths))
        + "|"
    )
    return "\n".join([line(header), rule, *(line(r) for r in rows)])


def _metric_block(results: Sequence[QuestionResult], ks: tuple[int, ...]) -> dict[str, float]:
    block: dict[str, float] = {}
    for name, fn in (("R", recall_at_k), ("AR", all_recall_at_k), ("Hit", hit_at_k)):
        for k in ks:
            block[f"{name}@{k}"] = _percent(fn(r.ranked, r.gold, k) for r in results)
    block["MRR"] = _percent(reciprocal_rank(r.ranked, r.gold) for r in results)
    return block


def _percent(values: Iterable[float]) -> float:
    values = list(values)
    return round(100 * sum(values) / len(values), 1)


def _gold_set(gold: Collection[str]) -> set[str]:
    gold_set = set(gold)
    if not gold_set:
        raise ValueError("gold is empty: recall is undefined for a question without gold ids")
    return gold_set


def _check_k(k: int) -> int:
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    return k


def _cell(value: object, float_format: str = ".1f") -> str:
    if value is None:
        return "-"
    if isinstance(value, float | int) and not isinstance(value, bool):
        return format(value, float_format)
    return str(value)
