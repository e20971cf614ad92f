"""Benchmark folder in -> the two baselines users copy from blog posts (SQLite FTS5 over jieba tokens, bm25s over jieba tokens), scored with retrieval.eval.metrics, out as a table and JSON.

Both baselines see exactly the same tokens (`tokenize`): jieba accurate mode over title +
text, lowercased, whitespace/punctuation tokens dropped. Neither sees the graph, the
ontology or anything from a question line except its text.

    python bench/baselines.py ../shared/bench/2wiki_dev --json bench/out/2wiki_dev.json
"""

from __future__ import annotations

import argparse
import json
import logging
import sqlite3
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Protocol

# Run as a script (`python bench/baselines.py`), only bench/ is on sys.path: add the repo root
# so the project's own packages import without installing them.
REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from kg.errors import KgError  # noqa: E402
from retrieval.eval.datasets import Dataset, load_dataset  # noqa: E402
from retrieval.eval.metrics import QuestionResult, format_table, summarize  # noqa: E402

TOP_K = 10
SYSTEMS = ("fts5", "bm25s")
TABLE_KS = (2, 5)
BM25_K1 = 1.2
BM25_B = 0.75


def tokenize(text: str) -> list[str]:
    """jieba accurate mode, lowercased; tokens with no letter or digit (spaces, punctuation) dropped.

    jieba keeps ASCII runs whole (`Mathew`, `1827`, `v3.5`) and splits Chinese into words, so
    one function serves English and Chinese. Shared by both baselines so they differ only in
    the index and scoring.
    """
    import jieba

    return [tok.lower() for tok in jieba.lcut(text) if any(ch.isalnum() for ch in tok)]


def query_terms(question: str) -> list[str]:
    """The question's tokens, each once (order kept): a repeated word must not weigh double."""
    return list(dict.fromkeys(tokenize(question)))


class Baseline(Protocol):
    name: str

    def search(self, terms: Sequence[str], k: int) -> list[int]:
        """Indexes of the best passages, best first, at most k, only passages that match."""
        ...


class Fts5Baseline:
    """SQLite FTS5 (its built-in bm25, k1 1.2 b 0.75) over space-joined jieba tokens."""

    name = "fts5"

    def __init__(self, docs_tokens: Sequence[Sequence[str]]) -> None:
        self.db = sqlite3.connect(":memory:")
        # unicode61 (the default tokenizer) splits on the spaces we put between jieba words.
        self.db.execute("CREATE VIRTUAL TABLE fts USING fts5(body)")
        self.db.executemany(
            "INSERT INTO fts(rowid, body) VALUES (?, ?)",
            ((i, " ".join(tokens)) for i, tokens in enumerate(docs_tokens)),
        )
        self.db.commit()

    def search(self, terms: Sequence[str], k: int) -> list[int]:
        if not terms:
            return []
        # Every token double-quoted: unquoted, `lora-02` or `and` is FTS5 query syntax.
        match = " OR ".join('"' + t.replace('"', '""') + '"' for t in terms)
        rows = self.db.execute(
            "SELECT rowid FROM fts WHERE fts MATCH ? ORDER BY bm25(fts) LIMIT ?", (match, k)
        )
        return [row[0] for row in rows]  # bm25() is lower-is-better, so ascending order


class Bm25sBaseline:
    """bm25s (Lucene variant, k1 1.2 b 0.75) over the same jieba tokens, passed pre-tokenized."""

    name = "bm25s"

    def __init__(self, docs_tokens: Sequence[Sequence[str]]) -> None:
        import bm25s

        # Pre-tokenized lists: bm25s' own tokenizer keeps a whole Chinese run as one token.
        self.retriever = bm25s.BM25(k1=BM25_K1, b=BM25_B)
        self.retriever.index([list(tokens) for tokens in docs_tokens], show_progress=False)
        self.n_docs = len(docs_tokens)

    def search(self, terms: Sequence[str], k: int) -> list[int]:
        if not terms:
            return []
        docs, scores = self.retriever.retrieve(
            [list(terms)], k=min(k, self.n_docs), show_progress=False, n_threads=0
        )
        # bm25s fills the top k with score-0 passages when fewer match; FTS5 returns only
        # matches, so drop them to compare like with like.
        return [int(d) for d, s in zip(docs[0], scores[0], strict=True) if s > 0]


BUILDERS: dict[str, Callable[[Sequence[Sequence[str]]], Baseline]] = {
    "fts5": Fts5Baseline,
    "bm25s": Bm25sBaseline,
}


