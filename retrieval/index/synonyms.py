"""Synonym table file -> query-time term expansion: each group of equivalent terms, analyzed like the index."""

from __future__ import annotations

import logging
from pathlib import Path

from kg.errors import InputError
from kg.files import file_stamp, read_text
from kg.relations.model import control_problem
from retrieval.index.analysis import query_terms, vocabulary_version

__all__ = ["SYNONYMS_FILE", "SynonymFile", "SynonymTable", "SYNONYM_WEIGHT"]

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


class SynonymFile:
    """synonyms.txt as a running process follows it. A person edits it by hand while a server runs, and an editor
    that saves in place truncates the file first: a table read in that instant would serve no synonym for a round,
    and a line saved with a typo would fail every query that catches up with it. So a new table is taken only when
    the file stands as it was read; a file that reads empty while the table has synonyms is believed a round later,
    when it is still empty; a typo is said once per version of the file (`unread`), and the table read before
    serves until the file reads again."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.stamp = file_stamp(path)  # the version of the file the table in use was read from (or gave `unread`)
        self.unread: str | None = None
        self._emptied: tuple[int, int] | None = None  # an empty version seen once, believed if it is still there

    def changed(self) -> bool:
        return file_stamp(self.path) != self.stamp

    def read_again(self, current: SynonymTable) -> SynonymTable:
        """The table as the file stands now, or `current` while that is not to be had."""
        stamp = file_stamp(self.path)
        if stamp == self.stamp:
            return current
        try:
            table = SynonymTable.read(self.path)
        except InputError as exc:
            if file_stamp(self.path) == stamp:  # not an editor's half-written save: said once for this version
                self.stamp, self.unread = stamp, str(exc)
                logging.getLogger("kgrag").warning("%s. Queries go on with the synonyms read before; the file is read "
                                                   "again when it changes.", exc)
            return current
        if file_stamp(self.path) != stamp:  # saved again while it was read: the next round reads that
            return current
        if not len(table) and len(current) and self._emptied != stamp:
            self._emptied = stamp
            return current
        self.stamp, self.unread, self._emptied = stamp, None, None
        return table

    def written(self) -> None:
        """After a commit: a file that changed was written by it (an import of synonyms, whose table is in use)."""
        stamp = file_stamp(self.path)
        if stamp != self.stamp:
            self.stamp, self.unread, self._emptied = stamp, None, None
