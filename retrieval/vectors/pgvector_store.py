"""The vector store in PostgreSQL with pgvector (KG_TEXT_BACKEND=postgres and `CREATE EXTENSION vector` works): text
keys in, float16 vectors (`halfvec`) in a table of the knowledge base's schema out, and the nearest chunks searched
by the server (`ORDER BY vec <=> question LIMIT m`, exact: a sequential scan, no approximate index).

Same contract as `VectorStore` (vectors.sqlite): keyed by the text hash, one batch one transaction (a killed
`kg embed` loses at most the batch in flight and resumes), pruning when a run completes, the model and a version
counter in a state table. What changes is who sees them: every `kg serve` sharing the PostgreSQL schema reads the
same vectors, so one `kg embed` anywhere serves them all (vectors.sqlite is never published: each data dir would
embed everything itself), and a query process holds no matrix: `PgChunkSearch` keeps only chunk id -> key.

Exact search scans every row: fine to ~10^5 chunks (see bench/RESULTS-backends.md for the measured cost); beyond,
an HNSW index (`CREATE INDEX ... USING hnsw (vec halfvec_cosine_ops)`, after fixing the column to `halfvec(dim)`)
makes it approximate: pgvector's HNSW recall at ef_search 40 is typically 0.95-0.99, so the top 10 would no longer
be guaranteed to equal the embedded matrix's.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator, Sequence

import numpy as np

from kg.errors import InputError

__all__ = ["PgChunkSearch", "PgVectorStore", "PgVectorUnavailable"]

log = logging.getLogger("kgrag.vectors")


class PgVectorUnavailable(Exception):
    """The server has no pgvector (or it cannot be created): the caller keeps vectors.sqlite and says why."""


def _schema_sql(ns: str) -> str:
    return f"""
    CREATE SCHEMA IF NOT EXISTS {ns};
    CREATE TABLE IF NOT EXISTS {ns}.vector_state (key text PRIMARY KEY, value text NOT NULL);
    """


def _literal(vec) -> str:
    """A vector as pgvector's text input; float16 values print exactly (their float64 repr parses back to them)."""
    return "[" + ",".join(repr(x) for x in np.asarray(vec, dtype=np.float16).astype(np.float64).tolist()) + "]"


def _parse(text: str) -> np.ndarray:
    return np.array(text[1:-1].split(","), dtype=np.float32).astype(np.float16)


