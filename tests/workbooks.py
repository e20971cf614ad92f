"""Excel workbooks written part by part for tests: what LibreOffice or Excel would not write (no cell references, a
hidden sheet, odd number formats) and hostile variants."""

from __future__ import annotations

import zipfile
from pathlib import Path

__all__ = ["R", "S", "write_workbook"]

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