def run_baseline(
    dataset: Dataset, system: str, docs_tokens: list[list[str]], tokenize_seconds: float
) -> dict:
    """Index, ask every question, score; `index_seconds` includes tokenizing the corpus."""
    start = time.perf_counter()
    baseline = BUILDERS[system](docs_tokens)
    index_seconds = tokenize_seconds + time.perf_counter() - start

    results = []
    for q in dataset.questions:
        start = time.perf_counter()
        hits = baseline.search(query_terms(q.question), TOP_K)
        latency_ms = (time.perf_counter() - start) * 1000
        ranked = tuple(dataset.passages[i].id for i in hits)
        results.append(QuestionResult(q.id, q.type, q.gold_ids, ranked, latency_ms))

    summary = summarize(results, (1, 2, 5, 8, 10))
    return {
        "dataset": dataset.name,
        "system": system,
        "n": summary["n"],
        "metrics": summary["metrics"],
        "by_type": summary["by_type"],
        "latency_ms": summary["latency_ms"],
        "index_seconds": round(index_seconds, 2),
    }


def tokenize_corpus(dataset: Dataset) -> tuple[list[list[str]], float]:
    start = time.perf_counter()
    docs_tokens = [tokenize(f"{p.title}\n{p.text}") for p in dataset.passages]
    return docs_tokens, time.perf_counter() - start


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="baselines.py",
        description=(
            "Score the two baselines people copy from blog posts on a benchmark folder: "
            "SQLite FTS5 and bm25s, both over jieba-tokenized title + text "
            f"(top {TOP_K}, BM25 k1={BM25_K1} b={BM25_B}). Prints a table (pasteable into "
            "Markdown) and optionally writes the full results as JSON."
        ),
        epilog=(
            "A benchmark folder holds corpus.jsonl and questions.jsonl (see the README of the "
            "shared benchmark sets, e.g. ../shared/bench relative to the repo root). "
            "Questions with an empty gold_ids list are skipped with a note. "
            "Example: python bench/baselines.py ../shared/bench/2wiki_dev --json "
            "bench/out/2wiki_dev.json"
        ),
    )
    parser.add_argument(
        "dataset_dirs",
        nargs="+",
        type=Path,
        metavar="DATASET_DIR",
        help="benchmark folder(s) with corpus.jsonl and questions.jsonl",
    )
    parser.add_argument(
        "--system",
        choices=[*SYSTEMS, "all"],
        default="all",
        help="which baseline to run (default: all)",
    )
    parser.add_argument(
        "--limit", type=int, metavar="N", help="use only the first N questions (all passages)"
    )
    parser.add_argument(
        "--json",
        type=Path,
        metavar="OUT",
        help='write a JSON list of results, one object per dataset and system: {"dataset", '
        '"system", "n", "metrics", "by_type", "latency_ms", "index_seconds"}; metrics are '
        "percentages, index_seconds includes tokenizing the corpus",
    )
    parser.add_argument(
        "--by-type", action="store_true", help="also print one table row per question type"
    )
    parser.add_argument("--quiet", action="store_true", help="print only the table")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    systems = SYSTEMS if args.system == "all" else (args.system,)

    def note(message: str) -> None:
        if not args.quiet:
            print(message, file=sys.stderr, flush=True)

    import jieba

    jieba.setLogLevel(logging.WARNING)  # no "Building prefix dict..." chatter
    jieba.initialize()

    all_results: list[dict] = []
    try:
        for root in args.dataset_dirs:
            dataset = load_dataset(root, limit=args.limit, drop_empty_gold=True)
            if dataset.dropped_question_ids:
                note(
                    f"{dataset.name}: skipped {len(dataset.dropped_question_ids)} question(s) "
                    f"with an empty gold_ids list: {', '.join(dataset.dropped_question_ids)}"
                )
            note(f"{dataset.name}: tokenizing {len(dataset.passages):,} passages with jieba ...")
            docs_tokens, tokenize_seconds = tokenize_corpus(dataset)
            note(f"{dataset.name}: tokenized in {tokenize_seconds:.1f} s")
            for system in systems:
                result = run_baseline(dataset, system, docs_tokens, tokenize_seconds)
                note(
                    f"{dataset.name} {system}: {result['n']} questions, "
                    f"index {result['index_seconds']:.2f} s"
                )
                all_results.append(result)
    except KgError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exc.exit_code

    summaries = {f"{r['dataset']} {r['system']}": r for r in all_results}
    print(format_table(summaries, TABLE_KS, by_type=args.by_type))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(
            json.dumps(all_results, ensure_ascii=False, indent=2) + "\n", encoding="utf-8"
        )
        note(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
