"""Traditional and simplified Chinese meeting: `fold_traditional` (retrieval.index.analysis) measured.

The Chinese sets three ways: as they are; with their passages (titles and text) in traditional characters, converted
phrase by phrase with OpenCC's s2tw (as a colleague in Taiwan would write them) while the questions, relation table and
aliases stay simplified; and with the questions in traditional characters over the passages as they are. Each in a
fresh knowledge base, kgrag `--mode bm25` and full, with the folding and without it (its table emptied in this
process). R@5 and Hit@5, all questions and odd / even ids (`bench/tune_vectors.half`).

    python bench/traditional.py --bench-dir ../shared/bench [--sets ops_dev_zh,rgb_zh_dev] [--out FILE]

Writes bench/RESULTS-traditional.md (or --out).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:  # run as a script from a checkout without installing
    sys.path.insert(0, str(REPO_ROOT))

SETS = ("ops_dev_zh", "domainrag_zh_dev", "rgb_zh_dev")
KS = (5, 10)
VARIANTS = ("as they are", "passages traditional", "questions traditional")


def variant(dataset, name: str, convert):
    if name == "passages traditional":
        return replace(dataset, passages=[replace(p, title=convert(p.title), text=convert(p.text)) for p in dataset.passages])
    if name == "questions traditional":
        return replace(dataset, questions=[replace(q, question=convert(q.question)) for q in dataset.questions])
    return dataset


def measure(dataset, modes) -> dict:
    from bench.tune_vectors import half
    from kg.settings import Settings
    from retrieval.eval.evaluate import fill_knowledge_base, rank_passages
    from retrieval.eval.metrics import QuestionResult, summarize
    from retrieval.pipeline import KnowledgeBase

    out = {}
    with tempfile.TemporaryDirectory(prefix="kgrag-traditional-") as tmp:
        with KnowledgeBase(Settings(data_dir=Path(tmp) / "kb"), create=True) as kb:
            corpus, _ = fill_knowledge_base(kb, dataset)
            sources = {d.doc_id: d.source for d in kb.store.documents()}

            def passages_of(hit):
                return corpus.passages_of(sources.get(hit.doc_id, ""), *hit.lines)

            for mode in modes:
                groups = {"all": [], "odd": [], "even": []}
                for position, q in enumerate(dataset.questions, start=1):
                    ranked = rank_passages(kb, q.question, mode, max(KS), passages_of)
                    result = QuestionResult(q.id, q.type, tuple(q.gold_ids), tuple(ranked), 0.0)
                    groups["all"].append(result)
                    groups[half(q.id, position)].append(result)
                out[mode] = {name: summarize(rows, KS)["metrics"] for name, rows in groups.items() if rows}
    return out


def folding(on: bool) -> None:
    """The folding on (its table as installed) or off (an empty table) for the knowledge bases built next."""
    from retrieval.index import analysis

    _ORIGINAL.cache_clear()
    analysis._traditional = _ORIGINAL if on else (lambda: ({}, None))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bench-dir", type=Path, required=True)
    parser.add_argument("--sets", default=",".join(SETS))
    parser.add_argument("--out", type=Path, default=REPO_ROOT / "bench" / "RESULTS-traditional.md")
    args = parser.parse_args()
    from opencc import OpenCC

    from retrieval.eval.datasets import load_dataset
    from retrieval.index import analysis

    global _ORIGINAL
    _ORIGINAL = analysis._traditional
    convert = OpenCC("s2tw").convert
    started = time.time()
    rows = []
    for name in args.sets.split(","):
        dataset = load_dataset(args.bench_dir / name, None, drop_empty_gold=True)
        for which in VARIANTS:
            data = variant(dataset, which, convert)
            for on in (False, True):
                folding(on)
                result = measure(data, ("bm25", "full"))
                for mode, halves in result.items():
                    rows.append((name, len(dataset.questions), which, mode, "on" if on else "off", halves))
                    print(name, which, mode, "fold" if on else "no fold",
                          {h: round(m["R@5"], 1) for h, m in halves.items()}, flush=True)
    lines = [
        "# Traditional and simplified Chinese (bench/traditional.py)",
        "",
        f"`python bench/traditional.py` at {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime(started))},"
        f" {round((time.time() - started) / 60, 1)} minutes. The sets' passages converted to traditional characters by",
        "OpenCC's s2tw (phrase by phrase), or their questions; the relation tables and aliases as they are (simplified).",
        "`fold` = traditional characters read as simplified wherever text is matched (retrieval.index.analysis",
        "`fold_traditional`); `no fold` = the same code with the table emptied. R@5 and Hit@5 in %, all / odd ids / even ids.",
        "",
        "| set | questions | variant | mode | folding | R@5 all | R@5 odd | R@5 even | Hit@5 all | Hit@5 odd | Hit@5 even |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name, n, which, mode, on, halves in rows:
        r = [halves[h]["R@5"] for h in ("all", "odd", "even")]
        hit = [halves[h]["Hit@5"] for h in ("all", "odd", "even")]
        lines.append(f"| {name} | {n} | {which} | {mode} | {'fold' if on == 'on' else 'no fold'} | "
                     + " | ".join(f"{v:.1f}" for v in r + hit) + " |")
    args.out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
