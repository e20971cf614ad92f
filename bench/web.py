"""The page's speed in a real headless Chromium against `kg serve` on the demo: first paint, and query rendering after the API answers -> bench/RESULTS-web.md.

    python bench/web.py [--loads 20] [--out bench/RESULTS-web.md]

Targets (issue 12): first paint < 1 s; a query rendered < 300 ms after the API answers.
First paint is the browser's own first-contentful-paint of `/` (a fresh page load each time,
server warm); "rendered" is the page's own measure from the /query response parsed to the next
frame after the hits, why and graph drawings are in the DOM (`Kg.timings`).
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from chromium_cdp import Chromium, find_chromium, free_port, wait_for_http  # noqa: E402

from kg.cli.base import DEMO_DIR  # noqa: E402

QUESTIONS = [
    "LORA-02 的看门狗超时阈值是多少？",
    "数据库连接池和线程池配置有关系吗",
    "what breaks if redis-cluster goes down?",
    "nginx 超时应该怎么调整？",
    "订单服务依赖哪些组件？",
]


def build_demo(data: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    run = [sys.executable, "-m", "kg.cli"]
    subprocess.run([*run, "init", "--data-dir", str(data)], check=True, env=env, capture_output=True)
    for name in ("relations.csv", "synonyms.txt"):
        subprocess.run([*run, "import", str(DEMO_DIR / name), "--data-dir", str(data)], check=True, env=env, capture_output=True)
    subprocess.run([*run, "ingest", str(DEMO_DIR / "docs"), "--quiet", "--data-dir", str(data)], check=True, env=env, capture_output=True)


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def measure(base: str, chromium: str, loads: int, width: int) -> dict:
    with Chromium(chromium, width, 900) as browser:
        paints, loaded = [], []
        for i in range(loads):
            browser.send("Network.enable")
            browser.send("Network.setCacheDisabled", {"cacheDisabled": i % 2 == 0})  # half cold, half cached assets
            browser.goto(base + "/?lang=en")
            fcp = browser.wait_for("(performance.getEntriesByName('first-contentful-paint')[0] || {}).startTime")
            paints.append(fcp)
            loaded.append(browser.evaluate("performance.getEntriesByType('navigation')[0].loadEventEnd"))
        api, render = [], []
        for round_ in range(3):
            for question in QUESTIONS:
                before = int(browser.evaluate("document.body.dataset.searched || 0"))
                browser.type_text("#q", question)
                browser.press_enter()
                browser.wait_for(f"Number(document.body.dataset.searched || 0) > {before}", timeout=60)
                timing = browser.evaluate("Kg.timings[Kg.timings.length - 1]")
                if round_ > 0:  # round 0 warms the server's caches
                    api.append(timing["api_ms"])
                    render.append(timing["render_ms"])
    return {"width": width, "paints": paints, "loaded": loaded, "api": api, "render": render}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--loads", type=int, default=20)
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "RESULTS-web.md")
    args = parser.parse_args()
    chromium = find_chromium()
    if chromium is None:
        sys.exit("no Chromium found (Debian: apt-get install chromium)")
    with tempfile.TemporaryDirectory(prefix="kg-web-bench-") as folder:
        data = Path(folder) / "kb"
        build_demo(data)
        port = free_port()
        server = subprocess.Popen(
            [sys.executable, "-m", "kg.cli", "serve", "--port", str(port), "--data-dir", str(data)],
            env={**os.environ, "PYTHONPATH": str(ROOT)}, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        base = f"http://127.0.0.1:{port}"
        try:
            wait_for_http(base + "/health", timeout=90, process=server)
            urllib_warm(base)
            results = [measure(base, chromium, args.loads, width) for width in (1440, 360)]
        finally:
            server.terminate()
            server.wait(timeout=20)
    write_report(args.out, results, args.loads)
    print(args.out.read_text(encoding="utf-8"))


def urllib_warm(base: str) -> None:
    import json
    import urllib.request

    # The first query loads spaCy's pipeline and jieba's dictionary in the server: not the page's time.
    request = urllib.request.Request(base + "/query", data=json.dumps({"query": "warm up 预热"}).encode(),
                                     headers={"Content-Type": "application/json"})
    urllib.request.urlopen(request, timeout=120).read()


def write_report(path: Path, results: list[dict], loads: int) -> None:
    lines = [
        "# The web page: first paint and query rendering",
        "",
        f"`python bench/web.py --loads {loads}` on {time.strftime('%Y-%m-%d')}, {platform.machine()}, "
        f"{os.cpu_count()} cores (shared with other work), headless Chromium, `kg serve` on the demo knowledge base (65 documents).",
        "",
        "| width | first contentful paint p50 / p95 / max ms | load event p50 ms | /query answered p50 / p95 ms | rendered after the answer p50 / p95 / max ms |",
        "|---|---|---|---|---|",
    ]
    for r in results:
        lines.append(
            f"| {r['width']} px | {statistics.median(r['paints']):.0f} / {pct(r['paints'], 0.95):.0f} / {max(r['paints']):.0f} "
            f"| {statistics.median(r['loaded']):.0f} "
            f"| {statistics.median(r['api']):.0f} / {pct(r['api'], 0.95):.0f} "
            f"| {statistics.median(r['render']):.1f} / {pct(r['render'], 0.95):.1f} / {max(r['render']):.1f} |"
        )
    worst_paint = max(max(r["paints"]) for r in results)
    worst_render = max(max(r["render"]) for r in results)
    lines += [
        "",
        f"Targets: first paint < 1000 ms: {'met' if worst_paint < 1000 else 'missed'} (worst {worst_paint:.0f} ms); "
        f"query rendered < 300 ms after the API answers: {'met' if worst_render < 300 else 'missed'} (worst {worst_render:.1f} ms).",
        "",
        f"{loads} page loads per width (every other one with the browser cache off); {len(QUESTIONS)} questions "
        "asked twice after a warm-up round. \"Rendered\" runs from the parsed /query response to the next animation "
        "frame after the hits, their why, highlights and SVG paths are in the page.",
        "",
    ]
    path.write_text("\n".join(lines), encoding="utf-8")


if __name__ == "__main__":
    main()
