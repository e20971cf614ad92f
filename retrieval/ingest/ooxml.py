"""An Office Open XML package (.docx, .xlsx) opened as a file from someone else: its XML parts read with a bound, DTDs refused, a protected or old binary file told apart.

Shared by `docx.py` and `xlsx.py`. The standard library reads the package (zipfile + ElementTree): python-docx and
openpyxl need lxml. A part's size is what it inflates to, read with a cap, not what the zip's directory says (a
directory can lie); Office never writes a DTD, so a part declaring one is refused (entity expansion); a
password-protected document and an old binary .doc/.xls renamed are OLE compound files, told by their first bytes.
"""

from __future__ import annotations

import zipfile
from io import BytesIO
from xml.etree import ElementTree

from kg.errors import InputError

__all__ = ["MAX_PART_BYTES", "attr", "child", "core_title", "local", "open_package", "parse_part", "table_lines"]

MAX_PART_BYTES = 64 * 1024 * 1024  # of one XML part, uncompressed: a 300-page report's body is ~5-10 MB
_OLE_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
# A damaged or encrypted member, or a part whose values are not what the format says (a number that is not one, an
# index past its list): what a damaged, hand-edited or hostile file raises in the readers' walk.
UNREADABLE_MEMBER = (zipfile.BadZipFile, EOFError, NotImplementedError, RuntimeError, ValueError, IndexError, KeyError,
                     TypeError, RecursionError)


def local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]  # transitional (schemas.openxmlformats.org) and strict (purl.oclc.org) alike


def attr(el, name: str) -> str | None:
    for key, value in el.attrib.items():
        if local(key) == name:
            return value
    return None


def child(el, name: str):
    return next((c for c in el if local(c.tag) == name), None)


def open_package(raw: bytes, label: str, kind: str, suffix: str, app: str) -> zipfile.ZipFile:
    """`kind` names the document in messages ("Word document"), `suffix` its format (".docx"), `app` the program."""
    if raw.startswith(_OLE_MAGIC):
        raise InputError(f"{label}: a password-protected {kind}, or an old binary one renamed to {suffix}: save an "
                         f"unprotected copy as {suffix} ({app}: Save As) and ingest that")
    try:
        return zipfile.ZipFile(BytesIO(raw))
    except (zipfile.BadZipFile, OSError):
        raise InputError(f"{label}: not a {kind} (not a zip archive: damaged, cut short, or another format renamed to "
                         f"{suffix}); save it again as {suffix}") from None


def parse_part(zf: zipfile.ZipFile, name: str, label: str, kind: str, required: bool = False):
    """The part's root element; None when it is absent (an error when `required`)."""
    try:
        info = zf.getinfo(name)
    except KeyError:
        if required:
            raise InputError(f"{label}: not a {kind} (no {name} inside): damaged, or another format renamed") from None
        return None
    with zf.open(info) as f:
        raw = f.read(MAX_PART_BYTES + 1)  # the directory's size can lie; what inflates is what counts
    if len(raw) > MAX_PART_BYTES:
        raise InputError(f"{label}: {name} inflates past {MAX_PART_BYTES // 2**20} MB (a file made to exhaust memory, "
                         "or a huge document): not read; split it")
    if b"<!DOCTYPE" in raw[:4096] or b"<!ENTITY" in raw:
        raise InputError(f"{label}: {name} declares a DTD, which Office never writes (entity expansion): not read")
    try:
        return ElementTree.fromstring(raw)
    except ElementTree.ParseError as exc:
        raise InputError(f"{label}: {name} is not well-formed XML ({exc}): damaged; save it again") from None


def table_lines(rows: list[list[str]]) -> list[str]:
    """Rows of cell texts -> a Markdown table under its first row (short rows padded, `|` in a cell escaped)."""
    width = max(len(r) for r in rows)
    cells = [[cell.replace("|", "\\|") for cell in r] + [""] * (width - len(r)) for r in rows]
    return [f"| {' | '.join(cells[0])} |", "|" + " --- |" * width] + [f"| {' | '.join(r)} |" for r in cells[1:]]


def core_title(zf: zipfile.ZipFile, label: str) -> str | None:
    """The title in the document's properties (File > Properties), if it has one."""
    core = parse_part(zf, "docProps/core.xml", label, "")
    title = next((el for el in core.iter() if local(el.tag) == "title"), None) if core is not None else None
    return " ".join((title.text or "").split()) or None if title is not None else None
