"""Where a relation table states an edge: the file and the wanted edges in, the line of each one's row out.

The relation-table record (kg/relations/ledger.py) keeps which edges a table stated, not where: an answer citing a
graph fact finds the rows again in the file, by the names at both ends (a label or an alias of each entity, as the
import resolved them) and the relation (its name or label, resolved as the import resolves it). Only rows whose two
ends are wanted are parsed, so finding a dozen edges in a 100k-row table costs one pass of the csv reader.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from kg.errors import KgError
from kg.relations.check import RowParser
from kg.relations.source import TableSource, _Undecodable, open_table, table_encodings
from ontology import Vocabulary

__all__ = ["WantedEdge", "row_lines"]


@dataclass(frozen=True)
class WantedEdge:
    sources: frozenset[str]  # the source entity's label and aliases, casefolded
    relation: str  # the asserted property's local name
    targets: frozenset[str]


def row_lines(path: Path, vocab: Vocabulary, wanted: Sequence[WantedEdge]) -> list[int | None]:
    """For each wanted edge, the line of the first row of the table at `path` that states it (None: no row does, or
    the file cannot be read as a relation table now)."""
    found: list[int | None] = [None] * len(wanted)
    by_source: dict[str, list[int]] = {}
    for i, edge in enumerate(wanted):
        for name in edge.sources:
            by_source.setdefault(name, []).append(i)
    if not by_source:
        return found
    for encoding in table_encodings(path):
        try:
            _scan(path, vocab, wanted, by_source, found, encoding)
            return found
        except _Undecodable:
            continue
        except (KgError, OSError, ValueError):
            break
    return [None] * len(wanted)


def _scan(path, vocab, wanted, by_source, found, encoding) -> None:
    with TableSource(path, encoding) as source:  # the header and the encoding, as the import finds them
        parser = RowParser(source.name, vocab, source.columns)
        at = {column: source.columns.index(column) for column in ("source", "target")}
        width, skip, encoding = len(source.columns), source.header_lines, source.encoding
    # The rows by the csv module straight over the decoded file: the lines are split and counted as `TableSource` splits
    # them (newline="": at \n, \r\n and a lone \r), without its layers per line, which cost twice this pass.
    with open_table(path) as raw:
        reader = csv.reader(io.TextIOWrapper(raw, encoding=encoding, newline=""))
        try:
            while reader.line_num < skip:
                next(reader)
            line = reader.line_num + 1
            for fields in reader:
                if len(fields) == width:
                    candidates = by_source.get(fields[at["source"]].strip().casefold())
                    if candidates:
                        _match(parser, line, fields, fields[at["target"]].strip().casefold(), candidates, wanted, found)
                line = reader.line_num + 1
        except UnicodeDecodeError as e:
            raise _Undecodable(e.start, e.object[e.start], encoding) from e
        except csv.Error as e:
            raise ValueError(str(e)) from e


def _match(parser, line: int, fields: list[str], target: str, candidates: list[int], wanted, found) -> None:
    hits = [i for i in candidates if found[i] is None and target in wanted[i].targets]
    if not hits:
        return
    row, problems = parser.parse(line, fields)
    if row is None or problems:
        return
    for i in hits:
        if row.relation == wanted[i].relation:
            found[i] = line