class PgVectorStore:
    """`PgVectorStore(dsn, namespace)`: the vectors of the knowledge base in schema `namespace` (`{ns}.vectors`)."""

    def __init__(self, dsn: str, namespace: str) -> None:
        from retrieval.index.postgres_conn import RetryingConnection

        self.dsn, self.ns = dsn, namespace
        self.where = f"pgvector ({namespace}.vectors)"
        self._db = RetryingConnection(dsn)
        conn = self._db.conn
        try:
            ext = self._extension(conn)
        except BaseException:
            self._db.close()
            raise
        # The extension's types and operator, qualified: it may live in a schema outside the search path.
        self._vec, self._vec32, self._cos = f"{ext}.halfvec", f"{ext}.vector", f"OPERATOR({ext}.<=>)"
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (f"{namespace}.vectors",))
            conn.execute(_schema_sql(namespace))
            # No dimension on the column: the model's comes with its first vectors (`dim`); exact search needs none.
            conn.execute(f"CREATE TABLE IF NOT EXISTS {namespace}.vectors "
                         f"(key text PRIMARY KEY, vec {self._vec} NOT NULL)")

    @staticmethod
    def _extension(conn) -> str:
        """The schema pgvector lives in, creating the extension when it is available and not yet created."""
        from psycopg import Error

        find = "SELECT n.nspname FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = 'vector'"
        row = conn.execute(find).fetchone()
        if row is None:
            try:
                conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
            except Error as exc:
                first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
                raise PgVectorUnavailable(f"CREATE EXTENSION vector failed: {first}") from exc
            row = conn.execute(find).fetchone()
        return row[0]

    def _call(self, work):
        """`work(connection)`, one caller at a time (`RetryingConnection`: opened once more if it broke while idle)."""
        return self._db.call(work)

    def _rows(self, sql: str, params=()) -> list[tuple]:
        return self._call(lambda db: db.execute(sql, params).fetchall())

    def _write(self, statements) -> None:
        """`statements(cursor)` in one transaction that also bumps the version."""
        def work(db) -> None:
            with db.transaction(), db.cursor() as cur:
                statements(cur)
                cur.execute(f"INSERT INTO {self.ns}.vector_state VALUES ('version', '1') ON CONFLICT (key) "
                            f"DO UPDATE SET value = ({self.ns}.vector_state.value::bigint + 1)::text")
        self._call(work)

    def close(self) -> None:
        self._db.close()

    def job_lock(self, job: str):
        """The lock of a job one process at a time does on these vectors (`retrieval.vectors.background`'s embedding):
        an advisory lock of the schema, so every process of every machine sharing the vectors takes its turn."""
        from retrieval.catalog.postgres_lock import PostgresWriteLock

        return PostgresWriteLock(self.dsn, self.ns, 0, job=job)

    # -- the model and the version readers follow -------------------------------------------------
    def exists(self) -> bool:
        """Vectors were ever written (a model is recorded): the tables alone say nothing."""
        return self.model() is not None

    def state(self, key: str, default: str | None = None) -> str | None:
        rows = self._rows(f"SELECT value FROM {self.ns}.vector_state WHERE key = %s", (key,))
        return rows[0][0] if rows else default

    def model(self) -> str | None:
        return self.state("model")

    def version(self) -> int:
        return int(self.state("version", "0") or 0)

    def start_model(self, model_id: str) -> bool:
        emptied = []

        def statements(cur) -> None:
            cur.execute(f"LOCK TABLE {self.ns}.vector_state IN EXCLUSIVE MODE")  # two `kg embed` runs: one at a time here
            old = cur.execute(f"SELECT value FROM {self.ns}.vector_state WHERE key = 'model'").fetchone()
            if old is not None and old[0] != model_id:
                cur.execute(f"DELETE FROM {self.ns}.vectors")
                cur.execute(f"DELETE FROM {self.ns}.vector_state WHERE key = 'dim'")
                emptied.append(True)
            cur.execute(f"INSERT INTO {self.ns}.vector_state VALUES ('model', %s) ON CONFLICT (key) "
                        "DO UPDATE SET value = excluded.value", (model_id,))

        self._write(statements)
        return bool(emptied)

    # -- vectors -------------------------------------------------------------------------------
    def missing(self, keys: Iterable[str]) -> list[str]:
        keys = list(dict.fromkeys(keys))
        have = {k for (k,) in self._rows(f"SELECT key FROM {self.ns}.vectors WHERE key = ANY(%s)", (keys,))}
        return [k for k in keys if k not in have]

    def put(self, keys: Sequence[str], vectors: np.ndarray) -> None:
        rows = [(k, _literal(v)) for k, v in zip(keys, vectors, strict=True)]
        if not rows:
            return
        dim = len(np.asarray(vectors[0]))
        recorded = int(self.state("dim", "0") or 0)
        if recorded and recorded != dim:
            raise InputError(f"these vectors have {dim} dimensions but the stored ones {recorded}: "
                             "record the model first (`kg embed` does), which empties the store")

        def statements(cur) -> None:
            cur.executemany(f"INSERT INTO {self.ns}.vectors VALUES (%s, %s::{self._vec}) "
                            "ON CONFLICT (key) DO UPDATE SET vec = excluded.vec", rows)
            cur.execute(f"INSERT INTO {self.ns}.vector_state VALUES ('dim', %s) ON CONFLICT DO NOTHING", (str(dim),))

        self._write(statements)

    def get(self, keys: Sequence[str]) -> dict[str, np.ndarray]:
        return dict(self.each(keys))

    def each(self, keys: Sequence[str]) -> Iterator[tuple[str, np.ndarray]]:
        for i in range(0, len(keys), 2000):
            part = list(keys[i:i + 2000])
            for key, text in self._rows(f"SELECT key, vec::text FROM {self.ns}.vectors WHERE key = ANY(%s)", (part,)):
                yield key, _parse(text)

    def dim(self) -> int:
        recorded = int(self.state("dim", "0") or 0)
        if recorded:
            return recorded
        rows = self._rows(f"SELECT vector_dims(vec) FROM {self.ns}.vectors LIMIT 1")
        return rows[0][0] if rows else 0

    def count(self) -> int:
        return self._rows(f"SELECT count(*) FROM {self.ns}.vectors")[0][0]

    def keys(self) -> set[str]:
        return {k for (k,) in self._rows(f"SELECT key FROM {self.ns}.vectors")}

    def bad_keys(self, dim: int) -> list[str]:
        """Vectors of the wrong length or all zeros (pgvector refuses NaN and infinity on input)."""
        return [k for (k,) in self._rows(f"SELECT key FROM {self.ns}.vectors WHERE vector_dims(vec) <> %s "
                                         "OR l2_norm(vec) = 0 ORDER BY key", (dim,))]

    def delete(self, keys: Iterable[str]) -> int:
        keys = list(keys)
        if not keys:
            return 0
        self._write(lambda cur: cur.execute(f"DELETE FROM {self.ns}.vectors WHERE key = ANY(%s)", (keys,)))
        return len(keys)

    def disk_bytes(self) -> int:
        return self._rows("SELECT pg_total_relation_size(%s::regclass)", (f"{self.ns}.vectors",))[0][0]

    # -- the dense channel's search, in the server ---------------------------------------------------
    def nearest_keys(self, query: np.ndarray, limit: int) -> list[tuple[str, float]]:
        """The `limit` stored keys nearest the question (cosine), best first: an exact scan of the table.

        Two steps in one statement: the scan compares the question rounded to float16 with each row (halfvec with
        halfvec, what an HNSW index on the column would serve), then the rows found are scored again with the
        question as it is (float32), as the embedded matrix scores them: a near tie the rounding would swap keeps
        the matrix's order (ops_dev_zh: 79 of 80 top 10s identical with the rounded question alone, 80 with both)."""
        rows = self._rows(
            f"SELECT key, vec::{self._vec32} {self._cos} %(q)s::{self._vec32} AS distance FROM "
            f"(SELECT key, vec FROM {self.ns}.vectors ORDER BY vec {self._cos} %(q)s::{self._vec32}::{self._vec} "
            "LIMIT %(n)s) AS near ORDER BY distance, key",
            {"q": "[" + ",".join(map(repr, np.asarray(query, dtype=np.float32).tolist())) + "]", "n": limit})
        return [(key, 1.0 - distance) for key, distance in rows]

    def chunk_search(self, keyed: dict[str, tuple[str, str]]) -> PgChunkSearch:
        return PgChunkSearch(keyed, self)


