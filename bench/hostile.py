"""What an anonymous client can cost everyone else: the latency of ordinary queries, idle and while 8 clients send
`PUT /query` (a 405) or 4,000-character Chinese questions, on a real `kg serve` over loopback (bench/RESULTS-load.md).

    nice -n 10 python bench/hostile.py [--seconds 30] [--out bench/RESULTS-hostile.json]

Run it with another checkout first on PYTHONPATH to measure that code (the server is `python -m kg.cli serve`
in a process of its own, so it is whatever kgrag the path gives). One client asks ordinary 2-4 word questions
one after another; each phase lasts --seconds; every loop is bounded and stays on 127.0.0.1.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from load import questions, serve, stop, write_corpus  # noqa: E402

ZH_CHARS = "的一是在不了有和人这中大为上个国我以要他时来用们生到作地于出就分对成会可主发年动同工也能下过子说产种面而方后多定行学法所民得经十三之进着等部度家电力里如水化高自二理起小物现实加量都两体制机当使点从业本去把性好应开它合还因由其些然前外天政四日那社义事平形相全表间样与关各重新线内数正心反你明看原又么利比或但质气第向道命此变条只没结解问意建月公无系军很情者最立代想已通并提直题党程展五果料象员革位入常文总次品式活设及管特件长求老头基资边流路级少图山统接知较将组见计别她手角期根论运农指几九区强放决西被干做必战先回则任取据处队南给色光门即保治北造百规热领七海口东导器压志世金增争济阶油思术极交受联什认六共权收证改清己美再采转更单风切打白教速花带安场身车例真务具万每目至达走积示议声报斗完类八离华名确才科张信马节话米整空元况今集温传土许步群广石记需段研界拉林律叫且究观越织装影算低持音众书布复容儿须际商非验连断深难近矿千周委素技备半办青省列习响约支般史感劳便团往酸历市克何除消构府称太准精值号率族维划选标写存候毛亲快效斯院查江型眼王按格养易置派层片始却专状育厂京识适属圆包火住调满县局照参红细引听该铁价严"


def ordinary(port: int, seconds: float) -> dict:
    """One client, one keep-alive connection, ordinary questions one after another."""
    asked = questions(200, seed=9)
    ms, errors = [], 0
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    deadline = time.perf_counter() + seconds
    i = 0
    while time.perf_counter() < deadline:
        started = time.perf_counter()
        try:
            conn.request("POST", "/query", body=json.dumps({"query": asked[i % len(asked)]}),
                         headers={"Content-Type": "application/json"})
            conn.getresponse().read()
            ms.append((time.perf_counter() - started) * 1e3)
        except (OSError, http.client.HTTPException):
            errors += 1
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
        i += 1
    ms.sort()
    pct = (lambda p: round(ms[min(len(ms) - 1, int(p * len(ms)))], 1)) if ms else (lambda p: None)
    return {"queries": len(ms), "p50_ms": pct(0.5), "p95_ms": pct(0.95), "errors": errors}


def attackers(port: int, n: int, make_request, stop_event: threading.Event, out: dict) -> list[threading.Thread]:
    def loop(i: int) -> None:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
        while not stop_event.is_set():
            method, body = make_request(i)
            started = time.perf_counter()
            try:
                conn.request(method, "/query", body=body, headers={"Content-Type": "application/json"})
                response = conn.getresponse()
                response.read()
                status = response.status
            except (OSError, http.client.HTTPException) as e:
                status = type(e).__name__
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
            with lock:
                out.setdefault("statuses", {}).setdefault(str(status), 0)
                out["statuses"][str(status)] += 1
                out.setdefault("ms", []).append((time.perf_counter() - started) * 1e3)

    lock = threading.Lock()
    threads = [threading.Thread(target=loop, args=(i,), daemon=True) for i in range(n)]
    for t in threads:
        t.start()
    return threads


def under_attack(port: int, seconds: float, n: int, make_request) -> dict:
    stop_event, out = threading.Event(), {}
    threads = attackers(port, n, make_request, stop_event, out)
    time.sleep(2)
    result = ordinary(port, seconds)
    stop_event.set()
    for t in threads:
        t.join(600)
    ms = sorted(out.get("ms", []))
    result["attack"] = {"requests": len(ms), "statuses": out.get("statuses", {}),
                        "p50_ms": round(ms[len(ms) // 2], 1) if ms else None}
    return result


def long_question(i: int) -> str:
    rng = random.Random(i)
    return "".join(rng.choice(ZH_CHARS) for _ in range(4000))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=30)
    parser.add_argument("--attackers", type=int, default=8)
    parser.add_argument("--docs", type=int, default=400)
    parser.add_argument("--label", default="this checkout")
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "RESULTS-hostile.json")
    args = parser.parse_args()
    env = {k: v for k, v in os.environ.items() if not k.startswith("KG_")}
    results: dict = {"label": args.label, "seconds": args.seconds, "attackers": args.attackers}
    long_bodies = [json.dumps({"query": long_question(i)}) for i in range(16)]
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        write_corpus(root / "docs", args.docs, 5, seed=1, tag="base")
        subprocess.run([sys.executable, "-m", "kg.cli", "ingest", str(root / "docs"), "--data-dir", str(root / "kb"), "-q"],
                       env=env, check=True, capture_output=True, timeout=3600)
        log = root / "serve.log"
        server, port = serve(root / "kb", 1, env, log)
        try:
            results["idle"] = ordinary(port, args.seconds)
            results["while_405s"] = under_attack(port, args.seconds, args.attackers, lambda i: ("PUT", b"{}"))
            results["while_4000_char_questions"] = under_attack(
                port, args.seconds, args.attackers, lambda i: ("POST", long_bodies[i % len(long_bodies)]))
        finally:
            results["server_log"] = stop(server, log)
    idle = results["idle"]["p50_ms"]
    for phase in ("while_405s", "while_4000_char_questions"):
        results[phase]["p50_vs_idle"] = round(results[phase]["p50_ms"] / idle, 2) if idle and results[phase]["p50_ms"] else None
    args.out.write_text(json.dumps(results, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print(json.dumps(results, indent=2, ensure_ascii=False))


if __name__ == "__main__":
    main()
