"""Reading a relation table: a relations.csv in, checked `RelationRow`s and every `RowProblem` with its line and a fix out."""

from __future__ import annotations

import codecs
import csv
import io
import math
import re
from collections.abc import Callable, Iterable
from pathlib import Path

from kg.errors import RelationTableError
from kg.relations.model import (
    ALIAS_SEPARATOR,
    ALLOWED_COLUMNS,
    OPTIONAL_COLUMNS,
    PROBLEM_COLUMN,
    REQUIRED_COLUMNS,
    RelationRow,
    RelationTable,
    RowProblem,
)
from ontology import Vocabulary

# ---------------------------------------------------------------- reading


def read_relation_table(path: Path, vocab: Vocabulary) -> RelationTable:
    """Parse and check a relation table; row problems are collected, file problems raise."""
    path = Path(path)
    name = path.name
    try:
        data = path.read_bytes()
    except OSError as e:
        raise RelationTableError(f"{name}: cannot read the file ({e.strerror})") from e
    text, encoding = _decode(data, name)
    if not text.strip():
        raise RelationTableError(
            f"{name}: the file is empty; its first line must be the header "
            f"{','.join(REQUIRED_COLUMNS)} (optional: {','.join(OPTIONAL_COLUMNS)})"
        )
    reader = csv.reader(io.StringIO(text, newline=""))
    header = next((cells for cells in reader if any(c.strip() for c in cells)), [])
    while header and not header[-1].strip():
        header.pop()  # Excel writes empty trailing columns
    columns = _check_header(header, name)
    checker = _RowChecker(name, vocab, columns)
    while True:
        line = reader.line_num + 1
        try:
            fields = next(reader)
        except StopIteration:
            break
        except csv.Error as e:
            # Not a row problem: the reader cannot go on, and the rows after it would be lost.
            raise RelationTableError(
                f"{name}:{line}: cannot split this line into fields ({e})"
            ) from e
        if any(f.strip() for f in fields):
            checker.check(line, fields)
    return RelationTable(name, checker.rows, checker.problems, encoding, header, checker.bad_fields)


def _decode(data: bytes, name: str) -> tuple[str, str]:
    if data.startswith(codecs.BOM_UTF8):
        try:
            return data[len(codecs.BOM_UTF8) :].decode("utf-8"), "utf-8-sig"
        except UnicodeDecodeError as e:
            raise _encoding_error(name, e) from e
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        raise RelationTableError(
            f'{name}: the file is UTF-16 ("Unicode Text"); in Excel use File > Save As... > '
            '"CSV UTF-8 (Comma delimited) (*.csv)"'
        )
    try:
        return data.decode("utf-8"), "utf-8"
    except UnicodeDecodeError as e:
        utf8_error = e
    try:
        # Chinese Excel saves "CSV (Comma delimited)" in the ANSI code page, GBK.
        return data.decode("gbk"), "gbk"
    except UnicodeDecodeError:
        raise _encoding_error(name, utf8_error) from utf8_error


def _encoding_error(name: str, e: UnicodeDecodeError) -> RelationTableError:
    return RelationTableError(
        f"{name}: the file is neither UTF-8 nor GBK (byte 0x{e.object[e.start]:02x} at offset "
        f'{e.start}); in Excel use File > Save As... > "CSV UTF-8 (Comma delimited) (*.csv)"'
    )


def _column_key(cell: str) -> str:
    return re.sub(r"[\s\-]+", "_", cell.strip().lstrip("\ufeff").lower())


def _check_header(header: list[str], name: str) -> list[str]:
    columns = [_column_key(cell) for cell in header]
    parts: list[str] = []
    missing = [c for c in REQUIRED_COLUMNS if c not in columns]
    if missing:
        parts.append(f"missing required column{'s' if len(missing) > 1 else ''} {_quoted(missing)}")
    unknown = [
        cell.strip() or f"(column {i + 1} has no name)"
        for i, (cell, col) in enumerate(zip(header, columns, strict=True))
        if col not in ALLOWED_COLUMNS and col != PROBLEM_COLUMN
    ]
    if unknown:
        parts.append(f"unknown column{'s' if len(unknown) > 1 else ''} {_quoted(unknown)}")
    repeated = sorted({c for c in columns if c and columns.count(c) > 1})
    if repeated:
        verb = "appear" if len(repeated) > 1 else "appears"
        parts.append(
            f"column{'s' if len(repeated) > 1 else ''} {_quoted(repeated)} {verb} more than once"
        )
    if not parts:
        return columns
    message = (
        f"{name}: {'; '.join(parts)}. The first line must name the columns: "
        f"{', '.join(REQUIRED_COLUMNS)} (required) and {', '.join(OPTIONAL_COLUMNS)} (optional)"
    )
    if len(header) == 1 and (";" in header[0] or "\t" in header[0]):
        message += (
            '; this file is not comma-separated: in Excel save it as "CSV UTF-8 (Comma delimited)"'
        )
    raise RelationTableError(message)


def _unresolved(subject: str, name_kind: str, candidates, suggestions, not_known: str, fix: str) -> str:
    """Why a relation or class cell resolves to nothing: ambiguous label, near miss, or unknown."""
    if len(candidates) > 1:
        return f"{subject} is ambiguous: it is a label of {_quoted(candidates, ' and ')}; write the {name_kind} instead"
    if suggestions:
        return f"{subject} {not_known} (did you mean '{suggestions[0]}'?)"
    return f"{subject} {not_known}; {fix}"


