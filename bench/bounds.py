"""The issue's bounds, measured with the real CLI and server: a synthetic 190k-row relation table in, peak RSS of `kg import`, the next `kg stats` wall time, the billion-laughs refusal time and the 413 time for a 50 MB body out (bench/RESULTS-bounds.json, bench/RESULTS.md "Bounds").

    python bench/bounds.py [--rows 190000] [--scale 600000,1000000] [--pad 500] [--out bench/RESULTS-bounds.json]

Each command runs in a process of its own; peak RSS is that process's ru_maxrss (os.wait4).
`--scale` adds, per size, the whole `kg import` into a fresh knowledge base and the relation-table
import alone (`kg.relations.import_relation_table` into the base ontology, no save, relink or
cache), to show how memory grows with the table and with the graph it makes; `--pad` measures the
same for a table of --rows rows with an extra ignored column: more text, the same graph.
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
import time
from pathlib import Path

LAUGHS = """<?xml version="1.0"?>
<!DOCTYPE rdf:RDF [
 <!ENTITY a "lollollollollollollollollollol">
 <!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">
 <!ENTITY c "&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;">
 <!ENTITY d "&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;">
 <!ENTITY e "&d;&d;&d;&d;&d;&d;&d;&d;&d;&d;">
 <!ENTITY f "&e;&e;&e;&e;&e;&e;&e;&e;&e;&e;">
 <!ENTITY g "&f;&f;&f;&f;&f;&f;&f;&f;&f;&f;">
 <!ENTITY h "&g;&g;&g;&g;&g;&g;&g;&g;&g;&g;">
 <!ENTITY i "&h;&h;&h;&h;&h;&h;&h;&h;&h;&h;">
]>
<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#" xmlns:rdfs="http://www.w3.org/2000/01/rdf-schema#">
 <rdf:Description rdf:about="https://kgrag.dev/entity/x"><rdfs:label>&i;</rdfs:label></rdf:Description>
</rdf:RDF>
"""
RELATIONS = (("dependsOn", "Service", "Service"), ("runtimeDependsOn", "Service", "Service"), ("ownedBy", "Service", "Team"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from load import free_port, wait_for_server  # noqa: E402


def write_table(path: Path, rows: int, seed: int = 7, pad: int = 0) -> None:
    """`pad` > 0 adds a `problem` column (which the importer ignores) of that many characters a row:
    more text, the same graph."""
    rng = random.Random(seed)
    entities = max(1000, rows // 3)
    seen: set[tuple[str, str, str]] = set()
    padding = ("," + "x" * pad) if pad else ""
    with path.open("w", encoding="utf-8") as fh:
        fh.write("source,relation,target,source_type,target_type,source_aliases,target_aliases,weight,note"
                 + (",problem" if pad else "") + "\n")
        while len(seen) < rows:
            name, source_type, target_type = RELATIONS[rng.randrange(3)]
            source = f"svc-{rng.randrange(entities)}"
            target = f"team-{rng.randrange(500)}" if target_type == "Team" else f"svc-{rng.randrange(entities)}"
            if source == target or (source, name, target) in seen:
                continue
            seen.add((source, name, target))
            fh.write(f"{source},{name},{target},{source_type},{target_type},服务{source[4:]},,,{padding}\n")


def run_measured(args: list[str], env: dict) -> tuple[int, float, str]:
    """(exit code, wall seconds, stderr) of one kg command in its own process."""
    code, wall, err, _ = run_peak([sys.executable, "-m", "kg.cli", *args], env)
    return code, wall, err


def run_peak(argv: list[str], env: dict) -> tuple[int, float, str, float]:
    """(exit code, wall seconds, stderr, peak RSS MB) of one process (its own ru_maxrss, os.wait4)."""
    started = time.perf_counter()
    with tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        wall = time.perf_counter() - started
        err.seek(0)
        text = err.read().decode("utf-8", "replace")
    return proc.returncode, wall, text, usage.ru_maxrss / 1024


IMPORT_ALONE = """
import json, resource, sys, time
from pathlib import Path
from kg.relations import import_relation_table
from ontology import BASE_ONTOLOGY_PATH, Vocabulary, load_rdf
graph = load_rdf(BASE_ONTOLOGY_PATH)
before = len(graph)
started = time.perf_counter()
report = import_relation_table(graph, Path(sys.argv[1]), Vocabulary.from_graph(graph))
print(json.dumps({"seconds": round(time.perf_counter() - started, 1), "rows": report.rows,
                  "new_entities": report.new_entities, "triples_added": len(graph) - before}))
