"""Query latency on the bundled demo knowledge base: p50/p95/mean per mode and per pipeline stage (no LLM).

    python bench/latency.py [--data-dir DIR] [--repeat N] [--out FILE]

Builds the demo knowledge base (`kg/demo/`: relations.csv, synonyms.txt, docs/) through
`KnowledgeBase`, exactly as `kg demo` does, in DIR (default: a temporary folder that is removed
afterwards). Then asks every question of `kg/demo/questions.jsonl` once per mode as a warm-up
(spaCy, jieba and whoosh caches), and N more times measured. Prints the results as JSON (and
writes them to FILE with --out). Wall time is measured around `KnowledgeBase.query`; the stage
split comes from `QueryResult.timings_ms`.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:  # run as a script from a checkout without installing
    sys.path.insert(0, str(REPO_ROOT))

from kg.errors import KgError  # noqa: E402
from kg.settings import Settings  # noqa: E402
from retrieval.eval.datasets import read_questions  # noqa: E402
from retrieval.eval.metrics import percentile  # noqa: E402

DEMO_DIR = REPO_ROOT / "kg" / "demo"
MODES = ("full", "bm25")
STAGES = ("link", "bm25", "graph", "fuse")


def summarize_ms(values: list[float]) -> dict[str, float]:
    return {
        "p50": round(percentile(values, 50), 2),
        "p95": round(percentile(values, 95), 2),
        "mean": round(statistics.fmean(values), 2),
    }


def build_demo(data_dir: Path, demo_dir: Path = DEMO_DIR) -> tuple[object, dict]:
    """The demo knowledge base in data_dir (idempotent: rebuilding an existing one changes nothing)."""
    from retrieval.pipeline import KnowledgeBase

    needed = [demo_dir / "relations.csv", demo_dir / "docs", demo_dir / "questions.jsonl"]
    missing = [str(p.relative_to(REPO_ROOT)) for p in needed if not p.exists()]
    if missing:
        raise SystemExit(
            f"error: the demo knowledge base is incomplete: missing {', '.join(missing)}"
        )
    started = time.perf_counter()
    kb = KnowledgeBase(Settings(data_dir=data_dir), create=True)
    kb.import_file(demo_dir / "relations.csv")
    if (demo_dir / "synonyms.txt").exists():
        kb.import_file(demo_dir / "synonyms.txt")
    report = kb.ingest_paths([demo_dir / "docs"])
    stats = kb.stats()
    build = {
        "seconds": round(time.perf_counter() - started, 2),
        "documents": stats["documents"],
        "chunks": stats["chunks"],
        "entities": stats["entities"],
        "edges": stats["edges"],
        "ingest": report.summary(),
    }
    return kb, build


def measure(kb, questions: list[str], mode: str, repeat: int) -> dict:
    for question in questions:  # warm-up pass, not measured
        kb.query(question, mode=mode)
    wall: list[float] = []
    stages: dict[str, list[float]] = {stage: [] for stage in STAGES}
    for _ in range(repeat):
        for question in questions:
            started = time.perf_counter()
            result = kb.query(question, mode=mode)
            wall.append((time.perf_counter() - started) * 1e3)
            for stage in STAGES:
                stages[stage].append(float(result.timings_ms.get(stage, 0.0)))
    return {
        "queries": len(wall),
        "wall_ms": summarize_ms(wall),
        "stages_ms": {stage: summarize_ms(values) for stage, values in stages.items()},
    }


def fresh_process(data_dir: Path, questions: list[str], runs: int = 7) -> dict:
    """`kg query` in a new Python process per question (what a person at a shell waits for): wall
    time from spawn to exit, and each process's peak RSS. The knowledge base is already built and
    closed; every process opens it, loads what the query path needs, answers and exits.

    Peak RSS is the child's own `VmHWM` (Linux /proc), read until it exits: the rusage `ru_maxrss`
    of a child forked from this (large) benchmark process counts the parent's pages it started with.

    As on an installed tool, Python's bytecode is written (a `PYTHONDONTWRITEBYTECODE` of the shell
    that runs the benchmark is not passed on: it would make every process compile kgrag's modules
    again, ~0.13 s) and one process runs first, untimed, to write it and the jieba cache.
    """
    import os
    import subprocess

    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    command = [sys.executable, "-m", "kg.cli", "query", "--data-dir", str(data_dir)]
    subprocess.run([*command, questions[0]], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=REPO_ROOT,
                   env=env, check=False)
    walls, rss = [], []
    for question in questions[:runs]:
        started = time.perf_counter()
        proc = subprocess.Popen([*command, question], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=REPO_ROOT,
                                env=env)
        peak = 0
        status = Path(f"/proc/{proc.pid}/status")
        while proc.poll() is None:
            try:
                for line in status.read_text().splitlines():
                    if line.startswith("VmHWM:"):
                        peak = max(peak, int(line.split()[1]))
            except (OSError, ValueError):
                pass
            time.sleep(0.01)
        walls.append(time.perf_counter() - started)
        error = proc.stderr.read().decode()
        proc.stderr.close()
        if proc.returncode != 0:
            raise RuntimeError(f"kg query exited {proc.returncode}: {error[-500:]}")
        rss.append(peak / 1024)
    return {"runs": len(walls), "wall_s": {"p50": round(statistics.median(walls), 2), "max": round(max(walls), 2)},
            "peak_rss_mb": round(max(rss), 1) if any(rss) else None}


def run(data_dir: Path, repeat: int) -> dict:
    questions = [q.question for q in read_questions(DEMO_DIR / "questions.jsonl")]
    kb, build = build_demo(data_dir)
    try:
        results = {mode: measure(kb, questions, mode, repeat) for mode in MODES}
    finally:
        kb.close()
    return {
        "benchmark": "kg/demo query latency",
        "questions": len(questions),
        "repeat": repeat,
        "build": build,
        "modes": results,
        "python": platform.python_version(),
        "platform": platform.platform(terse=True),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--data-dir",
        type=Path,
        default=None,
        help="where to build the demo knowledge base (default: a temporary folder)",
    )
    parser.add_argument(
        "--repeat", type=int, default=5, help="measured passes over the questions (default 5)"
    )
    parser.add_argument(
        "--out", type=Path, default=None, help="also write the JSON results to this file"
    )
    args = parser.parse_args(argv)
    if args.repeat < 1:
        parser.error("--repeat must be at least 1")
    try:
        if args.data_dir is not None:
            results = run(args.data_dir, args.repeat)
        else:
            with tempfile.TemporaryDirectory(prefix="kgrag-latency-") as tmp:
                results = run(Path(tmp) / "kb", args.repeat)
    except KgError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exc.exit_code
    text = json.dumps(results, ensure_ascii=False, indent=2)
    print(text)
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
