"""Knowledge packs measured: one mixed knowledge base of four packs (the demo, ops_dev_zh, gitlab_handbook_dev,
domainrag_zh_dev), every set's questions asked against it, with and without routing, against each pack alone,
and 20 out-of-scope questions (bench/packs/out_of_scope.jsonl). Writes bench/RESULTS-packs.md and
bench/out/packs.json.

    python bench/packs.py                     # builds (once, cached in bench/out/packs-cache) and measures
    python bench/packs.py --rebuild           # builds the knowledge bases again
    python bench/packs.py --bench-dir PATH    # the shared sets live elsewhere

Each pack is added with `kg pack add`'s library call from a folder of files: the demo's and ops_dev_zh's
Markdown documents as they are, the passages of gitlab_handbook_dev and domainrag_zh_dev written out one
file each. The cards are bench/packs/<id>/PACK.md, written from the documents (not the questions). Metrics
are document-level (ops_dev_zh's gold passages are sections of its documents: the gold is their document).
"""

from __future__ import annotations

import argparse
import json
import platform
import shutil
import sys
import time
from datetime import date
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kg.settings import Settings  # noqa: E402
from retrieval.pipeline import KnowledgeBase  # noqa: E402

PACKS = ["demo", "ops_dev_zh", "gitlab_handbook_dev", "domainrag_zh_dev"]
CARDS = ROOT / "bench" / "packs"
CACHE = ROOT / "bench" / "out" / "packs-cache"
DEMO = ROOT / "kg" / "demo"
K = 5
# the set the out-of-scope rule was tuned on, one written afterwards to check it (looked at since), a second
# one written before the rule that names what a question is about (its misses listed here since), and a third
# written before the word-level signals were measured again (known share, best passages' coverage)
OUT_OF_SCOPE = {  # name -> (file, its section's title in the report)
    "questions": ("out_of_scope.jsonl", "Out-of-scope questions"),
    "held-out": ("out_of_scope_heldout.jsonl", "Out-of-scope questions, held out"),
    "held-out 2": ("out_of_scope_heldout2.jsonl", "Out-of-scope questions, second held-out set"),
    "held-out 3": ("out_of_scope_heldout3.jsonl", "Out-of-scope questions, third held-out set"),
}


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name)


def write_pack_sources(bench: Path, out: Path) -> dict[str, dict[str, str]]:
    """Each pack's folder under out/src/<id> (documents + its card); returns pack -> {relative file: gold id}."""
    src = out / "src"
    shutil.rmtree(src, ignore_errors=True)
    gold: dict[str, dict[str, str]] = {}
    # demo: its documents; gold ids are "docs/<path>"
    shutil.copytree(DEMO / "docs", src / "demo")
    gold["demo"] = {p.relative_to(src / "demo").as_posix(): "docs/" + p.relative_to(src / "demo").as_posix()
                    for p in (src / "demo").rglob("*") if p.is_file()}
    # ops_dev_zh: its Markdown documents; a gold passage id stands for the document it is a section of
    shutil.copytree(bench / "ops_dev_zh" / "docs", src / "ops_dev_zh")
    gold["ops_dev_zh"] = {p.relative_to(src / "ops_dev_zh").as_posix(): p.relative_to(src / "ops_dev_zh").as_posix()
                          for p in (src / "ops_dev_zh").rglob("*") if p.is_file()}
    for name in ("gitlab_handbook_dev", "domainrag_zh_dev"):
        folder = src / name
        folder.mkdir(parents=True)
        gold[name] = {}
        for line in (bench / name / "corpus.jsonl").open(encoding="utf-8"):
            p = json.loads(line)
            file = _safe(p["id"]) + ".md"
            (folder / file).write_text(f"# {p.get('title') or p['id']}\n\n{p['text']}\n", encoding="utf-8")
            gold[name][file] = p["id"]
    for name in PACKS:
        shutil.copyfile(CARDS / name / "PACK.md", src / name / "PACK.md")
    return gold


def build(bench: Path, out: Path, packs: list[str], name: str, rebuild: bool) -> Path:
    data_dir = out / name
    stamp = data_dir / "built.json"
    if stamp.exists() and not rebuild:
        return data_dir
    shutil.rmtree(data_dir, ignore_errors=True)
    started = time.perf_counter()
    with KnowledgeBase(Settings(data_dir=data_dir), create=True) as kb:
        if "demo" in packs:
            kb.import_file(DEMO / "relations.csv", skip_invalid=True)
            kb.import_file(DEMO / "synonyms.txt")
        if "ops_dev_zh" in packs:
            kb.import_file(bench / "ops_dev_zh" / "relations.csv", skip_invalid=True)
        for pack in packs:
            kb.packs.add(pack, str(out / "src" / pack))
        stats = kb.stats()
    stamp.write_text(json.dumps({"packs": packs, "seconds": round(time.perf_counter() - started, 1),
                                 "documents": stats["documents"], "chunks": stats["chunks"]}) + "\n")
    print(f"built {name} in {time.perf_counter() - started:.0f} s", file=sys.stderr)
    return data_dir


