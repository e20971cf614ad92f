"""The query path's rankings and CPU per query on knowledge bases built from the shared sets: a speed change must
leave every top-10 list as it was, and this says whether it did and what it saved.

    nice -n 19 python bench/query_path.py --work DIR dump --out before.json [--sets ops_dev_zh,...] [--repeat 3]
    python bench/query_path.py --work DIR compare before.json after.json

`dump` builds each set's knowledge base in DIR/SET once (as `retrieval.eval.evaluate` does; reused by later runs,
so the code before and after a change queries the very same index), then asks every question in full and bm25 mode:
the top-10 chunk ids, scores and whys go to the JSON file, with the CPU time (`time.process_time`, the machine is shared)
of each query, the best of `--repeat` runs after one warm-up pass. `compare` prints the lists that differ (ids, a
why, or scores beyond 1e-9) and the CPU p50/p95 of both files.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

SHARED = Path(os.environ.get("KG_BENCH_SETS") or ROOT / ".." / "shared" / "bench")
SETS = "ops_dev_zh,gitlab_handbook_dev,domainrag_zh_dev"
MODES = ("full", "bm25")
DEPTH = 10


def knowledge_base(work: Path, name: str):
    from kg.settings import Settings
    from retrieval.eval.datasets import load_dataset
    from retrieval.eval.evaluate import fill_knowledge_base
    from retrieval.pipeline import KnowledgeBase

    dataset = load_dataset(SHARED / name, None, drop_empty_gold=True)
    data_dir = work / name
    built = (data_dir / "built").exists()
    kb = KnowledgeBase(Settings(data_dir=data_dir), create=True)
    if not built:
        fill_knowledge_base(kb, dataset)
        (data_dir / "built").write_text("")
    return kb, dataset.questions


def dump(work: Path, sets: list[str], repeat: int) -> dict:
    out: dict = {}
    for name in sets:
        kb, questions = knowledge_base(work, name)
        with kb:
            for mode in MODES:
                lists, cpu = {}, {}
                for q in questions:  # warm-up: caches, jieba, the graph
                    kb.query(q.question, k=DEPTH, mode=mode)
                for q in questions:
                    best = None
                    for _ in range(repeat):
                        started = time.process_time()
                        result = kb.query(q.question, k=DEPTH, mode=mode)
                        spent = (time.process_time() - started) * 1e3
                        best = spent if best is None else min(best, spent)
                    lists[q.id] = [[h.chunk_id, h.score, h.why] for h in result.hits]
                    cpu[q.id] = round(best, 3)
                out[f"{name}/{mode}"] = {"lists": lists, "cpu_ms": cpu}
                print(f"{name}/{mode}: {len(lists)} questions, CPU p50 {_pct(list(cpu.values()), 50):.2f} ms", flush=True)
    return out


def _pct(values: list[float], p: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, round(p / 100 * (len(values) - 1)))] if values else 0.0


def compare(before: dict, after: dict) -> int:
    differ = 0
    for key in sorted(before.keys() & after.keys()):
        a, b = before[key]["lists"], after[key]["lists"]
        bad = [qid for qid in a if qid not in b or [h[0] for h in a[qid]] != [h[0] for h in b[qid]]
               or any(abs(x[1] - y[1]) > 1e-9 or x[2:] != y[2:] for x, y in zip(a[qid], b[qid], strict=True))]
        differ += len(bad)
        ca, cb = list(before[key]["cpu_ms"].values()), list(after[key]["cpu_ms"].values())
        print(f"{key}: {len(a) - len(bad)}/{len(a)} top-{DEPTH} lists identical; CPU ms p50/p95/mean "
              f"{_pct(ca, 50):.2f}/{_pct(ca, 95):.2f}/{statistics.fmean(ca):.2f} -> "
              f"{_pct(cb, 50):.2f}/{_pct(cb, 95):.2f}/{statistics.fmean(cb):.2f}")
        for qid in bad[:5]:
            print(f"  differs: {qid}\n    before {a[qid][:5]}\n    after  {b.get(qid, [])[:5]}")
    return differ


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--work", type=Path, required=True, help="folder of the knowledge bases (built once)")
    sub = parser.add_subparsers(dest="command", required=True)
    d = sub.add_parser("dump")
    d.add_argument("--out", type=Path, required=True)
    d.add_argument("--sets", default=SETS)
    d.add_argument("--repeat", type=int, default=3)
    c = sub.add_parser("compare")
    c.add_argument("before", type=Path)
    c.add_argument("after", type=Path)
    args = parser.parse_args()
    if args.command == "dump":
        args.work.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(dump(args.work, args.sets.split(","), args.repeat)))
    else:
        differ = compare(json.loads(args.before.read_text()), json.loads(args.after.read_text()))
        print(f"{differ} list(s) differ")
        raise SystemExit(1 if differ else 0)


if __name__ == "__main__":
    main()
