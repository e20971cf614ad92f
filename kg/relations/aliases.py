"""An alias table (aliases.csv: `entity,alias`) and the graph in -> skos:altLabel triples on known entities (+ an AliasReport) out.

Maintainers keep the other names of their components beside the relation table (中文名 / English
name, a section name the docs use, a CLI flag). Every row is checked first and every problem is
reported with its line; nothing is written when a row is bad unless `skip_invalid`, the same
contract as the relation table. Importing the same table twice adds nothing; an alias deleted from the
table since its last import is removed (kg/relations/ledger.py).
"""

from __future__ import annotations

import csv
import difflib
import io
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

import rdflib
from rdflib import Literal
from rdflib.namespace import RDFS, SKOS

from kg.errors import RelationTableError
from kg.relations.ledger import edge_key, key_edge
from kg.relations.model import ALIAS_COLUMNS, control_problem
from kg.relations.source import column_key, decode_bytes, open_table

__all__ = ["AliasReport", "import_alias_table", "is_alias_table"]



@dataclass
class AliasReport:
    rows: int = 0
    new_aliases: int = 0
    unchanged: int = 0
    rejected: list[str] = field(default_factory=list)
    dry_run: bool = False
    encoding: str = "utf-8"
    removed_aliases: int = 0  # aliases an earlier import of the table added and its rows no longer hold

    def summary(self) -> str:
        verb = "would add" if self.dry_run else "added"
        text = f"{self.rows} alias rows: {verb} {self.new_aliases} aliases, {self.unchanged} already known"
        if self.removed_aliases:
            text += f", {self.removed_aliases} {'would be ' if self.dry_run else ''}removed (gone from the table)"
        return text + (f", {len(self.rejected)} rejected" if self.rejected else "")


def _records(reader) -> Iterable[tuple[int, list[str]]]:
    """(the line it starts on, fields) of each record of a csv reader, blank lines included."""
    while True:
        line = reader.line_num + 1
        fields = next(reader, None)
        if fields is None:
            return
        yield line, fields


def is_alias_table(path: Path) -> bool:
    """A table whose header (its first line with text) is `entity,alias` (any case, BOM allowed)."""
    try:
        with open_table(Path(path)) as f:
            first = next((line for line in f if line.strip()), b"")
    except OSError:
        return False
    for encoding in ("utf-8-sig", "gbk"):
        try:
            # The first line up to any line end: old Mac Excel ("CSV (Macintosh)") ends lines with \r alone.
            header = next(csv.reader(io.StringIO(first.decode(encoding), newline="")), [])
            return [column_key(c) for c in header if c.strip()] == list(ALIAS_COLUMNS)
        except (UnicodeDecodeError, StopIteration):
            continue
    return False


