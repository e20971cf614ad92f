"""Checking a relation table's rows: (line, fields) in, a `RelationRow` or its `RowProblem`s out, one row at a time.

`RowParser` checks a row on its own (columns, resolvable relation and classes, weight, self-loop)
and keeps nothing per row. `RowChecker` adds the checks against earlier rows (duplicates, a second
weight or note for the same edge, an alias of two entities) and keeps only what they need, compactly:
per edge its first line, weight, note and a hash of the rest of the row; per alias its owner and line.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable

from kg.relations.model import (
    ALIAS_SEPARATOR,
    REQUIRED_COLUMNS,
    RelationRow,
    RowProblem,
    control_problem,
)
from kg.relations.source import quoted
from ontology import Vocabulary

Problem = Callable[[str, str, str], None]
_CACHE_LIMIT = 10_000  # distinct relation / class cells remembered (a table has a few dozen)


class RowParser:
    """One row's fields in, its `RelationRow` (None when the fields cannot form one) and problems out."""

    def __init__(self, name: str, vocab: Vocabulary, columns: list[str]) -> None:
        self.name, self.vocab, self.columns = name, vocab, columns
        # cell text -> (resolved local name, problem message): a table repeats a few dozen values.
        self._resolved: dict[tuple[str, str], tuple[str | None, str | None]] = {}

    def parse(self, line: int, fields: list[str]) -> tuple[RelationRow | None, list[RowProblem]]:
        problems: list[RowProblem] = []

        def problem(column: str, value: str, message: str) -> None:
            problems.append(RowProblem(line, column, value, message, self.name))

        width = len(self.columns)
        if len(fields) > width and not any(f.strip() for f in fields[width:]):
            fields = fields[:width]  # empty trailing cells from Excel
        if len(fields) != width:
            fix = (
                "a double quote opened on this line is never closed"
                if any("\n" in f for f in fields)
                else "put values that contain a comma in double quotes, and keep one field per column"
            )
            problem(
                "",
                ",".join(fields),
                f"expected {width} fields ({','.join(self.columns)}), found {len(fields)}; {fix}",
            )
            return None, problems
        values = {c: f.strip() for c, f in zip(self.columns, fields, strict=True)}
        for column in ("source", "target", "source_aliases", "target_aliases", "note"):
            wrong = control_problem(column, values.get(column, ""))
            if wrong:
                problem(column, values[column], wrong)
        for column in REQUIRED_COLUMNS:
            if not values[column]:
                problem(
                    column,
                    "",
                    f"{column} is empty; every row needs a source, a relation and a target",
                )
        relation = self._lookup("relation", values["relation"], problem)
        source_type = self._lookup("source_type", values.get("source_type", ""), problem)
        target_type = self._lookup("target_type", values.get("target_type", ""), problem)
        source, target = sys.intern(values["source"]), sys.intern(values["target"])
        if source and source == target:
            problem(
                "target",
                target,
                f"source and target are both '{target}'; a relation must connect two different "
                "entities: fix the target or delete the row",
            )
        weight = self._weight(values.get("weight", ""), problem)
        note = values.get("note") or None
        row = RelationRow(
            line=line,
            source=source,
            relation=relation or "",
            target=target,
            source_type=source_type,
            target_type=target_type,
            source_aliases=_aliases(values.get("source_aliases", ""), source),
            target_aliases=_aliases(values.get("target_aliases", ""), target),
            weight=weight,
            note=note if note is None else sys.intern(note),
        )
        return row, problems

    def _lookup(self, column: str, text: str, problem: Problem) -> str | None:
        if not text:
            return None
        key = (column, text)
        found = self._resolved.get(key)
        if found is None:
            found = self._relation(text) if column == "relation" else self._class(text, column)
            if len(self._resolved) < _CACHE_LIMIT:
                self._resolved[key] = found
        name, message = found
        if message is not None:
            problem(column, text, message)
        return name

    def _relation(self, text: str) -> tuple[str | None, str | None]:
        info = self.vocab.resolve_property(text)
        if info is not None:
            return sys.intern(info.name), None
        known = sorted(self.vocab.properties)
        listed = ", ".join(known[:8]) + (", ..." if len(known) > 8 else "")
        return None, _unresolved(
            f"relation '{text}'", "relation's name", self.vocab.property_candidates(text),
            self.vocab.suggest_properties(text), "is not in the ontology",
            f"use a relation of the ontology ({listed}) or declare it there as an owl:ObjectProperty",
        )

    def _class(self, text: str, column: str) -> tuple[str | None, str | None]:
        info = self.vocab.resolve_class(text)
        if info is not None:
            return sys.intern(info.name), None
        return None, _unresolved(
            f"{column} '{text}'", "class's name", self.vocab.class_candidates(text),
            self.vocab.suggest_classes(text), "is not a class in the ontology",
            "leave it empty, use a class of the ontology, or declare it there as an owl:Class",
        )

    def _weight(self, text: str, problem: Problem) -> float | None:
        if not text:
            return None
        try:
            weight = float(text)
        except ValueError:
            weight = math.nan
        if not 0.0 <= weight <= 1.0:  # NaN fails too
            problem(
                "weight",
                text,
                f"weight '{text}' must be a number from 0 to 1 (e.g. 0.8); leave it empty for the default",
            )
            return None
        return weight


