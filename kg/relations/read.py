"""Reading a relation table: a relations.csv in, every `RowProblem` with its line and a fix (`check_relation_table`) and then the checked `RelationRow`s one at a time (`iter_relation_rows`) out.

A table is read row by row and never held: the pass that checks every row keeps only what the
checks need (per edge and per alias, see `kg.relations.check`) and can hand each good row on at
once (`new_sink`); `iter_relation_rows` reads the good rows again when they are needed a second
time. `read_relation_table` collects them in a list, for callers that want the table itself.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

from kg.errors import RelationTableError
from kg.files import file_stamp
from kg.relations.check import RowChecker, RowParser
from kg.relations.model import CheckedTable, RelationRow, RelationTable
from kg.relations.source import (
    BOM_ENCODING,
    TableSource,
    _Undecodable,
    encoding_error,
    table_encodings,
)
from ontology import Vocabulary

Sink = Callable[[dict[str, tuple[str, int]]], Callable[[RelationRow], None]]


def check_relation_table(
    path: Path, vocab: Vocabulary, new_sink: Sink | None = None
) -> CheckedTable:
    """Check every row of a relation table; row problems are collected, file problems raise.

    `new_sink(aliases)`, called when a pass over the file starts (again, if the encoding turns out
    to be GBK), returns what every good row is handed to as soon as it is checked; `aliases` is the
    checker's own alias map, holding the aliases of the rows checked so far.
    """
    path = Path(path)
    stamp = _stamp(path)
    first_error: _Undecodable | None = None
    for encoding in table_encodings(path):
        try:
            return _check(path, encoding, vocab, stamp, new_sink)
        except _Undecodable as e:
            # A BOM says UTF-8 for sure; otherwise GBK (Chinese Excel's "CSV") gets its turn.
            first_error = first_error or e
            if e.encoding == BOM_ENCODING:
                raise encoding_error(path.name, e) from None
    assert first_error is not None
    raise encoding_error(path.name, first_error) from None


def _check(
    path: Path, encoding: str, vocab: Vocabulary, stamp: tuple[int, int], new_sink: Sink | None
) -> CheckedTable:
    with TableSource(path, encoding) as source:
        checker = RowChecker(source.name, vocab, source.columns)
        sink = new_sink(checker.aliases) if new_sink is not None else None
        for line, fields in source.rows():
            row = checker.check(line, fields)
            if row is not None and sink is not None:
                sink(row)
        return CheckedTable(
            source.name, path, source.encoding, stamp, source.header, checker.rows,
            checker.problems, checker.bad_fields, checker.aliases,
        )


def iter_relation_rows(table: CheckedTable, vocab: Vocabulary) -> Iterator[RelationRow]:
    """The good rows of a checked table, read again from its file one at a time."""
    _unchanged(table)
    bad = table.bad_fields.keys()
    count = 0
    with TableSource(table.path, table.encoding) as source:
        parser = RowParser(source.name, vocab, source.columns)
        try:
            for line, fields in source.rows():
                if line in bad:
                    continue
                row, problems = parser.parse(line, fields)
                if row is None or problems:
                    raise _changed(table)
                count += 1
                yield row
        except _Undecodable:
            raise _changed(table) from None
    if count != table.rows:
        raise _changed(table)
    _unchanged(table)


def read_relation_table(path: Path, vocab: Vocabulary) -> RelationTable:
    """Parse and check a relation table into memory; row problems are collected, file problems raise."""
    table = check_relation_table(path, vocab)
    rows = list(iter_relation_rows(table, vocab))
    return RelationTable(table.name, rows, table.problems, table.encoding, table.header, table.bad_fields)


def _stamp(path: Path) -> tuple[int, int]:
    try:
        path.stat()
    except OSError as e:
        raise RelationTableError(f"{path.name}: cannot read the file ({e.strerror})") from e
    return file_stamp(path) or (0, 0)


def _unchanged(table: CheckedTable) -> None:
    if file_stamp(table.path) != table.stamp:
        raise _changed(table)


def _changed(table: CheckedTable) -> RelationTableError:
    return RelationTableError(
        f"{table.name}: the file changed while it was being imported; nothing was imported: "
        "import it again once it is saved"
    )
