"""Excel (.xlsx) bytes in, a `SourceDocument` out: each visible sheet a section (`## sheet name`) holding its cells as a Markdown table under its first row.

A team's spreadsheet (a service inventory, a port plan, an on-call roster, a configuration matrix) answers questions a
row at a time: "who owns payment-service" is a row under its column names. The chunker already cuts a long table
between rows and repeats its header in every piece, so each row is found with the names of its columns. Read with the
standard library (`ooxml.py`, as `docx.py`; openpyxl would be a dependency for a few hundred lines): the workbook's sheets and their order, the shared
strings, each sheet's cells by their reference (A1), dates as dates (a cell whose number format is a date format,
built in or the workbook's own, in the 1900 or 1904 date system), booleans as TRUE/FALSE, a formula's cached value.
Hidden sheets are left out (a reader does not see them), and so are empty rows and columns; a one-column sheet is read
as lines. A workbook of more than MAX_CELLS cells is cut there, with a warning.
"""

from __future__ import annotations

import datetime as dt
import posixpath
import re

from kg.errors import InputError
from retrieval.ingest.ooxml import (
    UNREADABLE_MEMBER,
    attr,
    child,
    core_title,
    local,
    open_package,
    parse_part,
    table_lines,
)
from retrieval.types import SourceDocument

__all__ = ["MAX_CELLS", "read_xlsx"]

MAX_CELLS = 200_000  # of text cells in a workbook: ~a few MB of text, past what a document may hold anyway
_KIND = "spreadsheet"
_REF = re.compile(r"([A-Z]+)(\d+)")
# Built-in number formats that show a date or a time (ECMA-376 18.8.30, and the CJK locales' 27-36, 50-58).
_DATE_FORMATS = set(range(14, 23)) | set(range(27, 37)) | set(range(45, 48)) | set(range(50, 59))
_DATE_CODE = re.compile(r"[ymdhs]|年|月|日", re.IGNORECASE)
_NOT_CODE = re.compile(r'"[^"]*"|\[[^\]]*\]|\\.')  # quoted text, [colours] / [$-locale], escaped characters


def _column(letters: str) -> int:
    n = 0
    for ch in letters:
        n = n * 26 + ord(ch) - 64
    return n - 1


def _text(el) -> str:
    """A string item's text: its `t`, or its runs' `t`, without phonetic guides (`rPh`)."""
    out = []
    for part in el if el is not None else ():
        tag = local(part.tag)
        if tag == "t":
            out.append(part.text or "")
        elif tag == "r":
            t = child(part, "t")
            out.append((t.text or "") if t is not None else "")
    return "".join(out)


def _date_styles(styles) -> set[int]:
    """The cell style indexes (`s` of a cell) whose number format shows a date."""
    if styles is None:
        return set()
    custom = {}
    formats = child(styles, "numFmts")
    for fmt in formats if formats is not None else ():
        code = _NOT_CODE.sub("", attr(fmt, "formatCode") or "")
        custom[int(attr(fmt, "numFmtId") or -1)] = bool(_DATE_CODE.search(code)) and "general" not in code.lower()
    xfs = child(styles, "cellXfs")
    out = set()
    for i, xf in enumerate(xfs if xfs is not None else ()):
        fmt = int(attr(xf, "numFmtId") or 0)
        if custom.get(fmt, fmt in _DATE_FORMATS):
            out.add(i)
    return out


def _number(value: str, date: bool, base: dt.datetime) -> str:
    try:
        number = float(value)
    except ValueError:
        return value
    if date and 0 <= number < 2_958_466:  # before 10000-01-01
        moment = base + dt.timedelta(days=number)
        if number == int(number):
            return moment.date().isoformat()
        return moment.strftime("%Y-%m-%d %H:%M" if number >= 1 else "%H:%M")
    return str(int(number)) if number == int(number) and abs(number) < 1e15 else format(number, ".15g")


