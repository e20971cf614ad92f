"""Excel (.xlsx) workbooks: each visible sheet a section holding its table, through the reader, the real CLI and the API.

`data/xlsx/service-inventory.xlsx` is a workbook LibreOffice Calc saved (from a flat ODS: two visible sheets, a hidden
one, a date column); hand-written parts cover what it does not write (Excel's booleans, inline strings, formula
strings, errors, the 1904 date system, a phonetic guide, an absolute part path) and hostile files.
"""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest
from click.testing import CliRunner
from office_files import S, notes_folder, posted_to_api
from office_files import write_workbook as _workbook

from kg.cli import cli
from kg.errors import InputError
from retrieval.ingest import xlsx as xlsx_reader
from retrieval.ingest.chunking import cut_document
from retrieval.ingest.readers import read_source_file

DATA = Path(__file__).parent / "data" / "xlsx"
def test_a_calc_workbook_reads_as_a_section_per_visible_sheet():
    src = read_source_file(DATA / "service-inventory.xlsx")
    assert src.format == "xlsx" and src.title == "服务清单" and not src.warnings
    assert src.text.split("\n") == [
        "## 服务", "", "| 服务 | 负责团队 | 端口 | 上线日期 | 在用 |", "| --- | --- | --- | --- | --- |",
        "| payment-service | 资金结算组 | 8443 | 2024-03-12 | 1 |", "| order-service | 交易组 | 8080 | 2023-11-01 | 0 |",
        "| gateway \\| edge |  | 0.75 |  |  |", "",
        "## 值班", "", "周一 张三", "周二 李四", ""]  # the hidden sheet 草稿 is left out
    cut = cut_document(src)
    assert {c.section for c in cut.children} == {"服务", "值班"}


def test_excel_cell_types_dates_and_part_paths(tmp_path):
    strings = ['<si><t>键</t></si>', '<si><t>值</t></si>',
               '<si><r><t>东京</t></r><rPh sb="0" eb="2"><t>トウキョウ</t></rPh></si>']
    styles = ('<numFmts count="2"><numFmt numFmtId="164" formatCode="0.0&quot;天&quot;"/>'
              '<numFmt numFmtId="165" formatCode="yyyy/mm/dd hh:mm"/></numFmts>'
              '<cellXfs count="4"><xf numFmtId="0"/><xf numFmtId="14"/><xf numFmtId="164"/><xf numFmtId="165"/></cellXfs>')
    rows = ('<row r="1"><c r="A1" t="s"><v>0</v></c><c r="C1" t="s"><v>1</v></c></row>'
            '<row r="3"><c r="A3" t="inlineStr"><is><t>enabled</t></is></c><c r="C3" t="b"><v>1</v></c></row>'
            '<row r="4"><c r="A4" t="inlineStr"><is><t>start</t></is></c><c r="C4" s="1"><v>0</v></c></row>'
            '<row r="5"><c r="A5" t="inlineStr"><is><t>retention</t></is></c><c r="C5" s="2"><v>7</v></c></row>'
            '<row r="6"><c r="A6" t="inlineStr"><is><t>ratio</t></is></c><c r="C6"><v>0.30000000000000004</v></c></row>'
            '<row r="7"><c r="A7" t="inlineStr"><is><t>owner</t></is></c><c r="C7" t="str"><f>B1</f><v>ops</v></c></row>'
            '<row r="8"><c r="A8" t="inlineStr"><is><t>broken</t></is></c><c r="C8" t="e"><v>#REF!</v></c></row>'
            '<row r="9"><c r="A9" t="s"><v>2</v></c><c r="C9" s="3"><v>1.5</v></c></row>')
    path = _workbook(tmp_path / "config.xlsx", [("参数", "visible", rows), ("草稿", "hidden", '<row r="1"><c r="A1" t="inlineStr"><is><t>secret</t></is></c></row>'),
                                                ("Sheet3", "visible", '<row r="2"><c r="B2" t="inlineStr"><is><t>only</t></is></c></row>')],
                     strings, styles, date1904=True)
    src = read_source_file(path)
    assert src.text.split("\n") == [
        "## 参数", "", "| 键 | 值 |", "| --- | --- |", "| enabled | TRUE |", "| start | 1904-01-01 |", "| retention | 7 |",
        "| ratio | 0.3 |", "| owner | ops |", "| broken | #REF! |", "| 东京 | 1904-01-02 12:00 |", "",
        "## Sheet3", "", "only", ""]
    assert src.title is None and cut_document(src).document.title == "config"  # no properties: the file names it


