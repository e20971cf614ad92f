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
import hashlib
import io
import math
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path

import rdflib
from rdflib import OWL, RDF, RDFS, SKOS, XSD, BNode, Literal, URIRef

from kg.errors import RelationTableError
from ontology import ENT, KG, Vocabulary, entity_iri

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
        if not text:
            return None
        info = self.vocab.resolve_property(text)
        if info is not None:
            return info.name
        candidates = self.vocab.property_candidates(text)
        if len(candidates) > 1:
            message = (
                f"relation '{text}' is ambiguous: it is a label of {_quoted(candidates, ' and ')}; "
                "write the relation's name instead"
            )
        elif suggestions := self.vocab.suggest_properties(text):
            message = f"relation '{text}' is not in the ontology (did you mean '{suggestions[0]}'?)"
        else:
            known = sorted(self.vocab.properties)
            listed = ", ".join(known[:8]) + (", ..." if len(known) > 8 else "")
            message = (
                f"relation '{text}' is not in the ontology; use a relation of the ontology "
                f"({listed}) or declare it there as an owl:ObjectProperty"
            )
        problem("relation", text, message)
        return None

    def _class(
        self, text: str, column: str, problem: Callable[[str, str, str], None]
    ) -> str | None:
        if not text:
            return None
        info = self.vocab.resolve_class(text)
        if info is not None:
            return info.name
        candidates = self.vocab.class_candidates(text)
        if len(candidates) > 1:
            message = (
                f"{column} '{text}' is ambiguous: it is a label of {_quoted(candidates, ' and ')}; "
                "write the class's name instead"
            )
        elif suggestions := self.vocab.suggest_classes(text):
            message = f"{column} '{text}' is not a class in the ontology (did you mean '{suggestions[0]}'?)"
        else:
            message = (
                f"{column} '{text}' is not a class in the ontology; leave it empty, use a class of "
                "the ontology, or declare it there as an owl:Class"
            )
        problem(column, text, message)
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


