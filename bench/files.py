"""ops_dev_zh as users have it: its Markdown files ingested with `kg ingest`, scored at passage level -> bench/RESULTS-files.md.

    python bench/files.py [--bench-dir DIR] [--out bench/RESULTS-files.md]

`kg eval` (and so `bench/RESULTS.md`) rebuilds each document from the set's passages, whose
front matter, HTML comments and table padding were removed when the set was made. A user ingests
the files themselves: YAML front matter, MDX lines, tables padded to align their columns. This
script ingests `docs/` as `kg ingest` does (with `relations.csv` and `aliases.csv` imported as
`kg import` does), asks the 80 questions, and maps every hit back to the passages it holds by
text (the share of the hit's character 6-grams, spaces and table markup left out, found in a
passage of the same file), so the numbers read like the passage-level ones of `RESULTS.md`.
"""

from __future__ import annotations

import argparse
import json
import platform
import re
import sys
import tempfile
import time
from datetime import date
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from kg.settings import Settings  # noqa: E402
from retrieval.eval.datasets import read_corpus, read_questions  # noqa: E402
from retrieval.eval.metrics import QuestionResult, summarize  # noqa: E402
from retrieval.pipeline import KnowledgeBase  # noqa: E402

SET = "ops_dev_zh"
KS = (1, 2, 5, 8, 10)
GRAM = 6
HOLDS = 0.5  # a passage holds a hit when it has this share of the hit's 6-grams ...
SPANS = 0.3  # ... or, for a hit cut across two passages, this share each
_IGNORED = re.compile(r"[\s|`*#>:-]+")
RUNS = {"kgrag full": ("full", {}), "kgrag bm25": ("bm25", {}),
        "kgrag full, anchors off": ("full", {"section_anchors": False})}


def grams(text: str) -> set[str]:
    flat = _IGNORED.sub("", text.casefold())
    return {flat[i : i + GRAM] for i in range(max(1, len(flat) - GRAM + 1))}


class PassageMap:
    """A hit's text -> the ids of the passages of its file that hold it."""

    def __init__(self, passages) -> None:
        self.by_doc: dict[str, list[tuple[str, set[str]]]] = {}
        for p in passages:
            self.by_doc.setdefault(p.doc, []).append((p.id, grams(p.text)))

    def passages_of(self, doc: str, text: str) -> list[str]:
        wanted = grams(text)
        shares = [(pid, len(wanted & held) / len(wanted)) for pid, held in self.by_doc.get(doc, [])]
        holding = [pid for pid, share in shares if share >= HOLDS]
        return holding or [pid for pid, share in sorted(shares, key=lambda s: -s[1]) if share >= SPANS][:2]


def measure(root: Path, mode: str, overrides: dict) -> dict:
    passages = read_corpus(root / "corpus.jsonl")
    questions = read_questions(root / "questions.jsonl", drop_empty_gold=True)
    mapping = PassageMap(passages)
    docs_root = root / "docs"
    with tempfile.TemporaryDirectory(prefix="kgrag-files-") as tmp, \
            KnowledgeBase(Settings(data_dir=Path(tmp) / "kb", **overrides), create=True) as kb:
        started = time.perf_counter()
        for table in ("relations.csv", "aliases.csv"):
            kb.import_file(root / table, skip_invalid=True)
        kb.ingest_paths([docs_root])
        ingest_s = time.perf_counter() - started
        source_of = {d.doc_id: Path(d.source) for d in kb.store.documents()}
        results, unmapped, hits_seen = [], 0, 0
        for q in questions:
            started = time.perf_counter()
            hits = kb.query(q.question, k=30, mode=mode).hits
            ms = (time.perf_counter() - started) * 1e3
            texts = kb.store.chunks([h.chunk_id for h in hits])
            ranked: dict[str, None] = {}
            for h in hits:
                doc = source_of[h.doc_id].relative_to(docs_root).as_posix()
                found = mapping.passages_of(doc, texts[h.chunk_id].text if h.chunk_id in texts else h.text)
                hits_seen += 1
                unmapped += not found
                for pid in found:
                    ranked.setdefault(pid, None)
            results.append(QuestionResult(q.id, q.type, tuple(q.gold_ids), tuple(list(ranked)[: max(KS)]), ms))
    summary = summarize(results, KS)
    return {**summary, "ingest_seconds": round(ingest_s, 2), "hits": hits_seen, "unmapped": unmapped}


def render(runs: dict[str, dict]) -> str:
    lines = [
        "# ops_dev_zh as files (`bench/files.py`)",
        "",
        f"Measured {date.today().isoformat()} on {platform.machine()} with 2 cores, Python {platform.python_version()}; "
        "no LLM, no embeddings. The 197 Markdown files of `ops_dev_zh/docs` ingested as `kg ingest` does "
        "(front matter, MDX lines and padded tables as they are), its relation and alias tables imported; every hit "
        "mapped to the passages of its file that hold its text, then scored as in `RESULTS.md` (R@k, Hit@k, MRR over "
        "passages). The passage-level rows of `RESULTS.md` rebuild the files from the passages instead.",
        "",
        "| kind | n | " + " | ".join(runs) + " |",
        "|---|--:|" + "--:|" * len(runs),
    ]
    first = next(iter(runs.values()))
    kinds = [("all", first["n"])] + [(k, v["n"]) for k, v in sorted(first["by_type"].items())]
    for kind, n in kinds:
        cells = []
        for run in runs.values():
            m = run["metrics"] if kind == "all" else run["by_type"][kind]["metrics"]
            cells.append(f"{m['R@5']} / {m['Hit@8']}; {m['R@2']} / {m['MRR']}")
        lines.append(f"| {kind} | {n} | " + " | ".join(cells) + " |")
    lines += ["", "Cells: R@5 / Hit@8; R@2 / MRR.", "",
              "| run | ingest s | query p50 / p95 ms | hits mapped to no passage |", "|---|--:|--:|--:|"]
    for name, run in runs.items():
        lat = run["latency_ms"]
        lines.append(f"| {name} | {run['ingest_seconds']} | {lat['p50']} / {lat['p95']} | {run['unmapped']} of {run['hits']} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bench-dir", type=Path, default=REPO_ROOT.parent / "shared" / "bench")
    parser.add_argument("--out", type=Path, default=REPO_ROOT / "bench" / "RESULTS-files.md")
    args = parser.parse_args()
    root = args.bench_dir / SET
    if not (root / "docs").is_dir():
        sys.exit(f"no {root / 'docs'}: give --bench-dir, the folder holding the shared sets")
    # Each run teaches jieba its own labels: a process each, as run_benchmarks measures its sets.
    sys.path.insert(0, str(REPO_ROOT / "bench"))
    from run_benchmarks import in_own_process

    runs = {}
    for name, (mode, overrides) in RUNS.items():
        runs[name] = in_own_process(measure, root, mode, overrides)
        print(f"{name}: R@5 {runs[name]['metrics']['R@5']}", file=sys.stderr)
    args.out.write_text(render(runs), encoding="utf-8")
    (REPO_ROOT / "bench" / "out").mkdir(exist_ok=True)
    (REPO_ROOT / "bench" / "out" / "files.json").write_text(json.dumps(runs, ensure_ascii=False, indent=1))
    print(f"wrote {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
