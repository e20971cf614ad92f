"""The backends at the size of bench/scale.py's knowledge bases: one of them copied, moved to PostgreSQL + Oxigraph by `kg migrate`, and queried both ways.

    python bench/scale.py --work W --steps 2000,10000,50000,100000     # builds W/kb (once, long)
    nice -n 10 python bench/backends_scale.py --kb W/kb --work W2 [--dsn DSN --graph-store sparql+http://…] [--servers 1,2,4]

What a team moving a grown knowledge base would run and wait for, measured end to end: `kg migrate --to
postgres+sparql` in its own process (CPU of that process from getrusage, wall, PostgreSQL's size of the schema),
then the same 120 questions as bench/scale.py (`questions()`), full mode and `--mode bm25`, in one process per
side: the embedded copy first (whoosh files, as built), then the migrated one (`KG_TEXT_BACKEND=postgres`).
Per question: CPU of this process and wall (the PostgreSQL server's own CPU is not in the client's, so wall is
the figure to compare), p50/p95 over the 120 after 3 warm-up questions; and whether the top 10 are the same
(ids and scores to 1e-9, ids free among equal scores; `retrieval.migration.same_within_ties`), and how many more
agree within `retrieval.migration.DRIFT` (a whoosh index that merged segments scores with rounded field lengths). Without --dsn a
throw-away PostgreSQL (Debian's binaries, fsync off) and `oxigraph serve` are started in a temp dir.
Prints one JSON line; --out appends a Markdown section to a results file.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
for extra in (REPO_ROOT, REPO_ROOT / "tests", REPO_ROOT / "bench"):
    if str(extra) not in sys.path:
        sys.path.insert(0, str(extra))

from retrieval.eval.metrics import percentile  # noqa: E402
from retrieval.migration import DRIFT, same_within_ties  # noqa: E402

SCHEMA = "scale"
_SETTINGS = ("KG_TEXT_BACKEND", "KG_POSTGRES_DSN", "KG_POSTGRES_SCHEMA", "KG_GRAPH_STORE")


def _ms(values: list[float]) -> dict:
    return {"p50": round(percentile(values, 50), 1), "p95": round(percentile(values, 95), 1),
            "mean": round(statistics.fmean(values), 1)}


def measure_queries(data_dir: Path, questions: list[str], modes: tuple[str, ...] = ("full", "bm25")) -> dict:
    """`modes` over `questions` on the knowledge base `data_dir` opened with the environment's settings."""
    from kg.settings import Settings
    from retrieval.pipeline import KnowledgeBase

    kb = KnowledgeBase(Settings(data_dir=data_dir))
    try:
        out: dict = {"backend": type(kb.index).__name__}
        for q in questions[:3]:
            kb.query(q)
        for mode in modes:
            cpu, wall, top = [], [], []
            for q in questions:
                c, w = time.process_time(), time.perf_counter()
                result = kb.query(q, mode=mode)
                cpu.append((time.process_time() - c) * 1000)
                wall.append((time.perf_counter() - w) * 1000)
                top.append([(h.chunk_id, h.score) for h in result.hits[:10]])
            out[mode] = {"cpu_ms": _ms(cpu), "wall_ms": _ms(wall), "top10": top}
        out["chunks"] = kb.store.db.execute("SELECT count(*) FROM chunks").fetchone()[0]
        return out
    finally:
        kb.close()


def _in_own_process(data_dir: Path, env: dict, result: Path) -> dict:
    """`measure_queries` in a fresh process per mode, so neither side, nor one mode, warms the other's caches
    (bm25 measured after full read posting lists full had already read)."""
    out: dict = {}
    for mode in ("full", "bm25"):
        code = (f"import json, sys; sys.path[:0] = {[str(REPO_ROOT), str(REPO_ROOT / 'bench')]!r}\n"
                "from backends_scale import measure_queries, questions_of\n"
                f"json.dump(measure_queries({str(data_dir)!r}, questions_of(), ({mode!r},)), open({str(result)!r}, 'w'))\n")
        done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
        if done.returncode:
            sys.exit(f"measuring {data_dir} failed:\n{done.stderr[-2000:]}")
        out.update(json.loads(result.read_text("utf-8")))
    return out