def test_a_workbook_past_the_cell_bound_is_read_up_to_it_and_says_so(tmp_path, monkeypatch):
    monkeypatch.setattr(xlsx_reader, "MAX_CELLS", 4)
    rows = "".join(f'<row r="{i}"><c r="A{i}" t="inlineStr"><is><t>k{i}</t></is></c><c r="B{i}"><v>{i}</v></c></row>'
                   for i in range(1, 5))
    src = read_source_file(_workbook(tmp_path / "big.xlsx", [("S", "visible", rows)]))
    assert src.text.split("\n")[2:6] == ["| k1 | 1 |", "| --- | --- |", "| k2 | 2 |", ""]
    assert src.warnings == (f"{tmp_path / 'big.xlsx'}: more than 4 cells: read up to there; split the workbook",)


@pytest.mark.parametrize(("parts", "message"), [
    ({"xl/workbook.xml": f'<workbook xmlns="{S}"><sheets/></workbook>'}, "holds no text"),
    ({"word/document.xml": "<x/>"}, "no xl/workbook.xml inside"),
], ids=["no-sheets", "a-word-file-renamed"])
def test_an_empty_or_renamed_workbook_is_refused_with_the_reason(tmp_path, parts, message):
    path = tmp_path / "x.xlsx"
    with zipfile.ZipFile(path, "w") as zf:
        for name, text in parts.items():
            zf.writestr(name, text)
    with pytest.raises(InputError, match=message):
        read_source_file(path)


def test_a_workbook_in_a_folder_through_the_cli_and_the_api(tmp_path):
    notes = notes_folder(tmp_path, DATA / "service-inventory.xlsx", "服务清单.xlsx", "旧表.xls")
    kb = tmp_path / "kb"
    runner = CliRunner()
    result = runner.invoke(cli, ["ingest", str(notes), "--data-dir", str(kb)])
    assert result.exit_code == 0 and "1 new" in result.output, result.output
    assert "旧表.xls: an Excel 97-2003 workbook: save it as .xlsx" in result.output
    hits = json.loads(runner.invoke(cli, ["query", "payment-service 负责团队", "--data-dir", str(kb), "--json"]).output)["hits"]
    assert hits[0]["section"] == "服务" and "| payment-service | 资金结算组 | 8443 |" in hits[0]["text"]
    answer = runner.invoke(cli, ["ask", "payment-service 的负责团队是哪个？", "--data-dir", str(kb)]).output
    assert "资金结算组" in answer and "服务清单.xlsx row 1)" in answer, answer  # the sheet's row, not a line of its text

    with posted_to_api(tmp_path, DATA / "service-inventory.xlsx", "inventory.xlsx") as (client, auth):
        hits = client.post("/query", json={"query": "order-service 端口"}).json()["hits"]
        assert "| order-service | 交易组 | 8080 |" in hits[0]["text"]


def test_a_cell_style_that_is_not_a_number_makes_a_damaged_workbook_not_a_crash(tmp_path):
    rows = '<row r="1"><c r="A1" s="bold"><v>1</v></c><c r="B1" t="inlineStr"><is><t>x</t></is></c></row>'
    with pytest.raises(InputError, match="a part of the spreadsheet cannot be read"):
        read_source_file(_workbook(tmp_path / "odd.xlsx", [("S", "visible", rows)]))
