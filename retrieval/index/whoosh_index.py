"""whoosh backend of `TextIndex`: chunk title/section/body fields scored with BM25F, title boosted."""

from __future__ import annotations

import random
import sys
import threading
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from whoosh import index as whoosh_index
from whoosh import scoring
from whoosh.fields import ID, TEXT, Schema
from whoosh.query import Or, Term

from retrieval.index import analysis, whoosh_files, whoosh_write
from retrieval.index.analysis import GramAnalyzer, KgAnalyzer
from retrieval.index.candidates import add_common_terms, head_then_tail, top_chunks
from retrieval.index.whoosh_segments import MAX_SEGMENTS, MERGE_FACTOR, merge_all, tiered_merge
from retrieval.index.whoosh_workers import can_fork
from retrieval.index.whoosh_write import PendingSegments
from retrieval.types import Chunk, TextHit

if TYPE_CHECKING:
    from retrieval.index.posting_arrays import Postings
    from retrieval.index.whoosh_postings import PostingScores

__all__ = ["FIELD_BOOSTS", "MAX_SEGMENTS", "MERGE_FACTOR", "WhooshIndex", "add_common_terms"]

# whoosh names new segments with the global `random` module: a process that seeded it (a script's
# random.seed(0), hypothesis) picks the names an earlier run picked, and the commit fails on the clash
# (AssertionError in create_compound_file). Names from a generator of its own cannot repeat that way.
def _install_segment_names() -> None:
    import whoosh.codec.base
    import whoosh.writing
    from whoosh.util import IDCHARS

    names = random.SystemRandom()

    def random_name(size: int = 28) -> str:
        return "".join(names.choice(IDCHARS) for _ in range(size))

    whoosh.codec.base.random_name = random_name
    whoosh.writing.random_name = random_name


_install_segment_names()
whoosh_files.install()  # segment files read in place, not copied whole by each searcher
whoosh_write.install()  # short posting lists kept in their term's entry (whoosh's own path, mended)

# whoosh pickles the schema with its analyzers' module path: indexes written before the
# analyzers moved into retrieval/index/ name `retrieval.analysis`, so that name must still resolve.
sys.modules.setdefault("retrieval.analysis", analysis)

# Query-time field weights: a term in the document title says far more about what the chunk is
# about than one in its body (tuned on the shared benchmarks; see bench/RESULTS.md).
FIELD_BOOSTS = {"title": 2.0, "section": 0.5, "body": 1.0}
MAX_DF_RATIO = 0.1


def _replace_all(writer, segments: list, added: int | None = None) -> list:
    """The merge policy of `replace_all`: no older segment kept (whoosh's CLEAR)."""
    return []


