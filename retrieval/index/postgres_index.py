"""PostgreSQL backend of `TextIndex`: chunks in, the analyzer's terms in a postings table, BM25F hits out, ranked as whoosh ranks them.

Several query servers can share one index: every write is one transaction (under an advisory lock
per index, so writers queue), and every search reads one snapshot and first looks at the index's
generation, so a server follows the other servers' commits without being told.

Why a postings table and not a `tsvector`: BM25F needs each term's frequency in each field and each
field's length, which a tsvector does not keep (it keeps positions, at most 256 of them); a b-tree
on (field, term, docnum) is the inverted index itself. Term statistics (document frequency per
field and term, total field lengths, the chunk count) are kept in tables, updated in the write's
transaction. Scores are computed from those statistics (`GenerationCache`, postgres_cache.py, which
keeps what was read until the generation moves) with whoosh's BM25F formula, field
lengths rounded as whoosh stores them (one byte), so the same chunks give the same floats and the
same ranking as `WhooshIndex` (tests/test_backends_text.py compares them on the shared sets).

Where the two differ: whoosh keeps deleted chunks in its statistics until a merge; this index's
statistics are exact at once. After deletions the scores can differ slightly (rankings rarely do).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager

from kg.errors import InputError
from retrieval.index.candidates import head_then_tail, top_chunks
from retrieval.index.postgres_cache import GenerationCache
from retrieval.index.postgres_conn import RetryingConnection, connect, unreachable
from retrieval.index.postgres_schema import NAMESPACE, analyze_chunk, schema_sql
from retrieval.index.postgres_scoped import PostgresScope, add_common_terms, add_weighted_scores
from retrieval.index.postgres_write import PendingWrites
from retrieval.index.whoosh_index import FIELD_BOOSTS, MAX_DF_RATIO
from retrieval.types import Chunk, TextHit

__all__ = ["PostgresIndex", "RetryingConnection", "connect", "unreachable"]  # the last three: postgres_conn's


class PostgresIndex:
    """`PostgresIndex(dsn, namespace)`: one index per PostgreSQL schema `namespace`."""

    def __init__(self, dsn: str, namespace: str = "kgrag", field_boosts: dict[str, float] | None = None,
                 max_df_ratio: float = MAX_DF_RATIO) -> None:
        if not NAMESPACE.match(namespace):
            raise InputError(f"'{namespace}' cannot name a PostgreSQL schema: use lower-case letters, digits and _")
        try:
            import psycopg
        except ImportError as exc:  # the extra is optional
            raise InputError("the PostgreSQL text backend needs psycopg: pip install 'kgrag[postgres]'") from exc

        self.dsn, self.ns = dsn, namespace
        self.field_boosts = dict(field_boosts or FIELD_BOOSTS)
        self.max_df_ratio = max_df_ratio
        self._bm25 = (0.75, 1.2)  # B, K1: whoosh's BM25F defaults, as WhooshIndex uses them
        # one reader connection, one search at a time; re-entrant: a sharded search over some databases holds every
        # database's lock (in one order) and may read the others' statistics inside it (postgres_shards.py)
        self._search_lock = threading.RLock()
        self._closed = False
        self._psycopg = psycopg
        conn = connect(dsn)
        try:
            # The schema's DDL only when it is missing: `CREATE INDEX IF NOT EXISTS` takes a SHARE lock on its table
            # even when the index exists, which waits for a writer's open transaction (a 65 s commit at 1M chunks)
            # and cancels autovacuum, whose visibility map the index-only searches need.
            if not conn.execute("SELECT to_regclass(%s) IS NOT NULL", (f"{self.ns}.generation",)).fetchone()[0]:
                with conn.transaction():
                    conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (self.ns,))
                    conn.execute(schema_sql(self.ns))
        finally:
            conn.close()
        self._reader = self._open_reader()
        self.writes = PendingWrites(dsn, namespace)  # what is added and deleted until the next commit
        # What the searches read at the index's generation (statistics, posting lists, scores), until it moves.
        self.cache = GenerationCache(namespace, self._bm25, lambda: self._reader)

    def _open_reader(self):
        reader = connect(self.dsn)
        reader.read_only = True
        return reader

    @contextmanager
    def _read(self) -> Iterator[None]:
        """The reader connection, one caller at a time; a connection that broke (PostgreSQL restarted)
        fails this call clearly and is opened again by the next.

        No transaction around a search (BEGIN and COMMIT were two of a warm search's four round trips):
        each statement is its own snapshot, and the statements that must agree carry the generation
        they read (`GenerationCache`), so a search that straddles a commit starts again."""
        with self._search_lock:
            try:
                if self._reader is None or self._reader.closed:
                    self._reader = self._open_reader()
                yield
            except self._psycopg.OperationalError as exc:
                if self._reader is not None:
                    self._reader.close()
                self._reader = None
                self.cache.generation = -1  # what was cached may be older than what the server holds now
                raise unreachable(self.dsn, exc) from exc

    # -- writes ------------------------------------------------------------------------------
    def add_chunks(self, chunks: Iterable[Chunk], file_words: Mapping[str, str] | None = None) -> int:
        n = 0
        file_words = file_words or {}
        for chunk in chunks:
            section = " > ".join(part for part in (file_words.get(chunk.doc_id, ""), chunk.section) if part)
            self.writes.add(chunk.chunk_id, chunk.doc_id, analyze_chunk(chunk, section))
            n += 1
        return n

    def delete_chunks(self, chunk_ids: Sequence[str]) -> int:
        ids = list(dict.fromkeys(chunk_ids))

        def committed() -> int:
            with self._read():
                return self._reader.execute(f"SELECT count(*) FROM {self.ns}.chunks WHERE chunk_id = ANY(%s)",
                                            (ids,)).fetchone()[0]

        return self.writes.delete(ids, committed)

    def upgrade_schema(self) -> None:
        """Nothing to upgrade: the tables are made with every field."""

    def rollback(self) -> None:
        self.writes.rollback()

    def prepare(self, optimize: bool = False, replace_all: bool = False) -> None:
        """Nothing to write ahead: `commit` is one transaction, which searches see only once it commits."""

    def commit(self, optimize: bool = False, replace_all: bool = False) -> None:
        """One transaction for the writes since the last commit; `replace_all`: they become the whole
        index. `optimize` means nothing here (PostgreSQL has no segments to merge)."""
        self.writes.commit(replace_all)
        with self._read():
            self.cache.follow()

    # -- reads -------------------------------------------------------------------------------
    def search(self, terms: Sequence[tuple[str, float]], limit: int, fields: dict[str, float] | None = None,
               grams: Sequence[tuple[str, float]] = (), doc_ids: frozenset[str] | None = None,
               beyond: int = 0) -> list[TextHit]:
        """As `WhooshIndex.search`: the rare terms choose the candidates, the common terms and the
        character pairs add to their scores (`head_then_tail`)."""
        with self._read():
            fields = {f: b for f, b in (fields or self.field_boosts).items() if b > 0}
            keys = [(f, t) for t, _ in terms for f in fields] + [("grams", g) for g, _ in grams]
            cache = self.cache
            df = cache.consistent(keys, "body", terms)
            rare, common = self.split_by_frequency(terms, cache.n, df)
            if not rare or not fields:
                return []
            gram_fields = {"grams": 1.0}
            scope = None if doc_ids is None else cache.scope_docnums(doc_ids)
            found = top_chunks(rare, fields, limit + beyond, scope, cache.term_scores, lambda d: "", ties=limit)
            if found and (common or grams):
                rare_scores = [entry[2] for entry in found]
                add_common_terms(found, common, fields, cache.term_scores)
                add_common_terms(found, list(grams), gram_fields, cache.term_scores, report=False)
                found = head_then_tail(found, limit, rare_scores)
            found = found[:limit + beyond]
            cache.name_chunks([entry[0] for entry in found])
            # a chunk deleted by a commit since the posting lists were read has no name: it is gone
            return [TextHit(chunk_id=cache.chunk_id_of[docnum], score=score, terms=tuple(sorted(matched)), docnum=docnum)
                    for docnum, _, score, matched in found if docnum in cache.chunk_id_of]

    def split_by_frequency(self, terms, n: int, df: Mapping[str, int]):
        """(rare, common) as `WhooshIndex._split_by_frequency`: common terms (in more than `max_df_ratio`
        of the chunks) only add to the scores of the candidates the rare ones found."""
        if not terms:
            return [], []
        if n < 50:
            return list(terms), []
        rare = [(t, w) for t, w in terms if df.get(t, 0) <= self.max_df_ratio * n]
        if len(rare) < 2:
            rare = sorted(terms, key=lambda tw: df.get(tw[0], 0))[:2]
        chosen = {t for t, _ in rare}
        return rare, [(t, w) for t, w in terms if t not in chosen and df.get(t, 0) > 0]

    def term_scores(self, terms: Sequence[tuple[str, float]], docnums: Sequence[int],
                    fields: dict[str, float] | None = None) -> dict[int, dict[str, float]]:
        """docnum -> {term: its weighted BM25F score in that chunk}, for a few candidate chunks."""
        fields = {f: b for f, b in (fields or self.field_boosts).items() if b > 0}
        out: dict[int, dict[str, float]] = {d: {} for d in docnums}
        if not out:
            return out
        with self._read():
            self.cache.consistent([(f, t) for t, _ in terms for f in fields])
            add_weighted_scores(out, terms, fields, self.cache.term_scores)
        return out

    def postings(self, field: str, term: str):
        """One term's `PostingArrays` (docnums, term frequencies, exact field lengths; the caller holds the read lock)."""
        return self.cache.postings(field, term)

    def chunk_ids(self) -> set[str]:
        """Every indexed chunk's id (`kg check` compares them with the catalog)."""
        with self._read():
            return {r[0] for r in self._reader.execute(f"SELECT chunk_id FROM {self.ns}.chunks")}

    def scoped(self, doc_ids: frozenset[str]):
        """The read side inside those documents, with their statistics (as `ScopedIndex` does for whoosh)."""
        return PostgresScope(self, doc_ids)

    def advice(self) -> list[str]:
        """What `kg check` should say about this index's tables: a postings key made before it covered tf and length
        (every posting a search reads then costs a heap page: at 1M chunks full mode p50 ~250 ms, not ~50)."""
        with self._read():
            row = self._reader.execute(  # the widest index on the postings: 5 columns cover (field, term, docnum, tf, length)
                "SELECT max(i.indnatts) FROM pg_index i JOIN pg_class t ON t.oid = i.indrelid "
                "JOIN pg_namespace n ON n.oid = t.relnamespace WHERE n.nspname = %s AND t.relname = 'postings'",
                (self.ns,)).fetchone()
        if row is None or row[0] is None or row[0] >= 5:
            return []
        return [f"the PostgreSQL postings' key does not cover tf and length (a schema made by an older kgrag), so each "
                "posting a search reads costs a table page: make the covering index once (minutes at 1M chunks, "
                f"searches go on) with `CREATE UNIQUE INDEX CONCURRENTLY postings_cover ON {self.ns}.postings "
                f"(field, term, docnum) INCLUDE (tf, length); VACUUM ANALYZE {self.ns}.postings`"]

    def doc_count(self) -> int:
        with self._read():
            self.cache.follow()
            return self.cache.n

    def doc_frequency(self, term: str, field: str = "body") -> int:
        with self._read():
            return self.cache.snapshot(field, [(term, 1.0)]).get(term, 0)

    def close(self) -> None:
        if self._closed:
            return
        self.writes.close()
        if self._reader is not None:
            self._reader.close()
        self._closed = True

