"""The order the segment writer reads the posting pool in (`whoosh_merge._sorted_pool`) is whoosh's own
(`pool.iter_postings()`, whole tuples sorted), whatever the fields, terms and docnums; and a weight is kept as the
float32 whoosh keeps (`array("f")`). Real whoosh pools."""

from __future__ import annotations

import random
from array import array

import pytest
from whoosh.filedb.filestore import RamStorage
from whoosh.writing import PostingPool

from retrieval.index.whoosh_merge import _float32, _sorted_pool


def _pool(postings: list) -> PostingPool:
    pool = PostingPool(RamStorage(), None, limitmb=64)
    for posting in postings:
        pool.add(posting)
    return pool


def _postings(seed: int, docs: int = 40) -> list:
    """Each document's postings (fields and terms in no order), one document after another, docnums ascending."""
    rng = random.Random(seed)
    out = []
    for docnum in range(docs):
        for field in rng.sample(["title", "body", "grams", "section"], 3):
            for term in rng.sample(["心跳", "region", "heartbeat", "a", "ab", "b", "网关", "15"], 4):
                out.append((field, term.encode("utf-8"), docnum, float(rng.randint(1, 4)), rng.choice([None, b"\x00\x01"])))
    return out


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_postings_added_a_document_at_a_time_come_out_in_whooshs_order(seed):
    postings = _postings(seed)
    assert _sorted_pool(_pool(postings)) == sorted(postings)


def test_postings_out_of_docnum_order_or_spelling_entries_take_whooshs_sort():
    postings = _postings(4)
    later_first = postings[len(postings) // 2:] + postings[: len(postings) // 2]
    assert list(_sorted_pool(_pool(later_first))) == sorted(later_first)
    spelling = [("body", b"heartbeat", -1, 1.0, None)] + postings
    assert list(_sorted_pool(_pool(spelling))) == sorted(spelling)


@pytest.mark.parametrize("weight", [0, 1, 3, 2.0, 0.1, 1.5, 1 / 3, 16777217, 2 ** 40 + 1, -7, float("inf")])
def test_a_weight_is_the_float32_whoosh_keeps(weight):
    kept = _float32(weight)
    assert type(kept) is float
    assert kept == array("f", [weight])[0]
