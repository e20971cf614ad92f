"""A CSV file's text in, a `SourceDocument` out: its rows as a Markdown table under its first row, each line knowing
the row it comes from (`line_pages`: the row number Excel shows when it opens the file), so a hit says `inventory.csv
row 12`.

Exports kept beside the notes (a service inventory, a port plan, an on-call roster from a spreadsheet or a CMDB) answer
questions a row at a time, like a workbook's sheet (`xlsx.py`), and were skipped as an unsupported type. The
separator is the one the file uses (a comma; a semicolon or a tab, as Excel writes in some locales); rows without
text are left out, and a one-column file is read as lines. A relation or alias table (`source,relation,target`,
`entity,alias`) is not a document: it is refused with how to import it, so that a folder holding the team's
`relations.csv` does not index it as a passage beside the graph built from it. A file of more than MAX_CELLS cells is
read up to there, with a warning.
"""

from __future__ import annotations

import csv
import io

from kg.errors import InputError
from kg.ooxml import table_lines
from kg.relations.model import table_kind
from retrieval.types import SourceDocument

__all__ = ["MAX_CELLS", "read_csv"]

MAX_CELLS = 200_000  # as a workbook's


def read_csv(text: str, source: str, label: str) -> SourceDocument:
    """`text`: the file decoded (`readers.decode_text`)."""
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=_separator(text))
    rows: list[list[str]] = []
    numbers: list[int] = []
    cells, warnings = 0, ()
    try:
        for number, row in enumerate(reader, start=1):
            row = [" ".join(cell.split()) for cell in row]
            if not any(row):
                continue
            if cells + len(row) > MAX_CELLS:
                warnings = (f"{label}: more than {MAX_CELLS:,} cells: read up to there; split the file",)
                break
            rows.append(row)
            numbers.append(number)
            cells += len(row)
    except csv.Error as exc:
        raise InputError(f"{label}: not a readable CSV file ({exc}); save it again as CSV") from None
    if not rows:
        raise InputError(f"{label}: the CSV file holds no text")
    kind = table_kind(rows[0])
    if kind is not None:
        raise InputError(f"{label}: {'an' if kind == 'alias' else 'a'} {kind} table, not a document: import it with "
                         f"`kg import {label}`")
    width = max(len(row) for row in rows)
    while width > 1 and not any(len(row) >= width and row[width - 1] for row in rows):
        width -= 1  # the empty columns Excel leaves on the right
    rows = [(row + [""] * width)[:width] for row in rows]
    if width == 1:
        lines, pages = [row[0] for row in rows], numbers
    else:
        lines, pages = table_lines(rows), [numbers[0], *numbers]
    return SourceDocument(source=source, text="\n".join(lines), format="csv", line_pages=tuple(pages),
                          warnings=warnings)


def _separator(text: str) -> str:
    """A semicolon or a tab when every one of the file's first lines holds the same number of it, more than of any
    other (a semicolon file may write decimal commas); else a comma."""
    head = [line for line in text[:8192].splitlines()[:20] if line.strip()]
    best, most = ",", 0
    for sep in (",", ";", "\t"):
        counts = {line.count(sep) for line in head}
        if len(counts) == 1 and (count := counts.pop()) > most:
            best, most = sep, count
    return best