def questions_of() -> list[str]:
    from scale import questions

    return questions()


def migrate(data_dir: Path, env: dict) -> dict:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "kg.cli", "migrate", "--to", "postgres+sparql", "--data-dir", str(data_dir),
                           "--quiet", "--json"], env=env, capture_output=True, text=True)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode:
        sys.exit(f"kg migrate failed ({done.returncode}):\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    report = json.loads(done.stdout)
    return {"wall_s": round(wall, 1), "cpu_s": round(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime, 1),
            "peak_rss_mb": round(after.ru_maxrss / 1024), "report": {k: v for k, v in report.items() if k != "problems"},
            "problems": report.get("problems", [])}


def schema_mb(dsn: str) -> float:
    import psycopg

    with psycopg.connect(dsn) as conn:
        return round(float(conn.execute(
            "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE n.nspname = %s AND c.relkind IN ('r', 'm')", (SCHEMA,)).fetchone()[0]) / 1e6, 1)


def run(kb: Path, work: Path, dsn: str, graph_store: str, servers: list[int] = (), clients: int = 8,
        seconds: float = 20.0) -> dict:
    copy = work / "kb"
    if copy.exists():
        shutil.rmtree(copy)
    shutil.copytree(kb, copy)
    base = {k: v for k, v in os.environ.items() if k not in _SETTINGS}
    base.update({"PYTHONPATH": str(REPO_ROOT), "OMP_NUM_THREADS": "1", "KG_DATA_DIR": str(copy)})
    embedded = _in_own_process(copy, base, work / "embedded.json")
    moved_env = {**base, "KG_POSTGRES_DSN": dsn, "KG_POSTGRES_SCHEMA": SCHEMA, "KG_GRAPH_STORE": graph_store}
    moved = migrate(copy, moved_env)
    moved["schema_mb"] = schema_mb(dsn)
    backends = _in_own_process(copy, {**moved_env, "KG_TEXT_BACKEND": "postgres"}, work / "backends.json")
    out = {"chunks": embedded["chunks"], "migrate": moved, "disk_mb_embedded": round(
        sum(p.stat().st_size for p in (copy / "index").rglob("*") if p.is_file()) / 1e6, 1)}
    for mode in ("full", "bm25"):
        same = [same_within_ties(a, b) for a, b in zip(embedded[mode]["top10"], backends[mode]["top10"], strict=True)]
        close = [same_within_ties(a, b, DRIFT) for a, b in zip(embedded[mode]["top10"], backends[mode]["top10"], strict=True)]
        out[mode] = {"identical_top10": sum(same), "within_drift": sum(close) - sum(same), "questions": len(same),
                     "embedded": {k: embedded[mode][k] for k in ("cpu_ms", "wall_ms")},
                     "backends": {k: backends[mode][k] for k in ("cpu_ms", "wall_ms")}}
    out["backend"] = backends["backend"]
    if servers:  # throughput of `kg serve` processes on the migrated knowledge base (bench/scaleout.py's load)
        from scaleout import measure_servers

        serving = {k: v for k, v in moved_env.items() if k != "KG_DATA_DIR"}
        out["servers"] = measure_servers({**serving, "KG_TEXT_BACKEND": "postgres"}, list(servers), clients, seconds,
                                         work, questions_of())
    return out


def markdown(r: dict, when: str) -> str:
    m = r["migrate"]
    lines = [
        "", f"## At {r['chunks']:,} chunks: bench/scale.py's knowledge base moved by `kg migrate` (bench/backends_scale.py, {when})", "",
        f"`kg migrate --to postgres+sparql`: {m['wall_s']} s wall, {m['cpu_s']} s CPU of the kg process, peak {m['peak_rss_mb']} MB; "
        f"PostgreSQL schema {r['migrate']['schema_mb']} MB (the whoosh files: {r['disk_mb_embedded']} MB); "
        f"its own check: {'clean' if not m['problems'] else '; '.join(m['problems'][:3])}.", "",
        "| mode | identical top 10 (+ equal within 1%) | embedded wall p50 / p95 ms | backends wall p50 / p95 ms | embedded CPU p50 ms | backends client CPU p50 ms |",
        "|---|---|---|---|---|---|",
    ]
    for mode in ("full", "bm25"):
        x = r[mode]
        e, b = x["embedded"], x["backends"]
        lines.append(f"| {mode} | {x['identical_top10']} (+{x['within_drift']}) / {x['questions']} | {e['wall_ms']['p50']} / {e['wall_ms']['p95']} | "
                     f"{b['wall_ms']['p50']} / {b['wall_ms']['p95']} | {e['cpu_ms']['p50']} | {b['cpu_ms']['p50']} |")
    if r.get("servers"):
        lines += ["", f"`kg serve` processes on this PostgreSQL + Oxigraph (each restored its catalog with `kg init` first; "
                  f"{r['servers'][0]['clients']} client threads on the same cores, POST /query mode full k 10, the 120 questions in turn, "
                  f"{r['servers'][0]['seconds']} s each):", "",
                  "| kg serve processes | `kg init` s (slowest) | queries/s | p50 ms | p95 ms | answered | non-200 | failed connections |",
                  "|---|---|---|---|---|---|---|---|"]
        lines += [f"| {x['servers']} | {x['init_s']} | {x['queries_per_s']} | {x['p50_ms']} | {x['p95_ms']} | {x['answered']} | "
                  f"{x['non_200']} | {x['failed']} |" for x in r["servers"]]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kb", type=Path, required=True, help="a knowledge base to copy (e.g. bench/scale.py's WORK/kb)")
    parser.add_argument("--work", type=Path, required=True, help="where the copy and partial results go")
    parser.add_argument("--dsn", default=None)
    parser.add_argument("--graph-store", default=None)
    parser.add_argument("--out", type=Path, default=None, help="append the Markdown section to this file")
    parser.add_argument("--servers", default="", help="e.g. 1,2,4: then that many `kg serve` processes on the migrated "
                        "knowledge base, each count loaded in turn (bench/scaleout.py)")
    parser.add_argument("--clients", type=int, default=8, help="client threads of the --servers load")
    parser.add_argument("--seconds", type=float, default=20.0, help="seconds of load per server count")
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    with ExitStack() as stack:
        dsn, graph_store = args.dsn, args.graph_store
        if not dsn or not graph_store:
            from backends_servers import oxigraph_server, postgres_server

            pg = stack.enter_context(postgres_server()) if not dsn else None
            ox = stack.enter_context(oxigraph_server()) if not graph_store else None
            for server in (pg, ox):
                if isinstance(server, str):
                    sys.exit(f"cannot start a backend: {server}")
            dsn = dsn or pg.url
            graph_store = graph_store or "sparql+" + ox.url
        stack.enter_context(tempfile.TemporaryDirectory(prefix="kgrag-bench-"))
        counts = [int(n) for n in args.servers.split(",") if n.strip()]
        result = run(args.kb, args.work, dsn, graph_store, counts, args.clients, args.seconds)
    print(json.dumps(result, ensure_ascii=False), flush=True)
    (args.work / "result.json").write_text(json.dumps(result, ensure_ascii=False, indent=1), encoding="utf-8")
    if args.out:
        with args.out.open("a", encoding="utf-8") as f:
            f.write(markdown(result, time.strftime("%Y-%m-%d")))


if __name__ == "__main__":
    main()
