"""One whoosh searcher's postings -> BM25F scores per (field, term), length norms and chunk ids, read whole and cached for that searcher's life.

`WhooshIndex` keeps one `PostingScores` per searcher and makes a new one at each commit; the posting blocks are
read here straight from whoosh 2.7's on-disk matcher (see `posting_blocks`), not one posting per method call.
"""

from __future__ import annotations

import functools
import math
import pickle
import struct
import zlib
from collections.abc import Iterator
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # numpy is imported by the functions that read: a writer (an ingest) never needs it
    import numpy as np

    from retrieval.index.posting_arrays import Postings

from retrieval.index.whoosh_files import ViewFile

__all__ = ["PostingScores", "inlined_postings", "length_column", "matcher_arrays", "posting_blocks", "postings", "w3_blocks",
           "segment_postings", "w3_postings"]

MAX_CACHED = 5000  # (field, term) posting lists kept per searcher
# ... and their bytes: at 1M chunks one common term's list is up to ~5 MB, so 5,000 lists alone could be gigabytes in a
# `kg serve` that runs for days (120 questions there held 3,281 lists, 246 MB: bench/RESULTS-scale.md, "To 1M").
MAX_CACHED_BYTES = 512 * 2**20
_W3_MAGIC = b"W3Bl"  # whoosh.codec.whoosh3.WHOOSH3_HEADER_MAGIC
_INT = struct.Struct("!i")  # whoosh.system's int, a block's length


