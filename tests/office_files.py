"""Office files for tests: Excel workbooks written part by part (what LibreOffice or Excel would not write: no cell
references, a hidden sheet, odd number formats; hostile variants), and a folder of notes holding a committed fixture
beside an old binary Office file."""

from __future__ import annotations

import base64
import shutil
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

__all__ = ["OLE_FILE", "R", "S", "notes_folder", "posted_to_api", "sheet_rows", "write_workbook"]

OLE_FILE = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\x00" * 600  # an old .doc/.xls/.ppt, or a protected file

S = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
R = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"


def write_workbook(path: Path, sheets: list[tuple[str, str, str]], strings: list[str] = (), styles: str = "",
                   date1904: bool = False) -> Path:
    """sheets: (name, state, sheetData xml); the second sheet's part is named by an absolute path."""
    book = "".join(f'<sheet name="{name}" sheetId="{i + 1}" state="{state}" r:id="rId{i + 1}"/>'
                   for i, (name, state, _) in enumerate(sheets))
    rels = "".join(f'<Relationship Id="rId{i + 1}" Target="{"/xl/" if i == 1 else ""}worksheets/sheet{i + 1}.xml"/>'
                   for i in range(len(sheets)))
    parts = {
        "xl/workbook.xml": f'<workbook xmlns="{S}" xmlns:r="{R}"><workbookPr date1904="{int(date1904)}"/>'
                           f"<sheets>{book}</sheets></workbook>",
        "xl/_rels/workbook.xml.rels": f'<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">{rels}</Relationships>',
        "xl/sharedStrings.xml": f'<sst xmlns="{S}">' + "".join(strings) + "</sst>",
        "xl/styles.xml": f'<styleSheet xmlns="{S}">{styles}</styleSheet>',
    }
    for i, (_, _, data) in enumerate(sheets):
        parts[f"xl/worksheets/sheet{i + 1}.xml"] = f'<worksheet xmlns="{S}"><sheetData>{data}</sheetData></worksheet>'
    with zipfile.ZipFile(path, "w") as zf:
        for name, text in parts.items():
            zf.writestr(name, text)
    return path


def sheet_rows(*rows: tuple[str, ...]) -> str:
    """A sheet's rows of inline strings, rows and cells without references (`r`: the format allows leaving it out,
    and some writers do)."""
    cell = lambda value: f'<c t="inlineStr"><is><t>{value}</t></is></c>' if value else "<c/>"  # noqa: E731
    return "".join("<row>" + "".join(cell(v) for v in row) + "</row>" for row in rows)


def notes_folder(tmp_path: Path, fixture: Path, name: str, legacy: str) -> Path:
    """tmp_path/notes holding `fixture` as `name` and an old binary Office file named `legacy`."""
    notes = tmp_path / "notes"
    notes.mkdir()
    shutil.copy(fixture, notes / name)
    (notes / legacy).write_bytes(OLE_FILE)
    return notes


@contextmanager
def posted_to_api(tmp_path: Path, fixture: Path, filename: str) -> Iterator[tuple]:
    """The real ASGI app on a new knowledge base, `fixture`'s bytes posted to it as `filename` (checked added):
    (client, auth headers)."""
    from conftest import make_settings
    from fastapi.testclient import TestClient

    from api.app import create_app

    raw = fixture.read_bytes()
    with TestClient(create_app(make_settings(tmp_path / "api-kb", api_token="t0ken-for-tests"))) as client:
        auth = {"Authorization": "Bearer t0ken-for-tests"}
        sent = client.post("/documents", headers=auth, json={"content_base64": base64.b64encode(raw).decode(),
                                                              "filename": filename})
        assert sent.status_code == 201 and sent.json()["added"] == 1, sent.text
        yield client, auth
