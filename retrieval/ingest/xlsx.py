"""Excel (.xlsx) bytes in, a `SourceDocument` out: each visible sheet a section (`## sheet name`) holding its cells as a Markdown table under its first row.

A team's spreadsheet (a service inventory, a port plan, an on-call roster, a configuration matrix) answers questions a
row at a time: "who owns payment-service" is a row under its column names. The chunker already cuts a long table
between rows and repeats its header in every piece, so each row is found with the names of its columns. Read with the
standard library (`kg/workbook.py`, which the relation table kept in a workbook shares; openpyxl would be a dependency
for a few hundred lines): each cell as the text Excel shows, dates as dates, booleans as TRUE/FALSE, a formula's
cached value.
Hidden sheets are left out (a reader does not see them), and so are empty rows and columns; a one-column sheet is read
as lines. A workbook of more than MAX_CELLS cells is cut there, with a warning.
"""

from __future__ import annotations

from kg.errors import InputError
from kg.ooxml import UNREADABLE_MEMBER, core_title, open_package, table_lines
from kg.workbook import Workbook
from retrieval.types import SourceDocument

__all__ = ["MAX_CELLS", "read_xlsx"]

MAX_CELLS = 200_000  # of text cells in a workbook: ~a few MB of text, past what a document may hold anyway
_KIND = "spreadsheet"


def _grid(book: Workbook, part: str, cells: int) -> tuple[list[list[str]], list[int], int]:
    """The sheet's rows of text, empty rows and columns left out, the sheet's number of each row, and the workbook's
    cells read so far (up to MAX_CELLS: what is past it is not read)."""
    rows: dict[int, dict[int, str]] = {}
    for number, found in book.rows(part):
        for column, value in found[: MAX_CELLS - cells]:
            rows.setdefault(number, {})[column] = value
            cells += 1
        if cells >= MAX_CELLS:
            break
    if not rows:
        return [], [], cells
    used = sorted({col for row in rows.values() for col in row})
    numbers = sorted(rows)
    return [[rows[r].get(col, "") for col in used] for r in numbers], numbers, cells


def _table(grid: list[list[str]], numbers: list[int]) -> tuple[list[str], list[int]]:
    """The sheet's lines and the row each comes from (a table's rule line: its header's)."""
    if len(grid[0]) == 1:
        return [row[0] for row in grid], numbers  # one column: a list kept in a sheet
    return table_lines(grid), [numbers[0], *numbers]


def read_xlsx(raw: bytes, source: str, label: str) -> SourceDocument:
    with open_package(raw, label, _KIND, ".xlsx", "Excel or WPS") as zf:
        try:
            book = Workbook(zf, label)
            lines: list[str] = []
            rows: list[int] = []  # the sheet row of each line: where a hit is, as Excel numbers it
            cells = 0
            for name, part in book.sheets():
                if cells >= MAX_CELLS:
                    break
                grid, numbers, cells = _grid(book, part, cells)
                if grid:
                    table, at = _table(grid, numbers)
                    lines += [f"## {' '.join(name.split()) or part}", "", *table, ""]
                    rows += [numbers[0], numbers[0], *at, numbers[-1]]
            title = core_title(zf, label)
        except UNREADABLE_MEMBER as exc:
            raise InputError(f"{label}: a part of the spreadsheet cannot be read ({exc}); save it again as .xlsx") from None
    if not lines:
        raise InputError(f"{label}: the spreadsheet holds no text (its visible sheets are empty)")
    warnings = (f"{label}: more than {MAX_CELLS:,} cells: read up to there; split the workbook",) \
        if cells >= MAX_CELLS else ()
    return SourceDocument(source=source, text="\n".join(lines), format="xlsx", title=title, line_pages=tuple(rows),
                          warnings=warnings)