class PgChunkSearch:
    """`ChunkMatrix`'s search contract with the vectors left in PostgreSQL: chunk ids best first, and the vectors of
    a few chunks on demand (the diversity re-ordering). Built once per catalog generation and store version."""

    def __init__(self, keyed: dict[str, tuple[str, str]], store: PgVectorStore) -> None:
        self.store = store
        self.total = len(keyed)
        stored = store.keys()
        self.key_of = {cid: key for cid, (key, _) in keyed.items() if key in stored}
        self.ids = list(self.key_of)  # catalog order: ties between equal similarities break as the matrix breaks them
        self._row = {cid: i for i, cid in enumerate(self.ids)}
        self.chunks_of: dict[str, list[str]] = {}
        for cid, key in self.key_of.items():
            self.chunks_of.setdefault(key, []).append(cid)

    def search(self, query: np.ndarray, k: int, skip: Iterable[str] = (), keep=None) -> list[tuple[str, float]]:
        """The `k` best (id, similarity), best first; `skip` ids and those `keep(id)` refuses are passed over.
        Fetches a few more keys than asked, and four times as many again while the filters refuse too many."""
        if not self.ids:
            return []
        skip = set(skip)
        limit = k * 4 + len(skip) + 16
        while True:
            rows = self.store.nearest_keys(query, limit)
            found = [(cid, float(sim)) for key, sim in rows for cid in self.chunks_of.get(key, ())]
            found.sort(key=lambda pair: (-pair[1], self._row[pair[0]]))
            out = [(cid, sim) for cid, sim in found if cid not in skip and (keep is None or keep(cid))][:k]
            if len(out) >= k or len(rows) < limit:
                return out
            limit *= 4

    def vectors_of(self, ids) -> dict[str, np.ndarray]:
        """Chunk id -> its (normalised) vector, for the ids that have one: one round trip."""
        wanted = {cid: self.key_of[cid] for cid in ids if cid in self.key_of}
        stored = self.store.get(list(set(wanted.values())))
        out = {}
        for cid, key in wanted.items():
            if key in stored:
                vec = stored[key].astype(np.float32)
                out[cid] = vec / max(float(np.linalg.norm(vec)), 1e-6)
        return out
