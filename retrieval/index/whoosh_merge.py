"""Segments to merge and the writer's own new chunks in, one new whoosh segment out: a segment writer (and merge)
that moves posting lists a term at a time, in place of whoosh's posting by posting.

whoosh 2.7 merges a segment (`SegmentWriter.add_reader`) by reading every one of its postings as a tuple, adding it
to the writer's posting pool (which pickles it to a temporary file past `WRITER_LIMIT_MB`), sorting all of them
with the new chunks' and writing them one call at a time, each asking the new segment for its document's field
length: ~16 µs of CPU a posting, and merging the size tiers was most of what ingest cost (bench/RESULTS-scale.md).
The segments are already in term order, so a merge needs no sort: the terms of the pool (the new chunks, sorted by
whoosh) and of each merged segment are walked side by side, and a term's postings move as lists (docnums renumbered,
deleted chunks dropped) into whoosh 2.7's layout (`_Postings`: the blocks, the term entry). Stored fields and field
lengths still go through whoosh. The new segment's files are the same bytes whoosh writes
(`tests/test_whoosh_fast_merge.py` compares them), so every score is the same. A term of one posting, most of a
segment's, is written where it is read: from the pool's posting (`_write_pool`, a segment of new chunks alone), or
from its entry in the merged segment with the docnum replaced in its bytes (`_Moved`).

Only posting formats whose values have a fixed size (whoosh's `Existence` and `Frequency`, the only ones the text
index uses) are written this way; a schema with any other one is written and merged by whoosh.
"""

from __future__ import annotations

import heapq
import io
import itertools
import operator
import pickle
import struct
import zlib
from array import array
from collections.abc import Iterator
from hashlib import md5

from whoosh.util.numeric import length_to_byte

from retrieval.index.whoosh_postings import length_column, w3_blocks

__all__ = ["compress", "discard", "finalize", "merge_segments"]

_MAGIC = b"W3Bl"  # whoosh.codec.whoosh3.WHOOSH3_HEADER_MAGIC: a posting list's first bytes
_INT = struct.Struct("!i")
_LONG = struct.Struct("!q")
_USHORT = struct.Struct("!H")
_LENGTHS = struct.Struct("!ii")  # a key's and its value's byte length in whoosh's hash files
_TERMINFO = struct.Struct("!BfIBBfII")
_FLOAT32 = struct.Struct("f")
_EXACT = float(1 << 24)  # every whole number up to this is a float32 as it is
_FIELD_TERM = operator.itemgetter(0, 1)  # a pool posting's (fieldname, btext)
_TBYTES = operator.itemgetter(1)
_DOCNUM = operator.itemgetter(2)


class _Merge:
    """The segments one writer is merging: each with its reader (open until the new segment is written), where its
    chunks start in the new segment and, when it has deleted chunks, its docnum -> new docnum (-1: dropped)."""

    def __init__(self) -> None:
        self.sources: list[tuple] = []  # (reader, base, remap or None)

    def close(self) -> None:
        for reader, _, _ in self.sources:
            reader.close()
        self.sources = []


def merge_segments(writer, segments: list) -> None:
    """Merge `segments` into the segment `writer` is writing (what `writer.add_reader` does for each, faster):
    their stored fields and lengths now, through whoosh; their postings when the segment is written (`finalize`)."""
    from whoosh.reading import SegmentReader

    if not segments:
        return
    readers = [SegmentReader(writer.storage, writer.schema, seg) for seg in segments]
    merge = writer.__dict__.setdefault("_kg_merge", _Merge())
    if writer.__dict__.get("_kg_pooled") or not _copyable(writer) or any(
            type(reader._terms).__name__ != "W3TermsReader" for reader in readers):
        # whoosh's own merge, a posting at a time (another codec or posting format): the postings go to its pool,
        # which is written first, so no segment merged term by term may come before them
        if merge.sources:
            for reader in readers:
                reader.close()
            raise RuntimeError("whoosh's merge cannot follow segments merged term by term in one writer")
        writer.__dict__["_kg_pooled"] = True
        for reader in readers:
            writer.add_reader(reader)
            reader.close()
        return
    for reader in readers:
        base = writer.docnum
        fieldnames = set(writer.schema.names()) | {n for n in reader.indexed_field_names() if n in writer.schema}
        docmap = writer.write_per_doc(fieldnames, reader)  # stored fields, lengths, columns: whoosh's own
        remap = None
        if docmap is not None:
            remap = [-1] * reader.doc_count_all()
            for old, new in docmap.items():
                remap[old] = new
        merge.sources.append((reader, base, remap))
        writer._added = True