class _Book:
    def __init__(self, zf, label: str) -> None:
        self.zf, self.label = zf, label
        self.workbook = parse_part(zf, "xl/workbook.xml", label, _KIND, required=True)
        pr = child(self.workbook, "workbookPr")
        date1904 = pr is not None and (attr(pr, "date1904") or "").lower() in ("1", "true")
        self.base = dt.datetime(1904, 1, 1) if date1904 else dt.datetime(1899, 12, 30)
        shared = parse_part(zf, "xl/sharedStrings.xml", label, _KIND)
        self.strings = [_text(si) for si in shared if local(si.tag) == "si"] if shared is not None else []
        self.dates = _date_styles(parse_part(zf, "xl/styles.xml", label, _KIND))
        rels = parse_part(zf, "xl/_rels/workbook.xml.rels", label, _KIND)
        self.targets = {attr(r, "Id"): attr(r, "Target") or "" for r in rels} if rels is not None else {}
        self.cells = 0

    def sheets(self):
        """(name, part name) of the visible sheets, in the workbook's order."""
        found = child(self.workbook, "sheets")
        for sheet in found if found is not None else ():
            if (attr(sheet, "state") or "visible") != "visible":
                continue
            target = self.targets.get(attr(sheet, "id"), "")
            if target:
                part = target.lstrip("/") if target.startswith("/") else posixpath.normpath(posixpath.join("xl", target))
                yield attr(sheet, "name") or "", part

    def grid(self, part: str) -> list[list[str]]:
        root = parse_part(self.zf, part, self.label, _KIND)
        data = child(root, "sheetData") if root is not None else None
        rows: dict[int, dict[int, str]] = {}
        for row in data if data is not None else ():
            if self.cells >= MAX_CELLS:
                break  # the bound: what is past it is not read
            for c in row:
                if local(c.tag) != "c" or self.cells >= MAX_CELLS:
                    continue
                value = self._value(c)
                ref = _REF.match(attr(c, "r") or "")
                if not value or ref is None:
                    continue
                rows.setdefault(int(ref.group(2)), {})[_column(ref.group(1))] = value
                self.cells += 1
        if not rows:
            return []
        used = sorted({col for cells in rows.values() for col in cells})
        return [[rows[r].get(col, "") for col in used] for r in sorted(rows)]

    def _value(self, c) -> str:
        kind, v = attr(c, "t") or "n", child(c, "v")
        raw = (v.text or "") if v is not None else ""
        if kind == "s":
            index = int(raw) if raw.isdigit() else -1
            text = self.strings[index] if 0 <= index < len(self.strings) else ""
        elif kind == "inlineStr":
            text = _text(child(c, "is"))
        elif kind == "b":
            text = {"1": "TRUE", "0": "FALSE"}.get(raw, raw)
        elif kind in ("str", "e", "d"):
            text = raw
        else:
            text = _number(raw, int(attr(c, "s") or 0) in self.dates, self.base) if raw else ""
        return " ".join(text.split())


def _table(grid: list[list[str]]) -> list[str]:
    return [row[0] for row in grid] if len(grid[0]) == 1 else table_lines(grid)  # one column: a list kept in a sheet


def read_xlsx(raw: bytes, source: str, label: str) -> SourceDocument:
    with open_package(raw, label, _KIND, ".xlsx", "Excel or WPS") as zf:
        try:
            book = _Book(zf, label)
            lines: list[str] = []
            for name, part in book.sheets():
                if book.cells >= MAX_CELLS:
                    break
                grid = book.grid(part)
                if grid:
                    lines += [f"## {' '.join(name.split()) or part}", "", *_table(grid), ""]
            title = core_title(zf, label)
        except UNREADABLE_MEMBER as exc:
            raise InputError(f"{label}: a part of the spreadsheet cannot be read ({exc}); save it again as .xlsx") from None
    if not lines:
        raise InputError(f"{label}: the spreadsheet holds no text (its visible sheets are empty)")
    warnings = (f"{label}: more than {MAX_CELLS:,} cells: read up to there; split the workbook",) \
        if book.cells >= MAX_CELLS else ()
    return SourceDocument(source=source, text="\n".join(lines), format="xlsx", title=title, warnings=warnings)
