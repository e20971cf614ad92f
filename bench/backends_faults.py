"""Faults on a knowledge base already on PostgreSQL + Oxigraph, at its size (issue 26): a query server killed under
load, PostgreSQL restarted under load, a writer killed mid-commit.

    python bench/backends_scale.py --kb W/kb --work W2 --dsn DSN --graph-store sparql+http://…   # migrates W2/kb
    python bench/backends_faults.py --dsn DSN --schema scale --graph-store sparql+http://… --work W3 \\
        --restart "pg_ctl -D … restart" [--out bench/RESULTS-backends.md]

Two machines A and B (data dirs of their own under --work, `kg init` restoring the published catalog), as
tests/test_backends_scaleout.py and tests/test_backends_writer_killed.py run them on the demo:

1. `kg serve` on A and B, `--clients` threads sending POST /query (mode full, k 10, bench/scale.py's questions) to
   A and B in turn, each request retried once on the other server when it fails (a refused connection or a 5xx);
   a quarter into the load, A is SIGKILLed. Reported: answered, retried, failed after the retry, p50/p95.
2. B alone under the same load without retries; a quarter in, `--restart` restarts PostgreSQL. Reported: 200s, 503s
   (and what one said), other answers, refused connections, how long the restart took and how long after it ended
   B answered 200 again.
3. `kg ingest` of one new note on A killed at a step of its commit (`KG_CRASH_AT=ingest:<step>`, an exit like
   kill -9 while it holds the write lock), for the steps `index` (the text index written, nothing published) and
   `publish` (published, the journal not yet cleared). Then, with B's server still answering: whether B finds the
   killed note (it must for `publish`, must not for `index`), the wall time of the next write on B (it finishes the
   dead commit first), and `kg check` on B (wall, clean or not).
Prints one JSON line; --out appends a Markdown section.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import shlex
import signal
import subprocess
import sys
import threading
import time
from contextlib import ExitStack
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
for extra in (REPO_ROOT, REPO_ROOT / "tests", REPO_ROOT / "bench"):
    if str(extra) not in sys.path:
        sys.path.insert(0, str(extra))

from backends_servers import http_json, kg_serve  # noqa: E402

from retrieval.catalog.commit import CRASH_EXIT  # noqa: E402
from retrieval.eval.metrics import percentile  # noqa: E402

WARM_UP = 12
STEPS = {"index": False, "publish": True}  # step -> is the killed note there afterwards (its commit was published)
NOTE = "# {name} ledger runbook\n\nThe {name}ledger service rotates its keys every night at 03:00.\n"


def _kg(env: dict, *args: str, timeout: float = 3600) -> tuple[subprocess.CompletedProcess, float]:
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "kg.cli", *args], env=env, capture_output=True, text=True,
                          timeout=timeout, check=False)
    return done, round(time.perf_counter() - started, 1)


def _ms(values: list[float]) -> dict:
    return {"p50": round(percentile(values, 50), 1), "p95": round(percentile(values, 95), 1)} if values else {}


def _load(bases: list[str], questions: list[str], clients: int, seconds: float, retry: bool,
          event, event_at: float) -> dict:
    """`clients` threads for `seconds`; `event()` runs in this thread `event_at` seconds in."""
    lock = threading.Lock()
    turn = itertools.count()
    counts = {"answered": 0, "retried": 0, "failed": 0, "refused": 0}
    statuses: dict[int, int] = {}
    latencies: list[float] = []
    first_ok_after: list[float] = []
    said: list[str] = []
    deadline = time.monotonic() + seconds
    event_done = threading.Event()
    event_ended = [0.0]

    def ask(base: str, question: str) -> tuple[int | None, dict | None]:
        try:
            status, body = http_json("POST", base + "/query", {"query": question, "k": 10}, timeout=60)
            return status, body
        except OSError:
            return None, None

    def client(offset: int) -> None:
        i = offset
        while time.monotonic() < deadline:
            n = next(turn)
            base = bases[n % len(bases)]
            started = time.perf_counter()
            status, body = ask(base, questions[i % len(questions)])
            if retry and (status is None or status >= 500) and len(bases) > 1:
                with lock:
                    counts["retried"] += 1
                status, body = ask(bases[(n + 1) % len(bases)], questions[i % len(questions)])
            ms = (time.perf_counter() - started) * 1000
            with lock:
                if status is None:
                    counts["refused" if not retry else "failed"] += 1
                else:
                    statuses[status] = statuses.get(status, 0) + 1
                    if status == 200:
                        counts["answered"] += 1
                        latencies.append(ms)
                        if event_done.is_set() and not first_ok_after:
                            first_ok_after.append(time.monotonic() - event_ended[0])
                    elif retry:
                        counts["failed"] += 1
                    elif not said and isinstance(body, dict):
                        error = body.get("error")
                        said.append(str(error.get("message") if isinstance(error, dict) else body.get("detail") or body))
            i += 1
            if status is None and not retry:
                time.sleep(0.05)  # a refused connection returns at once: do not spin

    threads = [threading.Thread(target=client, args=(c * 7,)) for c in range(clients)]
    for t in threads:
        t.start()
    time.sleep(event_at)
    started = time.perf_counter()
    event()
    event_seconds = round(time.perf_counter() - started, 1)
    event_ended[0] = time.monotonic()
    event_done.set()
    for t in threads:
        t.join()
    return {**counts, "statuses": {str(k): v for k, v in sorted(statuses.items())}, "ms": _ms(latencies),
            "event_s": event_seconds,
            "first_200_after_event_s": round(first_ok_after[0], 1) if first_ok_after else None,
            "said": said[0] if said else ""}


def _found(base: str, word: str) -> bool:
    status, body = http_json("POST", base + "/query", {"query": word, "k": 5, "mode": "bm25"}, timeout=60)
    return status == 200 and any(word in (h.get("text") or "").lower() for h in body.get("hits", []))


def run(env: dict, work: Path, restart: list[str], clients: int, seconds: float) -> dict:
    from scale import questions as scale_questions

    questions = scale_questions()
    work.mkdir(parents=True, exist_ok=True)
    a_dir, b_dir = work / "a", work / "b"
    out: dict = {}
    for data_dir in (a_dir, b_dir):
        done, took = _kg(env, "init", "--data-dir", str(data_dir))
        if done.returncode:
            sys.exit(f"kg init failed: {done.stderr[-1500:]}")
        out.setdefault("init_s", []).append(took)
    with ExitStack() as stack:
        a_process, a = stack.enter_context(kg_serve(a_dir, env, work / "a.log"))
        _, b = stack.enter_context(kg_serve(b_dir, env, work / "b.log"))
        for base in (a, b):
            for q in questions[:WARM_UP]:
                http_json("POST", base + "/query", {"query": q, "k": 10}, timeout=120)
        out["server_killed"] = _load([a, b], questions, clients, seconds, True,
                                     lambda: os.kill(a_process.pid, signal.SIGKILL), seconds / 4)
        print(json.dumps({"server_killed": out["server_killed"]}), flush=True)
        out["postgres_restarted"] = _load([b], questions, clients, seconds, False,
                                          lambda: subprocess.run(restart, check=True, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                                                         stderr=subprocess.DEVNULL, timeout=600,
                                                                         start_new_session=True),
                                          seconds / 4)
        restarted = out["postgres_restarted"]
        restarted["said"] = restarted["said"].replace(env["KG_POSTGRES_DSN"], "<KG_POSTGRES_DSN>")  # no local paths
        print(json.dumps({"postgres_restarted": restarted}), flush=True)
        out["writer_killed"] = []
        for step, published in STEPS.items():
            name = f"quokka{step}"
            note = work / f"{name}.md"
            note.write_text(NOTE.format(name=name.capitalize()), encoding="utf-8")
            killed, killed_s = _kg({**env, "KG_CRASH_AT": f"ingest:{step}"}, "ingest", str(note), "--data-dir", str(a_dir), "-q")
            row = {"step": step, "exit": killed.returncode, "killed_after_s": killed_s,
                   "expected_exit": killed.returncode == CRASH_EXIT}
            other = work / f"wombat{step}.md"
            other.write_text(NOTE.format(name=f"Wombat{step}"), encoding="utf-8")
            written, row["next_write_s"] = _kg(env, "ingest", str(other), "--data-dir", str(b_dir), "-q")
            row["next_write_ok"] = written.returncode == 0
            deadline = time.monotonic() + 120
            while not _found(b, f"wombat{step}ledger") and time.monotonic() < deadline:
                time.sleep(0.5)  # B's server follows the new generation in the background
            row["killed_note_found"] = _found(b, f"{name}ledger")
            row["as_expected"] = row["killed_note_found"] == published
            checked, row["check_s"] = _kg(env, "check", "--json", "--data-dir", str(b_dir))
            report = json.loads(checked.stdout or "{}")
            row["check_clean"] = checked.returncode == 0 and not report.get("problems")
            row["check_problems"] = report.get("problems", [])[:3]
            print(json.dumps(row), flush=True)
            out["writer_killed"].append(row)
    return out


def _statuses(counts: dict) -> str:
    return ", ".join(f"{n} × {status}" for status, n in counts.items())


def markdown(r: dict, when: str, clients: int, seconds: float) -> str:
    k, p = r["server_killed"], r["postgres_restarted"]
    lines = ["", f"### Faults at this size (bench/backends_faults.py, {when})", "",
             f"Machines A and B, each `kg init` first ({' / '.join(str(s) for s in r['init_s'])} s); {clients} client threads "
             f"for {seconds:g} s per fault; the fault a quarter in.", "",
             "| fault | answered | retried | failed | answers by status | p50 / p95 ms | fault took s | first 200 after s |",
             "|---|---|---|---|---|---|---|---|",
             f"| A SIGKILLed, each request retried once on the other | {k['answered']} | {k['retried']} | {k['failed']} | "
             f"{_statuses(k['statuses'])} | {k['ms'].get('p50')} / {k['ms'].get('p95')} | - | - |",
             f"| PostgreSQL restarted under B (no retry) | {p['answered']} | - | {p['refused']} refused | {_statuses(p['statuses'])} | "
             f"{p['ms'].get('p50')} / {p['ms'].get('p95')} | {p['event_s']} | {p['first_200_after_event_s']} |"]
    if p["said"]:
        lines += ["", f"What a failed request said: \"{p['said']}\""]
    lines += ["", "| writer killed at | its exit | the note on B afterwards | as it should be | next write on B s | "
              "`kg check` on B s | clean |", "|---|---|---|---|---|---|---|"]
    for w in r["writer_killed"]:
        lines.append(f"| `ingest:{w['step']}` | {w['exit']} | {'found' if w['killed_note_found'] else 'not found'} | "
                     f"{'yes' if w['as_expected'] else 'NO'} | {w['next_write_s']} | {w['check_s']} | "
                     f"{'yes' if w['check_clean'] else 'no: ' + '; '.join(w['check_problems'])} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dsn", required=True)
    parser.add_argument("--schema", required=True, help="the knowledge base's PostgreSQL schema (KG_POSTGRES_SCHEMA)")
    parser.add_argument("--graph-store", required=True)
    parser.add_argument("--work", type=Path, required=True, help="where the two machines' data dirs go")
    parser.add_argument("--restart", required=True, help="the command that restarts PostgreSQL (its output is dropped: "
                        "a postmaster it starts keeps the pipes open; give pg_ctl its -l log file)")
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--seconds", type=float, default=40.0)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("KG_")}, "OMP_NUM_THREADS": "1",
           "PYTHONPATH": os.pathsep.join([str(REPO_ROOT), os.environ.get("PYTHONPATH", "")]),
           "KG_TEXT_BACKEND": "postgres", "KG_POSTGRES_DSN": args.dsn, "KG_POSTGRES_SCHEMA": args.schema,
           "KG_GRAPH_STORE": args.graph_store, "KG_WRITE_WAIT": "600"}
    result = run(env, args.work, shlex.split(args.restart), args.clients, args.seconds)
    print(json.dumps(result, ensure_ascii=False), flush=True)
    (args.work / "faults.json").write_text(json.dumps(result, ensure_ascii=False, indent=1), encoding="utf-8")
    if args.out:
        with args.out.open("a", encoding="utf-8") as f:
            f.write(markdown(result, time.strftime("%Y-%m-%d"), args.clients, args.seconds))


if __name__ == "__main__":
    main()
