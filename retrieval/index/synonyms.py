"""Synonym table file -> query-time term expansion: each group of equivalent terms, analyzed like the index."""

from __future__ import annotations

from pathlib import Path

from kg.errors import InputError
from kg.files import read_text
from kg.relations.model import control_problem
from retrieval.index.analysis import query_terms, vocabulary_version

__all__ = ["SYNONYMS_FILE", "SynonymTable", "SYNONYM_WEIGHT"]

SYNONYMS_FILE = "synonyms.txt"  # in the data dir

SYNONYM_WEIGHT = 0.6  # a synonym counts a little less than the word the user typed


class SynonymTable:
    """Lines of comma-separated equivalent terms (`宕机, 故障, down, outage`); `#` starts a comment."""

    def __init__(self, groups: list[list[str]] | None = None) -> None:
        self.groups: list[list[str]] = []
        self._by_term: dict[str, list[int]] | None = None
        self._analyzed_at = -1
        for group in groups or []:
            self.add_group(group)

    def add_group(self, group: list[str]) -> None:
        terms = [t.strip() for t in group if t.strip()]
        if len(terms) >= 2:
            self.groups.append(terms)
            self._by_term = None

    def _lookup(self) -> dict[str, list[int]]:
        """Analyzed term -> groups. Built when first needed and again whenever jieba learned new
        words: a table read before the entity labels were taught would cut 熔断降级 into 熔断 + 降级
        and never match the question's 熔断降级."""
        if self._by_term is None or self._analyzed_at != vocabulary_version():
            self._analyzed_at = vocabulary_version()
            by_term: dict[str, list[int]] = {}
            for index, group in enumerate(self.groups):
                for term in group:
                    for analyzed in query_terms(term):
                        by_term.setdefault(analyzed, []).append(index)
            self._by_term = by_term
        return self._by_term

    @classmethod
    def read(cls, path: Path) -> SynonymTable:
        table = cls()
        if not path.exists():
            return table
        for number, line in enumerate(read_text(path, "save it as UTF-8").splitlines(), start=1):
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            terms = [t for t in line.replace("，", ",").split(",") if t.strip()]
            wrong = next(filter(None, (control_problem("a term", t.strip()) for t in terms)), None)
            if wrong:
                raise InputError(f"{path.name}:{number}: {wrong}")
            if len(terms) < 2:
                raise InputError(
                    f"{path.name}:{number}: a synonym line needs at least two comma-separated terms, got {line!r}"
                )
            table.add_group(terms)
        return table

    def words(self) -> list[str]:
        return [t for g in self.groups for t in g]

    def expand(self, terms: list[str]) -> list[tuple[str, float]]:
        """The query's own terms at weight 1, plus the analyzed terms of their synonyms."""
        weighted: dict[str, float] = {t: 1.0 for t in terms}
        lookup = self._lookup()
        for term in terms:
            for index in lookup.get(term, ()):
                for synonym in self.groups[index]:
                    for analyzed in query_terms(synonym):
                        weighted.setdefault(analyzed, SYNONYM_WEIGHT)
        return list(weighted.items())

    def __len__(self) -> int:
        return len(self.groups)
