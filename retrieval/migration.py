"""A knowledge base's text index and graph -> the other home (embedded files <-> PostgreSQL + a SPARQL store), copied from the catalog and graph, then checked.

The catalog (SQLite in the data dir) is the truth for chunks, as in `kg check --repair`: the target
text index is written anew from it through the write path's own `reindex_all`, so the chunks are
analysed exactly as an ingest analyses them. The graph is split into the base ontology's triples
(named graph `ontology`), each pack's (`pack:ID`) and the user's (`default`). The check afterwards compares chunk ids,
the graph (triple for triple, numeric literals by value) and the top 10 of a sample of searches
(each document's title as a question) between the old index and the new one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from rdflib import Graph

from retrieval.store_sync import RECORD_SCHEMA, layout_digest, record, store_mark, write_graph

__all__ = ["MigrationReport", "migrate"]

SAMPLE_QUERIES = 50
# whoosh sums a field's lengths exactly when it writes a segment but from its one-byte rounded per-chunk lengths
# when it merges segments, so an index that has merged scores every chunk with a slightly different average
# length than a fresh copy of the same chunks: up to 0.6% apart on knowledge bases of 10k and 100k chunks grown by
# ingests (every one of 300 searches within 1% at both sizes, bench/scale.py's knowledge bases).
DRIFT = 0.01


@dataclass
class MigrationReport:
    target: str
    chunks: int = 0
    triples: int = 0
    graphs: list[str] = field(default_factory=list)
    queries_compared: int = 0
    within_drift: int = 0  # of those, equal only within DRIFT (the old index had merged segments)
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def clean(self) -> bool:
        return not self.problems

    def to_json(self) -> dict:
        return {"target": self.target, "chunks": self.chunks, "triples": self.triples, "graphs": self.graphs,
                "queries_compared": self.queries_compared, "within_drift": self.within_drift, "clean": self.clean, "problems": self.problems,
                "notes": self.notes}


def migrate(kb, target: str, *, dsn: str | None = None, schema: str = "kgrag", graph_store: str | None = None,
            pack_databases: str | None = None, catalog: str | None = None, progress=None) -> MigrationReport:
    """`target` "postgres+sparql": from the embedded files to PostgreSQL (`dsn`, `schema`) and the SPARQL
    store `graph_store` (and each pack `pack_databases` names to a database of its own; the catalog to tables on
    `catalog`, a PostgreSQL DSN, when given); "embedded": from the backends `kb` was opened with to files in its data
    dir (the catalog too, when it was in PostgreSQL)."""
    from kg.errors import InputError
    from kg.stores import open_graph_store

    if target == "postgres+sparql":
        if not dsn or not graph_store or not graph_store.startswith("sparql+"):
            raise InputError("kg migrate --to postgres+sparql needs a PostgreSQL DSN (--dsn or KG_POSTGRES_DSN) and "
                             "a SPARQL store (--graph-store sparql+http://HOST:PORT or KG_GRAPH_STORE)")
        from retrieval.index.backends import open_text_index

        # the knowledge base's own schema, and each pack KG_PACK_DATABASES names on its database
        new_index = open_text_index(kb.settings.model_copy(update={"text_backend": "postgres", "postgres_dsn": dsn,
                                                                   "postgres_schema": schema, "pack_databases": pack_databases}),
                                    kb.root, kb.store)
        store = open_graph_store(graph_store, namespace=schema)
    elif target == "embedded":
        if kb.settings.text_backend != "postgres" or not kb.settings.graph_store.startswith("sparql+"):
            raise InputError("kg migrate --to embedded moves a knowledge base off the backends: open it with "
                             "KG_TEXT_BACKEND=postgres, KG_POSTGRES_DSN and KG_GRAPH_STORE=sparql+http://... set")
        from retrieval.index.whoosh_index import WhooshIndex

        new_index = WhooshIndex(kb.root / "index", kb.index.field_boosts, max_df_ratio=kb.index.max_df_ratio)
        store = open_graph_store(kb.settings.graph_store, namespace=kb.settings.postgres_schema)
    else:
        raise InputError(f"unknown migration target '{target}': use postgres+sparql or embedded")
    report = MigrationReport(target)
    try:
        with kb.writing("migrate"):
            if target == "postgres+sparql":
                whole = kb.graph.rdf
                write_graph(store, whole, kb.root)
                from retrieval.catalog import commit
                left = store.quads()  # the base an edit made in the store later is told apart from
                with kb.store.transaction():  # the store holds this graph: the next commit need not push it
                    commit.set_state(kb.store.db, "store_graph", store_mark(graph_store, schema, layout_digest(kb)))
                    record(kb.store.db, left)
            else:
                whole = _graph_back(kb, store, report)
            kb.linker  # noqa: B018 - teaches jieba the graph's labels and the synonyms, which the chunks were cut with
            old_index = kb.index
            kb.index = new_index
            try:
                from retrieval.indexing import reindex_all

                report.chunks = reindex_all(kb, progress)
            finally:
                kb.index = old_index
            _verify(kb, old_index, new_index, whole, None if report.notes else store, report)
        if report.clean:
            _move_vectors(kb, target, dsn, schema, report)
            _move_catalog(kb, target, catalog, schema, report)
        if target == "postgres+sparql" and report.clean:
            _publish_catalog(kb, dsn, schema, catalog)
    finally:
        new_index.close()
        store.close()
    return report


def _graph_back(kb, store, report: MigrationReport) -> Graph:
    """The graph for the embedded side. graph.ttl stays the knowledge base's working copy while the
    backends are in use (`KG_GRAPH_STORE` is read by `kg migrate` only), so one that holds more than
    the base ontology is the newer graph and is kept; the store's graph fills a data dir without one."""
    from rdflib.compare import isomorphic

    from kg.errors import InputError
    from kg.stores import canonical
    from ontology import BASE_ONTOLOGY_PATH, load_rdf

    on_disk = kb.graph.rdf
    copied = store.read()
    if any(triple not in load_rdf(BASE_ONTOLOGY_PATH) for triple in on_disk):
        if not isomorphic(canonical(copied), canonical(on_disk)):
            report.notes.append(f"graph.ttl ({len(on_disk)} triples) differs from the store's graph ({len(copied)}): "
                                "graph.ttl, the working copy, was kept")
        return on_disk
    if not len(copied):
        raise InputError(f"the SPARQL store at {store.url} holds no graph for '{kb.settings.postgres_schema}'")
    kb.graph.rdf = copied
    kb.graph.save()
    kb._graph_changed()
    return copied


