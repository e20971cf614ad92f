"""The text index contract: chunks in, BM25-ranked `TextHit`s out. One implementation per backend module."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Protocol, runtime_checkable

from retrieval.types import Chunk, TextHit

__all__ = ["TextIndex", "WeightedTerm"]

WeightedTerm = tuple[str, float]  # an analyzed term and its query weight (synonyms weigh less)


@runtime_checkable
class TextIndex(Protocol):
    def add_chunks(self, chunks: Iterable[Chunk], file_words: Mapping[str, str] | None = None) -> int:
        """Index the chunks (replacing any with the same id); returns how many were written.
        `file_words` (doc id -> the words of its file path) are indexed with the document's chunks."""

    def delete_chunks(self, chunk_ids: Sequence[str]) -> int:
        """Remove chunks by id; returns how many were removed."""

    def prepare(self, optimize: bool = False) -> None:
        """Write the pending writes out where no search sees them yet (the slow part of a commit), so
        that `commit` holds readers only for the switch; a no-op for a backend without that split."""

    def commit(self, optimize: bool = False) -> None:
        """Make the writes visible to searches (`optimize`: merge every segment into one)."""

    def search(
        self,
        terms: Sequence[WeightedTerm],
        limit: int,
        fields: dict[str, float] | None = None,
        grams: Sequence[WeightedTerm] = (),
        doc_ids: frozenset[str] | None = None,
        beyond: int = 0,
    ) -> list[TextHit]:
        """Best chunks for an OR of the weighted terms, best first, with the terms each matched.

        `fields` (name -> boost) restricts the search, e.g. to titles only; `grams` (Chinese
        character pairs) add to the score of the chunks the terms found; `doc_ids` keeps the
        search inside those documents; `beyond`: up to that many further hits after the `limit`
        best, which are exactly what a search of `limit` returns."""

    def doc_count(self) -> int: ...

    def doc_frequency(self, term: str, field: str = "body") -> int:
        """How many chunks hold the analysed term."""

    def close(self) -> None: ...