def _schema() -> Schema:
    analyzer = KgAnalyzer()
    return Schema(
        chunk_id=ID(stored=True, unique=True),
        doc_id=ID(stored=True),
        title=TEXT(analyzer=analyzer, phrase=False),
        section=TEXT(analyzer=analyzer, phrase=False),
        body=TEXT(analyzer=analyzer, phrase=False),
        grams=TEXT(analyzer=GramAnalyzer(), phrase=False),
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
        self._has_grams = "grams" in self.ix.schema.names()  # indexes made before the field existed lack it
        self._bm25 = (0.75, 1.2)  # B, K1
        self._weighting = scoring.BM25F(B=self._bm25[0], K1=self._bm25[1])
        # One searcher serves every thread, and whoosh reads its posting files with seek + read on
        # shared file objects: two searches at once corrupt each other's reads (UnpicklingError).
        self._search_lock = threading.Lock()
        self._closed = False
        self.writes = PendingSegments(self.ix)  # what is added and deleted until the next commit
        # (searcher, its PostingScores), opened by the first read after each commit: a process that only writes
        # (`kg ingest` of an edit) opens the segments once, in the writer, instead of three times.
        self._reader: tuple | None = None
        self._reader_lock = threading.Lock()
        self._scope: tuple = (None, {})  # (searcher, {doc ids: their docnums}) of scoped searches

    def _open_reader(self) -> tuple:
        with self._reader_lock:
            if self._reader is None:
                # Here, not at the top: the scores need numpy, which an ingest (a writer) never imports.
                from retrieval.index.whoosh_postings import PostingScores

                searcher = self.ix.searcher(weighting=self._weighting)
                self._reader = (searcher, PostingScores(searcher, self._bm25))  # its scores, length norms, chunk ids
            return self._reader

    @property
    def _searcher(self):
        return (self._reader or self._open_reader())[0]

    @property
    def _scores(self) -> PostingScores:
        return (self._reader or self._open_reader())[1]

    # -- writes (whoosh's writer and its new segments: `PendingSegments`, retrieval/index/whoosh_write.py) --
    def add_chunks(self, chunks: Iterable[Chunk], file_words: Mapping[str, str] | None = None) -> int:
        """`file_words`: doc id -> the words of the document's file path, indexed with each chunk's
        heading path in the section field."""
        return self.writes.add(chunks, file_words or {}, self._has_grams)

    def use_workers(self, processes: int) -> bool:
        """Have `processes` forked worker processes analyse and write the chunks added until the next commit or
        rollback (0: this process, the default); False where processes cannot be forked (then this one does)."""
        self.writes.workers = processes if can_fork() else 0
        return self.writes.workers == processes

    def upgrade_schema(self) -> None:
        """Add the fields an index made by an older kgrag lacks (they fill as chunks are indexed again)."""
        if not self._has_grams:
            self.writes.writer().add_field("grams", _schema()["grams"])
            self._has_grams = True

    def delete_chunks(self, chunk_ids: Sequence[str]) -> int:
        return self.writes.delete(chunk_ids)

    def prepare(self, optimize: bool = False, replace_all: bool = False) -> None:
        """Write what the open writer holds (and the segments the merge policy merges) into new segment
        files that no reader sees yet: the slow part of a commit, done while queries go on. `commit()`
        then only publishes them. `optimize`: merge every segment into one (`kg check --repair --optimize`);
        `replace_all`: what this writer added becomes the whole index (every older segment dropped)."""
        policy = _replace_all if replace_all else merge_all if optimize else tiered_merge
        self.writes.prepare(policy)

    def commit(self, optimize: bool = False, replace_all: bool = False) -> None:
        """Publish the writer's segments (written now unless `prepare` already did); the next read searches
        them. With no writer open, only move the next read to the latest commit."""
        self.prepare(optimize=optimize, replace_all=replace_all)
        with self.writes.lock:
            self.writes.publish()
            # The next read opens a searcher on the latest commit (Searcher.refresh() fails on an index that
            # was empty when opened).
            with self._search_lock:  # never under a search that is still reading the old one
                self._drop_reader()

    def optimize(self) -> int:
        """Merge every segment into one, written before the switch like any commit (`commit()` publishes it);
        returns how many segments there were (nothing to do for one)."""
        before = self.segment_count()
        if before > 1:
            self.writes.writer()
            self.prepare(optimize=True)
        return before

    def segment_count(self) -> int:
        with self._search_lock:
            return len(self.ix._segments())

    def rollback(self) -> None:
        self.writes.rollback()

    # -- reads -------------------------------------------------------------------------------
    def search(
        self,
        terms: Sequence[tuple[str, float]],
        limit: int,
        fields: dict[str, float] | None = None,
        grams: Sequence[tuple[str, float]] = (),
        doc_ids: frozenset[str] | None = None,
        beyond: int = 0,
    ) -> list[TextHit]:
        """BM25F over the word fields for `terms`, plus the `grams` field for Chinese character pairs;
        `doc_ids` keeps the search inside those documents (the packs a question was routed to);
        `beyond` more hits after the `limit` best, which they never reorder (`head_then_tail`)."""
        with self._search_lock:
            return self._search(terms, limit, fields, grams, doc_ids, beyond)

    def _search(self, terms, limit, fields, grams, doc_ids=None, beyond: int = 0) -> list[TextHit]:
        fields = {f: b for f, b in (fields or self.field_boosts).items() if b > 0}
        rare, common = self._split_by_frequency(terms, "body")
        # Character pairs re-score the candidates the words found, from cached posting scores;
        # as query clauses they would triple whoosh's query time for little extra recall.
        gram_common = list(grams) if self._has_grams else []
        if not rare or not fields:
            return []
        scope = None
        if doc_ids is not None:  # docnums of each scope, cached until the searcher changes
            if self._scope[0] is not self._searcher:
                self._scope = (self._searcher, {})
            scope = self._scope[1].get(doc_ids)
            if scope is None:
                scope = self._scope[1][doc_ids] = self._scope_docnums(doc_ids)
        found = self._top_chunks(rare, fields, limit + beyond, scope, ties=limit)
        if found and (common or gram_common):
            rare_scores = [entry[2] for entry in found]
            self._add_common_terms(found, common, fields)
            self._add_common_terms(found, gram_common, {"grams": 1.0}, report=False)
            found = head_then_tail(found, limit, rare_scores)
        return [TextHit(chunk_id=cid, score=score, terms=tuple(sorted(matched)), docnum=docnum)
                for docnum, cid, score, matched in found[:limit + beyond]]

    def _top_chunks(self, rare, fields: dict[str, float], limit: int, scope: set[int] | None,
                    term_scores=None, ties: int = 0) -> list[list]:
        """`top_chunks` over this index's cached term scores (or a scoped search's `term_scores`)."""
        return top_chunks(rare, fields, limit, scope, term_scores or self._term_scores, self._scores.chunk_id, ties)

    def _term_scores(self, field: str, term: str) -> Postings:
        """docnum -> BM25F score of one term over the whole index (`PostingScores.term_scores`), until the next commit."""
        return self._scores.term_scores(field, term)

    def term_scores(self, terms: Sequence[tuple[str, float]], docnums: Sequence[int],
                    fields: dict[str, float] | None = None) -> dict[int, dict[str, float]]:
        """docnum -> {term: its weighted BM25F score in that chunk}, for a few candidate chunks.

        Per-term posting scores come from the same cache as the common terms' (one walk of a
        posting list per term until the next commit), so re-scoring a section's chunks word by
        word costs dictionary look-ups once a word has been seen.
        """
        fields = {f: b for f, b in (fields or self.field_boosts).items() if b > 0}
        out: dict[int, dict[str, float]] = {d: {} for d in docnums}
        if not out:
            return out
        # Under the search lock like every read of the searcher's files: a posting list read here
        # while another thread's search seeks the same file object read garbage ("Block tag error").
        import numpy as np

        asked = list(out)
        docnums = np.array(asked, dtype=np.int64)
        with self._search_lock:
            for term, weight in terms:
                for field, boost in fields.items():
                    scores = self._term_scores(field, term)
                    if not scores:
                        continue
                    held, where = scores.positions(docnums)
                    for i, score in zip(np.flatnonzero(held).tolist(), scores.scores[where[held]].tolist(), strict=True):
                        per_term = out[asked[i]]
                        per_term[term] = per_term.get(term, 0.0) + score * weight * boost
        return out

    def _split_by_frequency(self, terms: Sequence[tuple[str, float]], field: str, n: int | None = None,
                            doc_frequency=None):
        """(rare, common): common terms are in more than `max_df_ratio` of the chunks.

        Common terms still count (BM25 gives them a small idf, not none), but whoosh walks a
        term's whole posting list in Python, so they only score the candidates the rare terms
        found (`_add_common_terms`) instead of selecting candidates. At least two terms stay rare.
        `n` and `doc_frequency(field, term)` default to this index's (a scoped search passes its own).
        """
        if not terms:
            return [], []
        n = self._searcher.doc_count() if n is None else n
        if n < 50:
            return list(terms), []
        doc_frequency = doc_frequency or self._scores.doc_frequency  # cached per searcher: whoosh asks every segment
        df = {t: doc_frequency(field, t) for t, _ in terms}
        rare = [(t, w) for t, w in terms if df[t] <= self.max_df_ratio * n]
        if len(rare) < 2:
            rare = sorted(terms, key=lambda tw: df[tw[0]])[:2]
        chosen = {t for t, _ in rare}
        return rare, [(t, w) for t, w in terms if t not in chosen and df[t] > 0]

    def _add_common_terms(self, found: list, common, fields: dict[str, float], report: bool = True,
                          term_scores=None) -> None:
        """Add the exact whoosh BM25F score of each common term to the candidates that contain it."""
        add_common_terms(found, common, fields, term_scores or self._term_scores, report=report)

    def _scope_docnums(self, doc_ids: frozenset[str]) -> set[int]:
        """Docnums of the chunks of those documents in the current searcher (the caller holds `_search_lock`)."""
        if not doc_ids:
            return set()
        return set(self._searcher.docs_for_query(Or([Term("doc_id", d) for d in doc_ids])))

    def doc_count(self) -> int:
        with self._search_lock:
            return self._searcher.doc_count()

    def doc_frequency(self, term: str, field: str = "body") -> int:
        """How many chunks hold the analyzed term (routing weighs a question's words by it)."""
        with self._search_lock:
            return self._scores.doc_frequency(field, term)

    def close(self) -> None:
        if self._closed:
            return
        self.rollback()
        self._drop_reader()
        self._closed = True

    def _drop_reader(self) -> None:
        with self._reader_lock:
            reader, self._reader = self._reader, None
        if reader is not None:
            reader[0].close()


