"""Embedded whoosh vs the PostgreSQL text index on the same chunks: identical top 10, build time, query p50/p95; and query throughput with 1, 2 and 4 `kg serve` processes sharing one PostgreSQL + Oxigraph.

    python bench/backends.py [--dsn DSN] [--sets demo,2wiki_dev,...] [--out bench/RESULTS-backends.md]
    python bench/backends.py --servers 1,2,4 [--clients 8] [--seconds 20]

Each set's passages (one chunk each; the demo's documents cut by the real chunker) go into a fresh
whoosh index and a fresh PostgreSQL schema; every question is searched on both as the query path
searches (analysed words, Chinese character pairs at weight 0.5): k=10 for the comparison, and
k=200 (what a query asks the text index for) timed twice, the first pass with cold caches (whoosh's
per-term score cache; PostgreSQL's posting lists not yet fetched into the process) and the second warm.
Without --dsn a throw-away PostgreSQL is started in a temp dir (Debian's binaries). One thread, one
process: run it under `nice` on a shared machine.

`--servers` (bench/scaleout.py) replaces the comparison: the demo knowledge base is built once
on a throw-away PostgreSQL + `oxigraph serve`, then for each count that many `kg serve` processes,
each with a data dir of its own, answer POST /query (mode full, k 10) from a fixed number of client
threads for a fixed time, the requests spread round-robin over the servers.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
for extra in (REPO_ROOT, REPO_ROOT / "tests"):
    if str(extra) not in sys.path:
        sys.path.insert(0, str(extra))

from retrieval.eval.metrics import percentile  # noqa: E402
from retrieval.index.analysis import cjk_bigrams, query_terms  # noqa: E402
from retrieval.migration import same_within_ties  # noqa: E402
from retrieval.types import Chunk  # noqa: E402

SHARED = REPO_ROOT.parent / "shared" / "bench"
SETS = ["demo", "ops_dev_zh", "domainrag_zh_dev", "gitlab_handbook_dev", "2wiki_dev", "rgb_zh_dev"]


def load_set(name: str) -> tuple[list[Chunk], list[str]]:
    if name == "demo":
        from retrieval.ingest.chunking import chunk_document
        from retrieval.ingest.readers import read_source_file

        demo = REPO_ROOT / "kg" / "demo"
        chunks = []
        for path in sorted((demo / "docs").rglob("*.md")):
            chunks.extend(chunk_document(read_source_file(path, str(path.relative_to(demo))))[1])
        questions = [json.loads(line)["question"] for line in (demo / "questions.jsonl").read_text("utf-8").splitlines()
                     if line.strip()]
        return chunks, questions
    folder = SHARED / name
    chunks = []
    for line in (folder / "corpus.jsonl").read_text("utf-8").splitlines():
        p = json.loads(line)
        chunks.append(Chunk(p["id"], p.get("doc") or p["id"], 0, p["title"], "", p["text"], 1, 1, "h" + p["id"]))
    questions = [json.loads(line)["question"] for line in (folder / "questions.jsonl").read_text("utf-8").splitlines()
                 if line.strip()]
    return chunks, questions


def _ms(values: list[float]) -> dict:
    return {"p50": round(percentile(values, 50), 2), "p95": round(percentile(values, 95), 2),
            "mean": round(statistics.fmean(values), 2)}


def run_set(name: str, dsn: str, workdir: Path) -> dict:
    from retrieval.index.postgres_index import PostgresIndex
    from retrieval.index.whoosh_index import WhooshIndex

    chunks, questions = load_set(name)
    queries = [([(t, 1.0) for t in query_terms(q)], [(g, 0.5) for g in dict.fromkeys(cjk_bigrams(q))]) for q in questions]
    schema = "bench_" + name.replace("-", "_").lower()
    indexes = {"whoosh": lambda: WhooshIndex(workdir / name), "postgres": lambda: PostgresIndex(dsn, schema)}
    out: dict = {"set": name, "chunks": len(chunks), "questions": len(questions)}
    rankings: dict[str, list] = {}
    for backend, make in indexes.items():
        index = make()
        t0 = time.process_time(), time.perf_counter()
        index.add_chunks(chunks)
        index.commit(replace_all=True) if backend == "postgres" else index.commit()
        build = (time.process_time() - t0[0], time.perf_counter() - t0[1])
        top10 = [[(h.chunk_id, h.score) for h in index.search(t, 10, grams=g)] for t, g in queries]
        index.commit()  # reopen: the timed passes start from cold caches
        passes = []
        for _ in range(2):
            times = []
            for terms, grams in queries:
                start = time.perf_counter()
                index.search(terms, 200, grams=grams)
                times.append((time.perf_counter() - start) * 1000)
            passes.append(_ms(times))
        rankings[backend] = top10
        out[backend] = {"build_cpu_s": round(build[0], 1), "build_wall_s": round(build[1], 1),
                        "k200_cold_ms": passes[0], "k200_warm_ms": passes[1]}
        if backend == "postgres":
            import psycopg

            with psycopg.connect(dsn) as conn:
                out[backend]["size_mb"] = round(float(conn.execute(
                    "SELECT sum(pg_total_relation_size(c.oid)) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
                    "WHERE n.nspname = %s AND c.relkind IN ('r', 'm')", (schema,)).fetchone()[0]) / 1e6, 1)
        else:
            out[backend]["size_mb"] = round(sum(p.stat().st_size for p in (workdir / name).iterdir()) / 1e6, 1)
        index.close()
    same = [same_within_ties(a, b) for a, b in zip(rankings["whoosh"], rankings["postgres"], strict=True)]
    out["identical_top10"] = sum(same)
    out["differing"] = [questions[i] for i, ok in enumerate(same) if not ok][:5]
    return out


_END = "<!-- end of the measured table -->"


def write_markdown(results: list[dict], path: Path, meta: dict) -> None:
    lines = [
        "# Backends: embedded whoosh vs the PostgreSQL text index (bench/backends.py)",
        "",
        f"One run, {meta['when']}, {meta['machine']}; PostgreSQL {meta['postgres']} on a Unix socket on the same machine "
        "(a throw-away cluster, fsync off), one process, one thread. The same chunks (a set's passages, one chunk each;",
        "the demo's documents cut by the chunker) into each backend; every question searched as the query path searches",
        "(words + Chinese character pairs at 0.5). Identical = the same top 10, scores equal to 1e-9, ids equal except",
        "among equal scores. Times: k=200 (what a query asks the text index for), first pass cold, second warm.",
        "",
        "| set | chunks | questions | identical top 10 | build s whoosh / pg (wall; CPU of this process) | size MB whoosh / pg | "
        "cold p50 / p95 ms whoosh | cold p50 / p95 ms pg | warm p50 / p95 ms whoosh | warm p50 / p95 ms pg |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        w, p = r["whoosh"], r["postgres"]
        lines.append(
            f"| {r['set']} | {r['chunks']:,} | {r['questions']} | {r['identical_top10']} / {r['questions']} | "
            f"{w['build_wall_s']} / {p['build_wall_s']} ({w['build_cpu_s']} / {p['build_cpu_s']}) | {w['size_mb']} / {p['size_mb']} | "
            f"{w['k200_cold_ms']['p50']} / {w['k200_cold_ms']['p95']} | {p['k200_cold_ms']['p50']} / {p['k200_cold_ms']['p95']} | "
            f"{w['k200_warm_ms']['p50']} / {w['k200_warm_ms']['p95']} | {p['k200_warm_ms']['p50']} / {p['k200_warm_ms']['p95']} |")
    notes = ""  # what follows the table in an existing file (the written notes) is kept
    if path.exists() and _END in path.read_text("utf-8"):
        notes = path.read_text("utf-8").split(_END, 1)[1]
    path.write_text("\n".join(lines) + "\n" + _END + notes, encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dsn", default=None)
    parser.add_argument("--sets", default=",".join(SETS))
    parser.add_argument("--out", type=Path, default=REPO_ROOT / "bench" / "RESULTS-backends.md")
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--servers", default=None, help="e.g. 1,2,4: the throughput of that many kg serve processes")
    parser.add_argument("--clients", type=int, default=8, help="client threads of the --servers run (bounded load)")
    parser.add_argument("--seconds", type=float, default=20.0, help="load time per server count")
    args = parser.parse_args()
    if args.servers:
        from scaleout import run_servers

        run_servers([int(n) for n in args.servers.split(",")], args.clients, args.seconds, args.out)
        return
    sets = [s for s in args.sets.split(",") if s == "demo" or (SHARED / s / "corpus.jsonl").exists()]
    from contextlib import nullcontext

    from backends_servers import postgres_server

    with (nullcontext(args.dsn) if args.dsn else postgres_server()) as server, \
            tempfile.TemporaryDirectory(prefix="kgrag-bench-backends-") as tmp:
        if isinstance(server, str) and not args.dsn:
            sys.exit(f"cannot start PostgreSQL: {server}")
        dsn = args.dsn or server.url
        import psycopg

        with psycopg.connect(dsn) as conn:
            version = conn.execute("SHOW server_version").fetchone()[0]
        results = []
        for name in sets:
            r = run_set(name, dsn, Path(tmp))
            print(json.dumps(r, ensure_ascii=False), flush=True)
            results.append(r)
    meta = {"when": time.strftime("%Y-%m-%d"), "postgres": version,
            "machine": f"{os.cpu_count()} cores, Python {platform.python_version()}"}
    write_markdown(results, args.out, meta)
    if args.json:
        args.json.write_text(json.dumps(results, ensure_ascii=False, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
