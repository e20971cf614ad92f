"""An Excel workbook (.xlsx) read with the standard library: its visible sheets in order, and each sheet's rows as they
are read, every cell as the text Excel shows for it.

Shared by the spreadsheet reader of documents (`retrieval/ingest/xlsx.py`) and the relation table kept in a workbook
(`kg/relations/sheet.py`). A cell's text: a shared or inline string (phonetic guides left out), a number as written
(`1`, not `1.0`), a date or time as a date where the cell's number format shows one (built in or the workbook's own, in
the 1900 or 1904 date system), a boolean as TRUE/FALSE, a formula's cached value; runs of white space, line breaks
included, as one space. A sheet is read a row at a time (`kg.ooxml.iter_part`), so a sheet of 100k rows is not held as
a tree; a row or cell without its reference (`r`, optional in the format, left out by some writers) follows the one
before it.
"""

from __future__ import annotations

import datetime as dt
import io
import math
import posixpath
import re
import zipfile
from collections.abc import Iterator

from kg.ooxml import attr, child, iter_part, local, parse_part

__all__ = ["Workbook", "workbook_bytes"]

_REF = re.compile(r"([A-Z]+)(\d+)")
# Built-in number formats that show a date or a time (ECMA-376 18.8.30, and the CJK locales' 27-36, 50-58).
_DATE_FORMATS = set(range(14, 23)) | set(range(27, 37)) | set(range(45, 48)) | set(range(50, 59))
_DATE_CODE = re.compile(r"[ymdhs]|年|月|日", re.IGNORECASE)
_NOT_CODE = re.compile(r'"[^"]*"|\[[^\]]*\]|\\.')  # quoted text, [colours] / [$-locale], escaped characters
_KIND = "spreadsheet"


class Workbook:
    """The workbook in an open package: `sheets()` names the visible sheets, `rows(part)` reads one."""

    def __init__(self, zf: zipfile.ZipFile, label: str) -> None:
        self.zf, self.label = zf, label
        self.workbook = parse_part(zf, "xl/workbook.xml", label, _KIND, required=True)
        pr = child(self.workbook, "workbookPr")
        date1904 = pr is not None and (attr(pr, "date1904") or "").lower() in ("1", "true")
        self.base = dt.datetime(1904, 1, 1) if date1904 else dt.datetime(1899, 12, 30)
        self.strings = [_text(si) for si in iter_part(zf, "xl/sharedStrings.xml", label, "si")]  # a tree per string
        self.dates = _date_styles(parse_part(zf, "xl/styles.xml", label, _KIND))
        rels = parse_part(zf, "xl/_rels/workbook.xml.rels", label, _KIND)
        self.targets = {attr(r, "Id"): attr(r, "Target") or "" for r in rels} if rels is not None else {}

    def sheets(self) -> Iterator[tuple[str, str]]:
        """(name, part name) of the visible sheets, in the workbook's order."""
        found = child(self.workbook, "sheets")
        for sheet in found if found is not None else ():
            if (attr(sheet, "state") or "visible") != "visible":
                continue
            target = self.targets.get(attr(sheet, "id"), "")
            if target:
                part = target.lstrip("/") if target.startswith("/") else posixpath.normpath(posixpath.join("xl", target))
                yield attr(sheet, "name") or "", part

    def rows(self, part: str) -> Iterator[tuple[int, list[tuple[int, str]]]]:
        """(row number, [(column index from 0, text)]) of each row of the sheet `part` that has a cell with text."""
        number = 0
        for row in iter_part(self.zf, part, self.label, "row"):
            given = row.get("r")  # a cell's and a row's attributes are unqualified: read directly (100k rows)
            number = int(given) if given and given.isdigit() else number + 1
            cells, column = [], -1
            for c in row:
                if not c.tag.endswith("}c") and c.tag != "c":
                    continue
                ref = _REF.match(c.get("r") or "")
                column = _column(ref.group(1)) if ref is not None else column + 1
                value = self.value(c)
                if value:
                    cells.append((column, value))
            if cells:
                yield number, cells

    def value(self, c) -> str:
        """The text Excel shows for the cell element `c`."""
        kind, raw = c.get("t") or "n", ""
        for sub in c:
            if sub.tag.endswith("}v") or sub.tag == "v":
                raw = sub.text or ""
                break
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
            text = _number(raw, int(c.get("s") or 0) in self.dates, self.base) if raw else ""
        return " ".join(text.split())


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
    if not math.isfinite(number):
        return value
    if date and 0 <= number < 2_958_466:  # before 10000-01-01
        moment = base + dt.timedelta(days=number)
        if number == int(number):
            return moment.date().isoformat()
        return moment.strftime("%Y-%m-%d %H:%M" if number >= 1 else "%H:%M")
    return str(int(number)) if number == int(number) and abs(number) < 1e15 else format(number, ".15g")


