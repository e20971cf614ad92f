"""One term's posting scores as two arrays (docnums ascending, BM25F scores), read like the {docnum: score} dict they replace.

A question's rarer words at 100k chunks hold tens of thousands of postings: summed, ranked and looked up one
Python object at a time they were most of a query's time (issue 25). As arrays the sums are numpy's, the same
IEEE-754 operations in the same order, so the same floats; `Postings` still answers `get`, `in`, `items` and
`==` as a dict does for the callers that look up a few chunks (pooling, scoped statistics, tests).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

import numpy as np

__all__ = ["EMPTY", "Postings", "as_postings"]


class Postings(Mapping):
    """docnum -> score over `ids` (int64, strictly ascending) and `scores` (float64) of the same length."""

    __slots__ = ("ids", "scores")

    def __init__(self, ids: np.ndarray, scores: np.ndarray) -> None:
        self.ids = ids
        self.scores = scores

    def __len__(self) -> int:
        return len(self.ids)

    def __iter__(self) -> Iterator[int]:
        return iter(self.ids.tolist())

    def _at(self, docnum) -> int:
        """The position of `docnum` in `ids`, or -1."""
        i = int(np.searchsorted(self.ids, docnum))
        return i if i < len(self.ids) and self.ids[i] == docnum else -1

    def __getitem__(self, docnum) -> float:
        i = self._at(docnum)
        if i < 0:
            raise KeyError(docnum)
        return float(self.scores[i])

    def __contains__(self, docnum) -> bool:
        return self._at(docnum) >= 0

    def get(self, docnum, default=None):
        i = self._at(docnum)
        return default if i < 0 else float(self.scores[i])

    def items(self):
        return zip(self.ids.tolist(), self.scores.tolist(), strict=True)

    def positions(self, docnums: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(found, where): for each of `docnums`, whether this list holds it and its index here (valid where found)."""
        if not len(self.ids):
            return np.zeros(len(docnums), dtype=bool), np.zeros(len(docnums), dtype=np.int64)
        where = np.searchsorted(self.ids, docnums)
        where[where == len(self.ids)] = 0
        return self.ids[where] == docnums, where

    def __repr__(self) -> str:
        return f"Postings({dict(self.items())!r})"


EMPTY = Postings(np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float64))


def as_postings(scores: Mapping[int, float]) -> Postings:
    """`scores` as `Postings` (itself when it is one): a backend that keeps dicts (PostgreSQL, a scope) gets the same sums."""
    if isinstance(scores, Postings):
        return scores
    if not scores:
        return EMPTY
    ids = np.fromiter(scores.keys(), dtype=np.int64, count=len(scores))
    values = np.fromiter(scores.values(), dtype=np.float64, count=len(scores))
    if len(ids) > 1 and not bool(np.all(ids[1:] > ids[:-1])):
        order = np.argsort(ids, kind="stable")
        ids, values = ids[order], values[order]
    return Postings(ids, values)
