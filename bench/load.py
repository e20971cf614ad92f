"""Load on the real server: concurrent query clients over loopback in, latency percentiles, throughput and error counts out, idle, while a `kg ingest` of ~4,000 chunks writes the same data dir (1 and 2 workers) and while one API post of ~1,100 chunks is committed (bench/RESULTS-load.md).

    nice -n 10 python bench/load.py [--clients 50] [--seconds 60] [--out bench/RESULTS-load.json]

Phases, each against a `kg serve` process of its own (1 worker, then 2): (1) idle; (2) the same clients
while one `POST /documents` of ~1,100 chunks is ingested and committed by the server itself
(`during_api_post`: the queries sent while the post ran, against idle); (3) the clients while a CLI
`kg ingest` (another process) adds ~4,000 chunks and the server itself takes a POST /documents every
second: every error, 5xx and CLI traceback is counted, and the CLI's documents must answer through
the server on its next query (the phase lasts at least --seconds; `while_the_ingest_ran` gives the
percentiles of the queries sent while the CLI ingest was running, the stricter comparison with idle);
(4) idle with 2 workers; (5) 2 workers while another `kg ingest` of ~4,000 chunks runs. A failed request
(a connection reset, a refused or dropped connection) is an error. Loopback only, every loop bounded.
The corpus is synthetic: mixed Chinese/English words with Zipf frequencies.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

EN = ("cache", "replica", "gateway", "timeout", "quota", "shard", "ledger", "broker", "index", "backup", "schema",
      "router", "token", "session", "cluster", "metric", "alert", "deploy", "rollback", "queue", "worker", "pool")
ZH = ("缓存", "副本", "网关", "超时", "配额", "分片", "账本", "消息", "索引", "备份", "路由", "会话", "集群", "指标",
      "告警", "部署", "回滚", "队列", "连接池", "限流", "熔断", "扩容")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_server(port: int, seconds: float = 180) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            conn.request("GET", "/health")
            if conn.getresponse().status == 200:
                return
        except OSError:
            time.sleep(0.3)
    raise RuntimeError(f"the server on port {port} did not come up")


def vocabulary(seed: int = 11) -> tuple[list[str], list[float]]:
    """~3,000 English and Chinese words with Zipf weights: a few common, most rare, as in real notes."""
    rng = random.Random(seed)
    chars = "".join(ZH)
    words = [f"{w}{n}" for w in EN for n in range(60)] + ["".join(rng.sample(chars, 2)) for _ in range(1700)]
    words = list(dict.fromkeys(words))
    rng.shuffle(words)
    return words, [1.0 / (rank + 1) for rank in range(len(words))]


def write_corpus(folder: Path, docs: int, sections: int, seed: int, tag: str) -> None:
    rng = random.Random(seed)
    words, weights = vocabulary()
    folder.mkdir(parents=True, exist_ok=True)
    for d in range(docs):
        lines = [f"# {tag} {rng.choice(EN)}-{d}", ""]
        for s in range(sections):
            lines += [f"## {rng.choice(ZH)} {s}", ""]
            lines += [f"{tag}{d}x{s} " + " ".join(rng.choices(words, weights, k=40)) + "。", ""]
        (folder / f"{tag}-{d:05d}.md").write_text("\n".join(lines), encoding="utf-8")


def questions(n: int, seed: int = 3) -> list[str]:
    rng = random.Random(seed)
    words, weights = vocabulary()
    return [" ".join(rng.choices(words, weights, k=rng.randint(2, 4))) for _ in range(n)]


class Clients:
    """N threads, each with one keep-alive connection, sending POST /query until stopped."""

    def __init__(self, port: int, n: int) -> None:
        self.port, self.n = port, n
        self.latencies: list[float] = []
        self.started_at: list[float] = []  # perf_counter when each answered query was sent
        self.statuses: dict[int, int] = {}
        self.errors: list[str] = []
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._asked = questions(500)

    def _client(self, i: int) -> None:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        k = i
        while not self._stop.is_set():
            body = json.dumps({"query": self._asked[k % len(self._asked)], "k": 10})
            k += self.n
            started = time.perf_counter()
            try:
                conn.request("POST", "/query", body=body, headers={"Content-Type": "application/json"})
                response = conn.getresponse()
                response.read()
                status = response.status
            except (OSError, http.client.HTTPException) as e:
                with self._lock:
                    self.errors.append(f"{type(e).__name__}: {e}")
                conn.close()
                conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
                continue
            elapsed = time.perf_counter() - started
            with self._lock:
                self.latencies.append(elapsed)
                self.started_at.append(started)
                self.statuses[status] = self.statuses.get(status, 0) + 1

    def run(self, seconds: float | None = None, until: threading.Event | None = None) -> dict:
        threads = [threading.Thread(target=self._client, args=(i,), daemon=True) for i in range(self.n)]
        started = time.perf_counter()
        for t in threads:
            t.start()
        if until is not None:
            until.wait()
        else:
            time.sleep(seconds)
        self._stop.set()
        for t in threads:
            t.join(90)
        wall = time.perf_counter() - started
        return self.summary(wall)

    def window(self, start: float, end: float) -> dict:
        """Latencies of the queries sent between two perf_counter times (e.g. while an ingest ran)."""
        ms = sorted(x * 1e3 for x, t in zip(self.latencies, self.started_at, strict=True) if start <= t <= end)
        pct = (lambda p: round(ms[min(len(ms) - 1, int(p * len(ms)))], 1)) if ms else (lambda p: None)
        return {"seconds": round(end - start, 1), "queries": len(ms), "per_second": round(len(ms) / (end - start), 1),
                "p50_ms": pct(0.50), "p95_ms": pct(0.95), "p99_ms": pct(0.99)}

    def summary(self, wall: float) -> dict:
        ms = sorted(x * 1e3 for x in self.latencies)
        pct = (lambda p: round(ms[min(len(ms) - 1, int(p * len(ms)))], 1)) if ms else (lambda p: None)
        return {"seconds": round(wall, 1), "queries": len(ms), "per_second": round(len(ms) / wall, 1),
                "p50_ms": pct(0.50), "p95_ms": pct(0.95), "p99_ms": pct(0.99),
                "mean_ms": round(statistics.fmean(ms), 1) if ms else None,
                "statuses": self.statuses, "errors": len(self.errors), "error_samples": self.errors[:3],
                "non_200": sum(v for k, v in self.statuses.items() if k != 200)}


def serve(data_dir: Path, workers: int, env: dict, log: Path) -> tuple[subprocess.Popen, int]:
    """`kg serve` in a process of its own; its log goes to a file (a pipe nobody reads would fill and block it)."""
    port = free_port()
    with log.open("a") as fh:
        proc = subprocess.Popen([sys.executable, "-m", "kg.cli", "serve", "--port", str(port), "--workers", str(workers),
                                 "--no-access-log", "--data-dir", str(data_dir)], env=env, stdout=fh, stderr=fh)
    wait_for_server(port)
    return proc, port


def stop(proc: subprocess.Popen, log: Path) -> dict:
    proc.terminate()
    try:
        proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    text = log.read_text(errors="replace")
    errors = [line for line in text.splitlines() if "Exception in ASGI" in line or line.startswith("ERROR")]
    return {"tracebacks": text.count("Traceback"), "error_lines": errors[:5]}


def big_document(sections: int, seed: int = 5) -> str:
    """One Markdown document of `sections` sections of ~one chunk each (what a pasted handbook or table is)."""
    rng = random.Random(seed)
    words, weights = vocabulary()
    lines = ["# handbook posted", ""]
    for s in range(sections):
        lines += [f"## {rng.choice(ZH)} part {s}", "", f"posted{s} " + " ".join(rng.choices(words, weights, k=120)) + "。", ""]
    return "\n".join(lines)


def during_api_post(port: int, n_clients: int, sections: int) -> dict:
    """The clients while the server ingests and commits one large POST /documents."""
    clients, done, out = Clients(port, n_clients), threading.Event(), {}

    def post() -> None:
        time.sleep(3)  # the clients are running first
        body = json.dumps({"text": big_document(sections), "source": "handbook"})
        started = time.perf_counter()
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=1800)
        try:
            conn.request("POST", "/documents", body=body, headers={"Content-Type": "application/json"})
            response = conn.getresponse()
            out.update(status=response.status, report=json.loads(response.read()))
        except OSError as e:
            out["status"] = type(e).__name__
        out["window"] = (started, time.perf_counter())
        out["seconds"] = round(out["window"][1] - started, 1)
        time.sleep(3)
        done.set()

    threading.Thread(target=post, daemon=True).start()
    result = clients.run(until=done)
    window = out.pop("window", None)
    result["while_the_post_ran"] = clients.window(*window) if window else None
    report = out.pop("report", {}) or {}
    result["post"] = {**out, "chunks_indexed": report.get("chunks_indexed")}
    return result


def during_cli_ingest(port: int, n_clients: int, folder: Path, data_dir: Path, env: dict, seconds: float,
                      server_writes: bool) -> tuple[dict, dict, dict]:
    """The clients while a `kg ingest` process writes the data dir (and, when asked, the server takes a
    POST /documents a second); returns the clients' summary, the CLI's outcome and the server writes."""
    done, writes = threading.Event(), {}
    clients = Clients(port, n_clients)
    cli_result: dict = {}

    def ingest() -> None:
        started = time.perf_counter()
        proc = subprocess.run([sys.executable, "-m", "kg.cli", "ingest", str(folder), "--data-dir",
                               str(data_dir), "--json", "-q"], env=env, capture_output=True, text=True, timeout=3600)
        cli_result["window"] = (started, time.perf_counter())
        cli_result.update(exit_code=proc.returncode, seconds=round(time.perf_counter() - started, 1),
                          traceback="Traceback" in proc.stderr,
                          # the data dir is a temporary folder of this machine: the report names it generically
                          stderr_tail=proc.stderr[-300:].replace(str(data_dir), "DATA_DIR"))
        if proc.returncode == 0:
            report = json.loads(proc.stdout)
            cli_result["report"] = {k: report.get(k) for k in ("added", "chunks_indexed", "skipped")}
        time.sleep(max(0.0, seconds - (time.perf_counter() - started)))  # at least --seconds of load
        done.set()

    writer = threading.Thread(target=_server_writer, args=(port, done, writes), daemon=True)
    threading.Thread(target=ingest, daemon=True).start()
    if server_writes:
        writer.start()
    result = clients.run(until=done)
    if server_writes:
        writer.join(900)
    result["while_the_ingest_ran"] = clients.window(*cli_result.pop("window"))
    return result, cli_result, writes


def _ratio(busy, idle):
    return round(busy / idle, 2) if idle and busy else None


def _server_writer(port: int, stop_event: threading.Event, out: dict) -> None:
    """A POST /documents every second while the CLI ingests: server writes wait for the CLI's lock."""
    n = 0
    while not stop_event.is_set():
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=900)
        body = json.dumps({"text": f"# posted {n}\n\nposted{n} heron 网关", "source": f"load-{n}"})
        try:
            conn.request("POST", "/documents", body=body, headers={"Content-Type": "application/json"})
            status = conn.getresponse().status
        except OSError as e:
            status = f"{type(e).__name__}"
        out.setdefault("statuses", {}).setdefault(str(status), 0)
        out["statuses"][str(status)] += 1
        n += 1
        stop_event.wait(1.0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--ingest-docs", type=int, default=800, help="Documents of 5 sections (~5 chunks) each.")
    parser.add_argument("--base-docs", type=int, default=400)
    parser.add_argument("--post-sections", type=int, default=1100, help="Sections (~chunks) of the one API post.")
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "RESULTS-load.json")
    parser.add_argument("--keep-logs", action="store_true", help="Copy the servers' logs next to --out.")
    args = parser.parse_args()
    # The server's writes wait for the CLI's whole ingest (one commit) instead of answering 503.
    env = {k: v for k, v in os.environ.items() if not k.startswith("KG_")} | {"KG_WRITE_WAIT": "900"}
    results: dict = {"clients": args.clients, "seconds": args.seconds, "cpus": os.cpu_count()}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        write_corpus(root / "base", args.base_docs, 5, seed=1, tag="base")
        write_corpus(root / "new", args.ingest_docs, 5, seed=2, tag="fresh")
        write_corpus(root / "more", args.ingest_docs, 5, seed=4, tag="more")
        data_dir = root / "kb"
        subprocess.run([sys.executable, "-m", "kg.cli", "ingest", str(root / "base"), "--data-dir", str(data_dir), "-q"],
                       env=env, check=True, capture_output=True)

        log1, log2 = root / "serve-1.log", root / "serve-2.log"
        server, port = serve(data_dir, 1, env, log1)
        try:
            results["idle_1_worker"] = Clients(port, args.clients).run(args.seconds)
            results["during_api_post_1_worker"] = during_api_post(port, args.clients, args.post_sections)
            during, cli_result, writes = during_cli_ingest(port, args.clients, root / "new", data_dir, env,
                                                           args.seconds, server_writes=True)
            results["during_ingest_1_worker"] = during
            results["cli_ingest"] = cli_result
            results["server_writes"] = writes
            # The CLI's documents answer through the running server on its next query.
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
            conn.request("POST", "/query", body=json.dumps({"query": "fresh7x3", "mode": "bm25"}),
                         headers={"Content-Type": "application/json"})
            hits = json.loads(conn.getresponse().read())["hits"]
            results["cli_documents_visible_to_server"] = bool(hits) and hits[0]["title"].startswith("fresh ")
        finally:
            results["server_log_1_worker"] = stop(server, log1)
        idle = results["idle_1_worker"]["p95_ms"]
        results["p95_ratio_ingest_vs_idle"] = _ratio(results["during_ingest_1_worker"]["p95_ms"], idle)
        results["p95_ratio_while_the_ingest_ran_vs_idle"] = _ratio(
            results["during_ingest_1_worker"]["while_the_ingest_ran"]["p95_ms"], idle)
        posted = results["during_api_post_1_worker"]["while_the_post_ran"] or {}
        results["p95_ratio_while_the_api_post_ran_vs_idle"] = _ratio(posted.get("p95_ms"), idle)

        server, port = serve(data_dir, 2, env, log2)
        try:
            results["idle_2_workers"] = Clients(port, args.clients).run(args.seconds)
            during, cli_result, _ = during_cli_ingest(port, args.clients, root / "more", data_dir, env, args.seconds,
                                                      server_writes=False)
            results["during_ingest_2_workers"] = during
            results["cli_ingest_2_workers"] = cli_result
        finally:
            results["server_log_2_workers"] = stop(server, log2)
        results["failed_requests"] = {phase: results[phase]["errors"] for phase in (
            "idle_1_worker", "during_api_post_1_worker", "during_ingest_1_worker", "idle_2_workers",
            "during_ingest_2_workers")}
        if args.keep_logs:
            for log in (log1, log2):
                (args.out.parent / log.name).write_text(log.read_text(errors="replace"))
    args.out.write_text(json.dumps(results, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print(json.dumps(results, indent=2, ensure_ascii=False))


if __name__ == "__main__":
    main()
