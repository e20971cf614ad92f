"""bench/scale.py's saved results (WORK/results.json) in, the tables of bench/RESULTS-scale.md out (`--render`);
the prose around them is written by hand."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

__all__ = ["render"]


def render(work: Path) -> str:
    """The tables of RESULTS-scale.md from the saved checkpoints (the prose around them is written by hand)."""
    results = json.loads((work / "results.json").read_text())
    rows = results["checkpoints"]
    out = ["| chunks | segments | ingest ms CPU/chunk (since last) | FTS5 | tantivy | kg / FTS5 | peak RSS MB | disk MB (B/chunk) | "
           "FTS5 MB | tantivy MB |", "|" + "---|" * 10]
    for r in rows:
        out.append(f"| {r['chunks']:,} | {r['segments']} | {r['ingest_ms_per_chunk']} | {r['fts5_ms_per_chunk']} | "
                   f"{r.get('tantivy_ms_per_chunk', '-')} | {r['ingest_ms_per_chunk'] / r['fts5_ms_per_chunk']:.1f}x | "
                   f"{r['ingest_peak_rss_mb']} | {r['disk_mb']} ({r['kg_bytes_per_chunk']:,}) | {r['fts5_disk_mb']} | "
                   f"{r.get('tantivy_disk_mb', '-')} |")
    probed = [r for r in rows if r.get("probe")]
    if probed:
        first = probed[0]["probe"]["ms_per_chunk"]
        out += ["", "| chunks | probe: the same documents, ms CPU/chunk (merges held off) | vs the first checkpoint | "
                "FTS5, same chunks | kg / FTS5 |", "|" + "---|" * 5]
        for r in probed:
            p = r["probe"]
            out.append(f"| {r['chunks']:,} | {p['ms_per_chunk']} ({p['chunks']:,} chunks, {p['characters'] / 1e3:,.0f}k characters) "
                       f"| {(p['ms_per_chunk'] / first - 1) * 100:+.0f}% | {p['fts5_ms_per_chunk']} | "
                       f"{p['ms_per_chunk'] / p['fts5_ms_per_chunk']:.1f}x |")
    out += ["", "| chunks | full p50/p95 ms CPU | bm25 p50/p95 | FTS5 p50/p95 | tantivy p50/p95 | full / FTS5 (p50) | "
            "cold `kg query` CPU s (wall) | edit CPU s (wall) | unchanged folder CPU s (wall) | `kg serve` to /health "
            "CPU s (wall) | serve RSS MB |", "|" + "---|" * 11]
    for r in rows:
        def pair(q):
            return f"{q['p50_ms']} / {q['p95_ms']}" if q else "-"
        e, u, sv, c = r["edit"]["edit"], r["edit"]["unchanged"], r["serve"], r["kg_query_cold"]
        out.append(f"| {r['chunks']:,} | {pair(r['query_full'])} | {pair(r['query_bm25'])} | {pair(r['query_fts5'])} | "
                   f"{pair(r.get('query_tantivy'))} | {r['query_full']['p50_ms'] / r['query_fts5']['p50_ms']:.1f}x | "
                   f"{c['cpu_s']} ({c['wall_s']}) | {e['cpu_s']} ({e['wall_s']}) | {u['cpu_s']} ({u['wall_s']}) | "
                   f"{sv['to_health_cpu_s']} ({sv['to_health_wall_s']}) | {sv['rss_after_queries_mb']} |")
    if results.get("remeasured"):
        out += ["", "| chunks | code | compiled modules | load avg | cold `kg query` CPU s | edit CPU s (wall) | "
                "unchanged folder CPU s (wall) | `kg serve` to /health CPU s (wall) |", "|" + "---|" * 8]
        for m in results["remeasured"]:
            rounds = m["rounds"]
            out.append(f"| {m['chunks']:,} | {m['code']} | {'yes' if m['bytecode'] else 'no'} | {m['load_average'][0]} | "
                       f"{_median(rounds, 'kg_query_cold', 'cpu_s')} | {_median(rounds, 'edit', 'edit', 'cpu_s')} "
                       f"({_median(rounds, 'edit', 'edit', 'wall_s')}) | {_median(rounds, 'edit', 'unchanged', 'cpu_s')} "
                       f"({_median(rounds, 'edit', 'unchanged', 'wall_s')}) | {_median(rounds, 'serve', 'to_health_cpu_s')} "
                       f"({_median(rounds, 'serve', 'to_health_wall_s')}) |")
    return "\n".join(out) + "\n"


def _median(rounds: list[dict], *path: str) -> float:
    """The median over the re-measured rounds of one number (`path`: its keys)."""
    values = []
    for row in rounds:
        for key in path:
            row = row[key]
        values.append(row)
    return round(statistics.median(values), 2)
