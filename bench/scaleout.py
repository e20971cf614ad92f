"""Query throughput of 1, 2, 4 `kg serve` processes sharing one PostgreSQL + Oxigraph (`python bench/backends.py --servers 1,2,4`).

The demo knowledge base is built once through the CLI on the backends (KG_TEXT_BACKEND=postgres,
KG_GRAPH_STORE=sparql+http://...); each server gets a data dir of its own (`kg init` there restores
the published catalog). Per server count: every server answers the first demo questions once (warm-up),
then `clients` threads send POST /query (mode full, k 10; the demo's questions in turn) for `seconds`
seconds, each request to the next server round-robin. Reported: answered queries a second, p50 / p95
latency, non-200 answers and failed connections. On one machine the servers, PostgreSQL and the
clients share its cores: the curve says how far CPU lets the count help here, not what separate
machines would give.
"""

from __future__ import annotations

import itertools
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import ExitStack
from pathlib import Path

from backends_servers import http_json, kg_serve, oxigraph_server, postgres_server
from result_sections import put_section

from retrieval.eval.metrics import percentile

REPO_ROOT = Path(__file__).resolve().parents[1]
DEMO = REPO_ROOT / "kg" / "demo"
WARM_UP = 12  # questions each server answers before the clock starts (loads its linker, graph and caches)
_START, _END = "<!-- servers table -->", "<!-- end of the servers table -->"


def _kg(env: dict, *args: str) -> None:
    done = subprocess.run([sys.executable, "-m", "kg.cli", *args], env=env, capture_output=True, text=True, check=False)
    if done.returncode:
        raise SystemExit(f"kg {' '.join(args)} failed: {done.stderr[-1500:]}")


def _load(bases: list[str], questions: list[str], clients: int, seconds: float) -> dict:
    latencies: list[float] = []
    statuses: dict[int, int] = {}
    failed = 0
    turn = itertools.count()
    lock = threading.Lock()
    deadline = time.monotonic() + seconds

    def client(offset: int) -> None:
        nonlocal failed
        i = offset
        while time.monotonic() < deadline:
            base = bases[next(turn) % len(bases)]
            started = time.perf_counter()
            try:
                status, _ = http_json("POST", base + "/query", {"query": questions[i % len(questions)], "k": 10})
            except OSError:
                with lock:
                    failed += 1
                continue
            ms = (time.perf_counter() - started) * 1000
            with lock:
                latencies.append(ms)
                statuses[status] = statuses.get(status, 0) + 1
            i += 1

    threads = [threading.Thread(target=client, args=(c * 7,)) for c in range(clients)]
    started = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - started
    ok = statuses.get(200, 0)
    return {"queries_per_s": round(ok / wall, 1), "p50_ms": round(percentile(latencies, 50), 1),
            "p95_ms": round(percentile(latencies, 95), 1), "mean_ms": round(statistics.fmean(latencies), 1),
            "answered": ok, "non_200": sum(v for k, v in statuses.items() if k != 200), "failed": failed,
            "seconds": round(wall, 1)}


def run_servers(counts: list[int], clients: int, seconds: float, out: Path) -> list[dict]:
    questions = [json.loads(line)["question"] for line in (DEMO / "questions.jsonl").read_text("utf-8").splitlines()
                 if line.strip()]
    with postgres_server() as pg, oxigraph_server() as graph, tempfile.TemporaryDirectory(prefix="kgrag-servers-") as tmp:
        for server in (pg, graph):
            if isinstance(server, str):
                raise SystemExit(f"cannot start the backends: {server}")
        work = Path(tmp)
        env = {**{k: v for k, v in os.environ.items() if not k.startswith("KG_")}, "OMP_NUM_THREADS": "1",
               "PYTHONPATH": os.pathsep.join([str(REPO_ROOT), os.environ.get("PYTHONPATH", "")]),
               "KG_TEXT_BACKEND": "postgres", "KG_POSTGRES_DSN": pg.url, "KG_POSTGRES_SCHEMA": "bench_servers",
               "KG_GRAPH_STORE": f"sparql+{graph.url}"}
        builder = str(work / "builder")
        _kg(env, "import", str(DEMO / "relations.csv"), "--data-dir", builder, "--quiet")
        _kg(env, "import", str(DEMO / "synonyms.txt"), "--data-dir", builder, "--quiet")
        _kg(env, "ingest", str(DEMO / "docs"), "--data-dir", builder, "--quiet")
        results = measure_servers(env, counts, clients, seconds, work, questions)
        import psycopg

        with psycopg.connect(pg.url) as conn:
            version = conn.execute("SHOW server_version").fetchone()[0].split()[0]
    _write(results, out, {"when": time.strftime("%Y-%m-%d"), "postgres": version, "cores": os.cpu_count(),
                          "python": platform.python_version(), "questions": len(questions)})
    return results


def measure_servers(env: dict, counts: list[int], clients: int, seconds: float, work: Path,
                    questions: list[str]) -> list[dict]:
    """For each count: that many `kg serve` processes on the knowledge base published on the backends `env` names,
    each with a data dir of its own under `work` (`kg init` restores the published catalog there, or brings a slot's
    dir from an earlier count up to date; the time it took is `init_s`, the slowest server's), warmed up, then
    loaded by `clients` threads for `seconds`."""
    results = []
    for n in counts:
        with ExitStack() as stack:
            bases, init = [], 0.0
            for i in range(n):
                data_dir = work / f"server{i}"  # a data dir per server slot, kept across counts (at 1M each is ~5 GB)
                started = time.perf_counter()
                _kg(env, "init", "--data-dir", str(data_dir))
                init = max(init, time.perf_counter() - started)
                bases.append(stack.enter_context(kg_serve(data_dir, env, work / f"n{n}-server{i}.log"))[1])
            for base in bases:
                for q in questions[:WARM_UP]:
                    http_json("POST", base + "/query", {"query": q, "k": 10})
            row = {"servers": n, "clients": clients, "init_s": round(init, 1), **_load(bases, questions, clients, seconds)}
        print(json.dumps(row), flush=True)
        results.append(row)
    return results


def _write(results: list[dict], path: Path, meta: dict) -> None:
    lines = [
        _START,
        "## Throughput: 1, 2 and 4 `kg serve` processes on one PostgreSQL + Oxigraph",
        "",
        f"`python bench/backends.py --servers {','.join(str(r['servers']) for r in results)} "
        f"--clients {results[0]['clients']} --seconds {round(results[0]['seconds'])}` — one run, {meta['when']}, {meta['cores']} cores "
        f"(load average {os.getloadavg()[0]:.1f} when it ended), Python {meta['python']}, PostgreSQL {meta['postgres']} on a Unix socket (fsync off), "
        "`oxigraph serve` on loopback. The demo knowledge base (built once on the backends); each server has a data dir "
        f"of its own; {results[0]['clients']} client threads on the same machine send POST /query (mode full, k 10, the "
        f"demo's {meta['questions']} questions in turn) round-robin over the servers. Servers, PostgreSQL and clients "
        "share the same cores, so this is CPU-bound: it shows the overhead of sharing, not what machines of their own would add.",
        "",
        "| kg serve processes | client threads | queries/s | p50 ms | p95 ms | answered | non-200 | failed connections |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        lines.append(f"| {r['servers']} | {r['clients']} | {r['queries_per_s']} | {r['p50_ms']} | {r['p95_ms']} | "
                     f"{r['answered']} | {r['non_200']} | {r['failed']} |")
    lines.append(_END)
    put_section(path, "\n".join(lines), _START, _END)