class PostingScores:
    """The scores of one searcher (`bm25`: whoosh BM25F's (B, K1))."""

    def __init__(self, searcher, bm25: tuple[float, float]) -> None:
        self.searcher = searcher
        self.bm25 = bm25
        self._scores: dict[tuple[str, str], Postings] = {}
        self._cached_bytes = 0  # of the arrays in `_scores`
        self._lengths: dict[tuple[str, int], np.ndarray] = {}  # (field, segment) -> length norms
        self._chunk_ids: dict[int, str] = {}  # docnum -> chunk id
        self._df: dict[tuple[str, str], int] = {}
        self._infos: dict[tuple[str, str], list | None] = {}
        self._live_docs: dict[int, np.ndarray | None] = {}  # segment offset -> which of its docnums are live

    def term_scores(self, field: str, term: str) -> Postings:
        """docnum -> BM25F score of one term, for the whole posting list; cached for this searcher's life.

        The score is whoosh's `BM25FScorer` (same statistics, same formula, same order of operations,
        so the same floats; a test compares them) computed over whole posting blocks as arrays: one
        question's terms in three fields are ~30 posting lists, and whoosh's matcher walked each posting
        through five method calls. The same few hundred common terms recur across questions, so most
        questions find their lists here already.
        """
        import numpy as np

        from retrieval.index.posting_arrays import EMPTY, Postings

        key = (field, term)
        cached = self._scores.get(key)
        if cached is None:
            cached = EMPTY
            searcher = self.searcher
            df = self.doc_frequency(field, term)
            if searcher.schema[field].scorable and df:
                # whoosh's `WeightingModel.idf` (searcher.idf) with the document frequency read once, not again per segment
                idf = math.log(searcher.doc_count_all() / (df + 1)) + 1
                k1p1 = self.bm25[1] + 1
                ids, scores = [], []
                for sub, offset, seg_ids, tfs in self._postings(field, term):
                    norm = self.length_norms(field, sub, offset)  # K1 * ((1 - B) + B * fl / avgfl)
                    ids.append(seg_ids + offset)
                    scores.append(idf * ((tfs * k1p1) / (tfs + norm[seg_ids])))
                if ids:
                    cached = Postings(np.concatenate(ids), np.concatenate(scores))
            size = cached.ids.nbytes + cached.scores.nbytes
            if len(self._scores) > MAX_CACHED or self._cached_bytes + size > MAX_CACHED_BYTES:
                self._scores.clear()  # what the next questions read is read again; the scores are the same
                self._cached_bytes = 0
            self._scores[key] = cached
            self._cached_bytes += size
        return cached

    def doc_frequency(self, field: str, term: str) -> int:
        """whoosh's `doc_frequency` (every segment's count, deleted documents included), once per (field, term)."""
        key = (field, term)
        df = self._df.get(key)
        if df is None:
            infos = self._term_infos(field, term)
            df = self.searcher.doc_frequency(field, term) if infos is None else sum(ti.doc_frequency() for _, _, ti in infos)
            if len(self._df) > MAX_CACHED * 10:
                self._df.clear()
            self._df[key] = df
        return df

    def _term_infos(self, field: str, term: str) -> list | None:
        """(segment searcher, docnum offset, whoosh's term info) of each segment that holds the term, one look-up in
        each segment's term table (whoosh looks it up again for the count, the idf and the postings); None where a
        segment is not whoosh 2.7's own codec."""
        from whoosh.codec.whoosh3 import W3TermsReader
        from whoosh.reading import SegmentReader, TermNotFound

        key = (field, term)
        if key in self._infos:
            return self._infos[key]
        searcher = self.searcher
        infos: list | None = []
        if field in searcher.schema:
            tbytes = searcher.schema[field].to_bytes(term)
            for sub, offset in searcher.leaf_searchers():
                reader = sub.reader()
                if type(reader) is not SegmentReader or type(reader._terms) is not W3TermsReader:
                    infos = None
                    break
                try:
                    infos.append((sub, offset, reader._terms.term_info(field, tbytes)))
                except TermNotFound:
                    continue
        if len(self._infos) > MAX_CACHED:
            self._infos.clear()
        self._infos[key] = infos
        return infos

    def _postings(self, field: str, term: str) -> Iterator[tuple]:
        """(segment searcher, docnum offset, docnums, weights) of the term's live postings in each segment, as arrays."""
        infos = self._term_infos(field, term)
        if infos is None:
            yield from segment_postings(self.searcher, field, term)
            return
        tbytes = self.searcher.schema[field].to_bytes(term)
        fmt = self.searcher.schema[field].format
        for sub, offset, terminfo in infos:
            terms = sub.reader()._terms
            arrays = inlined_postings(terminfo) or w3_postings(terms._postfile, terminfo)
            if arrays is None:
                matcher = terms._codec.postings_reader(terms._postfile, terminfo, fmt, term=(field, tbytes))
                arrays = _arrays(sub, offset, matcher)
            ids, tfs = arrays
            live = self._live(sub, offset)
            if live is not None:
                keep = live[ids]
                ids, tfs = ids[keep], tfs[keep]
            if len(ids):
                yield sub, offset, ids, tfs

    def _live(self, sub, offset: int) -> np.ndarray | None:
        """Segment docnum -> not deleted, for a segment with deletions (what whoosh's `FilterMatcher` skips)."""
        import numpy as np

        if offset not in self._live_docs:
            reader = sub.reader()
            live = None
            if reader.has_deletions():
                live = np.ones(reader.doc_count_all(), dtype=bool)
                deleted = list(reader.deleted_docs_set)
                live[np.array(deleted, dtype=np.int64)] = False
            self._live_docs[offset] = live
        return self._live_docs[offset]

    def length_norms(self, field: str, sub, offset: int) -> np.ndarray:
        """Segment docnum -> BM25's length norm `K1 * ((1 - B) + B * fl / avgfl)` of the field, for one
        segment of this searcher: its lengths are read in one go, not one seek per document."""
        norms = self._lengths.get((field, offset))
        if norms is None:
            B, K1 = self.bm25
            avgfl = self.searcher.avg_field_length(field) or 1  # once per segment and field
            # the same float operations in the same order as whoosh's BM25F, on the whole column at once
            norms = self._lengths[(field, offset)] = K1 * ((1 - B) + B * _field_lengths(sub, field) / avgfl)
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
    for sub, offset, matcher, deleted in _leaf_matchers(searcher, field, term):
        yield from _matcher_blocks(sub, offset, matcher, deleted)


def _leaf_matchers(searcher, field: str, term: str) -> Iterator[tuple]:
    """(segment searcher, docnum offset, the term's matcher, deleted docnums) in each segment holding the term;
    the deleted documents are taken off whoosh's `FilterMatcher`, to be skipped as it skips them."""
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
        yield sub, offset, matcher, deleted


