"""Chunks to add and chunk ids to delete in, new whoosh segments out: the write side of a `WhooshIndex`, written ahead of its commit and then published.

whoosh has one writer per index. What it is given goes into new segment files that no reader opens
(`prepare`: the slow part, done while queries go on reading the old segments); `publish` then writes
the small table of contents that makes them the index, so a commit holds readers only for the switch.
"""

from __future__ import annotations

import logging
import shutil
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path

from retrieval.index import whoosh_merge
from retrieval.index.whoosh_adding import add_document
from retrieval.index.whoosh_workers import SegmentWorkers
from retrieval.types import Chunk

log = logging.getLogger(__name__)

__all__ = ["INLINE_LIMIT", "WRITER_LIMIT_MB", "PendingSegments", "install"]

WRITER_LIMIT_MB = 96  # whoosh's posting pool spills sorted runs to disk past this (bounded writer memory)
# A term's posting list shorter than this is kept in its term entry, not as a block of the posting file: adding short
# Chinese passages costs 15-19% less CPU, English ones 10-15%, ops_dev_zh's sections 6%; the index is 10-12% smaller;
# query CPU is the same within this machine's noise (bench/RESULTS-scale.md, "Short posting lists in the term entry").
INLINE_LIMIT = 4


def install() -> None:
    """Mend whoosh 2.7's codec path for posting lists kept in their term's entry (INLINE_LIMIT), once a process.

    Its default writes every term's postings as a block of their own in the posting file (pickled, zlib-compressed
    however small, with a header), and most terms of a segment, above all the character pairs of Chinese text, occur
    in one to three chunks. The codec can keep such a list in the term's entry instead, but in whoosh 2.7 (the
    pinned whoosh-reloaded 2.7.5) that path is unreachable (the default limit of 1 never triggers it) and broken
    twice: its writer calls `set_inline`, which `W3TermInfo` names `set_inlined`, and a field without per-posting
    values (term frequencies only) keeps no values, which a merge then reads back as "" where the posting file gives
    None, and refuses. Segments written either way are read by the same code, whoosh's and
    `whoosh_postings.inlined_postings`; the postings, and so every score, are the same.

    Also: whoosh compresses each posting block with `zlib.compress`, whose fresh ~256 KB of state per call is an mmap
    of its own in a process with a large heap (61 µs for a 130-byte block); `whoosh_merge.compress` gives the same
    ratio for a block's size with heap-sized state (7 µs). Any zlib reader, whoosh's too, reads both.

    And: past `WRITER_LIMIT_MB` the writer's posting pool spills sorted runs to temporary files, one `pickle.dump`
    and one `pickle.load` a posting; runs are written and read in blocks of postings instead (`_write_run`,
    `_read_run`): ingesting rgb_zh_dev's 10,585 passages in one call spilled 1.7M postings, 11 of its 72 CPU-seconds.
    The runs live only while one writer writes its segment."""
    import types
    import zlib

    from whoosh import writing
    from whoosh.codec import whoosh3

    whoosh3.W3TermInfo.set_inline = _set_inline
    whoosh3.zlib = types.SimpleNamespace(compress=whoosh_merge.compress, decompress=zlib.decompress)
    writing.PostingPool._write_run = _write_run
    writing.PostingPool._read_run = _read_run


_RUN_BLOCK = 8192  # postings a pickle in a spilled run


def _write_run(pool, f, items) -> None:
    """`SortingPool._write_run` a block of postings at a time (whoosh dumps each one)."""
    import itertools
    import pickle

    items = iter(items)
    while block := list(itertools.islice(items, _RUN_BLOCK)):
        pickle.dump(block, f, pickle.HIGHEST_PROTOCOL)
    f.close()


def _read_run(pool, path):
    """The postings of a run `_write_run` wrote, in order; the run file is removed once read (as whoosh's)."""
    import pickle

    f = pool._open_run(path)
    try:
        while True:
            try:
                block = pickle.load(f)
            except EOFError:
                return
            yield from block
    finally:
        f.close()
        pool._remove_run(path)


def _writer_args() -> dict:
    from whoosh.codec.whoosh3 import W3Codec

    return {"limitmb": WRITER_LIMIT_MB, "codec": W3Codec(inlinelimit=INLINE_LIMIT)}


def _set_inline(terminfo, ids, weights, values) -> None:
    """`W3TermInfo.set_inlined`, with one None a posting when the field keeps no values (as a posting block has)."""
    terminfo._inlined = (tuple(ids), tuple(weights), tuple(values) if len(values) else (None,) * len(ids))