def _move_vectors(kb, target: str, dsn: str | None, schema: str, report: MigrationReport) -> None:
    """The meaning channel's vectors follow the text index where they can: vectors.sqlite into pgvector when the
    server has it, pgvector back into vectors.sqlite; a note says what was copied or why not."""
    from retrieval.vectors.store import VectorStore, copy_vectors

    if target == "postgres+sparql":
        source = VectorStore(kb.root)
        if not source.exists() or source.model() is None:
            return
        from retrieval.vectors.pgvector_store import PgVectorStore, PgVectorUnavailable

        try:
            destination = PgVectorStore(dsn, schema)
        except PgVectorUnavailable as exc:
            report.notes.append(f"vectors stay in {source.path.name} (PostgreSQL has no pgvector: {exc})")
            source.close()
            return
    else:
        source = kb.vectors.store
        if isinstance(source, VectorStore) or source.model() is None:
            return
        destination = VectorStore(kb.root)
    try:
        copied = copy_vectors(source, destination)
        report.notes.append(f"{copied} vectors ({source.model()}) copied to {destination.where}")
    finally:
        destination.close()
        if isinstance(source, VectorStore):
            source.close()


def _move_catalog(kb, target: str, catalog: str | None, schema: str, report: MigrationReport) -> None:
    """The catalog's rows into PostgreSQL's tables (`catalog`: its DSN) or, from there, into kb.sqlite in the data dir
    (`retrieval/catalog/postgres_catalog.py`). Nothing to move when the catalog stays where it is."""
    from retrieval.catalog.docstore import DocStore
    from retrieval.catalog.postgres_catalog import copy_catalog

    if target == "postgres+sparql" and catalog:
        there = DocStore(kb.root / "kb.sqlite", (catalog, f"{schema}_catalog"))
    elif target == "embedded" and kb.store.postgres:
        file = kb.root / "kb.sqlite"
        if not file.exists():  # its WAL left behind (the file moved or deleted) would be read as the new file's
            for suffix in ("-wal", "-shm", "-journal"):
                Path(f"{file}{suffix}").unlink(missing_ok=True)
        there = DocStore(file)
    else:
        return
    try:
        from retrieval.catalog.filestats import SCHEMA as FILE_STATS

        rows = copy_catalog(kb.store.db, there.db, made_later=(FILE_STATS, RECORD_SCHEMA))
        mine = kb.store.stats()
        if there.stats() != mine:
            report.problems.append(f"the catalog copied holds {there.stats()}, the original {mine}")
        report.notes.append(f"catalog: {rows} rows copied " + (
            f"to the schema {schema}_catalog (kb.sqlite in the data dir is no longer read with KG_CATALOG set)"
            if target != "embedded" else "to kb.sqlite in the data dir"))
    finally:
        there.close()


def _publish_catalog(kb, dsn: str, schema: str, catalog: str | None = None) -> None:
    """The catalog and files published in PostgreSQL, so that servers with data dirs of their own start from
    them (`retrieval.catalog.shared`); with the catalog in PostgreSQL (`catalog`), the files and the generation."""
    from retrieval.catalog import commit
    from retrieval.catalog.docstore import DocStore
    from retrieval.catalog.postgres_lock import PostgresWriteLock
    from retrieval.catalog.shared import SharedRecord

    record, lock = SharedRecord(dsn, schema), PostgresWriteLock(dsn, schema, kb.settings.write_wait)
    there = DocStore(kb.root / "kb.sqlite", (catalog, f"{schema}_catalog")) if catalog else kb.store
    try:
        with lock:
            record.publish(kb.root, there.db, commit.generation(there.db))
    finally:
        lock.close()
        record.close()
        if there is not kb.store:
            there.close()


