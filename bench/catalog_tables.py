"""The catalog as tables in PostgreSQL (KG_CATALOG) against the catalog file each server keeps a copy of: the same
answers, and what each costs a query, a write, and a new server.

    python bench/catalog_tables.py [--dsn DSN] [--sets ops_dev_zh,...] [--out bench/RESULTS-backends.md]
    python bench/catalog_tables.py --synthetic 91200 [--sets ""]   # also bench/scale.py's corpus, ~100k chunks

Each set goes twice through the real write path (`fill_knowledge_base`: its ontology, relation table, aliases and
passages) into a knowledge base on the PostgreSQL text index: once with the catalog file in the data dir (published in
pieces for other servers), once with KG_CATALOG naming the same server. Every question is asked in full mode (k=10)
on both: the hits compared (chunk ids in order), and timed twice, the second pass reported (warm). Then on each: a
second server's data dir opened (what `kg init` on a new machine does: restore the published catalog, or only the
small files), and one note ingested through the first server (a commit: catalog, index, publication). Wall times in
one process on this shared machine; both variants of a set run back to back. Without --dsn a throw-away PostgreSQL is
started in a temp dir. `--synthetic N`: a row for N documents of bench/scale.py's synthetic corpus (the shared sets'
passages, copies with their sentences rotated), ingested 10,000 documents a commit, asked scale.py's 120 questions.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import tempfile
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
for extra in (REPO_ROOT, REPO_ROOT / "tests", REPO_ROOT / "bench"):
    if str(extra) not in sys.path:
        sys.path.insert(0, str(extra))

from backends import SHARED, _ms  # noqa: E402
from result_sections import put_section  # noqa: E402

SETS = ["ops_dev_zh", "gitlab_handbook_dev", "domainrag_zh_dev", "rgb_zh_dev", "2wiki_dev", "hotpotqa_train100", "musique_train100"]
_START, _END = "## The catalog as tables (bench/catalog_tables.py)", "<!-- end of the catalog tables table -->"


def _size(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file() and not p.is_symlink())


def _fill(kb, name: str) -> list[tuple[str, str]]:
    """A shared set (`fill_knowledge_base`) or N synthetic documents ("synthetic:N") into `kb`; the questions to ask."""
    if name.startswith("synthetic:"):
        import itertools

        from scale import passages, questions, synthetic_documents

        from retrieval.types import SourceDocument

        documents = itertools.islice(synthetic_documents(passages()), int(name.split(":")[1]))
        while batch := [SourceDocument(source=source, text=text) for source, text in itertools.islice(documents, 10_000)]:
            kb.ingest_documents(batch)
        return [(str(i), q) for i, q in enumerate(questions())]
    from retrieval.eval.datasets import load_dataset
    from retrieval.eval.evaluate import fill_knowledge_base

    dataset = load_dataset(SHARED / name, None, drop_empty_gold=True)
    fill_knowledge_base(kb, dataset)
    return [(q.id, q.question) for q in dataset.questions]


def run_variant(name: str, dsn: str, work: Path, tables: bool) -> dict:
    from kg.settings import Settings
    from retrieval.pipeline import KnowledgeBase
    from retrieval.types import SourceDocument

    schema = f"{'ct' if tables else 'cf'}_{name.replace(':', '_')}"
    backends = {"text_backend": "postgres", "postgres_dsn": dsn, "postgres_schema": schema,
                "catalog": dsn if tables else None}
    out: dict = {}
    with KnowledgeBase(Settings(data_dir=work / schema / "a", **backends), create=True) as kb:
        started = time.perf_counter()
        asked = _fill(kb, name)
        out["ingest_s"] = round(time.perf_counter() - started, 2)
        out["chunks"] = kb.store.stats()["chunks"]
        hits, passes = {}, []
        for _ in range(2):
            times = []
            for qid, question in asked:
                started = time.perf_counter()
                result = kb.query(question, k=10)
                times.append((time.perf_counter() - started) * 1000)
                hits[qid] = [h.chunk_id for h in result.hits]
            passes.append(_ms(times))
        out["hits"], out["query_ms"] = hits, passes[1]
        out["data_dir_bytes"] = _size(work / schema / "a")
        started = time.perf_counter()
        with KnowledgeBase(Settings(data_dir=work / schema / "b", **backends), create=True) as second:
            out["second_open_s"] = round(time.perf_counter() - started, 2)
            out["second_dir_bytes"] = _size(work / schema / "b")
            note = SourceDocument(source="bench:note", title="Catalog bench note", text="# Catalog bench note\n\n"
                                  "The zqxjcatalog note is one paragraph added after the set.\n")
            started = time.perf_counter()
            kb.ingest_documents([note])
            out["write_s"] = round(time.perf_counter() - started, 2)
            started = time.perf_counter()
            found = [h.title for h in second.query("zqxjcatalog", k=3).hits]
            out["second_sees_write_s"] = round(time.perf_counter() - started, 2)
            out["second_sees_write"] = found[:1] == ["Catalog bench note"]
    return out


def write_markdown(results: list[dict], path: Path, meta: str) -> None:
    lines = [_START, "", meta, "",
             "| set | chunks | same hits (full, k=10) | query p50 / p95 ms, file | tables | ingest s, file | tables | "
             "a new server opens, s: file | tables | its data dir MB: file | tables | one-note write s: file | tables | "
             "the other server answers it |",
             "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|---|"]
    for r in results:
        f, t = r["file"], r["tables"]
        lines.append(
            f"| {r['set']} | {t['chunks']:,} | {r['same']}/{r['questions']} | {f['query_ms']['p50']} / {f['query_ms']['p95']} | "
            f"{t['query_ms']['p50']} / {t['query_ms']['p95']} | {f['ingest_s']} | {t['ingest_s']} | {f['second_open_s']} | "
            f"{t['second_open_s']} | {f['second_dir_bytes'] / 1e6:.1f} | {t['second_dir_bytes'] / 1e6:.2f} | "
            f"{f['write_s']} | {t['write_s']} | {'yes' if f['second_sees_write'] and t['second_sees_write'] else 'NO'} |")
    lines += ["", _END]
    put_section(path, "\n".join(lines), _START, _END)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dsn", default=None)
    parser.add_argument("--sets", default=",".join(SETS))
    parser.add_argument("--out", type=Path, default=REPO_ROOT / "bench" / "RESULTS-backends.md")
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--synthetic", type=int, default=0, help="also N documents of bench/scale.py's corpus")
    args = parser.parse_args()
    from contextlib import nullcontext

    from backends_servers import postgres_server

    results = []
    with (nullcontext(args.dsn) if args.dsn else postgres_server()) as server, \
            tempfile.TemporaryDirectory(prefix="kgrag-catalog-bench-") as tmp:
        if isinstance(server, str) and not args.dsn:
            sys.exit(f"no PostgreSQL: {server}")
        dsn = args.dsn or server.url
        for name in [s for s in args.sets.split(",") if s] + [f"synthetic:{args.synthetic}"] * bool(args.synthetic):
            row = {"set": name}
            for variant, tables in (("file", False), ("tables", True)):
                row[variant] = run_variant(name, dsn, Path(tmp), tables)
                print(name, variant, {k: v for k, v in row[variant].items() if k != "hits"}, flush=True)
            f, t = row["file"]["hits"], row["tables"]["hits"]
            row["questions"], row["same"] = len(f), sum(f[q] == t.get(q) for q in f)
            results.append(row)
    meta = (f"Measured {time.strftime('%Y-%m-%d')} on {platform.machine()} with {platform.python_version()}, one "
            "PostgreSQL 15 on a Unix socket (the same machine), wall times in one process, warm pass. *file*: "
            "the catalog in kb.sqlite, published in pieces for the other servers; *tables*: KG_CATALOG, its rows in "
            "PostgreSQL. *a new server opens*: a `KnowledgeBase` on an empty data dir (restoring the catalog, or only "
            "graph.ttl and the small files); *one-note write*: one document ingested and published.")
    write_markdown(results, args.out, meta)
    if args.json:
        args.json.write_text(json.dumps(results, ensure_ascii=False, indent=1), "utf-8")


if __name__ == "__main__":
    main()
