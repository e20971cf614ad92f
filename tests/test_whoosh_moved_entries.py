"""A merged segment's one-posting term entry moved to its new docnum by its bytes (`whoosh_merge._Moved`) is the entry
`_Postings.term` writes for that posting, for every docnum width pickle uses; an entry whose pickle is not the one that
writer makes (an int weight, a value of another size) is left to the general path."""

from __future__ import annotations

import pickle

import pytest
from whoosh.util.numeric import byte_to_length

from retrieval.index.whoosh_merge import _TERMINFO, _Moved, _Postings


def _entry(docnum: int, weight, value) -> bytes:
    return _TERMINFO.pack(True, weight, 1, 7, 7, max(0, weight), docnum, docnum) + pickle.dumps(
        ((docnum,), (weight,), (value,)), 2)


def _written(docnum: int, weight: float, value: bytes, size: int) -> bytes:
    """What the segment writer writes for the posting at `docnum` (one posting, inlined, field length 7's byte)."""
    out = _Postings(None, 128, 2, 1)
    out.field(size, _Lengths())
    return out.term([docnum], [weight], value)


class _Lengths:
    """Every document's field length: the one length byte 7 stands for."""

    def __getitem__(self, docnum: int) -> int:
        return byte_to_length(7)


@pytest.mark.parametrize("old, new", [(3, 0), (3, 255), (3, 256), (70000, 65535), (5, 65536), (5, 2**31 - 1)])
@pytest.mark.parametrize("value, size", [(b"\x00\x00\x00\x02", 4), (b"\x00\x80\xff\x01", 4), (None, 0)])
def test_a_moved_entry_is_the_one_the_writer_writes(old, new, value, size):
    moved = _Moved(_entry(old, 2.0, value), new, size)
    assert moved.moved() == _written(new, 2.0, value or b"", size)
    assert moved.postings() == ([new], [2.0], value or b"")


@pytest.mark.parametrize("weight, value, size", [
    (2, None, 0),  # an int weight: pickled otherwise than the writer's float
    (2.0, b"", 4),  # an empty value where the field's values are 4 bytes
    (2.0, b"\x00\x00\x01", 4),  # a value of another size
    (2.0, None, 4),
    (2.0, b"\x00\x00\x00\x01", 0),
    (2.0, b"\x00\x00\x00\x01", None),  # a field the new schema does not index
])
def test_an_entry_the_writer_would_not_write_is_not_moved_by_its_bytes(weight, value, size):
    assert _Moved(_entry(9, weight, value), 4, size).moved() is None
