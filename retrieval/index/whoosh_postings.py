"""One whoosh searcher's postings -> BM25F scores per (field, term), length norms and chunk ids, read whole and cached for that searcher's life.

`WhooshIndex` keeps one `PostingScores` per searcher and makes a new one at each commit; the posting blocks are
read here straight from whoosh 2.7's on-disk matcher (see `posting_blocks`), not one posting per method call.
"""

from __future__ import annotations

from collections.abc import Iterator

__all__ = ["PostingScores", "posting_blocks", "postings"]


class PostingScores:
    """The scores of one searcher (`bm25`: whoosh BM25F's (B, K1))."""

    def __init__(self, searcher, bm25: tuple[float, float]) -> None:
        self.searcher = searcher
        self.bm25 = bm25
        self._scores: dict[tuple[str, str], dict[int, float]] = {}
        self._lengths: dict[tuple[str, int], list[float]] = {}  # (field, segment) -> length norms
        self._chunk_ids: dict[int, str] = {}  # docnum -> chunk id

    def term_scores(self, field: str, term: str) -> dict[int, float]:
        """docnum -> BM25F score of one term, for the whole posting list; cached for this searcher's life.

        The score is whoosh's `BM25FScorer` (same statistics, same formula, same order of operations,
        so the same floats; a test compares them) computed over whole posting blocks: one question's
        terms in three fields are ~30 posting lists, and whoosh's matcher walked each posting through
        five method calls. The same few hundred common terms recur across questions, so most
        questions find their lists here already.
        """
        key = (field, term)
        cached = self._scores.get(key)
        if cached is None:
            cached = {}
            searcher = self.searcher
            if searcher.schema[field].scorable and searcher.doc_frequency(field, term):
                idf = searcher.idf(field, term)
                k1p1 = self.bm25[1] + 1
                for sub, offset, ids, weights, deleted in posting_blocks(searcher, field, term):
                    norm = self.length_norms(field, sub, offset)  # K1 * ((1 - B) + B * fl / avgfl)
                    cached.update((d + offset, idf * ((tf * k1p1) / (tf + norm[d])))
                                  for d, tf in zip(ids, weights, strict=True) if d not in deleted)
            if len(self._scores) > 5000:
                self._scores.clear()
            self._scores[key] = cached
        return cached

    def length_norms(self, field: str, sub, offset: int) -> list[float]:
        """Segment docnum -> BM25's length norm `K1 * ((1 - B) + B * fl / avgfl)` of the field, for one
        segment of this searcher: its lengths are read in one go, not one seek per document."""
        norms = self._lengths.get((field, offset))
        if norms is None:
            B, K1 = self.bm25
            avgfl = self.searcher.avg_field_length(field) or 1  # once per segment and field
            norms = self._lengths[(field, offset)] = [K1 * ((1 - B) + B * fl / avgfl) for fl in _field_lengths(sub, field)]
        return norms

    def chunk_id(self, docnum: int) -> str:
        chunk_id = self._chunk_ids.get(docnum)
        if chunk_id is None:
            chunk_id = self._chunk_ids[docnum] = self.searcher.stored_fields(docnum)["chunk_id"]
        return chunk_id


def postings(searcher, field: str, term: str) -> Iterator[tuple[int, float]]:
    """(docnum, weight) of every live posting of `term`, segment by segment."""
    for _, offset, ids, weights, deleted in posting_blocks(searcher, field, term):
        for docnum, weight in zip(ids, weights, strict=True):
            if docnum not in deleted:
                yield docnum + offset, weight


def posting_blocks(searcher, field: str, term: str) -> Iterator[tuple]:
    """(segment searcher, docnum offset, ids, weights, deleted ids) of each block of `term`'s postings.

    whoosh 2.7's on-disk matcher (`W3LeafMatcher`) keeps a block's ids and weights in `_ids` and
    `_weights`; reading them whole is what its `id()`/`weight()`/`next()` do one posting at a time.
    Deleted documents are to be skipped as whoosh's `FilterMatcher` does. Any other matcher is
    walked through the public interface.
    """
    from whoosh.codec.whoosh3 import W3LeafMatcher
    from whoosh.matching.wrappers import FilterMatcher
    from whoosh.reading import TermNotFound

    for sub, offset in searcher.leaf_searchers():
        try:
            matcher = sub.reader().postings(field, term)
        except TermNotFound:
            continue
        deleted: frozenset | set = frozenset()
        if type(matcher) is FilterMatcher and matcher._exclude:
            deleted, matcher = matcher._ids, matcher.child
        if type(matcher) is not W3LeafMatcher:
            ids, weights = [], []
            while matcher.is_active():
                ids.append(matcher.id())
                weights.append(matcher.weight())
                matcher.next()
            yield sub, offset, ids, weights, deleted
            continue
        while matcher.is_active():
            if matcher._ids is None:
                matcher._read_ids()
            if matcher._weights is None:
                matcher._read_weights()
            first = matcher._i
            yield sub, offset, matcher._ids[first:], matcher._weights[first:], deleted
            matcher._next_block()


def _field_lengths(sub, field: str) -> list[int]:
    """Docnum -> the field's length in one segment, as whoosh's scorers read it (`doc_field_length`
    with a default of 1): the whole lengths column at once where the codec is whoosh's own."""
    from whoosh.codec.whoosh3 import LENGTHS_COLUMN, W3PerDocReader, _lenfield
    from whoosh.util.numeric import byte_to_length

    reader = sub.reader()
    n = reader.doc_count_all()
    perdoc = getattr(reader, "_perdoc", None)
    if type(perdoc) is W3PerDocReader:
        column = perdoc._cached_reader(_lenfield(field), LENGTHS_COLUMN)
        if column is None:
            return [1] * n
        raw = column._dbfile.get(column._basepos, column._count) if column._count else b""
        return [byte_to_length(b) for b in raw] + [0] * (n - len(raw))
    return [reader.doc_field_length(d, field, 1) or 0 for d in range(n)]
