"""The relation table's data model: the columns, a checked row, a row problem, a table and an import report (shared by reading and planning)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from rdflib import OWL, RDF, RDFS, SKOS, BNode, Literal, URIRef

from kg.files import NAME_CONTROLS, TEXT_CONTROLS
from ontology import KG

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


def control_problem(column: str, value: str) -> str | None:
    """What is wrong with a cell holding control characters (None: nothing). A name is one line of plain text
    (`kg.files.NAME_CONTROLS`): a table from someone else (a knowledge pack's) must not put what drives a terminal into
    the labels `kg entity` and the answers' facts print. A note may keep line breaks."""
    found = (TEXT_CONTROLS if column == "note" else NAME_CONTROLS).search(value)
    if found is None:
        return None
    what = {"\n": "a line break", "\r": "a line break", "\t": "a tab", "\x1b": "a terminal escape (ESC)"}.get(
        found.group(), f"the control character U+{ord(found.group()):04X}")
    return f"{column} holds {what}: " + ("remove it" if column == "note" else "a name is one line of plain text; remove it")


_PROGRESS_EVERY = 5000

Triple = tuple[URIRef | BNode, URIRef, URIRef | BNode | Literal]
# rdflib namespace attribute access is slow enough to show at 100k rows: look terms up once.
_TYPE, _LABEL, _ALT_LABEL, _COMMENT = RDF.type, RDFS.label, SKOS.altLabel, RDFS.comment
_INDIVIDUAL, _AXIOM, _ENTITY, _WEIGHT = OWL.NamedIndividual, OWL.Axiom, KG.Entity, KG.weight
_SOURCE, _PROPERTY, _TARGET = OWL.annotatedSource, OWL.annotatedProperty, OWL.annotatedTarget


ALIAS_COLUMNS = ("entity", "alias")


def table_kind(header: list[str]) -> str | None:
    """"relation" or "alias" when a header row's cells name that table's columns (any case, other columns beside
    them), else None: how a workbook's sheet and a CSV among the notes are told to be tables."""
    keys = {column_key(cell) for cell in header}
    if set(REQUIRED_COLUMNS) <= keys:
        return "relation"
    return "alias" if set(ALIAS_COLUMNS) <= keys else None


def column_key(cell: str) -> str:
    """A header cell's column name: case, spaces and hyphens aside (`Source Type` is `source_type`)."""
    return re.sub(r"[\s\-]+", "_", cell.strip().lstrip("\ufeff").lower())

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
class CheckedTable:
    """What checking a whole table leaves behind: everything but the good rows, which are read again."""

    name: str
    path: Path
    encoding: str
    stamp: tuple[int, int]  # kg.files.file_stamp when checked: the rows are read again only if unchanged
    header: list[str]
    rows: int  # good rows
    problems: list[RowProblem]
    bad_fields: dict[int, list[str]]  # original fields of the rows with problems, by line
    aliases: dict[str, tuple[str, int]]  # alias -> (the label it names, first line)


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
    removed_triples: int = 0  # kg:Entity placeholders replaced by a real class, old weights, edges of deleted rows
    removed_edges: int = 0  # edges an earlier import of the table asserted and its rows no longer do
    kept_edges: int = 0  # such edges left in place: the import skipped bad rows (one may still hold the edge)
    removed_aliases: int = 0  # aliases an earlier import of the table asserted and its rows no longer do

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
        removed = "would be removed" if self.dry_run else "removed"
        if self.removed_edges:
            gone = "its row is" if self.removed_edges == 1 else "their rows are"
            text += f"; {_count(self.removed_edges, 'edge')} {removed} ({gone} gone from the table)"
        if self.removed_aliases:
            text += f"; {_count(self.removed_aliases, 'alias', 'aliases')} {removed} (gone from the table)"
        if self.kept_edges:
            text += (f"; {_count(self.kept_edges, 'edge')} whose rows are gone from the table kept: an import that "
                     "skips bad rows removes nothing (fix them and import again)")
        if bad_rows and self.rows:
            text += f"; {_count(bad_rows, 'bad row')} skipped"
        if self.encoding in ("gbk", "cp950", "big5hkscs"):
            text += (
                f'; the file was read as {"GBK" if self.encoding == "gbk" else "Big5"} (save it as "CSV UTF-8" to be '
                'sure of the characters)'
            )
        return f"dry run: {text}" if self.dry_run else text


def _count(n: int, singular: str, plural: str | None = None) -> str:
    return f"{n} {singular if n == 1 else (plural or singular + 's')}"