def finalize(writer):
    """Write `writer`'s segment (whoosh's `_finalize_segment`): the new chunks' postings a term at a time from the
    writer's sorted pool, the merged segments' copied term by term beside them."""
    merge = writer.__dict__.pop("_kg_merge", None) or _Merge()
    if not merge.sources and not _copyable(writer):
        return writer._finalize_segment()
    try:
        writer.perdocwriter.close()
        lengths = writer.per_document_reader()
        try:
            _write_postings(writer, merge.sources, lengths)
        finally:
            lengths.close()
        writer.fieldwriter.close()
    finally:
        merge.close()
    writer._close_segment()
    writer._assemble_segment()
    return writer.get_segment()


def discard(writer) -> None:
    """Close the readers of a merge whose writer is cancelled."""
    merge = writer.__dict__.pop("_kg_merge", None)
    if merge is not None:
        merge.close()


def _copyable(writer) -> bool:
    """Whether `writer`'s segment can be written here: whoosh 2.7's codec, and posting values of a fixed size."""
    from whoosh.codec.whoosh3 import W3Codec

    return type(writer.codec) is W3Codec and all(
        field.format.fixed_value_size() is not None for _, field in writer.schema.items() if field.indexed)


def _write_postings(writer, sources: list, lengths) -> None:
    """Every term of the pool (the writer's new chunks) and of the merged segments, in whoosh's term order, with its
    postings in docnum order: the pool's first, then each segment's, as whoosh's sorted pool gives them."""
    schema, fieldwriter, codec = writer.schema, writer.fieldwriter, writer.codec
    out = _Postings(fieldwriter._postfile, codec._blocklimit, codec._inlinelimit, codec._compression)
    table = _TermTable(fieldwriter._tindex)
    if not sources:  # new chunks alone, most commits
        _write_pool(writer, _sorted_pool(writer.pool), out, table, lengths)
        table.flush()
        return
    add_term = table.add
    streams = [_pool_terms(_sorted_pool(writer.pool))]
    sizes = {name: field.format.fixed_value_size() for name, field in schema.items() if field.indexed}
    moving = out.inlinelimit > 1  # a one-posting entry stays inlined in the new segment
    streams += [_segment_terms(reader, base, remap, sizes if moving else None) for reader, base, remap in sources]
    field = last = None
    prefix = b""
    for key, postings in _by_term(streams):
        fieldname, btext = key
        if last is not None and key <= last:
            from whoosh.writing import OutOfOrderError

            raise OutOfOrderError(f"Term {key!r} after {last!r}")
        last = key
        if fieldname not in schema:
            continue
        if fieldname != field:
            prefix = _next_field(writer, field, fieldname, out, lengths)
            field = fieldname
        if len(postings) == 1:
            if type(postings[0]) is _Moved:  # a one-posting term of one merged segment
                entry = postings[0].moved()
                if entry is not None:  # its entry, renumbered
                    add_term(prefix + btext, entry)
                    continue
                postings = [postings[0].postings()]
            ids, weights, values = postings[0]
        else:
            postings = [part.postings() if type(part) is _Moved else part for part in postings]
            ids = [docnum for part in postings for docnum in part[0]]
            weights = [weight for part in postings for weight in part[1]]
            values = b"".join(part[2] for part in postings)
        if ids:
            add_term(prefix + btext, out.term(ids, weights, values))
    if field is not None:
        fieldwriter.finish_field()
    table.flush()


def _next_field(writer, field: str | None, fieldname: str, out: _Postings, lengths) -> bytes:
    """`field` finished (when there was one) and `fieldname` started: numbered in the term table, its value size and
    lengths column given to `out`; the term keys' prefix (the field's number) returned."""
    fieldwriter, fieldobj = writer.fieldwriter, writer.schema[fieldname]
    if field is not None:
        fieldwriter.finish_field()
    fieldwriter.start_field(fieldname, fieldobj)
    out.field(fieldobj.format.fixed_value_size(), length_column(lengths, fieldname, writer.docnum))
    return _USHORT.pack(fieldwriter._fieldid)


