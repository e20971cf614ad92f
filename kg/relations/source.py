"""A relation table's file in, its encoding, header and (line, fields) rows out, read lazily one line at a time.

Nothing here holds more than the current line: the file is read as bytes line by line (split at
b"\\n", which is never part of a multi-byte UTF-8 or GBK character), each line is decoded and fed to
the csv module. The encoding is found as the old whole-file decode found it: a UTF-8 BOM means
UTF-8; otherwise UTF-8 until a line does not decode, and then the reading starts over in GBK (what
Chinese Excel writes), or in Big5 (Excel's "CSV" in Taiwan and Hong Kong) when the file's first lines read as Chinese
in Big5 and not in GBK (`table_encodings`, `kg.files.legacy_chinese_codec`). `_Undecodable` tells the caller to start
over; it is not an error the user sees.
"""

from __future__ import annotations

import codecs
import csv
import io
import os
import stat
from collections.abc import Iterable, Iterator
from pathlib import Path

from kg.errors import RelationTableError
from kg.files import legacy_chinese_codec
from kg.relations.model import (
    ALLOWED_COLUMNS,
    OPTIONAL_COLUMNS,
    PROBLEM_COLUMN,
    REQUIRED_COLUMNS,
    column_key,
)
from kg.relations.sheet import is_workbook, sheet_csv

BOM_ENCODING = "utf-8-sig"


class _Undecodable(Exception):
    """A line that does not decode in the encoding being tried (offset counted from after any BOM)."""

    def __init__(self, offset: int, byte: int, encoding: str) -> None:
        super().__init__(offset, byte, encoding)
        self.offset, self.byte, self.encoding = offset, byte, encoding


class TableSource:
    """One pass over a relation table in one encoding: `header` / `columns` once open, then `rows()`.

    Use as a context manager; `encoding` is "utf-8-sig" (BOM), "utf-8", "gbk" or Big5's "cp950" / "big5hkscs".
    """

    def __init__(self, path: Path, encoding: str | None = None) -> None:
        self.path = Path(path)
        self.name = self.path.name
        self._wanted = encoding
        self.encoding = ""
        self.header: list[str] = []
        self.columns: list[str] = []
        self._file: io.BufferedReader | None = None
        self._reader = None

    def __enter__(self) -> TableSource:
        try:
            self._file = open_table(self.path)
            start = self._file.peek(len(codecs.BOM_UTF8))[: len(codecs.BOM_UTF8)]
        except OSError as e:
            raise RelationTableError(f"{self.name}: cannot read the file ({e.strerror})") from e
        try:
            self._open(start)
        except BaseException:
            self._file.close()
            raise
        return self

    def _open(self, start: bytes) -> None:
        if start.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
            raise _utf16_error(self.name)
        if start == codecs.BOM_UTF8:
            self._file.read(len(codecs.BOM_UTF8))
            self.encoding = BOM_ENCODING
        else:
            self.encoding = self._wanted or "utf-8"
        self._saw_text = False
        self._reader = csv.reader(self._lines("utf-8" if self.encoding == BOM_ENCODING else self.encoding))
        self._read_header()

    def __exit__(self, *exc) -> None:
        if self._file is not None:
            self._file.close()

    def _lines(self, encoding: str) -> Iterator[str]:
        """The decoded lines, each with its line end, split at \\n, \\r\\n and a lone \\r like newline=""."""
        assert self._file is not None
        offset = 0
        for raw in self._file:
            try:
                text = raw.decode(encoding)
            except UnicodeDecodeError as e:
                raise _Undecodable(offset + e.start, raw[e.start], self.encoding) from e
            offset += len(raw)
            if not self._saw_text and text.strip():
                self._saw_text = True
            cr = text.find("\r")
            if cr == -1 or cr == len(text) - 2:  # no \r, or only the \r of a final \r\n
                yield text
            else:
                yield from io.StringIO(text, newline="")

    def _next(self) -> list[str] | None:
        """The next line's fields, None at the end; a line the csv module cannot split raises."""
        line = self._reader.line_num + 1
        try:
            return next(self._reader)
        except StopIteration:
            return None
        except csv.Error as e:
            # Not a row problem: the reader cannot go on, and the rows after it would be lost.
            raise RelationTableError(
                f"{self.name}:{line}: cannot split this line into fields ({e})"
            ) from e
        except OSError as e:
            raise RelationTableError(f"{self.name}: cannot read the file ({e.strerror})") from e

    def _read_header(self) -> None:
        header: list[str] = []
        while (cells := self._next()) is not None:
            if any(c.strip() for c in cells):
                header = cells
                break
        if not header and not self._saw_text:
            raise RelationTableError(
                f"{self.name}: the file is empty; its first line must be the header "
                f"{','.join(REQUIRED_COLUMNS)} (optional: {','.join(OPTIONAL_COLUMNS)})"
            )
        while header and not header[-1].strip():
            header.pop()  # Excel writes empty trailing columns
        self.header = header
        self.columns = check_header(header, self.name)

    @property
    def header_lines(self) -> int:
        """The lines read up to and including the header (blank lines before it count)."""
        return self._reader.line_num

    def rows(self) -> Iterator[tuple[int, list[str]]]:
        """(line number, fields) of every row that has a non-blank cell, one at a time."""
        while True:
            line = self._reader.line_num + 1
            fields = self._next()
            if fields is None:
                return
            if any(f.strip() for f in fields):
                yield line, fields