def questions_of(bench: Path, pack: str) -> list[dict]:
    """{id, question, type, gold: [gold ids in the pack's document space]}; answers are never read."""
    path = DEMO / "questions.jsonl" if pack == "demo" else bench / pack / "questions.jsonl"
    doc_of: dict[str, str] = {}
    if pack == "ops_dev_zh":
        for line in (bench / pack / "corpus.jsonl").open(encoding="utf-8"):
            p = json.loads(line)
            doc_of[p["id"]] = p["doc"]
    out = []
    for line in path.open(encoding="utf-8"):
        q = json.loads(line)
        gold = [doc_of.get(g, g) for g in q.get("gold_ids") or []]
        if gold:
            out.append({"id": q["id"], "question": q["question"], "type": q.get("type", "all"),
                        "gold": list(dict.fromkeys(gold))})
    return out


def gold_space(kb: KnowledgeBase, gold_files: dict[str, dict[str, str]]) -> dict[str, tuple[str, str]]:
    """doc id -> (pack, gold id)."""
    out = {}
    for doc in kb.store.documents():
        source = Path(doc.source)
        for pack, files in gold_files.items():
            base = (kb.root / "packs" / pack).resolve()
            try:
                rel = source.relative_to(base).as_posix()
            except ValueError:
                continue
            if rel in files:
                out[doc.doc_id] = (pack, files[rel])
            break
    return out


def ask(kb: KnowledgeBase, question: str, docs: dict, packs=None) -> tuple[list[str], dict]:
    result = kb.query(question, k=K * 3, packs=packs)
    ranked: list[str] = []
    for hit in result.hits:
        gold = docs.get(hit.doc_id, (None, hit.doc_id))[1]
        if gold not in ranked:
            ranked.append(gold)
    return ranked[:K], result.to_json()


def recall(ranked: list[str], gold: list[str]) -> float:
    return len(set(ranked) & set(gold)) / len(gold)


def measure(bench: Path, out: Path, rebuild: bool) -> dict:
    gold_files = _gold_files(out)
    mixed_dir = build(bench, out, PACKS, "mixed", rebuild)
    report: dict = {"sets": {}, "out_of_scope": {}}
    routed = Settings(data_dir=mixed_dir)
    plain = Settings(data_dir=mixed_dir, routing=False)
    with KnowledgeBase(routed) as kb, KnowledgeBase(plain) as kb_plain:
        docs = gold_space(kb, gold_files)
        in_scope_flagged = []
        for pack in PACKS:
            rows = []
            for q in questions_of(bench, pack):
                started = time.perf_counter()
                ranked, data = ask(kb, q["question"], docs)
                routed_ms = (time.perf_counter() - started) * 1e3
                started = time.perf_counter()
                ranked_plain, _ = ask(kb_plain, q["question"], docs)
                plain_ms = (time.perf_counter() - started) * 1e3
                used = [u["id"] for u in data["packs_used"]]
                rows.append({"id": q["id"], "type": q["type"], "packs_used": used,
                             "fallback": bool(data["routing"] and data["routing"]["fallback"]),
                             "out_of_scope": data["out_of_scope"], "R@5": recall(ranked, q["gold"]),
                             "R@5 plain": recall(ranked_plain, q["gold"]), "ms": routed_ms, "ms plain": plain_ms})
                if data["out_of_scope"]:
                    in_scope_flagged.append({"pack": pack, "id": q["id"], "question": q["question"],
                                             "why": data["out_of_scope"]})
            report["sets"][pack] = {"questions": rows}
        report["out_of_scope"] = {"in_scope_flagged": in_scope_flagged}
        for name, (file, _) in OUT_OF_SCOPE.items():
            answered = []
            for line in (CARDS / file).open(encoding="utf-8"):
                q = json.loads(line)
                result = kb.query(q["question"], k=K)
                answered.append({**q, "out_of_scope": result.out_of_scope, "hits": len(result.hits),
                                 "packs_used": [u["id"] for u in result.packs_used]})
            report["out_of_scope"][name] = answered
    for pack in PACKS:
        alone_dir = build(bench, out, [pack], f"alone-{pack}", rebuild)
        with KnowledgeBase(Settings(data_dir=alone_dir, routing=False)) as kb:
            docs = gold_space(kb, gold_files)
            scores = [recall(ask(kb, q["question"], docs)[0], q["gold"]) for q in questions_of(bench, pack)]
        report["sets"][pack]["alone R@5"] = scores
    for name in ["mixed"] + [f"alone-{p}" for p in PACKS]:
        report.setdefault("builds", {})[name] = json.loads((out / name / "built.json").read_text())
    return report


