"""How big the judge and answer prompts are, counted by the model's own tokenizer: every question of the demo (its
answerable, unanswerable and relation questions) and of ops_dev_zh -> bench/RESULTS-prompts.md.

    python bench/prompt_tokens.py [--model qwen2.5-coder-1.5b] [--sets demo,ops_dev_zh] [--bench-dir DIR]

Each question is asked as `kg ask` asks it with no model (the rules judge its rounds); the passages and graph facts the
answer got are then put into the judge's and the answer's messages exactly as the model path builds them
(`retrieval.answer.prompts`), and the llama.cpp server of the packaged model turns each into its chat-template prompt
(/apply-template) and counts its tokens (/tokenize). Nothing is generated, so this costs seconds, not the hours of a
model run, and it covers every question instead of a model run's sample. The bound it checks is PROMPT_TOKENS
(kgrag's estimate is what keeps prompts within it; this shows what the model really reads).
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import tempfile
import urllib.request
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from bench.answers import DEMO_DIR, build_demo, dataset_kb  # noqa: E402
from retrieval.answer.facts import facts_block  # noqa: E402
from retrieval.answer.llm import estimate_tokens  # noqa: E402
from retrieval.answer.prompts import PROMPT_TOKENS, answer_messages, judge_messages  # noqa: E402
from retrieval.eval.answers import read_answer_questions  # noqa: E402


def _post(base: str, path: str, body: dict) -> dict:
    request = urllib.request.Request(base + path, json.dumps(body).encode(), {"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=60) as response:
        return json.loads(response.read())


def prompt_tokens(base: str, messages: list[dict]) -> int:
    """The tokens of the prompt the server builds from `messages` (its chat template included)."""
    prompt = _post(base, "/apply-template", {"messages": messages})["prompt"]
    return len(_post(base, "/tokenize", {"content": prompt})["tokens"])


def measure(kb, questions: list[str], base: str) -> list[dict]:
    rows = []
    for question in questions:
        answer = kb.ask(question)
        if not answer.citations:  # nothing found: no passage would reach a model either
            continue
        calls = {"judge": judge_messages(question, answer.citations),
                 "answer": answer_messages(question, answer.citations, answer.language,
                                           facts_block(answer.facts, answer.language))}
        for kind, messages in calls.items():
            rows.append({"question": question, "call": kind, "passages": len(answer.citations),
                         "facts": len(answer.facts), "tokens": prompt_tokens(base, messages),
                         "estimate": sum(estimate_tokens(m["content"]) for m in messages)})
    return rows


def summarize(rows: list[dict]) -> dict:
    tokens = sorted(r["tokens"] for r in rows)
    return {"calls": len(rows), "p50": int(statistics.median(tokens)), "max": tokens[-1],
            "over_bound": sum(t > PROMPT_TOKENS for t in tokens),
            "most_over_estimate": max(r["tokens"] - r["estimate"] for r in rows),
            "largest": max(rows, key=lambda r: r["tokens"])}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="qwen2.5-coder-1.5b")
    parser.add_argument("--sets", default="demo,ops_dev_zh")
    parser.add_argument("--bench-dir", type=Path, default=REPO_ROOT.parent / "shared" / "bench")
    parser.add_argument("--out", type=Path, default=REPO_ROOT / "bench" / "RESULTS-prompts.md")
    args = parser.parse_args()
    from retrieval.answer.local_server import LocalServer

    results: dict[str, dict] = {}
    with LocalServer(args.model, threads=1) as server, tempfile.TemporaryDirectory(prefix="kgrag-prompts-") as tmp:
        base = server.base_url.removesuffix("/v1")
        for name in args.sets.split(","):
            if name == "demo":
                relations = [json.loads(line)["question"] for line in
                             (REPO_ROOT / "bench" / "relation_questions.jsonl").read_text(encoding="utf-8").splitlines()
                             if line.strip() and json.loads(line).get("set") == "demo"]
                questions = [q.question for f in ("questions.jsonl", "unanswerable.jsonl")
                             for q in read_answer_questions(DEMO_DIR / f)] + relations
                with build_demo(Path(tmp) / "demo") as kb:
                    results[name] = summarize(measure(kb, questions, base))
            else:
                root = args.bench_dir / name
                if not root.is_dir():
                    print(f"skipping {name}: no {root}", file=sys.stderr)
                    continue
                with dataset_kb(root, Path(tmp) / name) as kb:
                    results[name] = summarize(measure(kb, [q.question for q in read_answer_questions(
                        root / "questions.jsonl")], base))
            print(name, json.dumps({k: v for k, v in results[name].items() if k != "largest"}), file=sys.stderr)
    lines = ["# Prompt sizes, counted by the model's tokenizer (bench/prompt_tokens.py)", "",
             f"`python bench/prompt_tokens.py` on {platform.platform()}, Python {platform.python_version()}; "
             f"the tokenizer and chat template of {args.model} (llama.cpp server). Every question's judge and answer "
             f"prompt, built from the passages and facts `kg ask` found; the bound is PROMPT_TOKENS = {PROMPT_TOKENS}.", "",
             "| set | prompts | p50 tokens | max tokens | over the bound | most above kgrag's estimate | largest: call, passages, facts |",
             "|---|--:|--:|--:|--:|--:|---|"]
    for name, r in results.items():
        big = r["largest"]
        lines.append(f"| {name} | {r['calls']} | {r['p50']:,} | {r['max']:,} | {r['over_bound']} | "
                     f"{r['most_over_estimate']} | {big['call']}, {big['passages']}, {big['facts']} |")
    args.out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"written to {args.out}")


if __name__ == "__main__":
    main()
