"""How soon another machine serves a write on the backends: a `kg ingest` of one note on machine A, then machine B's
`kg serve` asked every 0.1 s until the note is among its hits.

    python bench/backends_follow.py --dsn DSN --schema SCHEMA --graph-store sparql+http://HOST:PORT \
        --writer-dir A --server-dir B [--notes 3] [--clients 4] [--work DIR]

A and B are data dirs of one shared knowledge base (`kg init` in each, or left by bench/backends_faults.py). Prints one
JSON row a note: how long the write took and how long after it returned B first answered with the note (B follows
the published generation every KG_FOLLOW_INTERVAL, then restores the catalog pieces it lacks and reloads). With
`--clients N`, N threads ask B the scale questions (bench/scale.py) during the writes and a while after
(`backends_faults._load`), and the last line counts their answers by status: B swaps its catalog file under that load.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
for extra in (REPO_ROOT, REPO_ROOT / "tests", REPO_ROOT / "bench"):
    if str(extra) not in sys.path:
        sys.path.insert(0, str(extra))

from backends_faults import _found, _load  # noqa: E402
from backends_servers import kg_serve  # noqa: E402

SECONDS_A_NOTE = 15  # how long the load of `--clients` lasts, per note (it outlasts the writes)


def _writes(env: dict, writer_dir: Path, base: str, work: Path, notes: int) -> list[dict]:
    """`notes` one-note writes on A, each followed until B answers with it."""
    rows = []
    for _ in range(notes):
        word = "follow" + secrets.token_hex(4)  # a word no other chunk holds
        note = work / f"{word}.md"
        note.write_text(f"# {word}\n\n{word} 巡检每周一次，检查网关的连接数。\n", encoding="utf-8")
        started = time.monotonic()
        subprocess.run([sys.executable, "-m", "kg.cli", "ingest", str(note), "--data-dir", str(writer_dir), "-q"],
                       env=env, check=True, stdout=subprocess.DEVNULL)
        written = time.monotonic()
        while not _found(base, word):
            time.sleep(0.1)
        rows.append({"write_s": round(written - started, 2), "served_after_s": round(time.monotonic() - written, 2)})
        print(json.dumps(rows[-1]), flush=True)
    return rows


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
        def writes() -> None:
            _writes(env, args.writer_dir, base, work, args.notes)

        if not args.clients:
            writes()
            return
        from scale import questions

        load = _load([base], questions(), args.clients, SECONDS_A_NOTE * args.notes, False, writes, 0.0)
        print(json.dumps({"answers_by_status": load["statuses"], "refused": load["refused"], "ms": load["ms"]}), flush=True)


if __name__ == "__main__":
    main()
