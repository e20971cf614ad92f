"""Pack routing by a model (KG_ROUTE_WITH_MODEL) against the rules, on bench/packs.py's mixed four-pack knowledge base:
every STEP-th question of each pack's set (is its own pack among those chosen?) and the 20 out-of-scope questions
(called out of scope?), each routed by the rules and then by the model, with the model's seconds a question.

    kg llm serve &                                   # Qwen2.5-Coder-1.5B by default, or any endpoint:
    KG_LLM_MODEL=openai/qwen2.5-coder-1.5b KG_LLM_BASE_URL=http://127.0.0.1:PORT/v1 python bench/packs_model.py

Needs the knowledge base bench/packs.py builds (--cache, as there). Writes bench/out/packs-model.json and prints the
table bench/RESULTS-packs.md quotes. Without KG_LLM_MODEL it says so and exits 1.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import packs as P  # noqa: E402

from kg.settings import Settings  # noqa: E402
from retrieval.index.analysis import query_terms  # noqa: E402
from retrieval.packs.scope import llm_router, routing_rules  # noqa: E402
from retrieval.pipeline import KnowledgeBase  # noqa: E402


def route(kb, router, question: str):
    """(routing, seconds): the routing `kg query` would make, by the rules (router None) or by the model."""
    probe = kb.index.search(kb.synonyms.expand(query_terms(question)), kb.settings.bm25_candidates)
    started = time.perf_counter()
    routing = kb.packs.route(question, kb.linker.link(question), probe, rules=routing_rules(kb.settings), llm=router)
    return routing, time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bench-dir", type=Path, default=ROOT.parent / "shared" / "bench")
    parser.add_argument("--cache", type=Path, default=P.CACHE)
    parser.add_argument("--step", type=int, default=4, help="every STEP-th question of each set (default 4)")
    args = parser.parse_args()
    if not os.environ.get("KG_LLM_MODEL"):
        sys.exit("set KG_LLM_MODEL (and KG_LLM_BASE_URL) to the model that routes, e.g. the one `kg llm serve` prints")
    settings = Settings(data_dir=args.cache / "mixed", route_with_model=True)
    router = llm_router(settings)
    items = [(pack, q["id"], q["question"]) for pack in P.PACKS for q in P.questions_of(args.bench_dir, pack)[::args.step]]
    items += [(None, "out-of-scope", json.loads(line)["question"])
              for line in (P.CARDS / "out_of_scope.jsonl").open(encoding="utf-8")]
    rows = []
    with KnowledgeBase(settings) as kb:
        for pack, qid, question in items:
            by_rules, _ = route(kb, None, question)
            by_model, seconds = route(kb, router, question)
            rows.append({"pack": pack, "id": qid, "question": question, "seconds": round(seconds, 1), "path": by_model.path,
                         "rules": [c.id for c in by_rules.chosen], "rules_out_of_scope": bool(by_rules.out_of_scope),
                         "model": [c.id for c in by_model.chosen], "model_out_of_scope": bool(by_model.out_of_scope)})
            print(json.dumps(rows[-1], ensure_ascii=False), flush=True)
    (ROOT / "bench" / "out").mkdir(exist_ok=True)
    (ROOT / "bench" / "out" / "packs-model.json").write_text(json.dumps(rows, ensure_ascii=False, indent=0))
    print(f"\n| set | questions | own pack chosen: rules | by {os.environ['KG_LLM_MODEL']} |\n|---|--:|--:|--:|")
    for pack in [*P.PACKS, None]:
        mine = [r for r in rows if r["pack"] == pack]
        right = [sum(r[f"{side}_out_of_scope"] if pack is None else pack in r[side] for r in mine) for side in ("rules", "model")]
        print(f"| {pack or 'out of scope (called so)'} | {len(mine)} | {right[0]} | {right[1]} |")
    seconds = [r["seconds"] for r in rows[1:]]  # the first one fills the server's prompt cache
    print(f"\nthe model's seconds a question: median {statistics.median(seconds):.1f}, max {max(seconds):.1f}")


if __name__ == "__main__":
    main()
