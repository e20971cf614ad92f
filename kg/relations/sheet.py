"""A relation or alias table kept in an Excel workbook (.xlsx) in, the same table as CSV text out, line N holding the
sheet's row N, so every message, rejected row and cited fact names the row Excel shows (`relations.xlsx:7`).

Teams keep the table they maintain in Excel or WPS, and saving it as CSV again after every edit is the step people
forget (then the import reads last week's table). The table is the workbook's one visible sheet with a header of a
relation table (`source,relation,target`, …) or an alias table (`entity,alias`) among its first rows; the rows above the
header (a title, a date) are left out. A workbook of one visible sheet is read as that table whatever its first row says
(the header's problems are then said as for a CSV). Hidden sheets are passed over, so an old version kept in a hidden
sheet is not read; two visible tables in one workbook are refused (which one the user meant cannot be told). Cells are
read as Excel shows them (`kg/workbook.py`): a weight of 0.5 is `0.5`, white space and line breaks in a cell one space
(a line break kept would move every later row's line). A row has at least the header's width; a stray cell right of
the table makes it a bad row, as in Excel's own CSV.
"""

from __future__ import annotations

import csv
import io
import itertools
from pathlib import Path

from kg.errors import RelationTableError
from kg.files import file_stamp
from kg.ooxml import UNREADABLE_MEMBER, open_package
from kg.relations.model import ALIAS_COLUMNS, REQUIRED_COLUMNS, table_kind
from kg.workbook import Workbook

__all__ = ["SHEET_SUFFIXES", "is_workbook", "sheet_csv"]

SHEET_SUFFIXES = (".xlsx", ".xlsm")
HEADER_WITHIN = 10  # rows with text above a header: a title, a date, who keeps the table
MAX_ROWS = 1_048_576  # Excel's last row; a row numbered past it is read as the next one
_last: tuple[tuple[str, tuple[int, int] | None], bytes] | None = None  # the last workbook read: an import reads it 2-3 times


def is_workbook(path: Path) -> bool:
    return Path(path).suffix.lower() in SHEET_SUFFIXES


def sheet_csv(path: Path) -> bytes:
    """The workbook's table as UTF-8 CSV, line N the sheet's row N (blank lines for rows without text)."""
    global _last
    path = Path(path)
    key = (str(path.resolve()), file_stamp(path))
    if _last is not None and _last[0] == key:
        return _last[1]
    data = _render(path)
    _last = (key, data)
    return data


def _render(path: Path) -> bytes:
    name = path.name
    with open_package(path, name, "workbook", path.suffix.lower(), "Excel or WPS") as zf:
        try:
            book = Workbook(zf, name)
            sheets = list(book.sheets())
            found = [(sheet, part, _header_row(book, part)) for sheet, part in sheets]
            tables = [(sheet, part, at) for sheet, part, at in found if at]
            if len(tables) > 1:
                raise RelationTableError(
                    f"{name}: the sheets {', '.join(repr(s) for s, _, _ in tables)} each hold a table: keep one table "
                    "in a workbook (move the other to its own file, or hide its sheet)")
            if not tables and len(sheets) == 1:
                tables = [(*sheets[0], 0)]
            if not tables:
                listed = ", ".join(repr(s) for s, _ in sheets) or "none visible"
                raise RelationTableError(
                    f"{name}: no sheet has the header {','.join(REQUIRED_COLUMNS)} (a relation table) or "
                    f"{','.join(ALIAS_COLUMNS)} (an alias table) in its first rows; its sheets: {listed}")
            _, part, header_at = tables[0]
            rows = [(number, cells) for number, cells in book.rows(part) if number >= header_at]
        except UNREADABLE_MEMBER as exc:
            raise RelationTableError(f"{name}: a part of the workbook cannot be read ({exc}); save it again as .xlsx") \
                from None
    width = 1 + max((column for column, _ in rows[0][1]), default=0) if rows else 0  # the header's
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    line = 0
    for number, cells in rows:
        if not line < number <= MAX_ROWS:  # out of order, or past Excel's last row: the next line
            number = line + 1
        out.write("\n" * (number - line - 1))
        fields = [""] * max(width, 1 + max(column for column, _ in cells))  # a stray cell right of the table shows
        for column, text in cells:
            fields[column] = text
        writer.writerow(fields)
        line = number
    return out.getvalue().encode("utf-8")


def _header_row(book: Workbook, part: str) -> int:
    """The number of the sheet's row that is a table's header, among its first HEADER_WITHIN rows with text (a title
    above the table is common); 0 when none is."""
    rows = book.rows(part)
    try:
        for number, cells in itertools.islice(rows, HEADER_WITHIN):
            if table_kind([text for _, text in cells]):
                return number
        return 0
    finally:
        rows.close()