def _quoted(values: Iterable[str], separator: str = ", ") -> str:
    return separator.join(f"'{v}'" for v in values)


class _RowChecker:
    """Checks rows one by one, remembering what it needs to spot duplicates and alias clashes."""

    def __init__(self, name: str, vocab: Vocabulary, columns: list[str]) -> None:
        self.name = name
        self.vocab = vocab
        self.columns = columns
        self.rows: list[RelationRow] = []
        self.problems: list[RowProblem] = []
        self.bad_fields: dict[int, list[str]] = {}
        self._seen_rows: dict[tuple, int] = {}  # row without its line -> first line
        self._seen_edges: dict[tuple[str, str, str], RelationRow] = {}
        self._alias_owner: dict[str, tuple[str, int]] = {}

    def check(self, line: int, fields: list[str]) -> None:
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
            self._reject(line, fields, problems)
            return
        values = {c: f.strip() for c, f in zip(self.columns, fields, strict=True)}
        for column in REQUIRED_COLUMNS:
            if not values[column]:
                problem(
                    column,
                    "",
                    f"{column} is empty; every row needs a source, a relation and a target",
                )
        relation = self._relation(values["relation"], problem)
        source_type = self._class(values.get("source_type", ""), "source_type", problem)
        target_type = self._class(values.get("target_type", ""), "target_type", problem)
        source, target = values["source"], values["target"]
        if source and source == target:
            problem(
                "target",
                target,
                f"source and target are both '{target}'; a relation must connect two different "
                "entities: fix the target or delete the row",
            )
        weight = self._weight(values.get("weight", ""), problem)
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
            note=values.get("note") or None,
        )
        if not problems:
            self._check_against_earlier_rows(row, problem)
        if problems:
            self._reject(line, fields, problems)
        else:
            self._remember(row)
            self.rows.append(row)

    def _reject(self, line: int, fields: list[str], problems: list[RowProblem]) -> None:
        self.problems.extend(problems)
        self.bad_fields[line] = fields

    def _relation(self, text: str, problem: Callable[[str, str, str], None]) -> str | None:
        info = self.vocab.resolve_property(text) if text else None
        if info is not None or not text:
            return info.name if info else None
        known = sorted(self.vocab.properties)
        listed = ", ".join(known[:8]) + (", ..." if len(known) > 8 else "")
        problem("relation", text, _unresolved(
            f"relation '{text}'", "relation's name", self.vocab.property_candidates(text),
            self.vocab.suggest_properties(text), "is not in the ontology",
            f"use a relation of the ontology ({listed}) or declare it there as an owl:ObjectProperty",
        ))
        return None

    def _class(
        self, text: str, column: str, problem: Callable[[str, str, str], None]
    ) -> str | None:
        info = self.vocab.resolve_class(text) if text else None
        if info is not None or not text:
            return info.name if info else None
        problem(column, text, _unresolved(
            f"{column} '{text}'", "class's name", self.vocab.class_candidates(text),
            self.vocab.suggest_classes(text), "is not a class in the ontology",
            "leave it empty, use a class of the ontology, or declare it there as an owl:Class",
        ))
        return None

    def _weight(self, text: str, problem: Callable[[str, str, str], None]) -> float | None:
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

    def _check_against_earlier_rows(
        self, row: RelationRow, problem: Callable[[str, str, str], None]
    ) -> None:
        key = _without_line(row)
        if key in self._seen_rows:
            problem("", "", f"duplicate of line {self._seen_rows[key]}; delete one of the two rows")
            return
        edge = (row.source, row.relation, row.target)
        earlier = self._seen_edges.get(edge)
        if earlier is not None:
            for column in ("weight", "note"):
                mine, theirs = getattr(row, column), getattr(earlier, column)
                if mine is not None and theirs is not None and mine != theirs:
                    problem(
                        column,
                        str(mine),
                        f"line {earlier.line} has the same source, relation and target with {column} "
                        f"'{theirs}'; keep one of the two rows",
                    )
        for label, aliases, column in (
            (row.source, row.source_aliases, "source_aliases"),
            (row.target, row.target_aliases, "target_aliases"),
        ):
            for alias in aliases:
                owner, line = self._alias_owner.get(alias, (label, row.line))
                if owner != label:
                    problem(
                        column,
                        alias,
                        f"alias '{alias}' is already an alias of '{owner}' (line {line}); an alias "
                        "can name only one entity",
                    )

    def _remember(self, row: RelationRow) -> None:
        self._seen_rows.setdefault(_without_line(row), row.line)
        self._seen_edges.setdefault((row.source, row.relation, row.target), row)
        for label, aliases in ((row.source, row.source_aliases), (row.target, row.target_aliases)):
            for alias in aliases:
                self._alias_owner.setdefault(alias, (label, row.line))


def _aliases(cell: str, label: str) -> tuple[str, ...]:
    aliases: list[str] = []
    for alias in cell.split(ALIAS_SEPARATOR):
        alias = alias.strip()
        if alias and alias != label and alias not in aliases:
            aliases.append(alias)
    return tuple(aliases)


def _without_line(row: RelationRow) -> tuple:
    return (
        row.source,
        row.relation,
        row.target,
        row.source_type,
        row.target_type,
        row.source_aliases,
        row.target_aliases,
        row.weight,
        row.note,
    )