def open_table(path: Path) -> io.BufferedReader:
    """The table's bytes to read: the file, or for a workbook (.xlsx) its table as CSV (`kg/relations/sheet.py`)."""
    if is_workbook(path):
        return io.BufferedReader(io.BytesIO(sheet_csv(path)))
    return Path(path).open("rb")


SNIFF_BYTES = 64 * 1024  # of a table's first lines: enough Chinese to tell GBK from Big5 (`legacy_chinese_codec`)


def table_encodings(path: Path) -> Iterator[str]:
    """The encodings a relation table is tried in, lazily: UTF-8, then (only once UTF-8 failed) GBK or Big5, whichever
    the file's first lines read as. A table that is not a regular file (a pipe: read once, as it comes) gets GBK, as
    before, without a look ahead that would take its lines or wait for more."""
    yield "utf-8"
    if is_workbook(path):
        return  # its cells are text already, read as CSV in UTF-8
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            yield "gbk"
            return
        with Path(path).open("rb") as f:
            sample = f.read(SNIFF_BYTES)
    except OSError:
        yield "gbk"  # the reading itself will say why
        return
    if len(sample) == SNIFF_BYTES and b"\n" in sample:
        sample = sample[: sample.rindex(b"\n")]  # whole lines: a character is not cut in two
    yield legacy_chinese_codec(sample)


def decode_bytes(data: bytes, name: str) -> tuple[str, str]:
    """A whole small file's text and encoding, by the same rules (the alias table is read this way)."""
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        raise _utf16_error(name)
    bom = data.startswith(codecs.BOM_UTF8)
    body = data[len(codecs.BOM_UTF8) :] if bom else data
    for encoding in ("utf-8",) if bom else ("utf-8", legacy_chinese_codec(body[:SNIFF_BYTES])):
        try:
            return body.decode(encoding), BOM_ENCODING if bom else encoding
        except UnicodeDecodeError as e:
            if encoding == "utf-8":
                utf8_error = _Undecodable(e.start, body[e.start], encoding)
    raise encoding_error(name, utf8_error)


def _utf16_error(name: str) -> RelationTableError:
    return RelationTableError(
        f'{name}: the file is UTF-16 ("Unicode Text"); in Excel use File > Save As... > '
        '"CSV UTF-8 (Comma delimited) (*.csv)"'
    )


def encoding_error(name: str, e: _Undecodable) -> RelationTableError:
    return RelationTableError(
        f"{name}: the file is neither UTF-8, GBK nor Big5 (byte 0x{e.byte:02x} at offset "
        f'{e.offset}); in Excel use File > Save As... > "CSV UTF-8 (Comma delimited) (*.csv)"'
    )


def check_header(header: list[str], name: str) -> list[str]:
    """The header's column keys; a missing, unknown or repeated column raises with the fix."""
    columns = [column_key(cell) for cell in header]
    parts: list[str] = []
    missing = [c for c in REQUIRED_COLUMNS if c not in columns]
    if missing:
        parts.append(f"missing required column{'s' if len(missing) > 1 else ''} {quoted(missing)}")
    unknown = [
        cell.strip() or f"(column {i + 1} has no name)"
        for i, (cell, col) in enumerate(zip(header, columns, strict=True))
        if col not in ALLOWED_COLUMNS and col != PROBLEM_COLUMN
    ]
    if unknown:
        parts.append(f"unknown column{'s' if len(unknown) > 1 else ''} {quoted(unknown)}")
    repeated = sorted({c for c in columns if c and columns.count(c) > 1})
    if repeated:
        verb = "appear" if len(repeated) > 1 else "appears"
        parts.append(
            f"column{'s' if len(repeated) > 1 else ''} {quoted(repeated)} {verb} more than once"
        )
    if not parts:
        return columns
    message = (
        f"{name}: {'; '.join(parts)}. The first line must name the columns: "
        f"{', '.join(REQUIRED_COLUMNS)} (required) and {', '.join(OPTIONAL_COLUMNS)} (optional)"
    )
    if len(header) == 1 and (";" in header[0] or "\t" in header[0]):
        message += (
            '; this file is not comma-separated: in Excel save it as "CSV UTF-8 (Comma delimited)"'
        )
    raise RelationTableError(message)


def quoted(values: Iterable[str], separator: str = ", ") -> str:
    return separator.join(f"'{v}'" for v in values)