def _verify(kb, old_index, new_index, whole: Graph, store, report: MigrationReport) -> None:
    from rdflib.compare import isomorphic

    from kg.stores import canonical
    from retrieval.index.analysis import query_terms

    catalog = {row[0] for row in kb.store.db.execute("SELECT chunk_id FROM chunks")}
    indexed = new_index.chunk_ids() if hasattr(new_index, "chunk_ids") else None
    if indexed is not None and indexed != catalog:
        report.problems.append(f"{len(catalog - indexed)} chunk(s) missing from the new index, {len(indexed - catalog)} extra")
    if new_index.doc_count() != len(catalog):
        report.problems.append(f"the new index holds {new_index.doc_count()} chunks, the catalog {len(catalog)}")
    if store is None:  # the graph was not copied (see _graph_back)
        report.triples = len(whole)
    else:
        copied = store.read()
        report.graphs, report.triples = store.names(), len(copied)
    if store is not None and not isomorphic(canonical(copied), canonical(whole)):
        report.problems.append(f"the graph read back ({len(copied)} triples) differs from the one written ({len(whole)})")
    titles = [row[0] for row in kb.store.db.execute(
        "SELECT title FROM documents WHERE title != '' GROUP BY title ORDER BY MIN(doc_id) LIMIT ?", (SAMPLE_QUERIES,))]
    for title in titles:
        terms = [(t, 1.0) for t in query_terms(title)]
        # Words only: the character pairs re-score the candidates the words chose, and a tie at the
        # candidates' cut goes to the chunk indexed first, an order a copy cannot keep (whoosh's merges
        # reorder its segments), so with pairs a tie at the cut can surface as a different hit.
        # As a question searches (the settings' bm25_candidates deep), its top 10 compared: with a cut at 10, a
        # near tie at the cut of the rare words' candidates lets a chunk in that the other side's drift left out.
        depth = kb.settings.bm25_candidates
        a = [(h.chunk_id, h.score) for h in old_index.search(terms, depth)][:10]
        b = [(h.chunk_id, h.score) for h in new_index.search(terms, depth)][:10]
        report.queries_compared += 1
        if same_within_ties(a, b):
            continue
        if same_within_ties(a, b, DRIFT) or _scored_alike(old_index, new_index, terms, a, b, depth):
            report.within_drift += 1
            continue
        report.problems.append(f"the search for '{title}' ranks differently: {[c for c, _ in a[:3]]} vs {[c for c, _ in b[:3]]}")


def _scored_alike(old_index, new_index, terms, a, b, depth: int) -> bool:
    """Top 10s that differ beyond drift can still come from the same chunks: each side takes its candidates by
    the rare words' scores, `depth` deep, and a near tie at that cut lets a chunk in on one side only (seen at
    363k chunks: a chunk 4th on the copy, 0.5% below the 3rd, scoring within 0.4% of that on the merged index, which
    had not taken it among the 200 candidates of words its title shares with hundreds of chunks). So every
    chunk either side ranked is scored again on both sides, deeper, and must be within `DRIFT` of itself."""
    deep = max(1000, 5 * depth)
    old = {h.chunk_id: h.score for h in old_index.search(terms, deep)}
    new = {h.chunk_id: h.score for h in new_index.search(terms, deep)}
    return all(c in old and c in new and _close(old[c], new[c], DRIFT) for c in {c for c, _ in [*a, *b]})


def _close(x: float, y: float, tolerance: float, times: float = 1.0) -> bool:
    return abs(x - y) <= times * tolerance * max(1.0, abs(x), abs(y))


def same_within_ties(a: list[tuple[str, float]], b: list[tuple[str, float]], tolerance: float = 1e-9) -> bool:
    """Two top-k lists of (id, score) agree when every id on both sides scores the same on both (relatively, within
    `tolerance`) and an id on one side only scores within the drift of the other side's last hit (the limit
    cut a near tie differently). The order then follows from the scores: ids swap only where their scores are
    within twice the tolerance, which drift can do to two chunks it moves in opposite directions.

    With the default tolerance that is "equal scores, ties free". A whoosh index whose segments were merged
    scores with field lengths whoosh rounded at the merge (see `DRIFT`), so it is compared with a fresh copy at
    `DRIFT`."""
    if len(a) != len(b):
        return False
    if not a:
        return True

    scores_b = dict(b)
    for cid, score in a:
        if cid in scores_b and not _close(score, scores_b[cid], tolerance):
            return False
    for side, other in ((a, b), (b, a)):
        last = other[-1][1]
        ids = {c for c, _ in other}
        if any(cid not in ids and score > last and not _close(score, last, tolerance, 2.0) for cid, score in side):
            return False
    return True