"""


def measure_scale(root: Path, rows: int, env: dict, pad: int = 0) -> dict:
    """Peak RSS of the whole `kg import` and of the relation-table import alone, for one table size."""
    table = root / f"relations-{rows}.csv"
    write_table(table, rows, pad=pad)
    out: dict = {"rows": rows, "table_mb": round(table.stat().st_size / 1e6, 1)} | ({"pad_bytes": pad} if pad else {})
    data_dir = root / f"kb-{rows}-{pad}"  # a fresh knowledge base each time
    subprocess.run([sys.executable, "-m", "kg.cli", "init", "--data-dir", str(data_dir)], env=env, check=True,
                   capture_output=True)
    code, wall, err, peak = run_peak([sys.executable, "-m", "kg.cli", "import", str(table), "--data-dir",
                                      str(data_dir), "-q"], env)
    assert code == 0, err[-2000:]
    out.update(import_seconds=round(wall, 1), import_peak_rss_mb=round(peak),
               graph_ttl_mb=round((data_dir / "graph.ttl").stat().st_size / 1e6, 1))
    with tempfile.TemporaryFile() as result:
        started = time.perf_counter()
        proc = subprocess.Popen([sys.executable, "-c", IMPORT_ALONE, str(table)], env=env, stdout=result,
                                stderr=subprocess.PIPE)
        _, status, usage = os.wait4(proc.pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0, proc.stderr.read()[-2000:]
        result.seek(0)
        alone = json.loads(result.read())
    alone["peak_rss_mb"] = round(usage.ru_maxrss / 1024)
    alone["wall_seconds"] = round(time.perf_counter() - started, 1)
    out["relation_import_alone"] = alone
    table.unlink()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=190_000)
    parser.add_argument("--scale", default="", help="comma-separated table sizes (rows) to measure memory growth at")
    parser.add_argument("--pad", type=int, default=0,
                        help="also measure a --rows table with an ignored column of this many characters a row")
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "RESULTS-bounds.json")
    args = parser.parse_args()
    env = {k: v for k, v in os.environ.items() if not k.startswith("KG_")}
    results: dict = {"rows": args.rows}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        table = root / "relations.csv"
        write_table(table, args.rows)
        results["table_mb"] = round(table.stat().st_size / 1e6, 1)
        data_dir = str(root / "kb")
        subprocess.run([sys.executable, "-m", "kg.cli", "init", "--data-dir", data_dir], env=env, check=True,
                       capture_output=True)
        code, wall, err, peak = run_peak([sys.executable, "-m", "kg.cli", "import", str(table), "--data-dir",
                                          data_dir, "-q"], env)
        assert code == 0, err[-2000:]
        results["import_seconds"] = round(wall, 1)
        results["import_peak_rss_mb"] = round(peak)
        results["graph_ttl_mb"] = round((root / "kb" / "graph.ttl").stat().st_size / 1e6, 1)
        for n in (1, 2):
            code, wall, err = run_measured(["stats", "--data-dir", data_dir, "--json"], env)
            assert code == 0, err[-2000:]
            results[f"stats_seconds_run{n}"] = round(wall, 2)
        laughs = root / "laughs.rdf"
        laughs.write_text(LAUGHS, encoding="utf-8")
        code, wall, err = run_measured(["import", str(laughs), "--data-dir", data_dir], env)
        results["billion_laughs"] = {"exit_code": code, "seconds": round(wall, 2), "error": err.strip().splitlines()[-1][:160]}
        results["body_413"] = _post_50mb(root, env)
        sizes = [int(n) for n in args.scale.split(",") if n.strip()]
        results["scale"] = [measure_scale(root, n, env) for n in sorted({args.rows, *sizes})] if sizes else []
        if args.pad:
            results["padded"] = measure_scale(root, args.rows, env, pad=args.pad)
    args.out.write_text(json.dumps(results, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print(json.dumps(results, indent=2, ensure_ascii=False))


def _post_50mb(root: Path, env: dict) -> dict:
    port = free_port()
    server = subprocess.Popen([sys.executable, "-m", "kg.cli", "serve", "--port", str(port), "--data-dir",
                               str(root / "kb-serve")], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for_server(port)
        body = b"x" * 50_000_000
        times = []
        for _ in range(3):
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            started = time.perf_counter()
            conn.putrequest("POST", "/documents")
            conn.putheader("Content-Type", "application/json")
            conn.putheader("Content-Length", str(len(body)))
            conn.endheaders()
            try:  # the server answers before the body is sent; it may close while we send
                conn.sock.sendall(body[:65536])
            except (TimeoutError, BrokenPipeError, ConnectionResetError):
                pass
            response = conn.getresponse()
            payload = response.read()
            times.append(time.perf_counter() - started)
            conn.close()
        return {"status": response.status, "ms_best": round(min(times) * 1e3, 1), "ms_worst": round(max(times) * 1e3, 1),
                "body": json.loads(payload)}
    finally:
        server.terminate()
        server.wait(30)


if __name__ == "__main__":
    main()