def _matcher_blocks(sub, offset: int, matcher, deleted) -> Iterator[tuple]:
    from whoosh.codec.whoosh3 import W3LeafMatcher

    if type(matcher) is not W3LeafMatcher:
        ids, weights = [], []
        while matcher.is_active():
            ids.append(matcher.id())
            weights.append(matcher.weight())
            matcher.next()
        yield sub, offset, ids, weights, deleted
        return
    while matcher.is_active():
        if matcher._ids is None:
            matcher._read_ids()
        if matcher._weights is None:
            matcher._read_weights()
        first = matcher._i
        yield sub, offset, matcher._ids[first:], matcher._weights[first:], deleted
        matcher._next_block()


def segment_postings(searcher, field: str, term: str) -> Iterator[tuple]:
    """(segment searcher, docnum offset, docnums, weights) of `term`'s live postings in each segment, as arrays
    (int64 segment docnums, ascending; float64 weights), through whoosh's public `postings` (any codec)."""
    import numpy as np

    for sub, offset, matcher, deleted in _leaf_matchers(searcher, field, term):
        ids, tfs = _arrays(sub, offset, matcher)
        if deleted:
            live = ~np.isin(ids, np.fromiter(deleted, dtype=np.int64, count=len(deleted)))
            ids, tfs = ids[live], tfs[live]
        if len(ids):
            yield sub, offset, ids, tfs


def _arrays(sub, offset: int, matcher) -> tuple[np.ndarray, np.ndarray]:
    """`matcher_arrays`, or any other matcher walked through its public interface."""
    import numpy as np

    arrays = matcher_arrays(matcher)
    if arrays is None:
        ids, weights = [], []
        for _, _, block_ids, block_weights, _ in _matcher_blocks(sub, offset, matcher, frozenset()):
            ids.extend(block_ids)
            weights.extend(block_weights)
        arrays = np.array(ids, dtype=np.int64), np.array(weights, dtype=np.float64)
    return arrays


def matcher_arrays(matcher) -> tuple[np.ndarray, np.ndarray] | None:
    """(docnums, weights) of a `W3LeafMatcher`'s postings from where it stands (deleted documents included);
    None for any other matcher.

    whoosh 2.7 keeps a block as a pickled tuple (docnum deltas, weights: a tuple, one float for all, or None for
    1.0 each); `W3LeafMatcher._read_ids` undoes the deltas one posting at a time in Python, here it is one
    cumulative sum per block. The weights are whoosh's float32 values, exact in float64.
    """
    import numpy as np
    from whoosh.codec.whoosh3 import W3LeafMatcher

    if type(matcher) is not W3LeafMatcher or matcher._byteids:
        return None
    ids_parts, weight_parts = [], []
    while matcher.is_active():
        if matcher._data is None:
            matcher._read_data()
        deltas, weights = matcher._data[0], matcher._data[1]
        n = len(deltas)
        ids = np.cumsum(np.fromiter(deltas, dtype=np.int64, count=n))
        if weights is None:
            tfs = np.ones(n, dtype=np.float64)
        elif isinstance(weights, float):
            tfs = np.full(n, float(np.float32(weights)), dtype=np.float64)  # whoosh makes an array("f") of it
        else:
            tfs = np.fromiter(weights, dtype=np.float64, count=n)
        first = matcher._i
        ids_parts.append(ids[first:])
        weight_parts.append(tfs[first:])
        matcher._next_block()
    if not ids_parts:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float64)
    return np.concatenate(ids_parts), np.concatenate(weight_parts)


def inlined_postings(terminfo) -> tuple[np.ndarray, np.ndarray] | None:
    """(docnums, weights) of a short posting list kept inside its term's entry (`whoosh_write.INLINE_LIMIT`), as
    whoosh's `ListMatcher` would give them; None for a list written to the posting file."""
    import numpy as np

    if not terminfo.is_inlined():
        return None
    ids, weights, _values = terminfo.inlined_postings()
    return np.array(ids, dtype=np.int64), np.array(weights, dtype=np.float64)


