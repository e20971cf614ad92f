"""A fresh install and the first commands a new user runs, measured: the README's first command's install (a new
virtual environment, `pip install -c constraints.txt -e .`) in wall seconds and the environment's size on disk, then
cold start-up of `kg --help`, `kg query` and `kg ask` (no model configured) over N fresh processes each (min /
median / max, wall from spawn to exit), on the demo knowledge base, and the test suite's time from a pytest log.
Writes bench/RESULTS-install.md.

    nice -n 10 python bench/install.py --venv DIR [--runs 20] [--suite-log pytest.log] [--reuse-venv]

Bytecode is compiled first (`compileall`), as an installed tool has it: the machines this runs on set
PYTHONDONTWRITEBYTECODE=1, so without it every process would compile the sources again.
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "RESULTS-install.md"
QUESTION = "redis-cluster 宕机会影响哪些服务？"


def _size(path: Path) -> int:
    total = 0
    for root, _, files in os.walk(path):
        for name in files:
            try:
                total += os.lstat(os.path.join(root, name)).st_size
            except OSError:
                pass
    return total


def install(venv: Path, reuse: bool) -> dict:
    if reuse and (venv / "bin" / "kg").exists():
        return {"seconds": None, "bytes": _size(venv), "reused": True}
    shutil.rmtree(venv, ignore_errors=True)
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run([str(venv / "bin" / "pip"), "install", "-q", "-c", str(ROOT / "constraints.txt"), "-e", str(ROOT)],
                   check=True, cwd=ROOT)
    seconds = time.perf_counter() - start
    return {"seconds": seconds, "bytes": _size(venv), "reused": False}


def compile_all(python: Path) -> None:
    site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    for folder in (site, *(str(ROOT / p) for p in ("kg", "retrieval", "api", "ontology"))):
        subprocess.run([str(python), "-m", "compileall", "-q", "-j", "1", folder], capture_output=True, check=False)


def cold(python: Path, args: list[str], runs: int, cwd: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("KG_")}
    env.pop("PYTHONPATH", None)  # the installed package, as a user runs it
    times = []
    subprocess.run([str(python), "-m", "kg.cli", *args], cwd=cwd, env=env, capture_output=True, check=True)  # untimed
    for _ in range(runs):
        start = time.perf_counter()
        done = subprocess.run([str(python), "-m", "kg.cli", *args], cwd=cwd, env=env, capture_output=True, check=False)
        times.append(time.perf_counter() - start)
        if done.returncode != 0:
            raise SystemExit(f"kg {' '.join(args)} failed: {done.stderr.decode()[-1000:]}")
    return {"min": min(times), "median": statistics.median(times), "max": max(times), "runs": runs}


def suite_time(log: Path | None) -> str:
    if log is None or not log.exists():
        return "not measured in this run"
    text = log.read_text(encoding="utf-8", errors="replace")
    found = re.findall(r"^=*\s*(.*(?:passed|failed).* in [0-9.]+s.*?)\s*=*$", text, re.M)
    return found[-1] if found else "no summary line in the log"


def render(report: dict) -> str:
    inst = report["install"]
    lines = [
        "# A fresh install and the first commands (`bench/install.py`)",
        "",
        f"Measured {report['date']} on {report['machine']}, Python {report['python']}; the machine is shared (2 cores,",
        "other jobs running), so these are a loaded machine's numbers. Each command: one untimed run, then "
        f"{report['runs']} fresh processes, wall from spawn to exit, bytecode precompiled, no KG_* variables.",
        "",
        "| what | result |",
        "|---|---|",
        ("| install: new venv + `pip install -c constraints.txt -e .` | "
         + ("(venv reused: not timed)" if inst["reused"] else f"{inst['seconds']:.0f} s (pip's download cache warm)") + " |"),
        f"| the virtual environment on disk | {inst['bytes'] / 2**20:.0f} MB |",
    ]
    for name, t in report["cold"].items():
        lines.append(f"| `{name}` cold, min / median / max | {t['min']:.2f} / {t['median']:.2f} / {t['max']:.2f} s |")
    lines += [f"| the test suite (`python -m pytest`, one run) | {report['suite']} |", ""]
    if "load" in report:
        lines += [f"Load average (1 min) at the start and the end: {report['load'][0]:.1f}, {report['load'][1]:.1f}.", ""]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--venv", type=Path, default=Path(tempfile.gettempdir()) / "kgrag-bench-venv")
    parser.add_argument("--reuse-venv", action="store_true", help="keep an existing venv (install not timed)")
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--suite-log", type=Path, default=None, help="a pytest log whose last summary line is the suite's time")
    args = parser.parse_args()
    load_before = os.getloadavg()[0]
    inst = install(args.venv, args.reuse_venv)
    python = args.venv / "bin" / "python"
    compile_all(python)
    with tempfile.TemporaryDirectory(prefix="kgrag-bench-") as scratch:
        work = Path(scratch)
        subprocess.run([str(python), "-m", "kg.cli", "demo", "--quiet", "--data-dir", "demo"], cwd=work,
                       capture_output=True, check=True)
        commands = {
            "kg --help": ["--help"],
            "kg query": ["query", QUESTION, "--data-dir", "demo"],
            "kg ask (no model)": ["ask", QUESTION, "--data-dir", "demo"],
        }
        timings = {name: cold(python, argv, args.runs, work) for name, argv in commands.items()}
    report = {"date": time.strftime("%Y-%m-%d"), "machine": f"{platform.machine()}, {os.cpu_count()} cores",
              "python": platform.python_version(), "runs": args.runs, "install": inst, "cold": timings,
              "suite": suite_time(args.suite_log), "load": (load_before, os.getloadavg()[0])}
    RESULTS.write_text(render(report), encoding="utf-8")
    print(render(report))


if __name__ == "__main__":
    main()
