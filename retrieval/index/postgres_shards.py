"""Packs as the unit of sharding: the knowledge base's `PostgresIndex` and one per pack that KG_PACK_DATABASES places on
a database of its own, written and searched as one text index (`ShardedIndex`).

A chunk goes to its document's pack's database (the catalog says which pack a document is in), every other chunk to
KG_POSTGRES_DSN. A search of the whole knowledge base asks every database for its posting lists and scores them with
the statistics of all of them together (chunk count, field lengths, document frequencies), as one index holding every
chunk would: the same floats, so the same ranking within ties as one schema (tests/test_backends_pack_shards.py). A
search routed to packs (at most two, `retrieval/packs`) reads only their databases: a pack's questions never touch
the others. A hit's docnum is its docnum in its database plus that database's base (`FederatedCache`).

A commit writes each database in its own transaction, the packs' first. A writer killed between two of them leaves
the journal that every write opens; the next process to take the write lock compares each chunk of the catalog with
the databases and mends the difference (`retrieval/consistency.py`), as for one database. `kg check` also says when
a pack's chunks are in another database than KG_PACK_DATABASES gives it now (the setting changed), and `--repair`
writes every database anew from the catalog.
"""

from __future__ import annotations

import bisect
import hashlib
import re
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager

from kg.errors import BusyError, InputError
from kg.files import masked
from retrieval.index.postgres_cache import MAX_CACHED, GenerationCache, PostingArrays
from retrieval.index.postgres_index import PostgresIndex
from retrieval.index.postgres_schema import FIELDS
from retrieval.index.postgres_scoped import PostgresScope, scope_rows
from retrieval.types import Chunk

__all__ = ["ShardedIndex", "open_sharded", "pack_databases", "pack_namespace"]

PacksOf = Callable[[Iterable[str]], Mapping[str, str | None]]  # doc ids -> each one's pack (None: none)


def pack_databases(text: str | None) -> dict[str, str]:
    """KG_PACK_DATABASES ("vendor=postgresql://db2/kgrag; runbooks=host=/run/postgresql dbname=rb") -> {pack: DSN}."""
    out: dict[str, str] = {}
    for part in (text or "").split(";"):
        if not part.strip():
            continue
        pack, sep, dsn = (s.strip() for s in part.partition("="))
        if not sep or not pack or not dsn:
            raise InputError(f"KG_PACK_DATABASES: '{masked(part.strip())}' is not 'PACK=DSN' (write e.g. "
                             "'vendor=postgresql://db2/kgrag; runbooks=host=/run/postgresql dbname=rb')")
        if pack in out:
            raise InputError(f"KG_PACK_DATABASES names the pack '{pack}' twice")
        out[pack] = dsn
    return out


def pack_namespace(namespace: str, pack: str) -> str:
    """The PostgreSQL schema of a pack's text index on its database: KG_POSTGRES_SCHEMA_<pack id>, in the letters a
    schema name may hold (a hash keeps two ids apart that differ only in the others, and a long one within 63)."""
    name = re.sub(r"[^a-z0-9_]", "_", pack.lower())
    if name != pack or len(namespace) + 1 + len(name) > 63:
        name = f"{name[:40]}_{hashlib.sha1(pack.encode()).hexdigest()[:8]}"
    return f"{namespace}_{name}"[:63]