def _write_pool(writer, postings, out: _Postings, table: _TermTable, lengths) -> None:
    """`_write_postings` of the pool's terms alone, in one loop: what `_pool_terms`, `_by_term` and
    `_Postings.term` do for them, with a one-posting term (most of a segment's) written where it is read."""
    schema, fieldwriter = writer.schema, writer.fieldwriter
    field = None
    prefix = b""
    add, term, single = table.add, out.term, out.single
    seen = skip = None
    inline = out.inlinelimit > 1  # a one-posting term's entry holds its posting
    for (fieldname, btext), group in itertools.groupby(postings, key=_FIELD_TERM):
        if fieldname != seen:
            seen, skip = fieldname, fieldname not in schema
            if not skip:
                prefix = _next_field(writer, field, fieldname, out, lengths)
                field = fieldname
        if skip:
            continue
        items = list(group)
        if len(items) == 1 and inline:
            _, _, docnum, weight, vbytes = items[0]
            if docnum != -1:  # whoosh's spelling entries, which its writer skips as well
                add(prefix + btext, single(docnum, _float32(weight), vbytes or b""))
            continue
        ids, weights, values = _gathered(items)
        if ids:
            add(prefix + btext, term(ids, weights, values))
    if field is not None:
        fieldwriter.finish_field()


def _sorted_pool(pool):
    """The pool's postings in whoosh's order (`pool.iter_postings()`: sorted as whole tuples). When nothing spilled
    and the postings were added in docnum order (one chunk after another, as this writer adds them), that order is
    the field's, then the term's, with the docnums as added: each field's postings sorted by term alone, stably,
    which compares bytes where whoosh compares tuples (a third of the time)."""
    current = pool.current
    if pool.runs or not current:
        return pool.iter_postings()
    docnums = list(map(_DOCNUM, current))
    if docnums[0] < 0 or not all(map(operator.le, docnums, itertools.islice(docnums, 1, None))):
        return pool.iter_postings()  # whoosh's spelling entries (docnum -1), or postings added out of order
    fields: dict[str, list] = {}
    for posting in current:
        fields.setdefault(posting[0], []).append(posting)
    ordered = []
    for name in sorted(fields):
        ordered += sorted(fields[name], key=_TBYTES)
    return ordered


def _by_term(streams: list) -> Iterator[tuple]:
    """(term key, its payloads in stream order) over streams each in term order; one stream (a segment of new chunks
    alone, most commits) is read as it is, without the merge's heap."""
    if len(streams) == 1:
        for key, payload in streams[0]:
            yield key, (payload,)
        return
    merged = heapq.merge(*(_numbered(i, stream) for i, stream in enumerate(streams)))
    for key, group in itertools.groupby(merged, key=_key):
        yield key, [payload for _, _, payload in group]


def _key(item: tuple) -> tuple:
    return item[0]


def _numbered(i: int, stream) -> Iterator[tuple]:
    for key, payload in stream:
        yield key, i, payload


class _TermTable:
    """`OrderedHashWriter.add` of whoosh's term table (keys ascending; the entry's position kept for the ordered index
    and its hash bucket) with the entries written to the file together (`flush`, before the table is closed) and the
    position counted, not asked of the file each time."""

    FLUSH_BYTES = 1 << 20

    def __init__(self, table) -> None:
        from whoosh.filedb.filetables import md5_hash

        self.table = table
        self.pos = table.dbfile.tell()
        self.parts: list[bytes] = []
        self.pending = 0
        self.md5 = table.hashfn is md5_hash  # whoosh's default: the md5 digest's last four bytes

    def add(self, key: bytes, value: bytes) -> None:
        table, pos = self.table, self.pos
        if key <= table.lastkey:
            raise ValueError(f"Keys must increase: {table.lastkey!r}..{key!r}")
        table.index.append(pos)
        entry = _LENGTHS.pack(len(key), len(value)) + key + value
        self.parts.append(entry)
        self.pending += len(entry)
        digest = int.from_bytes(md5(key, usedforsecurity=False).digest()[12:], "big") if self.md5 else table.hashfn(key)
        table.buckets[digest & 255].append((digest, pos))
        table.lastkey = key
        self.pos = pos + len(entry)
        if self.pending > self.FLUSH_BYTES:
            self.flush()

    def flush(self) -> None:
        if self.parts:
            self.table.dbfile.write(b"".join(self.parts))
            self.parts, self.pending = [], 0


