"""Traditional and simplified Chinese meeting: `fold_traditional` (retrieval.index.analysis) measured.

The Chinese sets five ways: as they are; with their passages (titles and text) in traditional characters while the
questions, relation table and aliases stay simplified; and with the questions in traditional characters over the
passages as they are; each converted by OpenCC phrase by phrase, with s2tw (the characters only) and with s2twp
(Taiwan's words too: 記憶體 for 内存, 伺服器 for 服务器, as a colleague in Taiwan would write). Each in a fresh knowledge
base, kgrag `--mode bm25` and full, with the folding (characters and Taiwan words) and without it (its tables emptied
in this process). R@5 and Hit@5, all questions and odd / even ids (`retrieval.eval.metrics.half`).

    python bench/traditional.py --bench-dir ../shared/bench [--sets ops_dev_zh,rgb_zh_dev] [--out FILE]

Writes bench/RESULTS-traditional.md (or --out).
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import replace
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:  # run as a script from a checkout without installing
    sys.path.insert(0, str(REPO_ROOT))

SETS = ("ops_dev_zh", "domainrag_zh_dev", "rgb_zh_dev")
KS = (5, 10)
VARIANTS = ("as they are", "passages s2tw", "questions s2tw", "passages s2twp", "questions s2twp")


def variant(dataset, name: str):
    from opencc import OpenCC

    if name == "as they are":
        return dataset
    which, config = name.split()
    convert = OpenCC(config).convert
    if which == "passages":
        return replace(dataset, passages=[replace(p, title=convert(p.title), text=convert(p.text)) for p in dataset.passages])
    return replace(dataset, questions=[replace(q, question=convert(q.question)) for q in dataset.questions])


def measure(dataset, modes) -> dict:
    """Mode -> {"all" / "odd" / "even": metrics} over a fresh knowledge base of `dataset`."""
    from bench.tune_vectors import filled
    from bench.tune_vectors import measure as by_half

    with filled(dataset, "kgrag-traditional-") as (kb, _, passages_of):
        return {mode: {h: m["metrics"] for h, m in by_half(kb, dataset.questions, mode, passages_of).items()}
                for mode in modes}


_ORIGINAL: dict = {}  # the tables' loaders as installed


def folding(on: bool) -> None:
    """The folding on (its tables as installed) or off (empty tables) for the knowledge bases built next."""
    from retrieval.index import analysis

    for name, original in _ORIGINAL.items():
        original.cache_clear()
        setattr(analysis, name, original if on else (lambda: ({}, None)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bench-dir", type=Path, required=True)
    parser.add_argument("--sets", default=",".join(SETS))
    parser.add_argument("--out", type=Path, default=REPO_ROOT / "bench" / "RESULTS-traditional.md")
    args = parser.parse_args()
    from retrieval.eval.datasets import load_dataset
    from retrieval.index import analysis

    _ORIGINAL.update(_traditional=analysis._traditional, _regional=analysis._regional)
    started = time.time()
    rows = []
    for name in args.sets.split(","):
        dataset = load_dataset(args.bench_dir / name, None, drop_empty_gold=True)
        for which in VARIANTS:
            data = variant(dataset, which)
            for on in ((True,) if which == "as they are" else (False, True)):  # as they are, without: bench/RESULTS.md
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
        "OpenCC phrase by phrase, or their questions: s2tw (characters only) or s2twp (Taiwan's words too); the relation",
        "tables and aliases as they are (simplified). `fold` = traditional characters read as simplified wherever text is",
        "matched, and Taiwan's words with the mainland's beside them (retrieval.index.analysis `fold_traditional`,",
        "`_regional_words`); `no fold` = the same code with both tables emptied. R@5 and Hit@5 in %, all / odd / even ids.",
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