class _Plan:
    """Every triple an import would add or remove, worked out against the graph without changing it.

    `added` / `removed` are an overlay on the graph (`_has` reads through it), so rows later in
    the table see what earlier rows will write, and a dry run or a refused import is free.
    """

    def __init__(
        self,
        graph: rdflib.Graph,
        rows: list[RelationRow],
        vocab: Vocabulary,
        *,
        file: str,
        progress: Callable[[int], None] | None = None,
    ) -> None:
        self.graph, self.rows, self.vocab, self.file, self.progress = (
            graph,
            rows,
            vocab,
            file,
            progress,
        )
        self.added: dict[Triple, None] = {}  # dicts, not sets: a deterministic write order
        self.removed: dict[Triple, None] = {}
        self.rejected: list[RowProblem] = []
        self.applied = self.new_entities = self.new_edges = 0
        self.unchanged_edges = self.updated_edges = 0
        # Everything read from the graph is read here, in a few scans: at 100k rows, one rdflib
        # query per row and entity costs more than the whole import.
        self._by_label, self._by_alias, self._labels_of = _label_index(graph)
        self._types: dict[URIRef | BNode, set] = {}
        for subject, cls in graph.subject_objects(_TYPE):
            self._types.setdefault(subject, set()).add(cls)
        self._alias_owner: dict[str, str] = {}  # alias -> the label it is an alias of
        self._alias_line: dict[str, int] = {}
        for row in rows:
            for label, aliases in (
                (row.source, row.source_aliases),
                (row.target, row.target_aliases),
            ):
                for alias in aliases:
                    if alias not in self._alias_owner:
                        self._alias_owner[alias] = label.strip()
                        self._alias_line[alias] = row.line
        self._minted: dict[str, URIRef] = {}
        self._mint_label: dict[URIRef, str] = {}
        self._created: set[URIRef] = set()
        # Minted IRIs the graph knows nothing about: no need to ask the graph about them.
        self._fresh: set[URIRef | BNode] = set()
        self._done: set[tuple] = set()  # (iri, label, class, aliases) already applied
        self._names: dict[URIRef, set[str]] = {}
        self._values: dict[tuple, list] = {}  # (axiom, predicate) -> objects, once axioms are read
        self._axioms: dict[Triple, BNode | URIRef] | None = None

    def run(self) -> None:
        for done, row in enumerate(self.rows, 1):
            self._apply(row)
            if self.progress is not None and done % _PROGRESS_EVERY == 0:
                self.progress(done)
        if self.progress is not None:
            self.progress(len(self.rows))

    def commit(self) -> None:
        try:
            for triple in self.removed:
                self.graph.remove(triple)
            self.graph.addN((s, p, o, self.graph) for s, p, o in self.added)
        except BaseException:
            # Put the graph back as it was: an import is all or nothing, even when interrupted.
            for triple in self.added:
                self.graph.remove(triple)
            for triple in self.removed:
                self.graph.add(triple)
            raise

    def report(self, *, dry_run: bool, encoding: str) -> ImportReport:
        return ImportReport(
            rows=self.applied,
            new_entities=self.new_entities,
            new_edges=self.new_edges,
            unchanged_edges=self.unchanged_edges,
            rejected=list(self.rejected),
            dry_run=dry_run,
            encoding=encoding,
            updated_edges=self.updated_edges,
            added_triples=len(self.added),
            removed_triples=len(self.removed),
        )

    # -- one row

    def _apply(self, row: RelationRow) -> None:
        prop = self.vocab.properties.get(row.relation)
        if prop is None:
            return self._reject(
                row, "relation", row.relation, f"relation '{row.relation}' is not in the ontology"
            )
        for column in ("source_type", "target_type"):
            name = getattr(row, column)
            if name is not None and name not in self.vocab.classes:
                return self._reject(
                    row, column, name, f"{column} '{name}' is not a class in the ontology"
                )
        if not row.source.strip() or not row.target.strip():
            return self._reject(row, "", "", "every row needs a source, a relation and a target")
        s, o = self._resolve(row.source), self._resolve(row.target)
        if s == o:
            return self._reject(
                row,
                "target",
                row.target,
                f"'{row.source}' and '{row.target}' name the same entity (one is an alias of the "
                "other); a relation must connect two different entities",
            )
        for label, iri, aliases, column in (
            (row.source, s, row.source_aliases, "source_aliases"),
            (row.target, o, row.target_aliases, "target_aliases"),
        ):
            for alias in aliases:
                problem = self._alias_problem(alias, label.strip(), iri)
                if problem:
                    return self._reject(row, column, alias, problem)
        self._entity(s, row.source, row.source_type, row.source_aliases)
        self._entity(o, row.target, row.target_type, row.target_aliases)
        edge = (s, URIRef(prop.iri), o)
        existed = self._has(edge)
        if not existed:
            self._add(edge)
            self.new_edges += 1
        annotated = self._annotate(edge, row.weight, row.note)
        if existed and annotated:
            self.updated_edges += 1
        elif existed:
            self.unchanged_edges += 1
        self.applied += 1

    def _reject(self, row: RelationRow, column: str, value: str, message: str) -> None:
        self.rejected.append(RowProblem(row.line, column, value, message, self.file))

    def _resolve(self, label: str) -> URIRef:
        """An existing entity named `label`, the entity whose alias it is in this table, or a new IRI."""
        path = [label.strip()]
        while True:
            label = path[-1]
            iri = self._by_label.get(label) or self._by_alias.get(label)
            if iri is not None:
                return iri
            owner = self._alias_owner.get(label)
            if owner is None:
                return self._mint(label)
            if owner in path:  # a and b are each other's aliases: one entity, whichever comes first
                return self._mint(min(path[path.index(owner) :]))
            path.append(owner)

    def _alias_problem(self, alias: str, label: str, iri: URIRef) -> str | None:
        """Why `alias` cannot be written for the entity `label` / `iri`, if it cannot.

        An alias that named two entities would resolve differently on the next import, so it is
        refused rather than written twice.
        """
        owner = self._alias_owner.get(alias, label)
        if owner != label:
            line = self._alias_line[alias]
            return (
                f"alias '{alias}' is already an alias of '{owner}' (line {line}); an alias can name "
                "only one entity"
            )
        existing = self._by_label.get(alias) or self._by_alias.get(alias)
        if existing is not None and existing != iri:
            name = self.graph.value(existing, _LABEL) or existing
            return (
                f"alias '{alias}' already names another entity in the graph, '{name}'; an alias can "
                "name only one entity: remove it from this row"
            )
        return None

    def _mint(self, label: str) -> URIRef:
        if label in self._minted:
            return self._minted[label]
        iri = entity_iri(label)
        if self._iri_taken(iri, label):
            # "a b" and "a_b" share a readable IRI; the label's hash keeps them apart, repeatably.
            iri = URIRef(f"{iri}-{hashlib.sha1(label.encode()).hexdigest()[:8]}")
            if (iri, None, None) not in self.graph:
                self._fresh.add(iri)
        self._minted[label] = iri
        self._mint_label[iri] = label
        return iri

    def _iri_taken(self, iri: URIRef, label: str) -> bool:
        """True if `iri` already stands for an entity with another label; notes fresh IRIs."""
        if iri in self._mint_label:
            return self._mint_label[iri] != label
        if (iri, None, None) not in self.graph:
            self._fresh.add(iri)
            return False
        labels = {str(lit).strip() for lit in self.graph.objects(iri, _LABEL)}
        return bool(labels) and label not in labels

    def _entity(
        self, iri: URIRef, label: str, class_name: str | None, aliases: tuple[str, ...]
    ) -> None:
        # Applying the same entity facts again is a no-op (the plan only grows): skip the work.
        key = (iri, label, class_name, aliases)
        if key in self._done:
            return
        self._done.add(key)
        primary = self._mint_label.get(iri)
        if primary is not None and iri not in self._created:
            self._created.add(iri)
            if iri in self._fresh:
                self.new_entities += 1
            self._add((iri, _LABEL, Literal(primary)))
        types = self._types_of(iri)
        if _INDIVIDUAL not in types:
            self._add((iri, _TYPE, _INDIVIDUAL))
        cls = URIRef(self.vocab.classes[class_name].iri) if class_name is not None else _ENTITY
        if cls != _ENTITY:
            self._add((iri, _TYPE, cls))
            # kg:Entity is only the placeholder for "no type given" (an empty cell or "Entity"):
            # a real class replaces it, whichever row comes first.
            self._remove((iri, _TYPE, _ENTITY))
        elif not types - {_INDIVIDUAL}:
            self._add((iri, _TYPE, _ENTITY))
        names = self._names_of(iri)
        if label.strip() not in names:
            aliases = (label.strip(), *aliases)  # a table alias used as a source or target
        for alias in aliases:
            if alias not in names:
                self._add((iri, _ALT_LABEL, Literal(alias)))

    def _names_of(self, iri: URIRef) -> set[str]:
        """The entity's rdfs:labels (an alias equal to one of them is not written)."""
        if iri not in self._names:
            names = set(self._labels_of.get(iri, ()))
            if iri in self._mint_label:
                names.add(self._mint_label[iri])
            self._names[iri] = names
        return self._names[iri]

    def _annotate(self, edge: Triple, weight: float | None, note: str | None) -> bool:
        """Set the edge's kg:weight / rdfs:comment on its owl:Axiom; True if anything changed."""
        if weight is None and note is None:
            return False
        if self._axioms is None:
            self._axioms, values = _axiom_index(self.graph)
            self._values.update(values)
        axiom = self._axioms.get(edge)
        changed = False
        if axiom is None:
            key = " ".join(str(term) for term in edge).encode()
            axiom = BNode(f"ax{hashlib.sha1(key).hexdigest()[:24]}")
            self._axioms[edge] = axiom
            self._fresh.add(axiom)
            for predicate, value in (
                (_TYPE, _AXIOM),
                (_SOURCE, edge[0]),
                (_PROPERTY, edge[1]),
                (_TARGET, edge[2]),
            ):
                self._add((axiom, predicate, value))
            changed = True
        if weight is not None:
            literal = Literal(format(Decimal(repr(weight)), "f"), datatype=XSD.decimal)
            changed |= self._set_value(axiom, _WEIGHT, literal, _same_number)
        if note is not None:
            changed |= self._set_value(axiom, _COMMENT, Literal(note), _same_text)
        return changed

    def _set_value(self, subject, predicate, value, same: Callable[[object, object], bool]) -> bool:
        key = (subject, predicate)
        current = self._values.setdefault(key, [])
        if len(current) == 1 and same(current[0], value):
            return False
        for old in current:
            self._remove((subject, predicate, old))
        self._add((subject, predicate, value))
        self._values[key] = [value]
        return True

    # -- the overlay

    def _types_of(self, iri: URIRef) -> set:
        return self._types.setdefault(iri, set())

    def _has(self, triple: Triple) -> bool:
        if triple in self.added:
            return True
        if triple[0] in self._fresh or triple in self.removed:
            return False
        return triple in self.graph

    def _add(self, triple: Triple) -> None:
        if triple[1] == _TYPE:
            self._types_of(triple[0]).add(triple[2])  # type: ignore[arg-type]
        if triple in self.removed:
            del self.removed[triple]
        elif not self._has(triple):
            self.added[triple] = None

    def _remove(self, triple: Triple) -> None:
        if triple[1] == _TYPE:
            self._types_of(triple[0]).discard(triple[2])  # type: ignore[arg-type]
        if triple in self.added:
            del self.added[triple]
        elif triple in self.graph and triple not in self.removed:
            self.removed[triple] = None