class RowChecker:
    """Checks each row on its own and against the earlier good rows; collects problems and bad fields.

    `aliases` (alias -> (the label it names, first line)) is what the plan needs of the whole table.
    """

    def __init__(self, name: str, vocab: Vocabulary, columns: list[str]) -> None:
        self.name = name
        self.parser = RowParser(name, vocab, columns)
        self.rows = 0  # good rows
        self.problems: list[RowProblem] = []
        self.bad_fields: dict[int, list[str]] = {}
        # edge -> (first line, its weight, its note, hash of the rest of that row)
        self._edges: dict[tuple[str, str, str], tuple[int, float | None, str | None, int]] = {}
        self._more_rows: dict[tuple[tuple[str, str, str], int], int] = {}  # other rows of an edge
        self.aliases: dict[str, tuple[str, int]] = {}

    def check(self, line: int, fields: list[str]) -> RelationRow | None:
        """The row if it is good (and remembered), else None with its problems collected."""
        row, problems = self.parser.parse(line, fields)
        if row is not None and not problems:
            self._check_against_earlier_rows(row, problems)
        if problems:
            self.problems.extend(problems)
            self.bad_fields[line] = fields
            return None
        self._remember(row)
        self.rows += 1
        return row

    def _check_against_earlier_rows(self, row: RelationRow, problems: list[RowProblem]) -> None:
        def problem(column: str, value: str, message: str) -> None:
            problems.append(RowProblem(row.line, column, value, message, self.name))

        edge, rest = _edge(row), _rest_hash(row)
        earlier = self._edges.get(edge)
        first = None if earlier is None else earlier[0] if earlier[3] == rest else None
        first = first or self._more_rows.get((edge, rest))
        if first is not None:
            problem("", "", f"duplicate of line {first}; delete one of the two rows")
            return
        if earlier is not None:
            for column, mine, theirs in (
                ("weight", row.weight, earlier[1]),
                ("note", row.note, earlier[2]),
            ):
                if mine is not None and theirs is not None and mine != theirs:
                    problem(
                        column,
                        str(mine),
                        f"line {earlier[0]} has the same source, relation and target with {column} "
                        f"'{theirs}'; keep one of the two rows",
                    )
        for label, aliases, column in (
            (row.source, row.source_aliases, "source_aliases"),
            (row.target, row.target_aliases, "target_aliases"),
        ):
            for alias in aliases:
                owner, line = self.aliases.get(alias, (label, row.line))
                if owner != label:
                    problem(
                        column,
                        alias,
                        f"alias '{alias}' is already an alias of '{owner}' (line {line}); an alias "
                        "can name only one entity",
                    )

    def _remember(self, row: RelationRow) -> None:
        edge = _edge(row)
        if edge not in self._edges:
            self._edges[edge] = (row.line, row.weight, row.note, _rest_hash(row))
        else:
            self._more_rows.setdefault((edge, _rest_hash(row)), row.line)
        for label, aliases in ((row.source, row.source_aliases), (row.target, row.target_aliases)):
            for alias in aliases:
                self.aliases.setdefault(alias, (label, row.line))


def _edge(row: RelationRow) -> tuple[str, str, str]:
    return (row.source, row.relation, row.target)


def _rest_hash(row: RelationRow) -> int:
    """The row's other cells, as one hash: two rows of one edge that differ hash differently
    (a 64-bit collision between rows of the same edge is the only way to be wrong)."""
    return hash(
        (row.source_type, row.target_type, row.source_aliases, row.target_aliases, row.weight, row.note)
    )


def _aliases(cell: str, label: str) -> tuple[str, ...]:
    aliases: list[str] = []
    for alias in cell.split(ALIAS_SEPARATOR):
        alias = alias.strip()
        if alias and alias != label and alias not in aliases:
            aliases.append(sys.intern(alias))
    return tuple(aliases)


def _unresolved(subject: str, name_kind: str, candidates, suggestions, not_known: str, fix: str) -> str:
    """Why a relation or class cell resolves to nothing: ambiguous label, near miss, or unknown."""
    if len(candidates) > 1:
        return f"{subject} is ambiguous: it is a label of {quoted(candidates, ' and ')}; write the {name_kind} instead"
    if suggestions:
        return f"{subject} {not_known} (did you mean '{suggestions[0]}'?)"
    return f"{subject} {not_known}; {fix}"