class _Postings:
    """whoosh 2.7's posting list writer (`W3PostingsWriter` and `W3TermInfo`) for a term whose postings are all at
    hand: the same blocks of `blocklimit` postings (pickled, zlib-compressed, each behind a pickled tuple of its
    count, last docnum, highest weight, compression and length bytes), a list shorter than `inlinelimit` kept in the
    term's entry, and the same term entry: flags, summed weight, document count, length bytes, highest weight,
    first and last docnum, then the inlined postings or where the list is in the posting file."""

    def __init__(self, postfile, blocklimit: int, inlinelimit: int, compression: int) -> None:
        self.postfile = postfile
        self.blocklimit, self.inlinelimit, self.compression = blocklimit, inlinelimit, compression
        self.size = 0  # the bytes of one posting's value in the field: 0 for none
        self.lengths: list | None = None
        self._byte = {0: 0}  # field length -> whoosh's length byte

    def field(self, size: int, lengths: list | None) -> None:
        self.size, self.lengths = size, lengths

    def term(self, ids: list, weights: list, values: bytes) -> bytes:
        """Write one term's postings (docnums ascending, float32 weights, the values' bytes) and give its entry."""
        n, size, limit = len(ids), self.size, self.blocklimit
        total = 0
        minlength = None
        maxlength = maxweight = 0
        if n == 1 and n < self.inlinelimit:  # most terms of a segment
            return self.single(ids[0], weights[0], values)
        if n < self.inlinelimit:
            total, minlength, maxlength, maxweight = self._stats(ids, weights)
            per_posting = tuple(values[i * size:(i + 1) * size] for i in range(n)) if size else (None,) * n
            tail = pickle.dumps((tuple(ids), tuple(weights), per_posting), 2)
        else:
            postfile = self.postfile
            start = postfile.tell()
            postfile.write(_MAGIC)
            for first in range(0, n, limit):
                end = min(first + limit, n)
                block_ids = ids[first:end] if n > limit else ids
                block_weights = weights[first:end] if n > limit else weights
                block_total, block_min, block_max, block_maxweight = self._stats(block_ids, block_weights)
                total += block_total
                if block_min is not None:
                    minlength = block_min if minlength is None else min(minlength, block_min)
                maxlength, maxweight = max(maxlength, block_max), max(maxweight, block_maxweight)
                if size:
                    block_values = values[first * size:end * size]
                else:
                    block_values = None
                data = compress(pickle.dumps((_deltas(block_ids), _mini_weights(block_weights), block_values), 2),
                                self.compression)
                info = pickle.dumps((end - first, block_ids[-1], block_maxweight, self.compression,
                                     length_to_byte(block_min), length_to_byte(block_max)), 2)
                length = len(info) + len(data)
                postfile.write(_INT.pack(-length if end == n else length) + info + data)
            tail = _LONG.pack(start) + _INT.pack(postfile.tell() - start)
        head = _TERMINFO.pack(n < self.inlinelimit, total, n, 0 if minlength is None else length_to_byte(minlength),
                              length_to_byte(maxlength), maxweight, ids[0], ids[-1])
        return head + tail

    def single(self, docnum: int, weight: float, value: bytes) -> bytes:
        """The entry of a term of one posting (a float32 weight, its value's bytes), inlined: what the general case of
        `term` writes for it."""
        length = self.lengths[docnum] if self.lengths is not None else 0
        lbyte = self._byte.get(length)
        if lbyte is None:
            lbyte = self._byte[length] = length_to_byte(length)
        return _TERMINFO.pack(True, weight, 1, lbyte, lbyte, max(0.0, weight), docnum, docnum) + pickle.dumps(
            ((docnum,), (weight,), (value[:self.size] if self.size else None,)), 2)

    def _stats(self, ids: list, weights: list) -> tuple:
        """A block's summed weight, shortest and longest field length (None, 0 without lengths), highest weight."""
        maxweight = max(weights)
        lengths = self.lengths
        if lengths is not None:
            present = [length for length in map(lengths.__getitem__, ids) if length]
            if present:
                return sum(weights), min(present), max(present), max(0, maxweight)
        return sum(weights), None, 0, max(0, maxweight)


def compress(data: bytes, level: int) -> bytes:
    """A posting block compressed at `level` with a 4 KB window and a small hash table (`zlib.decompress` reads it as
    it reads any zlib stream). A block's pickle is at most ~2.5 KB, so the ratio is zlib's default's, but its ~24 KB of
    state stays on the heap, where the default's ~256 KB is an mmap of its own in a process with a large heap: there
    `zlib.compress` of a 130-byte block took 61 µs of CPU, this 7."""
    compressor = zlib.compressobj(level, zlib.DEFLATED, 12, 4)
    return compressor.compress(data) + compressor.flush()


