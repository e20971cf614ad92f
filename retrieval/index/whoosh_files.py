"""whoosh's memory-mapped segment files in, read in place out: opening a searcher costs what it reads, not the index's size.

whoosh opens each file inside a compound segment as a `BufferFile` over a memoryview of the mmap, and
`BufferFile.__init__` wraps that view in `io.BytesIO`, which copies it: every searcher (and every writer,
which opens one to apply `update_document`'s deletes) copied each segment's terms and postings whole,
so a one-paragraph edit of a 50k-chunk knowledge base copied the index three times (issue 25: the edit
grew with the index). `ViewFile` reads the same bytes from the view itself; nothing is copied until read.
"""

from __future__ import annotations

import os

__all__ = ["ViewFile", "install"]


class ViewFile:
    """A read-only, seekable file over a buffer (what `BufferFile` needs of its `file`), without copying it."""

    __slots__ = ("_buf", "_end", "_pos")

    def __init__(self, buf) -> None:
        self._buf = memoryview(buf).cast("B")
        self._end = len(self._buf)
        self._pos = 0

    def read(self, n: int | None = -1) -> bytes:
        start = self._pos
        end = self._end if n is None or n < 0 else min(start + n, self._end)
        self._pos = max(start, end)
        return self._buf[start:end].tobytes()

    def peek(self, n: int = 0) -> bytes:
        """The bytes ahead without moving: with it `pickle.load` reads a pickle (whoosh's posting block headers, one
        per block) in two calls instead of one per opcode, some twenty. At most 512 bytes: pickle asks for 8 KB
        and reads on when a pickle is longer, and a block header is some forty."""
        return self._buf[self._pos:min(self._pos + min(max(n, 1), 512), self._end)].tobytes()

    def readinto(self, out) -> int:
        start = self._pos
        end = min(start + len(out), self._end)
        n = max(0, end - start)
        memoryview(out).cast("B")[:n] = self._buf[start:start + n]
        self._pos = start + n
        return n

    def readline(self, limit: int | None = -1) -> bytes:
        start = self._pos
        stop = self._end if limit is None or limit < 0 else min(start + limit, self._end)
        line = bytearray()
        pos = start
        while pos < stop:  # in blocks: a pickle's text opcodes read lines of a few bytes
            block = self._buf[pos:min(pos + 4096, stop)].tobytes()
            cut = block.find(b"\n")
            if cut >= 0:
                line += block[:cut + 1]
                pos += cut + 1
                break
            line += block
            pos += len(block)
        self._pos = pos
        return bytes(line)

    def seek(self, offset: int, whence: int = os.SEEK_SET) -> int:
        base = {os.SEEK_SET: 0, os.SEEK_CUR: self._pos, os.SEEK_END: self._end}[whence]
        if base + offset < 0:
            raise ValueError(f"negative seek position {base + offset}")
        self._pos = base + offset
        return self._pos

    def tell(self) -> int:
        return self._pos

    def __iter__(self):
        while line := self.readline():
            yield line

    def close(self) -> None:
        self._buf.release()


def install() -> None:
    """Make whoosh's `BufferFile` read its buffer through `ViewFile` (idempotent)."""
    from whoosh.filedb import structfile

    cls = structfile.BufferFile
    if getattr(cls, "_reads_in_place", False):
        return
    original = cls.__init__

    def __init__(self, buf, name=None, onclose=None):
        original(self, b"", name=name, onclose=onclose)  # every attribute whoosh sets, with an empty BytesIO
        self._buf = buf
        self.file = ViewFile(buf)

    cls.__init__ = __init__
    cls._reads_in_place = True