def _gold_files(out: Path) -> dict[str, dict[str, str]]:
    cached = out / "gold_files.json"
    return json.loads(cached.read_text())


MODEL_SECTION = "## Routing by a model"


def with_model_section(text: str) -> str:
    """The report, followed by the section bench/packs_model.py's run wrote by hand into the current file (a model
    served separately measures it), which a rerun of this script keeps."""
    path = ROOT / "bench" / "RESULTS-packs.md"
    old = path.read_text(encoding="utf-8") if path.exists() else ""
    start = old.find(MODEL_SECTION)
    return text if start < 0 else text.rstrip("\n") + "\n\n" + old[start:]


def render(report: dict) -> str:
    pct = lambda xs: 100 * sum(xs) / len(xs) if xs else 0.0  # noqa: E731
    lines = [
        "# Knowledge packs (`bench/packs.py`)",
        "",
        f"Measured {date.today().isoformat()} on {platform.machine()} with 2 shared cores, Python "
        f"{platform.python_version()}; no LLM (rule routing). One mixed knowledge base of four packs, each added "
        "with `kg pack add` from a folder of files and described by a card written from its documents "
        "(`bench/packs/<id>/PACK.md`); every set's questions asked against it. R@5 is document-level.",
        "",
        "| set | n | own pack in packs_used | of which by fallback | in-scope answered out of scope | R@5 mixed, routed | R@5 mixed, no routing | R@5 pack alone |",
        "|---|--:|--:|--:|--:|--:|--:|--:|",
    ]
    everything = []
    for pack, data in report["sets"].items():
        rows = data["questions"]
        everything += rows
        own = [pack in r["packs_used"] for r in rows]
        fell = [r["fallback"] for r in rows]
        lines.append(f"| {pack} | {len(rows)} | {pct(own):.1f} | {sum(fell)} | {sum(bool(r['out_of_scope']) for r in rows)} | "
                     f"{pct([r['R@5'] for r in rows]):.1f} | {pct([r['R@5 plain'] for r in rows]):.1f} | "
                     f"{pct(data['alone R@5']):.1f} |")
    own_all = [pack in r["packs_used"] for pack, data in report["sets"].items() for r in data["questions"]]
    lines.append(f"| all | {len(everything)} | {pct(own_all):.1f} | {sum(r['fallback'] for r in everything)} | "
                 f"{sum(bool(r['out_of_scope']) for r in everything)} | {pct([r['R@5'] for r in everything]):.1f} | "
                 f"{pct([r['R@5 plain'] for r in everything]):.1f} | "
                 f"{pct([x for d in report['sets'].values() for x in d['alone R@5']]):.1f} |")
    sizes = [len(r["packs_used"]) for r in everything if not r["fallback"] and not r["out_of_scope"]]
    p50 = lambda xs: sorted(xs)[len(xs) // 2]  # noqa: E731
    p95 = lambda xs: sorted(xs)[int(len(xs) * 0.95)]  # noqa: E731
    routed_ms, plain_ms = [r["ms"] for r in everything], [r["ms plain"] for r in everything]
    lines += ["", f"Packs searched per routed question (no fallback): one pack {sizes.count(1)}, two packs {sizes.count(2)}. "
              f"Latency a question in process, routed vs no routing: p50 {p50(routed_ms):.0f} / {p50(plain_ms):.0f} ms, "
              f"p95 {p95(routed_ms):.0f} / {p95(plain_ms):.0f} ms on a shared machine (routing's probe is the question's own "
              "text search over the whole knowledge base; the chosen packs are then searched again with their own statistics).",
              "", "Own pack in packs_used counts a fallback (every pack searched) as a hit; the fallback column says how often that "
              "happened. R@5 pack alone: a knowledge base of that pack only, built the same way, no routing.", ""]
    for name, (file, title) in OUT_OF_SCOPE.items():
        oos = report["out_of_scope"].get(name) or []
        caught = [q for q in oos if q["out_of_scope"]]
        near = [q for q in oos if q.get("near")]
        lines += [
            f"## {title} (`bench/packs/{file}`)",
            "",
            f"{len(caught)} of {len(oos)} answered as out of scope ({sum(1 for q in near if q['out_of_scope'])} of the "
            f"{len(near)} close to a pack's topic).",
            "",
            "| question | close to | answer |",
            "|---|---|---|",
        ]
        for q in oos:
            answer = q["out_of_scope"] or f"searched {', '.join(q['packs_used']) or 'all'} ({q['hits']} hits)"
            lines.append(f"| {q['question']} | {q.get('near') or '-'} | {answer} |")
        lines.append("")
    lines.append(f"In-scope questions (all four sets) answered as out of scope: {len(report['out_of_scope']['in_scope_flagged'])}.")
    for q in report["out_of_scope"]["in_scope_flagged"]:
        lines.append(f"\nIn scope but answered out of scope: {q['pack']} {q['id']} {q['question']} ({q['why']})")
    lines += ["", "Targets (issue 11): the own pack among packs_used for ≥ 95% of questions; R@5 on the mixed base no lower "
              "than each pack alone and higher than the mixed base without routing; ≥ 18 of 20 out-of-scope questions "
              "answered as such and no in-scope one. Inside the chosen packs the text index scores with those packs' own "
              "statistics (idf, chunk count, average field lengths: `retrieval/index/scoped.py`) and graph expansion reads "
              "their mentions only, so what still separates 'mixed, routed' from 'pack alone' is routing (a question sent "
              "to another pack) and what the knowledge base shares across packs (synonyms, the words jieba learns from "
              "every relation table). The held-out out-of-scope set was written before any change to the out-of-scope rule; "
              "a rule that refused words held by one chunk in 5,000 and counted Chinese words by their character pairs "
              "gained one question on the tuned set and lost one on the held-out set, so it was not kept. The first held-out set "
              "has since been studied question by question (why the rule misses it), so a second one was written and committed "
              "before any further change, and a third before the word-level signals were measured again on the others "
              "(the share of the question's weight the knowledge base holds, and the best passages' coverage of it: "
              "in-scope questions spread over both as widely as out-of-scope ones; 'What is the capital of Australia?' "
              "finds each of its words in the handbook, only not together): the newest set is the honest check. Nothing a question's own words say separates the near-topic "
              "questions from in-scope ones here: a name no title or heading holds, and no passage holds with the rest of the "
              "question, marks 'Microsoft' or 'Cassandra' and equally 'February', 'ALTER' or 'P1' in questions the packs answer.", ""]
    lines += ["", "## Builds (cached in bench/out/packs-cache between runs)", "", "| knowledge base | documents | chunks | seconds |",
              "|---|--:|--:|--:|"]
    for name, b in report.get("builds", {}).items():
        lines.append(f"| {name} | {b['documents']} | {b['chunks']} | {b['seconds']} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bench-dir", type=Path, default=ROOT.parent / "shared" / "bench")
    parser.add_argument("--cache", type=Path, default=CACHE)
    parser.add_argument("--rebuild", action="store_true")
    parser.add_argument("--render", action="store_true", help="only write RESULTS-packs.md again from bench/out/packs.json")
    args = parser.parse_args()
    if args.render:
        report = json.loads((ROOT / "bench" / "out" / "packs.json").read_text())
        (ROOT / "bench" / "RESULTS-packs.md").write_text(with_model_section(render(report)), encoding="utf-8")
        return
    if not all((args.bench_dir / p).is_dir() for p in PACKS[1:]):
        sys.exit(f"the shared benchmark sets are not in {args.bench_dir} (give --bench-dir)")
    args.cache.mkdir(parents=True, exist_ok=True)
    rebuild = args.rebuild or not (args.cache / "gold_files.json").exists()
    if rebuild:
        gold = write_pack_sources(args.bench_dir, args.cache)
        (args.cache / "gold_files.json").write_text(json.dumps(gold, ensure_ascii=False))
    report = measure(args.bench_dir, args.cache, rebuild)
    (ROOT / "bench" / "out").mkdir(exist_ok=True)
    (ROOT / "bench" / "out" / "packs.json").write_text(json.dumps(report, ensure_ascii=False, indent=1))
    (ROOT / "bench" / "RESULTS-packs.md").write_text(with_model_section(render(report)), encoding="utf-8")
    print(render(report))


if __name__ == "__main__":
    main()