def _label_index(
    graph: rdflib.Graph,
) -> tuple[dict[str, URIRef], dict[str, URIRef], dict[URIRef, set[str]]]:
    """rdfs:label -> entity, skos:altLabel -> entity, entity -> its rdfs:labels; once per import.

    Only entities count (owl:NamedIndividuals and kgrag's own entity IRIs), so a row naming
    "service" does not land on the class of that name. If several entities share a name, the
    one with the IRI kgrag would mint wins, then the smallest IRI: the same choice every run.
    """
    individuals = set(graph.subjects(_TYPE, _INDIVIDUAL))
    own_prefix = str(ENT)
    labels_of: dict[URIRef, set[str]] = {}
    indexes = []
    for predicate in (_LABEL, _ALT_LABEL):
        found: dict[str, URIRef] = {}
        for subject, label in graph.subject_objects(predicate):
            if not isinstance(subject, URIRef) or not isinstance(label, Literal):
                continue
            if subject not in individuals and not subject.startswith(own_prefix):
                continue
            key = str(label).strip()
            if not key:
                continue
            if key not in found or _preferred(subject, found[key], key):
                found[key] = subject
            if predicate == _LABEL:
                labels_of.setdefault(subject, set()).add(key)
        indexes.append(found)
    return indexes[0], indexes[1], labels_of