def _deltas(ids: list) -> tuple:
    return (ids[0], *map(operator.sub, ids[1:], ids[:-1]))


def _mini_weights(weights: list):
    """A block's weights as whoosh keeps them: None when all are 1.0, one float when all are equal, else a tuple."""
    first = weights[0]
    if first == 1.0 and weights.count(1.0) == len(weights):
        return None
    if weights.count(first) == len(weights):
        return first
    return tuple(weights)


def _pool_terms(postings) -> Iterator[tuple]:
    """(fieldname, btext) -> (docnums, weights as float32 values, values) of the writer's new chunks, from its sorted pool."""
    for key, group in itertools.groupby(postings, key=_FIELD_TERM):
        items = list(group)
        if len(items) == 1:  # most terms of a segment
            _, _, docnum, weight, vbytes = items[0]
            if docnum == -1:  # whoosh's spelling entries, which its writer skips as well
                yield key, ([], [], b"")
            else:
                yield key, ([docnum], [_float32(weight)], vbytes or b"")
            continue
        yield key, _gathered(items)


def _gathered(items: list) -> tuple:
    """A term's pool postings as (docnums, weights as float32 values, the values' bytes), whoosh's spelling entries
    (docnum -1) left out as its writer leaves them."""
    ids, weights, values = [], [], []
    for _, _, docnum, weight, vbytes in items:
        if docnum == -1:
            continue
        ids.append(docnum)
        weights.append(weight)
        if vbytes:
            values.append(vbytes)
    return ids, list(array("f", weights)), b"".join(values)


def _float32(weight) -> float:
    """`weight` as whoosh keeps it (a float32, read back as a float): what `array("f", [weight])[0]` gives."""
    weight = float(weight)
    if weight.is_integer() and -_EXACT <= weight <= _EXACT:
        return weight
    return _FLOAT32.unpack(_FLOAT32.pack(weight))[0]


def _segment_terms(reader, base: int, remap: list | None, sizes: dict | None = None) -> Iterator[tuple]:
    """(fieldname, btext) -> (docnums in the new segment, weights, values) of one merged segment, in term order,
    read from its term table's raw entries (`W3TermInfo.from_bytes`'s layout). With `sizes` (each field's value size),
    a term of one posting comes as a `_Moved`, which makes its entry for the new segment from the old one's bytes."""
    terms = reader._terms
    postfile, names = terms._postfile, terms._fieldunmap
    head = _TERMINFO.size
    for keybytes, entry in _entries(terms._tindex):
        if sizes is not None and entry[0] and _UINT.unpack_from(entry, 5)[0] == 1:
            (old,) = _UINT.unpack_from(entry, head - 8)
            new = old + base if remap is None else remap[old]
            if new >= 0:
                name = names[_USHORT.unpack_from(keybytes)[0]]
                yield (name, keybytes[_USHORT.size:]), _Moved(entry, new, sizes.get(name))
                continue
        if entry[0]:  # inlined
            ids, weights, values = pickle.loads(entry[head:])
            ids, weights = list(ids), list(weights)
            values = b"".join(v for v in values if v)
        else:
            (offset,) = _LONG.unpack_from(entry, head)
            (length,) = _INT.unpack_from(entry, head + _LONG.size)
            ids, weights, values = _blocks(postfile, offset, length)
        if remap is None:
            ids = [docnum + base for docnum in ids]
        else:
            new = [remap[docnum] for docnum in ids]
            if -1 in new:
                size = len(values) // len(ids)
                live = [i for i, docnum in enumerate(new) if docnum >= 0]
                ids = [new[i] for i in live]
                weights = [weights[i] for i in live]
                if size:
                    values = b"".join(values[i * size:(i + 1) * size] for i in live)
            else:
                ids = new
        yield (names[_USHORT.unpack_from(keybytes)[0]], keybytes[_USHORT.size:]), (ids, weights, values)


