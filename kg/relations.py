"""Relation-table import: a relations.csv (source,relation,target,...) and a Vocabulary in, entities and typed edges in an rdflib Graph (plus an ImportReport) out.

Reading (`read_relation_table`) checks every row and collects every problem with its line and a
fix; applying (`apply_relation_rows`) first plans all triples against the graph without touching
it, then writes them in one go, so a failed import leaves the graph as it was and a second import
of the same table adds nothing. What is written is the contract the graph view and Protégé read:

    <entity> a owl:NamedIndividual , <class> ; rdfs:label "label" ; skos:altLabel "alias" .
    <source> <property> <target> .
    [] a owl:Axiom ; owl:annotatedSource <source> ; owl:annotatedProperty <property> ;
       owl:annotatedTarget <target> ; kg:weight "0.5"^^xsd:decimal ; rdfs:comment "note" .
"""

from __future__ import annotations

import codecs
import csv
import io
import math
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

import rdflib
from rdflib import OWL, RDF, RDFS, SKOS, BNode, Literal, URIRef

from kg.errors import RelationTableError
from ontology import KG, Vocabulary

__all__ = [
    "ALLOWED_COLUMNS",
    "ImportReport",
    "RelationRow",
    "RelationTable",
    "RowProblem",
    "apply_relation_rows",
    "import_relation_table",
    "read_relation_table",
]

REQUIRED_COLUMNS = ("source", "relation", "target")
OPTIONAL_COLUMNS = (
    "source_type",
    "target_type",
    "source_aliases",
    "target_aliases",
    "weight",
    "note",
)
ALLOWED_COLUMNS = REQUIRED_COLUMNS + OPTIONAL_COLUMNS
# The rejects file adds this column; it is accepted and ignored so that a fixed rejects file
# can be imported again as it is.
PROBLEM_COLUMN = "problem"
ALIAS_SEPARATOR = "|"
_PROGRESS_EVERY = 5000

Triple = tuple[URIRef | BNode, URIRef, URIRef | BNode | Literal]
# rdflib namespace attribute access is slow enough to show at 100k rows: look terms up once.
_TYPE, _LABEL, _ALT_LABEL, _COMMENT = RDF.type, RDFS.label, SKOS.altLabel, RDFS.comment
_INDIVIDUAL, _AXIOM, _ENTITY, _WEIGHT = OWL.NamedIndividual, OWL.Axiom, KG.Entity, KG.weight
_SOURCE, _PROPERTY, _TARGET = OWL.annotatedSource, OWL.annotatedProperty, OWL.annotatedTarget


@dataclass(frozen=True)
class RelationRow:
    line: int
    source: str
    relation: str  # the resolved property's local name
    target: str
    source_type: str | None  # resolved class local names
    target_type: str | None
    source_aliases: tuple[str, ...] = ()
    target_aliases: tuple[str, ...] = ()
    weight: float | None = None
    note: str | None = None


@dataclass(frozen=True)
class RowProblem:
    line: int
    column: str  # "" when the problem is the row as a whole
    value: str
    message: str
    file: str = ""

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.file else f"line {self.line}"
        return f"{where}: {self.message}"


@dataclass
class RelationTable:
    name: str
    rows: list[RelationRow]
    problems: list[RowProblem]
    encoding: str
    header: list[str] = field(default_factory=list)  # as written in the file
    # Original fields of rows with problems, by line, for the rejects file.
    bad_fields: dict[int, list[str]] = field(default_factory=dict)


@dataclass
class ImportReport:
    rows: int
    new_entities: int
    new_edges: int
    unchanged_edges: int
    rejected: list[RowProblem]
    dry_run: bool
    encoding: str
    updated_edges: int = 0  # already present, but the row brought a new weight or note
    added_triples: int = 0
    removed_triples: int = 0  # only kg:Entity placeholders replaced by a real class, old weights

    def summary(self) -> str:
        bad_rows = len({p.line for p in self.rejected})
        if self.rows == 0 and bad_rows:
            text = f"nothing imported: all {_count(bad_rows, 'row')} had problems"
        elif self.rows == 0:
            text = "nothing to import: the table has no rows"
        elif self.added_triples == 0 and self.removed_triples == 0:
            nothing = "nothing would change" if self.dry_run else "nothing changed"
            text = f"{nothing}: all {_count(self.rows, 'row')} were already in the graph"
        else:
            verb = "would import" if self.dry_run else "imported"
            text = (
                f"{verb} {_count(self.rows, 'row')}: {_count(self.new_entities, 'new entity', 'new entities')}, "
                f"{_count(self.new_edges, 'new edge')}, {self.unchanged_edges} already present"
            )
            if self.updated_edges:
                text += f", {self.updated_edges} with a new weight or note"
        if bad_rows and self.rows:
            text += f"; {_count(bad_rows, 'bad row')} skipped"
        if self.encoding == "gbk":
            text += (
                '; the file was read as GBK (save it as "CSV UTF-8" to be sure of the characters)'
            )
        return f"dry run: {text}" if self.dry_run else text