def _preferred(new: URIRef, old: URIRef, label: str) -> bool:
    minted = entity_iri(label)
    if old == minted or new == minted:
        return new == minted
    return str(new) < str(old)


def _axiom_index(graph: rdflib.Graph) -> tuple[dict[Triple, BNode | URIRef], dict[tuple, list]]:
    """(source, property, target) -> its owl:Axiom, and the axioms' kg:weight / rdfs:comment values."""
    axioms = set(graph.subjects(_TYPE, _AXIOM))
    parts = [
        {a: o for a, o in graph.subject_objects(predicate) if a in axioms}
        for predicate in (_SOURCE, _PROPERTY, _TARGET)
    ]
    index: dict[Triple, BNode | URIRef] = {}
    for axiom in sorted(axioms):  # sorted: the same axiom wins every run if an edge has two
        edge = tuple(part.get(axiom) for part in parts)
        if None not in edge:
            index.setdefault(edge, axiom)  # type: ignore[arg-type]
    values: dict[tuple, list] = {}
    for predicate in (_WEIGHT, _COMMENT):
        for axiom, value in graph.subject_objects(predicate):
            if axiom in axioms:
                values.setdefault((axiom, predicate), []).append(value)
    return index, values


def _same_number(a: object, b: object) -> bool:
    try:
        return float(a) == float(b)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return False


def _same_text(a: object, b: object) -> bool:
    return (
        isinstance(a, Literal)
        and isinstance(b, Literal)
        and str(a) == str(b)
        and a.language == b.language
    )