class _Moved:
    """A term entry of one inlined posting (most of a segment's terms) in a merged segment, and its docnum in the new
    one. Its entry there is made from its bytes (`moved`): the head (`_TERMINFO`) ends with the first and last docnum,
    and the pickled postings `((docnum,), (weight,), (value,))` begin with the docnum, after which their bytes do not
    depend on it. What `_Postings.term` writes for the moved posting, without unpickling and pickling it again."""

    __slots__ = ("entry", "docnum", "size")

    def __init__(self, entry: bytes, docnum: int, size: int | None) -> None:
        self.entry, self.docnum, self.size = entry, docnum, size  # size: the field's value size

    def moved(self) -> bytes | None:
        """The entry moved to `docnum`; None when its pickle is not the one `_Postings.term` writes for a value of
        the field's size (then it is read and written again as any other)."""
        entry, size, head = self.entry, self.size, _TERMINFO.size
        width = _BININT.get(entry[head + 2]) if entry[head:head + 2] == _PROTO2 else None
        if width is None or size is None:
            return None
        tail = entry[head + 3 + width:]
        if tail[:4] != _FLOAT_OPEN or tail[12:15] != _ONE_TUPLE_1:
            return None  # the weight is not a float
        value = tail[15:]
        if size == 0:
            if value != _NO_VALUE:
                return None
        elif not (value.startswith(_BYTES_OPEN) and value.endswith(_BYTES_CLOSE)
                  and len(value[len(_BYTES_OPEN) + 4:-len(_BYTES_CLOSE)].decode("utf-8")) == size):
            return None
        return entry[:head - 8] + _UINT.pack(self.docnum) * 2 + _PROTO2 + _binint(self.docnum) + tail

    def postings(self) -> tuple:
        """(docnums, weights, values) as `_segment_terms` gives them, for a term other segments hold as well."""
        _, weights, values = pickle.loads(self.entry[_TERMINFO.size:])
        return [self.docnum], list(weights), b"".join(v for v in values if v)


def _binint(n: int) -> bytes:
    """`n` (a docnum, 0 <= n < 2**31) as pickle protocol 2 writes an int."""
    if n <= 0xFF:
        return b"K" + bytes((n,))
    if n <= 0xFFFF:
        return b"M" + n.to_bytes(2, "little")
    return b"J" + n.to_bytes(4, "little", signed=True)


_PROTO2 = b"\x80\x02"
_BININT = {ord("K"): 1, ord("M"): 2, ord("J"): 4}  # pickle's BININT1, BININT2, BININT: the width of the int after it
_FLOAT_OPEN = b"\x85q\x00G"  # the docnum's 1-tuple (memo 0), then a BINFLOAT
_ONE_TUPLE_1 = b"\x85q\x01"
_NO_VALUE = b"N\x85q\x02\x87q\x03."  # (None,), the three tuples' tuple
_BYTES_OPEN = b"c_codecs\nencode\nq\x02X"  # bytes, as protocol 2 writes them: _codecs.encode(str, "latin1")
_BYTES_CLOSE = b"q\x03X\x06\x00\x00\x00latin1q\x04\x86q\x05Rq\x06\x85q\x07\x87q\x08."
_UINT = struct.Struct("!I")


def _entries(table, window: int = 1 << 20) -> Iterator[tuple]:
    """(key, value) of whoosh's `OrderedHashReader` in order, as its `items()`, read a window of bytes at a time."""
    pos, end, get, lengths = table.startofdata, table.endofdata, table.dbfile.get, _LENGTHS.unpack_from
    buf, base = b"", pos
    while pos < end:
        at = pos - base
        if at + _LENGTHS.size > len(buf):
            buf, base, at = get(pos, min(window, end - pos)), pos, 0
        keylen, datalen = lengths(buf, at)
        size = _LENGTHS.size + keylen + datalen
        if at + size > len(buf):
            buf, base, at = get(pos, max(min(window, end - pos), size)), pos, 0
        key_end = at + _LENGTHS.size + keylen
        yield buf[at + _LENGTHS.size:key_end], buf[key_end:at + size]
        pos += size


def _blocks(postfile, offset: int, length: int) -> tuple:
    """One posting list of whoosh 2.7's posting file (read as `whoosh_postings.w3_postings` reads it): docnums,
    weights and the values' bytes."""
    raw = postfile.get(offset, length)
    if raw[:4] != _MAGIC:
        raise ValueError("not a whoosh 2.7 posting list")
    ids: list = []
    weights: list = []
    value_parts = []
    for deltas, block_weights, values in w3_blocks(raw, io.BytesIO(raw), 0):
        ids.extend(itertools.accumulate(deltas))
        if block_weights is None:
            weights.extend([1.0] * len(deltas))
        elif isinstance(block_weights, float):
            weights.extend([block_weights] * len(deltas))
        else:
            weights.extend(block_weights)
        if values:
            value_parts.append(values if isinstance(values, bytes) else b"".join(values))
    return ids, weights, b"".join(value_parts)
