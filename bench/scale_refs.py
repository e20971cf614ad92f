"""The references bench/scale.py measures kgrag against, over the very chunks each batch added: jieba-cut text in
SQLite FTS5 and in tantivy (tantivy comes with the `bench` extra)."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

__all__ = ["Fts5", "Tantivy"]


class Fts5:
    """jieba-cut text in an FTS5 table (the approach users copy from blog posts), one transaction a batch."""

    def __init__(self, path: Path) -> None:
        import jieba

        jieba.setLogLevel(60)
        self.cut = jieba.lcut
        self.db = sqlite3.connect(path)
        self.db.execute("CREATE VIRTUAL TABLE IF NOT EXISTS chunks USING fts5(chunk_id UNINDEXED, title, body)")

    def add(self, chunks) -> None:
        with self.db:
            self.db.executemany("INSERT INTO chunks VALUES (?, ?, ?)",
                                [(c.chunk_id, " ".join(self.cut(c.title)), " ".join(self.cut(c.text))) for c in chunks])

    def query(self, text: str) -> list[str]:
        words = {w.strip() for w in self.cut(text) if w.strip() and re.search(r"\w", w)}
        if not words:
            return []
        match = " OR ".join('"' + w.replace('"', '""') + '"' for w in words)
        return [r[0] for r in self.db.execute(
            "SELECT chunk_id FROM chunks WHERE chunks MATCH ? ORDER BY bm25(chunks, 2.0, 1.0) LIMIT 10", (match,))]


class Tantivy:
    """tantivy over the same jieba-cut text (whitespace tokens), one commit a batch."""

    def __init__(self, path: Path) -> None:
        import jieba
        import tantivy

        self.cut = jieba.lcut
        builder = tantivy.SchemaBuilder()
        builder.add_text_field("chunk_id", stored=True, tokenizer_name="raw")
        builder.add_text_field("title", tokenizer_name="whitespace")
        builder.add_text_field("body", tokenizer_name="whitespace")
        self.schema = builder.build()
        path.mkdir(parents=True, exist_ok=True)
        self.index = tantivy.Index(self.schema, path=str(path))
        self.tantivy = tantivy

    def add(self, chunks) -> None:
        writer = self.index.writer(heap_size=50_000_000, num_threads=1)
        for c in chunks:
            writer.add_document(self.tantivy.Document(chunk_id=c.chunk_id, title=" ".join(self.cut(c.title)).lower(),
                                                      body=" ".join(self.cut(c.text)).lower()))
        writer.commit()
        writer.wait_merging_threads()
        self.index.reload()

    def query(self, text: str) -> list[str]:
        words = {w.strip().lower() for w in self.cut(text) if w.strip() and re.search(r"\w", w)}
        if not words:
            return []
        searcher = self.index.searcher()
        t = self.tantivy
        q = t.Query.boolean_query([(t.Occur.Should, t.Query.term_query(self.schema, f, w)) for w in words
                                   for f in ("title", "body")])
        return [searcher.doc(addr)["chunk_id"][0] for _, addr in searcher.search(q, 10).hits]
