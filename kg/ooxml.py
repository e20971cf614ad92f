"""An Office Open XML package (.docx, .xlsx, .pptx) opened as a file from someone else: its XML parts read with a bound, DTDs refused, a protected or old binary file told apart.

Shared by the document readers (`retrieval/ingest/docx.py`, `xlsx.py`, `pptx.py`) and the workbook a relation table may be kept
in (`kg/workbook.py`). The standard library reads the package (zipfile + ElementTree): python-docx and
openpyxl need lxml. A part's size is what it inflates to, read with a cap, not what the zip's directory says (a
directory can lie); Office never writes a DTD, so a part declaring one is refused (entity expansion); a
password-protected document and an old binary .doc/.xls renamed are OLE compound files, told by their first bytes.
"""

from __future__ import annotations

import zipfile
from collections.abc import Iterator
from io import BytesIO
from pathlib import Path
from xml.etree import ElementTree

from kg.errors import InputError

__all__ = ["MAX_PART_BYTES", "attr", "child", "core_title", "iter_part", "local", "open_package", "parse_part",
           "table_lines"]

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


def open_package(raw: bytes | Path, label: str, kind: str, suffix: str, app: str) -> zipfile.ZipFile:
    """The package in `raw` (its bytes, or the file at that path). `kind` names the document in messages ("Word
    document"), `suffix` its format (".docx"), `app` the program."""
    try:
        if isinstance(raw, Path):
            with raw.open("rb") as f:
                start = f.read(len(_OLE_MAGIC))
        else:
            start = raw[: len(_OLE_MAGIC)]
    except OSError as e:
        raise InputError(f"{label}: cannot read the file ({e.strerror})") from e
    if start == _OLE_MAGIC:
        raise InputError(f"{label}: a password-protected {kind}, or an old binary one renamed to {suffix}: save an "
                         f"unprotected copy as {suffix} ({app}: Save As) and use that")
    try:
        return zipfile.ZipFile(raw if isinstance(raw, Path) else BytesIO(raw))
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
        raise _too_big(label, name)
    if b"<!DOCTYPE" in raw[:4096] or b"<!ENTITY" in raw:
        raise _dtd(label, name)
    try:
        return ElementTree.fromstring(raw)
    except ElementTree.ParseError as exc:
        raise _not_xml(label, name, exc) from None


_BLOCK = 1 << 20


def iter_part(zf: zipfile.ZipFile, name: str, label: str, tag: str) -> Iterator:
    """The part's elements of local name `tag`, each as its end tag is read and cleared once the caller has it, so a
    large part (a sheet of 100k rows) is read without holding its tree; bound and DTDs as `parse_part`. Nothing when
    the part is absent."""
    try:
        info = zf.getinfo(name)
    except KeyError:
        return
    parser = ElementTree.XMLPullParser(events=("end",))
    size, tail, qualified = 0, b"", "}" + tag
    with zf.open(info) as f:
        while True:
            block = f.read(_BLOCK)
            if block:
                size += len(block)
                if size > MAX_PART_BYTES:
                    raise _too_big(label, name)
                if (size == len(block) and b"<!DOCTYPE" in block[:4096]) or b"<!ENTITY" in tail + block:
                    raise _dtd(label, name)
                tail = block[-len(b"<!ENTITY"):]
            try:
                parser.feed(block) if block else parser.close()
            except ElementTree.ParseError as exc:
                raise _not_xml(label, name, exc) from None
            for _, el in parser.read_events():
                if el.tag.endswith(qualified) or el.tag == tag:
                    yield el
                    el.clear()
            if not block:
                return


def _too_big(label: str, name: str) -> InputError:
    return InputError(f"{label}: {name} inflates past {MAX_PART_BYTES // 2**20} MB (a file made to exhaust memory, or a huge "
                 "document): not read; split it")


def _dtd(label: str, name: str) -> InputError:
    return InputError(f"{label}: {name} declares a DTD, which Office never writes (entity expansion): not read")


def _not_xml(label: str, name: str, exc: Exception) -> InputError:
    return InputError(f"{label}: {name} is not well-formed XML ({exc}): damaged; save it again")


# Short rows are padded to the widest up to this many columns: past it, a hostile file's one row of 10,000 cells
# (or a cell spanning them) would be copied into every other row (25 M empty cells for 5,000 rows).
PADDED_COLUMNS = 50


def table_lines(rows: list[list[str]]) -> list[str]:
    """Rows of cell texts -> a Markdown table under its first row (short rows padded, `|` in a cell escaped)."""
    width = max(len(r) for r in rows)
    pad = width if width <= PADDED_COLUMNS else 0
    cells = [[cell.replace("|", "\\|") for cell in r] + [""] * (pad - len(r)) for r in rows]
    return [f"| {' | '.join(cells[0])} |", "|" + " --- |" * len(cells[0])] + [f"| {' | '.join(r)} |" for r in cells[1:]]


def core_title(zf: zipfile.ZipFile, label: str) -> str | None:
    """The title in the document's properties (File > Properties), if it has one."""
    core = parse_part(zf, "docProps/core.xml", label, "")
    title = next((el for el in core.iter() if local(el.tag) == "title"), None) if core is not None else None
    return " ".join((title.text or "").split()) or None if title is not None else None