_MAIN = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
_DOC_RELS = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
_PKG_RELS = "http://schemas.openxmlformats.org/package/2006/relationships"
_CT = "application/vnd.openxmlformats-officedocument.spreadsheetml"
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")  # characters XML 1.0 cannot hold
_XML_ESCAPES = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;"})


def workbook_bytes(sheet: str, rows: list[list[str | float]]) -> bytes:
    """One sheet named `sheet` holding `rows` (strings as inline strings, numbers as numbers), its first row frozen
    as the header: the .xlsx Excel, WPS and LibreOffice open, and `Workbook` reads back cell for cell (but for line
    breaks, which it reads as spaces)."""
    body = []
    for r, row in enumerate(rows, start=1):
        cells = []
        for c, value in enumerate(row):
            ref = f"{_letters(c)}{r}"
            if isinstance(value, float | int) and not isinstance(value, bool):
                cells.append(f'<c r="{ref}"><v>{value!r}</v></c>')
            elif value != "":
                text = _NOT_XML.sub("", str(value)).translate(_XML_ESCAPES)
                cells.append(f'<c r="{ref}" t="inlineStr"><is><t xml:space="preserve">{text}</t></is></c>')
        body.append(f'<row r="{r}">{"".join(cells)}</row>')
    pane = ('<sheetViews><sheetView workbookViewId="0"><pane ySplit="1" topLeftCell="A2" activePane="bottomLeft" '
            'state="frozen"/></sheetView></sheetViews>')
    parts = {
        "[Content_Types].xml": '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
        '<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
        '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
        '<Default Extension="xml" ContentType="application/xml"/>'
        f'<Override PartName="/xl/workbook.xml" ContentType="{_CT}.sheet.main+xml"/>'
        f'<Override PartName="/xl/worksheets/sheet1.xml" ContentType="{_CT}.worksheet+xml"/>'
        f'<Override PartName="/xl/styles.xml" ContentType="{_CT}.styles+xml"/></Types>',
        "_rels/.rels": f'<?xml version="1.0" encoding="UTF-8" standalone="yes"?><Relationships xmlns="{_PKG_RELS}">'
        f'<Relationship Id="rId1" Type="{_DOC_RELS}/officeDocument" Target="xl/workbook.xml"/></Relationships>',
        "xl/workbook.xml": f'<?xml version="1.0" encoding="UTF-8" standalone="yes"?><workbook xmlns="{_MAIN}" '
        f'xmlns:r="{_DOC_RELS}"><sheets><sheet name="{sheet.translate(_XML_ESCAPES)}" sheetId="1" r:id="rId1"/>'
        "</sheets></workbook>",
        "xl/_rels/workbook.xml.rels": f'<?xml version="1.0" encoding="UTF-8" standalone="yes"?><Relationships '
        f'xmlns="{_PKG_RELS}"><Relationship Id="rId1" Type="{_DOC_RELS}/worksheet" Target="worksheets/sheet1.xml"/>'
        f'<Relationship Id="rId2" Type="{_DOC_RELS}/styles" Target="styles.xml"/></Relationships>',
        "xl/styles.xml": f'<?xml version="1.0" encoding="UTF-8" standalone="yes"?><styleSheet xmlns="{_MAIN}">'
        '<fonts count="1"><font><sz val="11"/><name val="Calibri"/></font></fonts><fills count="2"><fill>'
        '<patternFill patternType="none"/></fill><fill><patternFill patternType="gray125"/></fill></fills>'
        '<borders count="1"><border><left/><right/><top/><bottom/><diagonal/></border></borders>'
        '<cellStyleXfs count="1"><xf numFmtId="0" fontId="0" fillId="0" borderId="0"/></cellStyleXfs>'
        '<cellXfs count="1"><xf numFmtId="0" fontId="0" fillId="0" borderId="0" xfId="0"/></cellXfs></styleSheet>',
        "xl/worksheets/sheet1.xml": f'<?xml version="1.0" encoding="UTF-8" standalone="yes"?><worksheet '
        f'xmlns="{_MAIN}">{pane}<sheetData>{"".join(body)}</sheetData></worksheet>',
    }
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, text in parts.items():
            zf.writestr(name, text)
    return out.getvalue()


def _letters(column: int) -> str:
    """Column index from 0 -> its letters (0 -> A, 26 -> AA)."""
    out = ""
    column += 1
    while column:
        column, rest = divmod(column - 1, 26)
        out = chr(65 + rest) + out
    return out