def w3_postings(postfile, terminfo) -> tuple[np.ndarray, np.ndarray] | None:
    """(docnums, weights) of one segment's posting list read straight from whoosh 2.7's posting file (deleted
    documents included); None where the file is not read in place (`whoosh_files.ViewFile`) or the postings are
    inlined in the term info.

    The layout is `W3PostingsWriter`'s: the magic `W3Bl`, then per block its signed length (negative for the
    last block), a pickled info tuple (count, last id, max weight, compression, min and max length) and the
    (zlib-compressed) pickled (docnum deltas, weights). `W3LeafMatcher` reads the same bytes through a dozen
    attribute-setting calls per block, most of a cold posting list's time; the values are the same.
    """
    import numpy as np

    buf = getattr(postfile, "_buf", None)
    if buf is None or not isinstance(getattr(postfile, "file", None), ViewFile) or terminfo.is_inlined():
        return None
    start, _ = terminfo.extent()
    view = ViewFile(buf)
    if view._buf[start:start + 4].tobytes() != _W3_MAGIC:
        return None
    ids_parts, weight_parts = [], []
    for deltas, weights, _values in w3_blocks(view._buf, view, start):
        n = len(deltas)
        ids_parts.append(np.cumsum(np.fromiter(deltas, dtype=np.int64, count=n)))
        if weights is None:
            weight_parts.append(np.ones(n, dtype=np.float64))
        elif isinstance(weights, float):
            weight_parts.append(np.full(n, float(np.float32(weights)), dtype=np.float64))  # whoosh: array("f")
        else:
            weight_parts.append(np.fromiter(weights, dtype=np.float64, count=n))
    return np.concatenate(ids_parts), np.concatenate(weight_parts)


def w3_blocks(raw, stream, start: int) -> Iterator[tuple]:
    """(docnum deltas, weights, values) of each block of the posting list at `start` of a whoosh 2.7 posting file
    (`W3PostingsWriter`'s layout, its magic already checked): the block's length (negative for the last), its pickled
    info (count, last id, max weight, compression, min and max length), its pickled postings. `raw` is the file's
    bytes (or a view of them) and `stream` a seekable file over them: a `ViewFile` reads a mapped file in place, an
    `io.BytesIO` reads a list already copied out faster."""
    pos = start + 4
    while True:
        (size,) = _INT.unpack_from(raw, pos)
        end = pos + 4 + abs(size)
        stream.seek(pos + 4)
        info = pickle.Unpickler(stream).load()
        data = raw[stream.tell():end]
        yield pickle.loads(zlib.decompress(data) if info[3] else data)
        if size < 0:
            return
        pos = end


def _field_lengths(sub, field: str) -> np.ndarray:
    """Docnum -> the field's length in one segment (float64), as whoosh's scorers read it (`doc_field_length` with a
    default of 1): the whole lengths column decoded at once where the codec is whoosh's own."""
    import numpy as np
    from whoosh.codec.whoosh3 import W3PerDocReader

    reader = sub.reader()
    n = reader.doc_count_all()
    perdoc = getattr(reader, "_perdoc", None)
    if type(perdoc) is W3PerDocReader:
        raw = _length_bytes(perdoc, field)
        if raw is None:
            return np.ones(n, dtype=np.float64)
        lengths = np.zeros(n, dtype=np.float64)
        raw = raw[:n]
        lengths[:len(raw)] = _byte_lengths()[np.frombuffer(raw, dtype=np.uint8)]
        return lengths
    return np.array([reader.doc_field_length(d, field, 1) or 0 for d in range(n)], dtype=np.float64)


@functools.cache
def _byte_lengths() -> np.ndarray:
    """whoosh's length byte -> the length it stands for, as a lookup table."""
    import numpy as np
    from whoosh.util.numeric import byte_to_length

    return np.array([byte_to_length(b) for b in range(256)], dtype=np.float64)


def _length_bytes(perdoc, field: str) -> bytes | None:
    """A segment's length byte per docnum for `field` (whoosh 2.7's lengths column; shorter than the segment where its
    last documents have none), or None for a field that keeps no lengths."""
    from whoosh.codec.whoosh3 import LENGTHS_COLUMN, _lenfield

    column = perdoc._cached_reader(_lenfield(field), LENGTHS_COLUMN)
    if column is None:
        return None
    return column._dbfile.get(column._basepos, column._count) if column._count else b""


def length_column(perdoc, field: str, count: int) -> list[int] | None:
    """Docnum -> the field's length in a segment of whoosh 2.7's codec (`W3PerDocReader`), the whole column read at
    once: its length byte decoded, 0 where there is none; None for a field that keeps no lengths."""
    from whoosh.util.numeric import byte_to_length

    raw = _length_bytes(perdoc, field)
    if raw is None:
        return None
    return [byte_to_length(b) for b in raw] + [0] * (count - len(raw))