class PendingSegments:
    """What a `WhooshIndex` was given since its last commit: whoosh's writer (opened by the first write after
    a commit) and, once `prepare` wrote them, the segments that are to become the index."""

    def __init__(self, ix) -> None:
        self.ix = ix
        self.lock = threading.Lock()
        self.workers = 0  # processes to index new chunks in (`whoosh_workers`); 0: this one
        self._writer = None
        self._pool: SegmentWorkers | None = None  # started by the first chunk added with `workers` set
        self._prepared: list | None = None  # the writer's segments once written, before they are published

    def writer(self):
        if self._writer is None:
            self._writer = self.ix.writer(**_writer_args())
            self._prepared = None
        return self._writer

    def add(self, chunks: Iterable[Chunk], file_words: Mapping[str, str], with_grams: bool) -> int:
        """Each chunk with its document's file path words before its heading path in the section field
        (`with_grams`: the index has the character-pair field, which older indexes lack)."""
        n = 0
        with self.lock:
            writer = self.writer()
            indexed = writer.searcher().reader()  # the segments before this writer (whoosh caches the searcher)
            for chunk in chunks:
                section = " > ".join(part for part in (file_words.get(chunk.doc_id, ""), chunk.section) if part)
                fields = dict(
                    chunk_id=chunk.chunk_id, doc_id=chunk.doc_id, title=chunk.title, section=section,
                    body=chunk.text,
                )
                if with_grams:
                    fields["grams"] = chunk.title + "\n" + chunk.text
                # whoosh's update_document: a chunk id already in a segment is deleted there first (after an
                # interrupted write a chunk is never in the index twice). Its look-up walks each segment's postings
                # for a live document (~0.3 ms a chunk at 16 segments); most chunk ids are new, and the term tables
                # say so by one hash look-up a segment.
                if ("chunk_id", chunk.chunk_id) in indexed:
                    writer.delete_by_term("chunk_id", chunk.chunk_id)
                if self.workers and self._pool is None:  # `WhooshIndex.use_workers` set it where fork exists
                    self._pool = SegmentWorkers(self.ix, self.workers, _writer_args())  # forked now: after the
                    # words this ingest taught jieba, so the workers cut text as this process would
                if self._pool is not None:
                    self._pool.add(fields)
                else:
                    add_document(writer, fields)
                n += 1
        return n

    def delete(self, chunk_ids: Sequence[str]) -> int:
        n = 0
        with self.lock:
            writer = self.writer()
            for chunk_id in chunk_ids:
                n += writer.delete_by_term("chunk_id", chunk_id) or 0
        return n

    def prepare(self, policy: Callable) -> None:
        """Write what the open writer holds, and the segments the merge `policy` (whoosh's signature:
        (writer, segments) -> the segments kept) merges into it, as segment files no reader sees yet."""
        with self.lock:
            writer = self._writer
            if writer is None or self._prepared is not None:
                return
            pool = self._pool
            if pool is None:
                segments = policy(writer, writer.segments)
                theirs = []
            else:
                try:
                    theirs = pool.finish()  # the workers' segments, merged by later commits like any new one
                except BaseException:
                    pool.cancel()
                    raise
                finally:
                    self._pool = None
                segments = policy(writer, writer.segments, added=sum(seg.doc_count_all() for seg in theirs))
            if writer._added:
                segments.append(whoosh_merge.finalize(writer))
            else:
                writer._close_segment()
            self._prepared = segments + theirs

    def publish(self) -> None:
        """Make the prepared segments the index (a no-op with no writer open); the caller holds `lock`
        and has called `prepare`."""
        if self._writer is not None:
            writer, segments = self._writer, self._prepared
            try:
                writer._commit_toc(segments)  # the new generation: a small file written and renamed
            finally:
                writer._finish()
                self._writer = self._prepared = None

    def rollback(self) -> None:
        with self.lock:
            writer, prepared, pool = self._writer, self._prepared, self._pool
            self._writer = self._prepared = self._pool = None
            if pool is not None:
                pool.cancel()  # what the workers wrote is no segment of the index; whoosh's next commit deletes it
            if writer is not None:
                whoosh_merge.discard(writer)
                if prepared is None:
                    try:
                        writer.cancel()
                    except Exception:  # noqa: BLE001 - cancelling writes too (whoosh closes the segment's files):
                        # on a full disk it fails half-way, before it lets go of its temporary folder and write lock
                        log.debug("cancelling the index writer failed; finishing it", exc_info=True)
                        _finish(writer)
                else:  # segment files written but never published
                    writer._finish()
            if writer is not None or pool is not None:
                self._clean()

    def _clean(self) -> None:
        """Delete what a write that did not commit left in the index folder (segment files no generation names, the
        writer's temporary folder), as whoosh's next commit would: on a full disk, that space is what the user must
        free. Under the write lock (every write rolls back under it), so no other writer's files are in the folder."""
        from whoosh.index import TOC, clean_files

        ix = self.ix
        try:
            toc = TOC.read(ix.storage, ix.indexname)
            clean_files(ix.storage, ix.indexname, toc.generation, toc.segments)
            shutil.rmtree(Path(ix.storage.folder) / f"{ix.indexname}.tmp", ignore_errors=True)
        except Exception:  # noqa: BLE001 - best effort: the next commit deletes them too
            log.debug("cleaning the index folder after a rollback failed", exc_info=True)


def _finish(writer) -> None:
    """whoosh's `SegmentWriter._finish` (its temporary folder, then its write lock), the lock let go whatever happens."""
    try:
        writer._finish()
    except Exception:  # noqa: BLE001
        if writer.writelock:
            writer.writelock.release()
        writer.is_closed = True
