"""whoosh backend of `TextIndex`: chunk title/section/body fields scored with BM25F, title boosted."""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence
from pathlib import Path

from whoosh import index as whoosh_index
from whoosh import scoring
from whoosh.fields import ID, TEXT, Schema
from whoosh.query import Or, Term

from retrieval.analysis import KgAnalyzer
from retrieval.types import Chunk, TextHit

__all__ = ["WhooshIndex", "FIELD_BOOSTS"]

# Query-time field weights: a term in the document title says far more about what the chunk is
# about than one in its body (tuned on the shared benchmarks; see bench/RESULTS.md).
FIELD_BOOSTS = {"title": 2.0, "section": 0.5, "body": 1.0}
MAX_DF_RATIO = 0.1


def _schema() -> Schema:
    analyzer = KgAnalyzer()
    return Schema(
        chunk_id=ID(stored=True, unique=True),
        doc_id=ID(stored=True),
        title=TEXT(analyzer=analyzer, phrase=False),
        section=TEXT(analyzer=analyzer, phrase=False),
        body=TEXT(analyzer=analyzer, phrase=False),
    )


class WhooshIndex:
    def __init__(self, path: Path, field_boosts: dict[str, float] | None = None,
                 max_df_ratio: float = MAX_DF_RATIO) -> None:
        self.path = Path(path)
        self.path.mkdir(parents=True, exist_ok=True)
        if whoosh_index.exists_in(self.path):
            self.ix = whoosh_index.open_dir(self.path)
        else:
            self.ix = whoosh_index.create_in(self.path, _schema())
        self.field_boosts = dict(field_boosts or FIELD_BOOSTS)
        self.max_df_ratio = max_df_ratio
        self._weighting = scoring.BM25F(B=0.75, K1=1.2)
        self._lock = threading.Lock()
        self._writer = None
        self._searcher = self.ix.searcher(weighting=self._weighting)

    # -- writes ------------------------------------------------------------------------------
    def _w(self):
        if self._writer is None:
            self._writer = self.ix.writer(limitmb=256)
        return self._writer

    def add_chunks(self, chunks: Iterable[Chunk]) -> int:
        n = 0
        with self._lock:
            writer = self._w()
            for chunk in chunks:
                writer.update_document(
                    chunk_id=chunk.chunk_id,
                    doc_id=chunk.doc_id,
                    title=chunk.title,
                    section=chunk.section,
                    body=chunk.text,
                )
                n += 1
        return n

    def delete_chunks(self, chunk_ids: Sequence[str]) -> int:
        n = 0
        with self._lock:
            writer = self._w()
            for chunk_id in chunk_ids:
                n += writer.delete_by_term("chunk_id", chunk_id) or 0
        return n

    def commit(self, optimize: bool = False) -> None:
        with self._lock:
            if self._writer is not None:
                self._writer.commit(optimize=optimize)
                self._writer = None
            # Searcher.refresh() fails on an index that was empty when opened; reopen instead.
            self._searcher.close()
            self._searcher = self.ix.searcher(weighting=self._weighting)

    def rollback(self) -> None:
        with self._lock:
            if self._writer is not None:
                self._writer.cancel()
                self._writer = None

    # -- reads -------------------------------------------------------------------------------
    def search(
        self, terms: Sequence[tuple[str, float]], limit: int, fields: dict[str, float] | None = None
    ) -> list[TextHit]:
        terms = self._informative(terms)
        if not terms:
            return []
        clauses = [
            Term(field, term, boost=weight * boost)
            for term, weight in terms
            for field, boost in (fields or self.field_boosts).items()
            if boost > 0
        ]
        results = self._searcher.search(Or(clauses), limit=limit, terms=True)
        hits = []
        for hit in results:
            matched = sorted({t.decode("utf-8") if isinstance(t, bytes) else t for _, t in hit.matched_terms()})
            hits.append(TextHit(chunk_id=hit["chunk_id"], score=float(hit.score), terms=tuple(matched)))
        return hits

    def _informative(self, terms: Sequence[tuple[str, float]]) -> list[tuple[str, float]]:
        """Drop terms found in more than MAX_DF_RATIO of the chunks (keeping at least two terms).

        Such terms barely move BM25 scores (idf near zero) but their long posting lists dominate
        whoosh's query time: on 2wiki_dev this halves p50 latency (see bench/RESULTS.md).
        """
        n = self._searcher.doc_count()
        if n < 50:
            return list(terms)
        df = {t: self._searcher.doc_frequency("body", t) for t, _ in terms}
        kept = [(t, w) for t, w in terms if df[t] <= self.max_df_ratio * n]
        if len(kept) < 2:
            kept = sorted(terms, key=lambda tw: df[tw[0]])[:2]
        return kept

    def doc_count(self) -> int:
        return self._searcher.doc_count()

    def close(self) -> None:
        self.rollback()
        self._searcher.close()
