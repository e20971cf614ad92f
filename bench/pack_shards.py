"""Packs on databases of their own (KG_PACK_DATABASES, retrieval/index/postgres_shards.py) against one schema holding
everything: the same top 10, and what the fan-out costs a search.

    python bench/pack_shards.py [--dsn DSN] [--sets ops_dev_zh,...] [--packs 1,7] [--out bench/RESULTS-backends.md]

Each set's passages (bench/backends.py's `load_set`) go into one PostgreSQL schema, and again dealt by document (in
the order of their ids) to the knowledge base's own database and one database per pack (`--packs`: 1 = every second
document is the pack's; 7 = eight databases). Every question is searched as the query path searches (words + Chinese character pairs at 0.5): over the
whole index, and inside the pack (as a question routed to it is), k=10 compared (same within ties, as bench/backends.py
says), k=200 timed warm (the second pass). Both databases are on one server here, so the fan-out's cost is its extra
round trips and merging, not a second machine's. Without --dsn a throw-away PostgreSQL is started in a temp dir.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
for extra in (REPO_ROOT, REPO_ROOT / "tests", REPO_ROOT / "bench"):
    if str(extra) not in sys.path:
        sys.path.insert(0, str(extra))

from backends import _ms, load_set  # noqa: E402
from result_sections import put_section  # noqa: E402

from retrieval.index.analysis import cjk_bigrams, query_terms  # noqa: E402
from retrieval.migration import same_within_ties  # noqa: E402

SETS = ["demo", "ops_dev_zh", "gitlab_handbook_dev", "domainrag_zh_dev", "2wiki_dev"]
_START, _END = "## Packs on databases of their own (bench/pack_shards.py)", "<!-- end of the pack shards table -->"


def _timed(search, queries) -> tuple[list, dict]:
    top10 = [[(h.chunk_id, h.score) for h in search(t, 10, g)] for t, g in queries]
    passes = []
    for _ in range(2):
        times = []
        for terms, grams in queries:
            start = time.perf_counter()
            search(terms, 200, grams)
            times.append((time.perf_counter() - start) * 1000)
        passes.append(_ms(times))
    return top10, passes[1]


def _searcher(index, part: str, inside: frozenset[str]):
    """search(terms, k, grams) over the whole index, or inside the pack's documents (as a routed question)."""
    target = index if part == "whole" else index.scoped(inside)
    return lambda terms, k, grams: target.search(terms, k, grams=grams)


def run_set(name: str, dsn: str, pack_dsns: list[str]) -> dict:
    """The set in one schema, and split round robin by document between the knowledge base's own database and one
    pack on each of `pack_dsns` (the first pack's documents are the routed search's scope)."""
    from retrieval.index.postgres_index import PostgresIndex
    from retrieval.index.postgres_shards import ShardedIndex

    chunks, questions = load_set(name)
    queries = [([(t, 1.0) for t in query_terms(q)], [(g, 0.5) for g in dict.fromkeys(cjk_bigrams(q))]) for q in questions]
    docs = sorted({c.doc_id for c in chunks})
    groups = len(pack_dsns) + 1
    pack = {d: (f"p{i % groups}" if i % groups else None) for i, d in enumerate(docs)}
    inside = frozenset(d for d, p in pack.items() if p == "p1")
    schema = "shards_" + name.lower()
    one = PostgresIndex(dsn, schema + "_one")
    sharded = ShardedIndex(PostgresIndex(dsn, schema), {f"p{n}": PostgresIndex(pack_dsn, f"{schema}_p{n}")
                                                        for n, pack_dsn in enumerate(pack_dsns, start=1)})
    sharded.bind(lambda ids: {d: pack.get(d) for d in ids})
    try:
        for index in (one, sharded):
            index.add_chunks(chunks)
            index.commit(replace_all=True)
        out = {"set": name, "chunks": len(chunks), "questions": len(questions), "databases": groups,
               "pack_chunks": sum(c.doc_id in inside for c in chunks)}
        for part in ("whole", "pack"):
            a, ms_one = _timed(_searcher(one, part, inside), queries)
            b, ms_sharded = _timed(_searcher(sharded, part, inside), queries)
            same = [same_within_ties(x, y) for x, y in zip(a, b, strict=True)]
            out[part] = {"identical": sum(same), "answered": sum(bool(x) for x in a), "one_ms": ms_one,
                         "sharded_ms": ms_sharded, "differing": [questions[i] for i, ok in enumerate(same) if not ok][:3]}
        return out
    finally:
        one.close()
        sharded.close()


def write_markdown(results: list[dict], path: Path, meta: str) -> None:
    lines = [_START, "", meta, "",
             "| set | databases | chunks (in the pack searched) | questions | identical top 10, whole / inside the pack | "
             "warm k=200 p50 / p95 ms, whole: one schema / sharded | inside the pack: one schema / its database |",
             "|---|---|---|---|---|---|---|"]
    for r in results:
        w, p = r["whole"], r["pack"]
        lines.append(f"| {r['set']} | {r['databases']} | {r['chunks']:,} ({r['pack_chunks']:,}) | {r['questions']} | "
                     f"{w['identical']} / {r['questions']}, {p['identical']} / {r['questions']} | "
                     f"{w['one_ms']['p50']} / {w['one_ms']['p95']}; {w['sharded_ms']['p50']} / {w['sharded_ms']['p95']} | "
                     f"{p['one_ms']['p50']} / {p['one_ms']['p95']}; {p['sharded_ms']['p50']} / {p['sharded_ms']['p95']} |")
    lines.append(_END)
    put_section(path, "\n".join(lines), _START, _END)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dsn", default=None, help="a PostgreSQL where this user may CREATE DATABASE")
    parser.add_argument("--sets", default=",".join(SETS))
    parser.add_argument("--out", type=Path, default=REPO_ROOT / "bench" / "RESULTS-backends.md")
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--packs", default="1", help="packs on databases of their own, e.g. 1,7 (each count a run)")
    args = parser.parse_args()
    from contextlib import nullcontext

    import psycopg
    from backends_servers import postgres_server
    from psycopg.conninfo import make_conninfo

    with (nullcontext(args.dsn) if args.dsn else postgres_server()) as server:
        if isinstance(server, str) and not args.dsn:
            sys.exit(server)
        dsn = args.dsn or server.url
        counts = [int(n) for n in args.packs.split(",")]
        with psycopg.connect(dsn, autocommit=True) as conn:
            for n in range(1, max(counts) + 1):
                if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (f"kgrag_bench_packs_{n}",)).fetchone():
                    conn.execute(f"CREATE DATABASE kgrag_bench_packs_{n}")
            version = conn.execute("SHOW server_version").fetchone()[0]
        results = []
        for count in counts:
            pack_dsns = [make_conninfo(dsn, dbname=f"kgrag_bench_packs_{n}") for n in range(1, count + 1)]
            for name in args.sets.split(","):
                results.append(run_set(name, dsn, pack_dsns))
                print(json.dumps(results[-1], ensure_ascii=False), flush=True)
    meta = (f"One run, {time.strftime('%Y-%m-%d')}, {platform.machine()}, Python {platform.python_version()}; PostgreSQL "
            f"{version}, every database on one server on a Unix socket; one process, one thread. The documents are dealt "
            "round robin to the knowledge base's own database and each pack's (with one pack, every second document). Identical = bench/backends.py's test (scores equal to 1e-9, ids equal but among equal scores).")
    write_markdown(results, args.out, meta)
    if args.json:
        args.json.write_text(json.dumps(results, indent=1, ensure_ascii=False), encoding="utf-8")


if __name__ == "__main__":
    main()
