"""What walking the graph in the SPARQL store costs a query: the demo knowledge base, its graph migrated to a
throw-away `oxigraph serve`, each demo question's seeds expanded through the in-memory view and through
`kg.stores.store_view.StoreGraphView` (a fresh view per question: nothing cached between questions;
one SELECT per hop of the walk).

Prints the round trips per question and the CPU ms of the expansion in this process and in the Oxigraph
server (from /proc), p50 and max, and whether every question reached the same entities with the same scores;
then a whole embedded query (warm), what the expansion through the store is weighed against, and a whole query of
the knowledge base opened with KG_GRAPH_WALK=store (warm; its top 10 compared with the embedded one's).

    python bench/store_view.py               # the demo knowledge base and its questions
    python bench/store_view.py --rows 100000  # a synthetic 100k-row relation table (bench/scale.py's), 40 questions
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
for extra in (REPO_ROOT, REPO_ROOT / "tests", REPO_ROOT / "bench"):
    if str(extra) not in sys.path:
        sys.path.insert(0, str(extra))


def server_cpu_ms(pid: int) -> float:
    """utime + stime of a process, in ms (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * 1000 / os.sysconf("SC_CLK_TCK")


class Counting:
    """A graph store that counts its SELECTs (the round trips a view asks)."""

    def __init__(self, store) -> None:
        self.store, self.selects = store, 0

    def names(self):
        self.selects += 1
        return self.store.names()

    def select(self, query, names=None):
        self.selects += 1 + (names is None)
        return self.store.select(query, names)


def timed(kb, question: str) -> tuple[float, float]:
    """(wall ms, CPU ms) of one whole `kb.query`."""
    cpu, wall = time.process_time(), time.perf_counter()
    kb.query(question)
    return (time.perf_counter() - wall) * 1000, (time.process_time() - cpu) * 1000


def demo_knowledge_base(folder: Path):
    """The demo knowledge base and its questions."""
    from conftest import build_demo_kb

    from kg.cli.base import DEMO_DIR

    questions = [json.loads(line)["question"] for line in
                 (DEMO_DIR / "questions.jsonl").read_text("utf-8").splitlines() if line.strip()]
    return build_demo_kb(folder), questions


def table_knowledge_base(folder: Path, rows: int):
    """A knowledge base of bench/scale.py's synthetic relation table of `rows` rows (no documents: the walk is what
    is measured), and 40 questions naming one of its entities each."""
    import random

    import scale

    from kg.settings import Settings
    from retrieval.pipeline import KnowledgeBase

    folder.mkdir(parents=True)
    scale.relation_table(folder / "relations.csv", rows, scale.passages())
    kb = KnowledgeBase(Settings(data_dir=folder / "kb"), create=True)
    kb.import_file(folder / "relations.csv")
    labels = sorted(e.label for e in kb.graph.view.entities.values())
    return kb, [f"{label} 依赖哪些组件？" for label in random.Random(52).sample(labels, 40)]


def main() -> None:
    import argparse

    from backends_servers import oxigraph_server

    from kg.stores import open_graph_store
    from kg.stores.store_view import StoreGraphView, store_vocabulary
    from retrieval.graph.expand import expand_neighbours
    from retrieval.store_sync import write_graph

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=0, help="a synthetic relation table of this many rows instead of the demo")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp, oxigraph_server() as server:
        if isinstance(server, str):
            sys.exit(f"cannot run: {server}")
        kb, questions = table_knowledge_base(Path(tmp) / "table", args.rows) if args.rows else \
            demo_knowledge_base(Path(tmp) / "kb")
        store = open_graph_store("sparql+" + server.url, namespace="bench")
        try:
            started = time.perf_counter()
            write_graph(store, kb.graph.rdf)
            print(f"{len(kb.graph.rdf)} triples pushed to the store in {time.perf_counter() - started:.1f} s")
            local = kb.graph.view
            vocab = store_vocabulary(store)  # once per generation of the graph, not per question
            rows, same = [], 0
            for question in questions:
                mentions = kb.linker.link(question)
                if not mentions:
                    continue
                seeds = kb.evidence.seed_weights(mentions)
                counting = Counting(store)
                before_cpu, before_server, before_wall = time.process_time(), server_cpu_ms(server.process.pid), time.perf_counter()
                view = StoreGraphView(counting, local.entities, vocab)
                remote_hits = expand_neighbours(view, seeds, kb.expansion)
                cpu = (time.process_time() - before_cpu) * 1000
                wall = (time.perf_counter() - before_wall) * 1000
                server_ms = server_cpu_ms(server.process.pid) - before_server
                local_hits = expand_neighbours(local, seeds, kb.expansion)
                same += remote_hits == local_hits
                rows.append((counting.selects, cpu, server_ms, wall))
            # What the expansion through the store is weighed against: the whole embedded query, warm.
            asked = [q for q in questions if kb.linker.link(q)]
            for q in asked:
                kb.query(q)
            local_query = [timed(kb, q) for q in asked]
            local_ids = [[h.chunk_id for h in kb.query(q).hits] for q in asked]
            data_dir = kb.root
            kb.close()
            # The whole query walking the store (KG_GRAPH_WALK=store): a fresh StoreGraphView a question, which reads
            # the store's graphs and ontology, then one SELECT a hop.
            from kg.settings import Settings
            from retrieval.pipeline import KnowledgeBase

            walking = KnowledgeBase(Settings(data_dir=data_dir, graph_walk="store", graph_store="sparql+" + server.url,
                                             postgres_schema="bench"))
            try:
                for q in asked:
                    walking.query(q)
                store_query, same_hits = [], 0
                for q, ids in zip(asked, local_ids, strict=True):
                    before_server = server_cpu_ms(server.process.pid)
                    wall, cpu = timed(walking, q)
                    store_query.append((wall, cpu, server_cpu_ms(server.process.pid) - before_server))
                    result = walking.query(q)
                    same_hits += result.graph["walked"] == "store" and [h.chunk_id for h in result.hits] == ids
            finally:
                walking.close()
        finally:
            store.close()

    def line(name: str, values: list[float]) -> str:
        return f"{name}: p50 {statistics.median(values):.1f}, max {max(values):.1f}"

    print(f"{len(rows)} questions with seeds; the same entities and scores as the in-memory view: {same}/{len(rows)}")
    print(line("round trips per question", [r[0] for r in rows]))
    print(line("client CPU ms per question", [r[1] for r in rows]))
    print(line("Oxigraph CPU ms per question", [r[2] for r in rows]))
    print(line("wall ms per question (loopback)", [r[3] for r in rows]))
    print(line("whole embedded query, wall ms", [r[0] for r in local_query]) + "; "
          + line("CPU ms", [r[1] for r in local_query]))
    print(line("whole query walking the store (KG_GRAPH_WALK=store), wall ms", [r[0] for r in store_query]) + "; "
          + line("CPU ms", [r[1] for r in store_query]) + "; " + line("Oxigraph CPU ms", [r[2] for r in store_query]))
    print(f"the same top 10 walking the store as walking graph.ttl: {same_hits}/{len(asked)}")

if __name__ == "__main__":
    main()