def _count(n: int, singular: str, plural: str | None = None) -> str:
    return f"{n} {singular if n == 1 else (plural or singular + 's')}"


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


# ---------------------------------------------------------------- applying


def apply_relation_rows(
    graph: rdflib.Graph, rows: Iterable[RelationRow], vocab: Vocabulary
) -> ImportReport:
    """Write checked rows into `graph`; rows that cannot be applied are reported, the rest written."""
    from kg.relations_plan import (
        _Plan,  # written after the reader; it imports the row types from here
    )

    plan = _Plan(graph, list(rows), vocab, file="")
    plan.run()
    plan.commit()
    return plan.report(dry_run=False, encoding="")


def import_relation_table(
    graph: rdflib.Graph,
    path: Path,
    vocab: Vocabulary,
    *,
    skip_invalid: bool = False,
    dry_run: bool = False,
    rejects_path: Path | None = None,
    progress: Callable[[int], None] | None = None,
) -> ImportReport:
    """Read, check and import a relation table: all rows or (with problems) none, unless skip_invalid."""
    table = read_relation_table(path, vocab)
    from kg.relations_plan import (
        _Plan,  # written after the reader; it imports the row types from here
    )

    plan = _Plan(graph, table.rows, vocab, file=table.name, progress=progress)
    plan.run()
    problems = sorted(table.problems + plan.rejected, key=lambda p: p.line)
    if problems and not skip_invalid:
        bad_rows = len({p.line for p in problems})
        raise RelationTableError(
            f"{table.name}: {_count(bad_rows, 'bad row')}; nothing was imported (fix them, or use "
            "--skip-invalid to import the good rows)",
            problems=[str(p) for p in problems],
        )
    if not dry_run:
        plan.commit()
        if rejects_path is not None and problems:
            _write_rejects(rejects_path, table, problems)
    report = plan.report(dry_run=dry_run, encoding=table.encoding)
    report.rejected = problems
    return report


def _write_rejects(path: Path, table: RelationTable, problems: list[RowProblem]) -> None:
    """The bad rows with their original columns and a `problem` column, as Excel-friendly UTF-8."""
    keep = [i for i, cell in enumerate(table.header) if _column_key(cell) != PROBLEM_COLUMN]
    by_line: dict[int, list[str]] = {}
    for p in problems:
        by_line.setdefault(p.line, []).append(p.message)
    rows_by_line: dict[int, RelationRow] = {}
    with Path(path).open("w", encoding="utf-8-sig", newline="") as f:  # BOM: Excel then reads UTF-8
        writer = csv.writer(f)
        writer.writerow([table.header[i] for i in keep] + [PROBLEM_COLUMN])
        for line, messages in sorted(by_line.items()):
            fields = table.bad_fields.get(line)
            if fields is None:  # rejected while applying: rebuild the fields from the parsed row
                rows_by_line = rows_by_line or {r.line: r for r in table.rows}
                fields = _row_fields(rows_by_line[line], table.header)
            fields = (fields + [""] * len(table.header))[: len(table.header)]
            writer.writerow([fields[i] for i in keep] + [f"line {line}: " + "; ".join(messages)])


def _row_fields(row: RelationRow, header: list[str]) -> list[str]:
    values = {
        "source": row.source,
        "relation": row.relation,
        "target": row.target,
        "source_type": row.source_type or "",
        "target_type": row.target_type or "",
        "source_aliases": ALIAS_SEPARATOR.join(row.source_aliases),
        "target_aliases": ALIAS_SEPARATOR.join(row.target_aliases),
        "weight": "" if row.weight is None else repr(row.weight),
        "note": row.note or "",
    }
    return [values.get(_column_key(cell), "") for cell in header]