class FederatedCache:
    """What several databases' `GenerationCache`s hold, as one: the sums of their statistics, posting lists with
    docnums made distinct, BM25F scores over all of them. Duck-types `GenerationCache` for the search code of
    `PostgresIndex` and `PostgresScope`.

    A database's docnums are numbered from a base of its own: the sizes reserved below it, each a power of two at
    least twice the database's last docnum (searches score into arrays as long as the largest docnum, so the
    numbers stay dense). A base moves only when a database outgrows its reservation, which doubles."""

    def __init__(self, shards: Sequence[tuple[int, PostgresIndex]], bm25: tuple[float, float]) -> None:
        self.shards, self._bm25 = list(shards), bm25
        self.generation: tuple = ()
        self.n = 0
        self.totals: dict[str, int] = {}
        self.rounded_totals: dict[str, int] = {}
        self.chunk_id_of: dict[int, str] = {}
        self._postings: dict[tuple[str, str], PostingArrays] = {}
        self._scores: dict = {}
        self._scopes: dict[frozenset[str], set[int]] = {}
        self._reserved: dict[int, int] = {}
        self.base: dict[int, int] = {}
        self._starts: list[tuple[int, int]] = []  # (base, database number), ascending

    def _sum(self) -> None:
        generation = tuple(shard.cache.generation for _, shard in self.shards)
        if generation != self.generation:
            caches = [shard.cache for _, shard in self.shards]
            self.generation, self.n = generation, sum(c.n for c in caches)
            self.totals = {f: sum(c.totals.get(f, 0) for c in caches) for f in FIELDS}
            self.rounded_totals = {f: sum(c.rounded_totals.get(f, 0) for c in caches) for f in FIELDS}
            self.chunk_id_of, self._postings, self._scores, self._scopes = {}, {}, {}, {}
            self._place()

    def _place(self) -> None:
        """Each database's base (under every database's read lock)."""
        for number, shard in self.shards:
            last = shard._reader.execute(f"SELECT last_value FROM {shard.ns}.docnums").fetchone()[0]
            if last >= self._reserved.get(number, 0):
                self._reserved[number] = max(1024, 1 << (2 * (last + 1) - 1).bit_length())
        base, self.base = 0, {}
        for number, _ in self.shards:
            self.base[number], base = base, base + self._reserved[number]
        self._starts = sorted((b, n) for n, b in self.base.items())

    def split(self, docnum: int) -> tuple[int, int]:
        """A federated docnum -> (database number, its docnum there)."""
        base, number = self._starts[bisect.bisect_right(self._starts, (docnum, float("inf"))) - 1]
        return number, docnum - base

    def snapshot(self, field: str = "body", terms=()) -> dict[str, int]:
        df: Counter = Counter()
        for _, shard in self.shards:
            df.update(shard.cache.snapshot(field, terms))
        self._sum()
        return dict(df)

    def follow(self) -> None:
        self.snapshot()

    def consistent(self, keys: list[tuple[str, str]], field: str = "body", terms=()) -> dict[str, int]:
        """Each database's statistics and posting lists of `keys` at one generation of it."""
        df: Counter = Counter()
        for _, shard in self.shards:
            df.update(shard.cache.consistent(keys, field, terms))
        self._sum()
        return dict(df)

    def load(self, keys: list[tuple[str, str]]) -> bool:
        loaded = all(shard.cache.load(keys) for _, shard in self.shards)
        self._sum()
        return loaded

    def postings(self, field: str, term: str) -> PostingArrays:
        key = (field, term)
        found = self._postings.get(key)
        if found is None:
            import numpy as np

            if len(self._postings) >= MAX_CACHED:
                self._postings, self._scores = {}, {}
            parts = [(self.base[number], shard.cache.postings(field, term)) for number, shard in self.shards]
            found = self._postings[key] = PostingArrays(
                np.concatenate([p.ids + base for base, p in parts]),
                np.concatenate([p.tf for _, p in parts]), np.concatenate([p.length for _, p in parts]))
        return found

    term_scores = GenerationCache.term_scores  # BM25F over the federated postings, with the summed statistics

    def scope_docnums(self, doc_ids: frozenset[str]) -> set[int]:
        scope = self._scopes.get(doc_ids)
        if scope is None:
            scope = self._scopes[doc_ids] = {self.base[number] + d for number, shard in self.shards
                                             for d in shard.cache.scope_docnums(doc_ids)}
        return scope

    def name_chunks(self, docnums: list[int]) -> None:
        shards = dict(self.shards)
        by_shard: dict[int, list[int]] = {}
        for docnum in docnums:
            if docnum not in self.chunk_id_of:
                number, local = self.split(docnum)
                by_shard.setdefault(number, []).append(local)
        for number, local in by_shard.items():
            cache, base = shards[number].cache, self.base[number]
            cache.name_chunks(local)
            self.chunk_id_of.update({base + d: cache.chunk_id_of[d] for d in local if d in cache.chunk_id_of})


class _ShardScope(PostgresScope):
    """A search inside some documents, reading only the databases that hold them; scored with their statistics as
    `PostgresScope` scores one schema's (the field lengths' rounding corrected by the whole index's, as there)."""

    def __init__(self, view: ShardedIndex, doc_ids: frozenset[str], whole: ShardedIndex) -> None:
        super().__init__(view, doc_ids)
        self.whole = whole

    def _whole(self):
        """The whole index's totals, read again (the view's `_read` holds every database's lock already); a database
        this question does not read that does not answer leaves the totals of those it reads."""
        try:
            with self.whole._read():
                self.whole.cache.follow()
            return self.whole.cache
        except BusyError:
            return self.index.cache

    def _scope_rows(self) -> list[tuple]:
        return [row for _, shard in self.index.shards for row in scope_rows(shard, self.doc_ids)]


