"""How soon another machine serves a write on the backends: a `kg ingest` of one note on machine A, then machine B's
`kg serve` asked every 0.1 s until the note is among its hits.

    python bench/backends_follow.py --dsn DSN --schema SCHEMA --graph-store sparql+http://HOST:PORT \
        --writer-dir A --server-dir B [--notes 3] [--clients 4] [--work DIR]

A and B are data dirs of one shared knowledge base (`kg init` in each, or left by bench/backends_faults.py). Prints one
JSON row a note: how long the write took and how long after it returned B first answered with the note (B follows
the published generation every KG_FOLLOW_INTERVAL, then restores the catalog pieces it lacks and reloads). With
`--clients N`, N threads ask B the scale questions (bench/scale.py) all along, and the last line counts their answers
by status: B swaps its catalog file under that load.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO_ROOT), str(REPO_ROOT / "tests")]

from backends_servers import http_json, kg_serve  # noqa: E402


class _Load:
    """`clients` threads asking `base` questions until stopped; answers counted by status (or exception name)."""

    def __init__(self, base: str, clients: int) -> None:
        sys.path.insert(0, str(REPO_ROOT / "bench"))
        from scale import questions

        self.base, self.questions, self.stop = base, questions(), threading.Event()
        self.counts: dict[str, int] = {}
        self._lock = threading.Lock()
        self.threads = [threading.Thread(target=self._ask, args=(i, clients), daemon=True) for i in range(clients)]
        for thread in self.threads:
            thread.start()

    def _ask(self, first: int, step: int) -> None:
        n = first
        while not self.stop.is_set():
            try:
                status = str(http_json("POST", self.base + "/query", {"query": self.questions[n % len(self.questions)],
                                                                    "k": 10}, timeout=120)[0])
            except Exception as exc:  # noqa: BLE001 - counted, not raised: the count is the measurement
                status = type(exc).__name__
            with self._lock:
                self.counts[status] = self.counts.get(status, 0) + 1
            n += step

    def finish(self) -> dict[str, int]:
        self.stop.set()
        for thread in self.threads:
            thread.join()
        return self.counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dsn", required=True)
    parser.add_argument("--schema", required=True)
    parser.add_argument("--graph-store", required=True)
    parser.add_argument("--writer-dir", type=Path, required=True)
    parser.add_argument("--server-dir", type=Path, required=True)
    parser.add_argument("--notes", type=int, default=3)
    parser.add_argument("--clients", type=int, default=0, help="threads asking B questions all along")
    parser.add_argument("--work", type=Path, default=None, help="where the notes and B's log go (default: a temp dir)")
    args = parser.parse_args()
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("KG_")}, "OMP_NUM_THREADS": "1",
           "PYTHONPATH": os.pathsep.join([str(REPO_ROOT), os.environ.get("PYTHONPATH", "")]),
           "KG_TEXT_BACKEND": "postgres", "KG_POSTGRES_DSN": args.dsn, "KG_POSTGRES_SCHEMA": args.schema,
           "KG_GRAPH_STORE": args.graph_store, "KG_WRITE_WAIT": "600"}
    work = args.work or Path(tempfile.mkdtemp(prefix="kgrag-follow-"))
    work.mkdir(parents=True, exist_ok=True)
    with kg_serve(args.server_dir, env, work / "server.log") as (_, base):
        load = _Load(base, args.clients) if args.clients else None
        for _ in range(args.notes):
            word = "follow" + secrets.token_hex(4)  # a word no other chunk holds
            note = work / f"{word}.md"
            note.write_text(f"# {word}\n\n{word} 巡检每周一次，检查网关的连接数。\n", encoding="utf-8")
            started = time.monotonic()
            subprocess.run([sys.executable, "-m", "kg.cli", "ingest", str(note), "--data-dir", str(args.writer_dir), "-q"],
                           env=env, check=True, stdout=subprocess.DEVNULL)
            written = time.monotonic()
            while True:
                _, body = http_json("POST", base + "/query", {"query": word, "k": 3}, timeout=60)
                if word in json.dumps(body.get("hits", []) if isinstance(body, dict) else [], ensure_ascii=False):
                    break
                time.sleep(0.1)
            print(json.dumps({"write_s": round(written - started, 2), "served_after_s": round(time.monotonic() - written, 2)}),
                  flush=True)
        if load is not None:
            print(json.dumps({"answers_by_status": load.finish()}), flush=True)


if __name__ == "__main__":
    main()
