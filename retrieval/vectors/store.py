"""The vector store of a data dir: text keys in, float16 vectors out (`vectors.sqlite`), and the model that made them.

Vectors are derived data, like the text index: keyed by the sha256 of what was embedded
(`retrieval.vectors.texts`), never by chunk id, so a chunk that a new version leaves unchanged keeps its
vector and a killed `kg embed` loses at most the batch in flight (each batch is one SQLite transaction).
The catalog stays the truth: which chunks exist is read from it, and vectors no chunk or label needs any
more are pruned when an embedding run completes. A knowledge base made before vectors has no file: that
reads as "no vectors", never as an error.

`open_vector_store` picks the store: this file in the data dir (the default), or with KG_TEXT_BACKEND=postgres a
table of the knowledge base's schema when the server has pgvector (`retrieval.vectors.pgvector_store`, same
methods, plus `chunk_search`: the nearest chunks searched by the server). A server without pgvector keeps this
file and says so once.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import numpy as np

__all__ = ["VECTORS_FILE", "VectorStore", "copy_vectors", "open_vector_store"]

VECTORS_FILE = "vectors.sqlite"
log = logging.getLogger("kgrag.vectors")
_SAID: set[str] = set()  # notes said once a process

_SCHEMA = """
CREATE TABLE IF NOT EXISTS vectors (key TEXT PRIMARY KEY, vec BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS vector_state (key TEXT PRIMARY KEY, value TEXT NOT NULL);
"""


def open_vector_store(settings, root: Path):
    """pgvector in the knowledge base's PostgreSQL schema where the text index is there and the extension can be
    used; else `VectorStore` in the data dir (the embedded default, and the fallback: a note, never an error, said
    once a process and only when an embedding model is configured)."""
    if settings.text_backend == "postgres" and settings.postgres_dsn:
        from retrieval.vectors.pgvector_store import PgVectorStore, PgVectorUnavailable

        try:
            return PgVectorStore(settings.postgres_dsn, settings.postgres_schema)
        except PgVectorUnavailable as exc:
            note = (f"PostgreSQL has no pgvector ({exc}): the vectors stay in the data dir's {VECTORS_FILE}, so each "
                    "server sharing this knowledge base embeds its own (install pgvector on the server to share them)")
            if note not in _SAID and (settings.embed_model or "").strip().lower() not in ("", "off", "none", "false"):
                _SAID.add(note)
                log.warning("%s", note)
    return VectorStore(root)


def copy_vectors(source, target, batch: int = 500) -> int:
    """Every vector of `source` (and its model) into `target`, a batch a transaction (`kg migrate`: vectors.sqlite <->
    pgvector, so a move does not cost embedding everything again). The number of vectors copied."""
    model = source.model()
    if model is None:
        return 0
    target.start_model(model)  # another model's vectors in the target are dropped, as `kg embed` drops them
    todo = target.missing(sorted(source.keys()))
    for i in range(0, len(todo), batch):
        part = todo[i:i + batch]
        got = source.get(part)
        keys = [k for k in part if k in got]
        if keys:
            target.put(keys, np.stack([got[k] for k in keys]))
    return len(todo)


class VectorStore:
    def __init__(self, root: Path) -> None:
        self.path = Path(root) / VECTORS_FILE
        self.where = VECTORS_FILE
        self._local = threading.local()

    def exists(self) -> bool:
        return self.path.exists()

    @property
    def db(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = sqlite3.connect(self.path, timeout=30, isolation_level=None, check_same_thread=False)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.executescript(_SCHEMA)
            self._local.conn = conn
        return conn

    def close(self) -> None:
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None

    def job_lock(self, job: str):
        """The lock of a job one process at a time does on these vectors (`retrieval.vectors.background`'s embedding):
        the file `<job>.lock` of the data dir, which only this data dir's processes share, as they share the vectors."""
        from kg.lock import DataDirLock

        return DataDirLock(self.path.parent, 0, name=f"{job}.lock")

    # -- the model and the version readers follow -------------------------------------------------
    def state(self, key: str, default: str | None = None) -> str | None:
        if not self.exists():
            return default
        row = self.db.execute("SELECT value FROM vector_state WHERE key = ?", (key,)).fetchone()
        return row[0] if row else default

    def model(self) -> str | None:
        """The embedding model the stored vectors were made with (None: no vectors yet)."""
        return self.state("model")

    def version(self) -> int:
        """Bumped by every batch written: a query process rebuilds its matrix when it moves."""
        return int(self.state("version", "0") or 0)

    def start_model(self, model_id: str) -> bool:
        """Record the model; a different one than recorded empties the store (its vectors are not comparable).
        True when the store was emptied."""
        with _write(self.db) as db:
            old = db.execute("SELECT value FROM vector_state WHERE key = 'model'").fetchone()
            emptied = old is not None and old[0] != model_id
            if emptied:
                db.execute("DELETE FROM vectors")
                db.execute("DELETE FROM vector_state WHERE key = 'dim'")
            db.execute("INSERT OR REPLACE INTO vector_state VALUES ('model', ?)", (model_id,))
        return emptied

    # -- vectors -------------------------------------------------------------------------------
    def missing(self, keys: Iterable[str]) -> list[str]:
        keys = list(dict.fromkeys(keys))
        if not self.exists():
            return keys
        have: set[str] = set()
        for i in range(0, len(keys), 500):
            part = keys[i:i + 500]
            have.update(k for (k,) in self.db.execute(
                f"SELECT key FROM vectors WHERE key IN ({','.join('?' * len(part))})", part))
        return [k for k in keys if k not in have]

    def put(self, keys: Sequence[str], vectors: np.ndarray) -> None:
        """One batch, one transaction: a kill leaves it whole or absent."""
        rows = [(k, np.asarray(v, dtype=np.float16).tobytes()) for k, v in zip(keys, vectors, strict=True)]
        with _write(self.db) as db:
            db.executemany("INSERT OR REPLACE INTO vectors VALUES (?, ?)", rows)
            if rows:  # the model's dimension, from its first vectors
                db.execute("INSERT OR IGNORE INTO vector_state VALUES ('dim', ?)", (str(len(rows[0][1]) // 2),))

    def get(self, keys: Sequence[str]) -> dict[str, np.ndarray]:
        return dict(self.each(keys))

    def each(self, keys: Sequence[str]) -> Iterator[tuple[str, np.ndarray]]:
        """(key, float16 vector) of those of `keys` that have one, 500 read at a time."""
        if not self.exists():
            return
        for i in range(0, len(keys), 500):
            part = list(keys[i:i + 500])
            for key, blob in self.db.execute(f"SELECT key, vec FROM vectors WHERE key IN ({','.join('?' * len(part))})", part):
                yield key, np.frombuffer(blob, dtype=np.float16)

    def dim(self) -> int:
        """The stored vectors' dimension (0: none yet)."""
        recorded = int(self.state("dim", "0") or 0)
        if recorded or not self.exists():
            return recorded
        row = self.db.execute("SELECT vec FROM vectors LIMIT 1").fetchone()  # a store written before 'dim' was kept
        return len(row[0]) // 2 if row else 0

    def count(self) -> int:
        return self.db.execute("SELECT COUNT(*) FROM vectors").fetchone()[0] if self.exists() else 0

    def keys(self) -> set[str]:
        return {k for (k,) in self.db.execute("SELECT key FROM vectors")} if self.exists() else set()

    def bad_keys(self, dim: int) -> list[str]:
        """Vectors of the wrong length or holding NaN / inf / zeros (a torn or foreign write)."""
        bad = []
        for key, blob in self.db.execute("SELECT key, vec FROM vectors"):
            vec = np.frombuffer(blob, dtype=np.float16) if len(blob) % 2 == 0 else None
            if vec is None or len(vec) != dim or not np.all(np.isfinite(vec)) or not np.any(vec):
                bad.append(key)
        return bad

    def delete(self, keys: Iterable[str]) -> int:
        keys = list(keys)
        if not keys or not self.exists():
            return 0
        with _write(self.db) as db:
            for i in range(0, len(keys), 500):
                part = keys[i:i + 500]
                db.execute(f"DELETE FROM vectors WHERE key IN ({','.join('?' * len(part))})", part)
        return len(keys)

    def disk_bytes(self) -> int:
        return sum(p.stat().st_size for p in self.path.parent.glob(VECTORS_FILE + "*") if p.exists())


@contextmanager
def _write(db: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """One write transaction of the store, its version bumped: committed whole, or rolled back (unless SQLite rolled it
    back itself, as on a full disk, when a ROLLBACK would fail and hide why)."""
    db.execute("BEGIN IMMEDIATE")
    try:
        yield db
        _bump(db)
        db.execute("COMMIT")
    except BaseException:
        if db.in_transaction:
            db.execute("ROLLBACK")
        raise


def _bump(db: sqlite3.Connection) -> None:
    row = db.execute("SELECT value FROM vector_state WHERE key = 'version'").fetchone()
    db.execute("INSERT OR REPLACE INTO vector_state VALUES ('version', ?)", (str(int(row[0]) + 1 if row else 1),))