def import_alias_table(graph: rdflib.Graph, path: Path, entities: set | None = None, *,
                       skip_invalid: bool = False, dry_run: bool = False, forget: Iterable[str] = (),
                       asserted: Callable[[list[str]], None] | None = None) -> AliasReport:
    """Check every row, then add `skos:altLabel` to each named entity (all rows or none, unless skip_invalid).

    `entities` (the graph's entity subjects, `kg.graph.entity_subjects`) keeps classes and
    properties, which have labels too, from being given an entity's alias. `forget`: the aliases an
    earlier import of this table added (kg/relations/ledger.py); those its rows no longer hold go,
    unless rows were skipped. `asserted` is given the aliases the rows hold when the import goes ahead."""
    path = Path(path)
    name = path.name
    with open_table(path) as f:
        text, encoding = decode_bytes(f.read(), name)
    records = _records(csv.reader(io.StringIO(text, newline="")))  # \n, \r\n or a lone \r, as relation tables
    at, header = next(((line, fields) for line, fields in records if any(f.strip() for f in fields)), (1, None))
    if header is None or [column_key(c) for c in header if c.strip()] != list(ALIAS_COLUMNS):
        got = ",".join(header or []) or "an empty file"
        raise RelationTableError(f"{name}:{at}: an alias table needs the header 'entity,alias' (got '{got}')")
    subjects = _labelled_subjects(graph, entities)
    folded = {label.casefold(): iri for label, iri in subjects.items()}
    mine = {key_edge(key) for key in forget}
    # Who each name names, but for the aliases this table alone gave last time (it keeps or moves those): the relation
    # table's rule, an alias names one entity, holds here too.
    taken = _labelled_subjects(graph, entities, leave_out=mine) if mine else subjects
    given: dict[str, tuple[rdflib.URIRef, str, int]] = {}  # alias -> (entity, its cell, line) in this table
    report = AliasReport(dry_run=dry_run, encoding=encoding)
    planned: list[tuple[rdflib.URIRef, str]] = []
    problems: list[tuple[int, str]] = []
    for line, fields in records:
        if not any(f.strip() for f in fields):
            continue
        report.rows += 1
        if len(fields) != 2:
            problems.append((line, f"expected 2 cells (entity,alias), got {len(fields)}"
                                   " (quote a cell that contains a comma)"))
            continue
        entity, alias = (f.strip() for f in fields)
        if not entity or not alias:
            problems.append((line, "empty " + ("entity" if not entity else "alias") + " cell"))
            continue
        wrong = control_problem("entity", entity) or control_problem("alias", alias)
        if wrong:
            problems.append((line, wrong))
            continue
        iri = subjects.get(entity) or folded.get(entity.casefold())
        if iri is None:
            hint = difflib.get_close_matches(entity, list(subjects), n=1)
            problems.append((line, f"no entity '{entity}' in the graph "
                                   + (f"(did you mean '{hint[0]}'?)" if hint else
                                      "(import the relation table that names it first)")))
            continue
        owner = taken.get(alias)
        if owner is not None and owner != iri:
            problems.append((line, f"alias '{alias}' already names another entity in the graph, "
                                   f"'{graph.value(owner, RDFS.label) or owner}'; an alias can name only one entity"))
            continue
        first = given.setdefault(alias, (iri, entity, line))
        if first[0] != iri:
            problems.append((line, f"alias '{alias}' is already given to '{first[1]}' (line {first[2]}); an alias can "
                                   "name only one entity"))
            continue
        planned.append((iri, alias))
    rejected = [f"{name}:{line}: {message}" for line, message in problems]
    if rejected and not skip_invalid:
        raise RelationTableError(
            f"{name}: {len(rejected)} bad row(s); nothing was imported (fix them, or use --skip-invalid "
            "to import the good rows)", problems=rejected)
    report.rejected = rejected
    planned = list(dict.fromkeys(planned))
    keys = [edge_key((iri, SKOS.altLabel, Literal(alias))) for iri, alias in planned]
    held = set(keys)
    for key in [] if rejected else forget:
        triple = key_edge(key)
        if key not in held and triple[1] == SKOS.altLabel and triple in graph:
            report.removed_aliases += 1
            if not dry_run:
                graph.remove(triple)
    if asserted is not None and not dry_run:
        asserted(keys)
    for iri, alias in planned:
        known = {str(o) for o in graph.objects(iri, SKOS.altLabel)} | {str(o) for o in graph.objects(iri, RDFS.label)}
        if alias in known:
            report.unchanged += 1
            continue
        report.new_aliases += 1
        if not dry_run:
            graph.add((iri, SKOS.altLabel, Literal(alias)))
    return report


def _labelled_subjects(graph: rdflib.Graph, entities: set | None,
                       leave_out: set[tuple] = frozenset()) -> dict[str, rdflib.URIRef]:
    """Label (or existing alias, or IRI) -> entity, for the subjects that are entities with a label (but the label and
    alias triples in `leave_out`)."""
    out: dict[str, rdflib.URIRef] = {}
    for predicate in (SKOS.altLabel, RDFS.label):  # labels win over aliases
        for subject, label in graph.subject_objects(predicate):
            if (isinstance(subject, rdflib.URIRef) and (entities is None or subject in entities)
                    and (subject, predicate, label) not in leave_out):
                out[str(label)] = subject
                out.setdefault(str(subject), subject)
    return out
