"""`kg ingest --workers N` against one process: a folder of Markdown files from the shared sets (bench/scale.py's
synthetic corpus) ingested into a new knowledge base, then a second, smaller folder into it, with 0, 1 and 2 worker
processes, runs interleaved. Wall time and CPU (the `kg` process and its workers), peak RSS of the writing process
and of the largest worker. Writes bench/RESULTS-workers.md and .json.

    nice -n 10 python bench/ingest_workers.py --work DIR [--documents 16000] [--repeats 2] [--workers 0,1,2]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

import scale  # noqa: E402  (the shared corpus, the measured process's environment)

RUN = ("import resource, sys, time, json, runpy; t = time.perf_counter(); sys.argv = ['kg'] + sys.argv[1:]\n"
       "try:\n    runpy.run_module('kg.cli', run_name='__main__')\nexcept SystemExit as e:\n    code = e.code\n"
       "me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)\n"
       "hwm = [int(x.split()[1]) for x in open('/proc/self/status') if x.startswith('VmHWM:')][0]\n"
       "print('@@' + json.dumps([me.ru_utime + me.ru_stime, kids.ru_utime + kids.ru_stime, hwm / 1024,"
       " kids.ru_maxrss / 1024, time.perf_counter() - t]), file=sys.stderr)")


def kg_ingest(folder: Path, data_dir: Path, workers: int, pycache: Path) -> dict:
    env = scale.child_env(data_dir, pycache)
    done = subprocess.run([sys.executable, "-c", RUN, "ingest", "--workers", str(workers), "--json", str(folder)],
                          env=env, capture_output=True, text=True, check=False)
    line = [x for x in done.stderr.splitlines() if x.startswith("@@")]
    if done.returncode or not line:
        raise RuntimeError(f"kg ingest --workers {workers}: {done.stderr[-2000:]}")
    me, kids, rss, kid_rss, wall = json.loads(line[-1][2:])
    report = json.loads(done.stdout)
    return {"wall_s": round(wall, 2), "cpu_s": round(me + kids, 2), "writer_cpu_s": round(me, 2),
            "writer_rss_mb": round(rss), "worker_rss_mb": round(kid_rss) if workers else None,
            "chunks": report["chunks_indexed"], "documents": report["added"] + report["updated"]}


def make_folders(work: Path, documents: int) -> tuple[Path, Path]:
    first, second = work / "first", work / "second"
    if (work / "folders.json").exists() and json.loads((work / "folders.json").read_text()) == documents:
        return first, second
    for folder in (first, second):
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
    docs = scale.synthetic_documents(scale.passages())
    for n in range(documents + documents // 4):
        title, text = next(docs)
        folder = first if n < documents else second
        (folder / f"d{n:06d}.md").write_text(f"# {title}\n\n{text}\n", encoding="utf-8")
    (work / "folders.json").write_text(json.dumps(documents))
    return first, second


def load() -> float:
    return os.getloadavg()[0]


def run(work: Path, documents: int, repeats: int, counts: list[int]) -> dict:
    work.mkdir(parents=True, exist_ok=True)
    first, second = make_folders(work, documents)
    pycache = work / "pycache"
    scale.compile_modules(pycache)
    runs = []
    for repeat in range(repeats):
        for workers in counts:
            data_dir = work / f"kb-{workers}"
            shutil.rmtree(data_dir, ignore_errors=True)
            before = load()
            new = kg_ingest(first, data_dir, workers, pycache)
            more = kg_ingest(second, data_dir, workers, pycache)
            runs.append({"repeat": repeat, "workers": workers, "new": new, "more": more, "load_before": round(before, 2)})
            print(json.dumps(runs[-1]), flush=True)
    return {"date": time.strftime("%Y-%m-%d"), "cores": os.cpu_count(), "python": platform.python_version(),
            "documents": documents, "runs": runs}


def render(result: dict) -> str:
    def med(workers: int, phase: str, key: str) -> float:
        return statistics.median(r[phase][key] for r in result["runs"] if r["workers"] == workers)

    counts = sorted({r["workers"] for r in result["runs"]})
    some = next(r for r in result["runs"])
    lines = [
        "# Ingest with worker processes (`kg ingest --workers N`, bench/ingest_workers.py)", "",
        f"One run, {result['date']}, {result['cores']} cores, Python {result['python']}; a folder of "
        f"{result['documents']:,} Markdown files from the shared sets ({some['new']['chunks']:,} chunks) into a new "
        f"knowledge base, then {some['more']['documents']:,} more files ({some['more']['chunks']:,} chunks) into it; "
        f"runs interleaved ({max(r['repeat'] for r in result['runs']) + 1} of each), medians. CPU = the `kg` process and "
        "its workers. Load average before each run: "
        + ", ".join(str(r["load_before"]) for r in result["runs"]) + ".", "",
        "| workers | new KB: wall s | CPU s | writer's CPU s | vs 0 workers (wall) | second folder: wall s | CPU s "
        "| vs 0 workers (wall) | writer RSS MB | largest worker RSS MB |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for workers in counts:
        lines.append(
            f"| {workers} | {med(workers, 'new', 'wall_s'):.1f} | {med(workers, 'new', 'cpu_s'):.1f} "
            f"| {med(workers, 'new', 'writer_cpu_s'):.1f} "
            f"| {med(0, 'new', 'wall_s') / med(workers, 'new', 'wall_s'):.2f}x "
            f"| {med(workers, 'more', 'wall_s'):.1f} | {med(workers, 'more', 'cpu_s'):.1f} "
            f"| {med(0, 'more', 'wall_s') / med(workers, 'more', 'wall_s'):.2f}x "
            f"| {med(workers, 'new', 'writer_rss_mb'):.0f} "
            f"| {'-' if not workers else format(med(workers, 'new', 'worker_rss_mb'), '.0f')} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work", type=Path, required=True, help="a scratch folder (the corpus and knowledge bases)")
    parser.add_argument("--documents", type=int, default=16000)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--workers", default="0,1,2")
    parser.add_argument("--render", action="store_true", help="only write RESULTS-workers.md from the .json")
    args = parser.parse_args()
    out = ROOT / "bench" / "RESULTS-workers.json"
    if args.render:
        result = json.loads(out.read_text())
    else:
        result = run(args.work, args.documents, args.repeats, [int(x) for x in args.workers.split(",")])
        out.write_text(json.dumps(result, indent=1) + "\n")
    table = render(result)
    md = ROOT / "bench" / "RESULTS-workers.md"
    notes = md.read_text().split("<!-- end of the measured table -->", 1)[1] if md.exists() else "\n"
    md.write_text(table + "<!-- end of the measured table -->" + notes)
    print(table)


if __name__ == "__main__":
    main()
