"""What a SPARQL store costs a commit that changes the graph: a relation table of ROWS rows (`svc-i relation svc-j`)
imported into a knowledge base without a store and into one pushing to a throw-away `oxigraph serve`, then one more
row imported into each (the commit a user makes every day), then `kg store status`; last, what a server following
the store (KG_STORE_FOLLOW) spends a round: with the store unchanged (every interval) and after one edge was added
there (the round that pulls it), in this process. Each CLI step is the real CLI in a process of its own: wall seconds, CPU seconds of kgrag (user + system of the child) and of the Oxigraph server
(from /proc), peak RSS. A push reads the store's graphs before it writes (an edit made there is never overwritten)
and after (the record the next push compares with), and sends only what differs (`retrieval/store_sync.py`).

    python bench/store_push.py [--rows 20000]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
for extra in (REPO_ROOT, REPO_ROOT / "tests", REPO_ROOT / "bench"):
    if str(extra) not in sys.path:
        sys.path.insert(0, str(extra))

from store_view import server_cpu_ms  # noqa: E402

RELATIONS = ("dependsOn", "partOf", "configuredBy", "monitored_by", "runs on")


def table(path: Path, rows: int, seed: int = 1) -> None:
    rng = random.Random(seed)
    lines = ["source,relation,target"]
    for i in range(rows):
        j = rng.randrange(rows - 1)
        lines.append(f"svc-{i},{rng.choice(RELATIONS)},svc-{j if j < i else j + 1}")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def step(args: list[str], env: dict, server_pid: int | None) -> dict:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    server = server_cpu_ms(server_pid) if server_pid else 0.0
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "kg.cli", *args], env=env, capture_output=True, text=True)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return {"exit": done.returncode, "wall_s": round(wall, 2),
            "cpu_s": round(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime, 2),
            "server_cpu_s": round((server_cpu_ms(server_pid) - server) / 1000, 2) if server_pid else None,
            "children_peak_rss_mb_so_far": round(after.ru_maxrss / 1024), "output": done.stdout.strip()[-300:]}


def follow_rounds(data_dir: Path, env: dict, server_pid: int) -> dict:
    """`follow_round` on the knowledge base pushing to the store: wall, CPU of this process and of the server."""
    saved = dict(os.environ)
    os.environ.update(env)  # the knowledge base's settings, as `kg serve` would read them
    try:
        from kg.settings import Settings
        from kg.stores import open_graph_store
        from ontology import KG, entity_iri
        from retrieval.pipeline import KnowledgeBase
        from retrieval.store_sync import follow_round

        rounds = {}
        with KnowledgeBase(Settings(data_dir=data_dir)) as kb:
            for label in ("store unchanged", "one edge added there"):
                if label != "store unchanged":
                    store = open_graph_store(env["KG_GRAPH_STORE"], namespace=env["KG_POSTGRES_SCHEMA"])
                    try:
                        store.add([(entity_iri("svc-1"), KG.partOf, entity_iri("svc-3"))])
                    finally:
                        store.close()
                server, cpu, started = server_cpu_ms(server_pid), time.process_time(), time.perf_counter()
                result = follow_round(kb)
                rounds[label] = {"wall_s": round(time.perf_counter() - started, 2),
                                 "cpu_s": round(time.process_time() - cpu, 2),
                                 "server_cpu_s": round((server_cpu_ms(server_pid) - server) / 1000, 2),
                                 "pulled": None if result is None else result["summary"]}
        return rounds
    finally:
        os.environ.clear()
        os.environ.update(saved)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=20000)
    args = parser.parse_args()
    from backends_servers import oxigraph_server

    base = {k: v for k, v in os.environ.items() if not k.startswith("KG_")}
    base["PYTHONPATH"] = os.pathsep.join([str(REPO_ROOT), base.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    out: dict = {"rows": args.rows}
    with tempfile.TemporaryDirectory(prefix="kgrag-store-push-") as tmp, oxigraph_server() as server:
        if isinstance(server, str):
            print(f"no oxigraph: {server}", file=sys.stderr)
            return 2
        work = Path(tmp)
        table(work / "rows.csv", args.rows)
        (work / "one.csv").write_text("source,relation,target\nsvc-1,dependsOn,svc-2\n", encoding="utf-8")
        stored = {**base, "KG_GRAPH_STORE": "sparql+" + server.url, "KG_POSTGRES_SCHEMA": "storepush"}
        pid = server.process.pid
        for label, env, server_pid in (("no store", base, None), ("store", stored, pid)):
            kb = str(work / label.replace(" ", "_"))
            out[label] = {"import": step(["import", str(work / "rows.csv"), "--data-dir", kb, "-q"], env, server_pid),
                          "one row": step(["import", str(work / "one.csv"), "--data-dir", kb, "-q"], env, server_pid)}
        out["store"]["status"] = step(["store", "status", "--data-dir", str(work / "store")], stored, pid)
        out["store"]["follow"] = follow_rounds(work / "store", stored, pid)
    print(json.dumps(out, indent=2, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