class ShardedIndex:
    """`ShardedIndex(main, {pack: PostgresIndex})`, then `bind(packs_of)` once the catalog is open: the `TextIndex`
    of a knowledge base some of whose packs are on databases of their own."""

    # The search arithmetic is PostgresIndex's, over the federated cache (`self.cache`) and every database's read lock.
    search = PostgresIndex.search
    term_scores = PostgresIndex.term_scores
    split_by_frequency = PostgresIndex.split_by_frequency
    postings = PostgresIndex.postings
    doc_count = PostgresIndex.doc_count
    doc_frequency = PostgresIndex.doc_frequency

    def __init__(self, main: PostgresIndex, packs: Mapping[str, PostgresIndex], *,
                 shards: Sequence[tuple[int, PostgresIndex]] | None = None) -> None:
        self.main, self.packs = main, dict(packs)
        self._names = sorted(self.packs)  # database number n > 0 holds the pack _names[n - 1]
        self._number = {p: n for n, p in enumerate(self._names, start=1)}
        self._every = [(0, main), *((self._number[p], self.packs[p]) for p in self._names)]
        self.shards = list(shards) if shards is not None else self._every  # the databases this index searches
        self.field_boosts, self.max_df_ratio, self._bm25 = main.field_boosts, main.max_df_ratio, main._bm25
        self.cache = FederatedCache(self.shards, self._bm25)
        self._packs_of: PacksOf | None = None
        self._owns = shards is None  # a view of some databases (`scoped`) closes none of them

    def bind(self, packs_of: PacksOf) -> None:
        """Where each document's pack is read (the catalog), for the writes and the routed searches."""
        self._packs_of = packs_of

    def _shard_numbers(self, doc_ids: Iterable[str]) -> dict[str, int]:
        if self._packs_of is None:
            raise RuntimeError("a ShardedIndex needs bind(packs_of) before it writes or searches inside packs")
        return {doc: self._number.get(pack, 0) for doc, pack in self._packs_of(doc_ids).items()}

    @contextmanager
    def _read(self) -> Iterator[None]:
        """The readers of the databases searched, one caller at a time. Every database's lock is taken, in one order,
        whether searched or not: a search over some of them and one over all never hold one lock each and wait for
        the other's (only the ones searched are connected to: a pack's database that is down fails no other's)."""
        read = {number for number, _ in self.shards}
        with ExitStack() as stack:
            for number, shard in self._every:
                stack.enter_context(shard._read() if number in read else shard._search_lock)
            yield

    # -- writes ------------------------------------------------------------------------------
    def add_chunks(self, chunks: Iterable[Chunk], file_words: Mapping[str, str] | None = None) -> int:
        chunks = list(chunks)
        numbers = self._shard_numbers({c.doc_id for c in chunks})
        groups: dict[int, list[Chunk]] = {}
        for chunk in chunks:
            groups.setdefault(numbers.get(chunk.doc_id, 0), []).append(chunk)
        shards = dict(self.shards)
        return sum(shards[n].add_chunks(group, file_words) for n, group in groups.items())

    def delete_chunks(self, chunk_ids: Sequence[str]) -> int:
        ids = list(chunk_ids)
        return sum(shard.delete_chunks(ids) for _, shard in self.shards)

    def upgrade_schema(self) -> None:
        """Nothing to upgrade: the tables are made with every field."""

    def rollback(self) -> None:
        for _, shard in self.shards:
            shard.rollback()

    def prepare(self, optimize: bool = False, replace_all: bool = False) -> None:
        """Nothing to write ahead: each database's commit is one transaction."""

    def commit(self, optimize: bool = False, replace_all: bool = False) -> None:
        """Each database's writes in its own transaction, the packs' before the knowledge base's own."""
        for _, shard in [*self.shards[1:], self.shards[0]]:
            shard.commit(optimize, replace_all)

    # -- reads -------------------------------------------------------------------------------
    def chunk_ids(self) -> set[str]:
        return {cid for _, shard in self.shards for cid in shard.chunk_ids()}

    def misplaced(self) -> dict[str, int]:
        """Database ("the knowledge base's own" or a pack's) -> how many of its chunks belong in another one."""
        out: dict[str, int] = {}
        for number, shard in self.shards:
            with shard._read():
                rows = shard._reader.execute(f"SELECT doc_id, count(*) FROM {shard.ns}.chunks GROUP BY doc_id").fetchall()
            numbers = self._shard_numbers(doc for doc, _ in rows)
            wrong = sum(n for doc, n in rows if doc in numbers and numbers[doc] != number)
            if wrong:
                name = "the knowledge base's own" if number == 0 else f"pack {self._names[number - 1]}'s"
                out[name] = wrong
        return out

    def scoped(self, doc_ids: frozenset[str]):
        """The search inside those documents (routed packs), reading only the databases that hold them."""
        involved = sorted(set(self._shard_numbers(doc_ids).values())) or [0]
        shards = dict(self.shards)
        view = ShardedIndex(self.main, self.packs, shards=[(n, shards[n]) for n in involved])
        view.bind(self._packs_of)
        return _ShardScope(view, doc_ids, self)

    def advice(self) -> list[str]:
        return [line for _, shard in self.shards for line in shard.advice()]

    def close(self) -> None:
        if self._owns:
            for _, shard in self.shards:
                shard.close()


def open_sharded(settings, boosts: dict[str, float]) -> ShardedIndex:
    """The knowledge base's own index (KG_POSTGRES_DSN, KG_POSTGRES_SCHEMA) and one per pack of KG_PACK_DATABASES."""
    opened = {}
    main = PostgresIndex(settings.postgres_dsn, settings.postgres_schema, boosts, max_df_ratio=settings.max_df_ratio)
    try:
        for pack, dsn in pack_databases(settings.pack_databases).items():
            opened[pack] = PostgresIndex(dsn, pack_namespace(settings.postgres_schema, pack), boosts,
                                         max_df_ratio=settings.max_df_ratio)
    except BaseException:
        for index in [main, *opened.values()]:
            index.close()
        raise
    return ShardedIndex(main, opened)
