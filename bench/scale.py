"""How the embedded default grows: a synthetic corpus from the shared sets in, the ingest/query/start-up curve at
2k, 10k, 50k and 100k chunks out (bench/RESULTS-scale.md), next to SQLite FTS5 and tantivy over the same chunks.

CPU time (resource.getrusage), not wall time: the machine this runs on is shared. Each checkpoint is saved in
`--work` as it is reached, so a run that is cut off resumes from the last one (`--fresh` starts over).

    nice -n 10 python bench/scale.py --work DIR [--steps 2000,10000,50000,100000] [--relations 100000]
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import random
import re
import resource
import shutil
import sqlite3
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("KG_BENCH_SETS") or ROOT / ".." / "shared" / "bench")  # the shared sets
SETS = ["ops_dev_zh", "gitlab_handbook_dev", "2wiki_dev", "hotpotqa_train100", "musique_train100", "domainrag_zh_dev",
        "rgb_zh_dev"]
BATCH_DOCS = 800  # documents per ingest call (one commit each, as a user adding a folder at a time)
PROBE_DOCS = 800  # the probe: the same documents (every PROBE_STRIDE-th passage of the sets) at every checkpoint
PROBE_STRIDE = 7
RELATIONS = ["dependsOn", "partOf", "configuredBy", "mentions"]


def cpu() -> float:
    """This process's CPU and its ended children's (`kg ingest --workers`' index workers; none without them)."""
    r, c = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime + c.ru_utime + c.ru_stime


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def rss_mb(pid: int | str = "self") -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def proc_cpu(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def disk_mb(path: Path) -> float:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) / 1e6


# -- the corpus ---------------------------------------------------------------------------------------------
def passages() -> list[tuple[str, str]]:
    out = []
    for name in SETS:
        path = SHARED / name / "corpus.jsonl"
        if not path.exists():
            continue
        with path.open(encoding="utf-8") as fh:
            for line in fh:
                row = json.loads(line)
                if row.get("text"):
                    out.append((row.get("title") or row["id"], row["text"]))
    return out


def synthetic_documents(base: list[tuple[str, str]]):
    """Copy k of every passage, its sentences rotated by k (so copies are not one text), titled `title (k)`."""
    k = 0
    while True:
        for i, (title, text) in enumerate(base):
            sentences = re.split(r"(?<=[。.!?！？])\s*", text)
            r = k % max(len(sentences), 1)
            body = " ".join(sentences[r:] + sentences[:r]) if k else text
            yield f"syn:{k}:{i}", f"# {title} ({k})\n\n{body}" if k else f"# {title}\n\n{body}"
        k += 1


def questions(limit: int = 120) -> list[str]:
    out = []
    for name in ("ops_dev_zh", "gitlab_handbook_dev", "2wiki_dev", "domainrag_zh_dev"):
        path = SHARED / name / "questions.jsonl"
        if path.exists():
            with path.open(encoding="utf-8") as fh:
                out += [json.loads(line)["question"] for line in fh][: limit // 4]
    return out


# -- measurements ---------------------------------------------------------------------------------------------
def child_env(data_dir: Path, pycache: Path | None = None) -> dict:
    """The environment of a measured `kg` process. `pycache`: Python's compiled modules kept there, as an installed
    package has them (a machine that sets PYTHONDONTWRITEBYTECODE otherwise compiles kgrag's ~90 modules from
    source in every process: ~0.2-0.3 s CPU of each start-up on this machine)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "KG_DATA_DIR": str(data_dir), "OMP_NUM_THREADS": "1"}
    if pycache is not None:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = str(pycache)
    return env


def compile_modules(pycache: Path) -> None:
    """Byte-compile kgrag and what it imports into `pycache` once, before anything is timed."""
    env = child_env(Path("."), pycache)
    subprocess.run([sys.executable, "-m", "compileall", "-q", "kg", "retrieval", "api", "ontology"], cwd=ROOT, env=env,
                   capture_output=True, check=False)
    warm = "import kg.cli, retrieval.pipeline, retrieval.write_path, api.app, whoosh.writing, jieba, rdflib, numpy"
    subprocess.run([sys.executable, "-c", warm], env=env, capture_output=True, check=False)


def kg(*args: str, data_dir: Path, pycache: Path | None = None) -> dict:
    """One `kg` command in a new process: its CPU seconds, peak RSS and wall seconds."""
    script = ("import resource, sys, time, json, runpy; t = time.perf_counter(); sys.argv = ['kg'] + sys.argv[1:]\n"
              "try:\n    runpy.run_module('kg.cli', run_name='__main__')\nexcept SystemExit as e:\n    code = e.code\n"
              "r = resource.getrusage(resource.RUSAGE_SELF)\n"
              # VmHWM, not ru_maxrss: Linux carries ru_maxrss over exec from the forking parent
              "hwm = [int(x.split()[1]) for x in open('/proc/self/status') if x.startswith('VmHWM:')][0]\n"
              "print('@@' + json.dumps([r.ru_utime + r.ru_stime, hwm / 1024, time.perf_counter() - t]), file=sys.stderr)")
    env = child_env(data_dir, pycache)
    done = subprocess.run([sys.executable, "-c", script, *args], env=env, capture_output=True, text=True, check=False)
    line = [x for x in done.stderr.splitlines() if x.startswith("@@")]
    if not line or "error:" in done.stderr:
        raise RuntimeError(f"kg {' '.join(args)}: {done.stderr[-2000:]}")
    cpu_s, rss, wall = json.loads(line[-1][2:])
    return {"cpu_s": round(cpu_s, 3), "peak_rss_mb": round(rss), "wall_s": round(wall, 3)}


def serve(data_dir: Path, queries: list[str], port: int = 18731, pycache: Path | None = None) -> dict:
    env = child_env(data_dir, pycache)
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "kg.cli", "serve", "--port", str(port), "--no-access-log"], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=5) as r:
                    if r.status == 200:
                        break
            except OSError:
                if proc.poll() is not None:
                    raise RuntimeError("kg serve exited") from None
                time.sleep(0.1)
        health = {"to_health_wall_s": round(time.perf_counter() - start, 2), "to_health_cpu_s": round(proc_cpu(proc.pid), 2)}
        for q in queries:
            req = urllib.request.Request(f"http://127.0.0.1:{port}/query", data=json.dumps({"query": q}).encode(),
                                         headers={"Content-Type": "application/json"})
            urllib.request.urlopen(req, timeout=120).read()
        health["rss_after_queries_mb"] = round(rss_mb(proc.pid))
        return health
    finally:
        proc.terminate()
        proc.wait(timeout=60)


def query_cpu(fn, qs: list[str]) -> dict:
    times = []
    for q in qs:
        t = time.process_time()
        fn(q)
        times.append((time.process_time() - t) * 1000)
    times.sort()
    return {"p50_ms": round(statistics.median(times), 2), "p95_ms": round(times[int(len(times) * 0.95) - 1], 2)}


def edit_folder(folder: Path, data_dir: Path, round_: int, pycache: Path | None = None, settle: float = 0) -> dict:
    """`kg ingest` of a 40-file folder: after one paragraph of one file changed, then again unchanged."""
    target = folder / "note-07.md"
    target.write_text(target.read_text(encoding="utf-8") + f"\n\nEdit {round_}: the gateway timeout is now {round_}s.\n",
                      encoding="utf-8")
    # `settle` > 2 s: the edit is ingested when its file's stamp can be trusted (filestats.RACY_NS), as a user's `kg
    # ingest` a while after saving, so the unchanged run is answered from the stamps; 0: at once, and the unchanged
    # run reads the edited file again.
    time.sleep(settle)
    edit = kg("ingest", str(folder), "-q", data_dir=data_dir, pycache=pycache)
    same = kg("ingest", str(folder), "-q", data_dir=data_dir, pycache=pycache)
    return {"edit": edit, "unchanged": same}


def make_folder(folder: Path, base: list[tuple[str, str]]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for i, (title, text) in enumerate(base[:40]):
        (folder / f"note-{i:02d}.md").write_text(f"# {title}\n\n{text}\n", encoding="utf-8")


def relation_table(path: Path, rows: int, base: list[tuple[str, str]]) -> None:
    rng = random.Random(25)
    names = list(dict.fromkeys(t for t, _ in base))
    names += [f"component-{i:05d}" for i in range(max(0, int(rows * 0.67) - len(names)))]
    with path.open("w", encoding="utf-8", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["source", "relation", "target"])
        seen: set[tuple[str, str, str]] = set()
        while len(seen) < rows:  # a duplicate row is an error for kg import
            a, b = rng.sample(names, 2)
            row = (a, rng.choice(RELATIONS), b)
            if row not in seen:
                seen.add(row)
                w.writerow(row)


# -- the run ----------------------------------------------------------------------------------------------------
def probe(kb, base: list[tuple[str, str]], step: int) -> dict:
    """The same documents ingested at every checkpoint, with segment merges held off for that one commit, then
    deleted: what adding costs as the knowledge base grows (catalog, linking, indexing, writing the new segment),
    apart from the merges (the batch rows include them) and from the corpus' mix, which moves a batch's cost per
    chunk several-fold (a short Chinese passage costs more a character than an English one). FTS5 indexes the same
    chunks in an empty database for the ratio."""
    import tempfile

    import whoosh.writing
    from scale_refs import Fts5

    import retrieval.index.whoosh_index as whoosh_index
    from retrieval.types import SourceDocument

    picked = base[::PROBE_STRIDE][:PROBE_DOCS]
    docs = [SourceDocument(f"probe:{step}:{i}", f"# {title} (probe)\n\n{text}") for i, (title, text) in enumerate(picked)]
    policy = whoosh_index.tiered_merge
    whoosh_index.tiered_merge = whoosh.writing.NO_MERGE
    try:
        t = cpu()
        report = kb.ingest_documents(docs)
        spent = cpu() - t
    finally:
        whoosh_index.tiered_merge = policy
    added = list(kb.store.chunks(_new_chunk_ids(kb, report.doc_ids)).values())
    with tempfile.TemporaryDirectory() as tmp:
        fts5 = Fts5(Path(tmp) / "probe.db")
        t = cpu()
        fts5.add(added)
        fts5_spent = cpu() - t
        fts5.db.close()
    kb.delete_documents(report.doc_ids)
    chunks = max(1, report.chunks_indexed)
    return {"chunks": report.chunks_indexed, "characters": sum(len(d.text) for d in docs), "cpu_s": round(spent, 3),
            "ms_per_chunk": round(spent * 1000 / chunks, 2), "fts5_ms_per_chunk": round(fts5_spent * 1000 / chunks, 3)}


def checkpoint(kb, work: Path, step: int, state: dict, refs: dict, qs: list[str], batch_rows: list,
               base: list[tuple[str, str]]) -> dict:
    data_dir = work / "kb"
    row = {"chunks": state["chunks"], "documents": state["documents"], "ingest_peak_rss_mb": round(peak_rss_mb()),
           "segments": kb.index.segment_count()}
    since = [b for b in batch_rows if b["after"] > state.get("last_checkpoint", 0)]
    row["ingest_ms_per_chunk"] = round(sum(b["cpu_s"] for b in since) * 1000 / max(1, sum(b["chunks"] for b in since)), 2)
    row["last_batch_ms_per_chunk"] = round(since[-1]["cpu_s"] * 1000 / max(1, since[-1]["chunks"]), 2)
    for name in refs:
        ref_since = [b for b in state["ref_batches"][name] if b["after"] > state.get("last_checkpoint", 0)]
        row[f"{name}_ms_per_chunk"] = round(sum(b["cpu_s"] for b in ref_since) * 1000 / max(1, sum(b["chunks"] for b in ref_since)), 3)
    row["disk_mb"] = round(disk_mb(data_dir), 1)
    row["kg_bytes_per_chunk"] = round(row["disk_mb"] * 1e6 / row["chunks"])
    if (work / "fts5.db").exists():
        row["fts5_disk_mb"] = round((work / "fts5.db").stat().st_size / 1e6, 1)
    if (work / "tantivy").exists():
        row["tantivy_disk_mb"] = round(disk_mb(work / "tantivy"), 1)
    for q in qs[:3]:  # warm: the first query loads what queries need
        kb.query(q)
    row["query_full"] = query_cpu(lambda q: kb.query(q), qs)
    row["query_bm25"] = query_cpu(lambda q: kb.query(q, mode="bm25"), qs)
    for name, ref in refs.items():
        row[f"query_{name}"] = query_cpu(ref.query, qs)
    row["kg_query_cold"] = kg("query", qs[0], data_dir=data_dir)
    row["edit"] = edit_folder(work / "folder", data_dir, step)
    row["serve"] = serve(data_dir, qs[:20])
    row["in_process_rss_mb"] = round(rss_mb())
    row["probe"] = probe(kb, base, step)  # last: its segment (deleted documents until a merge drops them) adds to nothing above
    return row


def run(work: Path, steps: list[int], fresh: bool, workers: int = 0, batch_docs: int = BATCH_DOCS,
        refs_too: bool = True) -> dict:
    from scale_refs import Fts5, Tantivy

    if fresh and work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True, exist_ok=True)
    results_path = work / "results.json"
    results = json.loads(results_path.read_text()) if results_path.exists() else {"checkpoints": [], "state": None}
    sys.path.insert(0, str(ROOT))
    from kg.settings import Settings
    from retrieval.pipeline import KnowledgeBase
    from retrieval.types import SourceDocument

    base = passages()
    qs = questions()
    state = results["state"] or {"documents": 0, "chunks": 0, "batches": [], "ref_batches": {"fts5": [], "tantivy": []}}
    refs = {"fts5": Fts5(work / "fts5.db")} if refs_too else {}
    try:
        if refs_too:
            refs["tantivy"] = Tantivy(work / "tantivy")
    except ImportError:
        state["ref_batches"].pop("tantivy", None)
    for name in set(state["ref_batches"]) - set(refs):
        state["ref_batches"].pop(name)
    make_folder(work / "folder", base)
    kb = KnowledgeBase(Settings(data_dir=work / "kb"), create=True)
    try:
        if not state["documents"]:
            kb.ingest_paths([work / "folder"])
        docs = synthetic_documents(base)
        for _ in range(state["documents"]):
            next(docs)
        for step in steps:
            if any(c["step"] == step for c in results["checkpoints"]):
                continue
            while state["chunks"] < step:
                batch = [SourceDocument(source, text) for source, text in (next(docs) for _ in range(batch_docs))]
                t, w = cpu(), time.perf_counter()
                report = kb.ingest_documents(batch, workers=workers)
                spent = cpu() - t
                state["documents"] += len(batch)
                state["chunks"] += report.chunks_indexed
                state["batches"].append({"after": state["chunks"], "chunks": report.chunks_indexed, "cpu_s": round(spent, 3),
                                         "wall_s": round(time.perf_counter() - w, 3), "workers": workers})
                added = list(kb.store.chunks(_new_chunk_ids(kb, report.doc_ids)).values())
                for name, ref in refs.items():
                    t = cpu()
                    ref.add(added)
                    state["ref_batches"][name].append({"after": state["chunks"], "chunks": len(added), "cpu_s": round(cpu() - t, 3)})
                print(f"{state['chunks']} chunks, {spent * 1000 / max(1, report.chunks_indexed):.1f} ms CPU a chunk, "
                      f"peak RSS {peak_rss_mb():.0f} MB", flush=True)
                results["state"] = state
                results_path.write_text(json.dumps(results, indent=1))
            row = checkpoint(kb, work, step, state, refs, qs, state["batches"], base)
            row["step"] = step
            state["last_checkpoint"] = state["chunks"]
            results["checkpoints"].append(row)
            results["state"] = state
            results_path.write_text(json.dumps(results, indent=1))
            print(json.dumps(row), flush=True)
    finally:
        kb.close()
    return results


def _new_chunk_ids(kb, doc_ids) -> list[str]:
    marks = ",".join("?" * len(doc_ids))
    return [r[0] for r in kb.store.db.execute(f"SELECT chunk_id FROM chunks WHERE doc_id IN ({marks})", list(doc_ids))]


def relations_run(work: Path, rows: int) -> dict:
    """A 2,000-chunk knowledge base with a `rows`-row relation table: the import, then a cold `kg query` and
    `kg serve` to /health, against a csv -> SQLite + networkx reference."""
    sys.path.insert(0, str(ROOT))
    from kg.settings import Settings
    from retrieval.pipeline import KnowledgeBase
    from retrieval.types import SourceDocument

    rel_dir = work / "relations"
    if rel_dir.exists():
        shutil.rmtree(rel_dir)
    rel_dir.mkdir(parents=True)
    base = passages()
    table = rel_dir / "relations.csv"
    relation_table(table, rows, base)
    kb = KnowledgeBase(Settings(data_dir=rel_dir / "kb"), create=True)
    docs = synthetic_documents(base)
    kb.ingest_documents([SourceDocument(s, t) for s, t in (next(docs) for _ in range(1500))])
    chunks = kb.store.stats()["chunks"]
    kb.close()
    out = {"rows": rows, "chunks": chunks, "import": kg("import", str(table), data_dir=rel_dir / "kb")}
    qs = questions()
    out["kg_query_cold"] = kg("query", qs[0], data_dir=rel_dir / "kb")
    out["kg_query_cold_again"] = kg("query", qs[1], data_dir=rel_dir / "kb")
    out["serve"] = serve(rel_dir / "kb", qs[:5])
    t = cpu()
    import networkx as nx

    db = sqlite3.connect(rel_dir / "ref.db")
    g = nx.MultiDiGraph()
    with db, table.open(encoding="utf-8") as fh:
        db.execute("CREATE TABLE rel (s TEXT, p TEXT, o TEXT)")
        rows_ = list(csv.reader(fh))[1:]
        db.executemany("INSERT INTO rel VALUES (?, ?, ?)", rows_)
        for s, p, o in rows_:
            g.add_edge(s, o, key=p)
    out["reference_csv_sqlite_networkx_cpu_s"] = round(cpu() - t, 2)
    return out


def remeasure(work: Path, repeats: int, bytecode: bool) -> dict:
    """The start-up rows (cold `kg query`, the edit, the unchanged folder, `kg serve`) again on the saved knowledge
    base with the code as it is now, for a fix that landed after its checkpoint was measured. On a copy of the data
    dir (the run's own is not touched; run this when the run is not running: the edit appends to its folder)."""
    results = json.loads((work / "results.json").read_text())
    copy = work / "remeasure-kb"
    if copy.exists():
        shutil.rmtree(copy)
    shutil.copytree(work / "kb", copy)
    pycache = work / "pycache" if bytecode else None
    if pycache is not None:
        compile_modules(pycache)
    qs = questions()
    rounds = []
    for i in range(repeats):
        row = {"kg_query_cold": kg("query", qs[0], data_dir=copy, pycache=pycache),
               "edit": edit_folder(work / "folder", copy, 1000 + len(results.get("remeasured", [])) * 10 + i, pycache,
                                   settle=2.5),
               "serve": serve(copy, qs[:20], pycache=pycache)}
        rounds.append(row)
        print(json.dumps(row), flush=True)
    code = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    out = {"chunks": results["state"]["chunks"], "segments": _segments(copy), "bytecode": bytecode, "code": code,
           "load_average": [round(x, 1) for x in os.getloadavg()], "rounds": rounds}
    results.setdefault("remeasured", []).append(out)
    (work / "results.json").write_text(json.dumps(results, indent=1))
    shutil.rmtree(copy)
    return out


def _segments(data_dir: Path) -> int:
    return len(list((data_dir / "index").glob("*.seg")))


def render(work: Path) -> str:
    from scale_render import render as tables

    return tables(work)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", type=Path, required=True, help="where the knowledge bases and partial results go")
    parser.add_argument("--steps", default="2000,10000,50000,100000")
    parser.add_argument("--relations", type=int, default=0, help="also measure a relation table of this many rows")
    parser.add_argument("--fresh", action="store_true")
    parser.add_argument("--workers", type=int, default=0, help="index worker processes for each batch (kg ingest --workers)")
    parser.add_argument("--batch-docs", type=int, default=BATCH_DOCS, help="documents per ingest call (one commit each)")
    parser.add_argument("--no-refs", action="store_true", help="without FTS5 and tantivy beside it (kgrag alone)")
    parser.add_argument("--render", action="store_true", help="print the tables of the saved checkpoints")
    parser.add_argument("--remeasure", type=int, default=0, metavar="N",
                        help="measure the start-up rows N times again on the saved knowledge base (a copy), with this code")
    parser.add_argument("--bytecode", action="store_true",
                        help="measured processes use compiled modules (kept in WORK/pycache), as an installed package does")
    args = parser.parse_args()
    if args.render:
        print(render(args.work))
        return
    if args.remeasure:
        print(json.dumps(remeasure(args.work, args.remeasure, args.bytecode)))
        return
    if not (SHARED / "ops_dev_zh" / "corpus.jsonl").exists():
        sys.exit("bench/scale.py needs the shared benchmark sets in ../shared/bench")
    if args.relations:
        out = relations_run(args.work, args.relations)
        (args.work / "relations.json").write_text(json.dumps(out, indent=1))
        print(json.dumps(out))
        return
    run(args.work, [int(s) for s in args.steps.split(",")], args.fresh, args.workers, args.batch_docs, not args.no_refs)


if __name__ == "__main__":
    main()
