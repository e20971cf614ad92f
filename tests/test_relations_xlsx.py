"""A relation table kept in an Excel workbook is imported as its CSV would be, every row named by the row Excel shows.

`tests/data/xlsx/relations.xlsx` and `relations-edited.xlsx` were saved by LibreOffice Calc (from flat ODS written for
them): a notes sheet "说明", the table on sheet "服务依赖" under a title row and an empty row (the header is row 3), a
weight typed as a number, a note with a comma and one with a line break, and a hidden sheet "旧版" holding an older
table. The edited one lost the row payment-service dependsOn redis-cluster and gained notification-service's. The
other workbooks are written part by part (`office_files.py`): cells without references, alias tables, hostile files.
"""

from __future__ import annotations

import json
import re
import shutil
import zipfile
from pathlib import Path

import pytest
from click.testing import CliRunner
from office_files import sheet_rows, write_workbook

from kg.cli import cli
from kg.errors import InputError, RelationTableError
from kg.relations.sheet import MAX_ROWS, sheet_csv

DATA = Path(__file__).parent / "data" / "xlsx"


def _kg(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.output


def test_a_calc_workbook_imports_like_its_csv_and_cites_the_rows_excel_shows(tmp_path):
    table, kb = tmp_path / "relations.xlsx", str(tmp_path / "kb")
    shutil.copy(DATA / "relations.xlsx", table)
    code, out = _kg("import", str(table), "--data-dir", kb)
    assert code == 0 and out.startswith("imported 4 rows: 6 new entities, 4 new edges"), out
    code, out = _kg("entity", "redis-cluster", "--data-dir", kb, "--sources")
    assert "order-service (relations.xlsx:4), payment-service (relations.xlsx:5)" in out, out  # rows 4 and 5 in Excel
    assert "缓存集群" in out and "legacy-gateway" not in out  # an alias cell split at |; the hidden sheet is not read
    exported = _kg("export", "--data-dir", kb)[1].split("\n")  # the graph's table: weights and notes as typed
    assert "order-service,dependsOn,redis-cluster,,,,Redis 集群|缓存集群,0.8,下单时读写库存缓存" in exported
    assert 'payment-service,dependsOn,redis-cluster,,,,,1.0,"支付幂等键, 保存 24 小时"' in exported
    assert "user-service,dependsOn,mysql-core,,,,,,主库 读写分离" in exported  # a line break in a cell is a space

    (tmp_path / "n.md").write_text("# 缓存故障处理\n\nredis-cluster 宕机时，先确认主从切换是否完成。\n", encoding="utf-8")
    assert _kg("ingest", str(tmp_path / "n.md"), "--data-dir", kb)[0] == 0
    code, out = _kg("ask", "redis-cluster 被哪些服务依赖？", "--data-dir", kb)
    assert "payment-service" in out and "order-service" in out and "relations.xlsx:5: payment-service dependsOn" in out

    shutil.copy(DATA / "relations-edited.xlsx", table)  # saved again after an edit in Excel
    code, out = _kg("import", str(table), "--data-dir", kb, "--dry-run")
    assert code == 0 and "1 edge would be removed (its row is gone from the table)" in out, out
    code, out = _kg("import", str(table), "--data-dir", kb)
    assert code == 0 and "1 new edge" in out and "1 edge removed" in out, out
    code, out = _kg("entity", "redis-cluster", "--data-dir", kb, "--sources")
    assert "notification-service (relations.xlsx:6)" in out and "payment-service" not in out.split("requiredBy")[1], out


def test_a_bad_row_is_named_by_its_excel_row_and_rejected_rows_go_to_a_csv(tmp_path):
    table, kb = tmp_path / "deps.xlsx", str(tmp_path / "kb")
    write_workbook(table, [("Sheet1", "visible", sheet_rows(("依赖关系",), (), ("source", "relation", "target"),
                                                       ("order-service", "dependsOn", "redis-cluster"),
                                                       ("payment-service", "dependsOn", ""),
                                                       ("a", "noSuchRelation", "b")))])
    code, out = _kg("import", str(table), "--data-dir", kb)
    assert code == 2 and "deps.xlsx: 2 bad rows; nothing was imported" in out, out
    assert "deps.xlsx:5: target is empty" in out and "deps.xlsx:6:" in out and "noSuchRelation" in out, out
    rejects = tmp_path / "rejects.csv"
    code, out = _kg("import", str(table), "--data-dir", kb, "--skip-invalid", "--rejects", str(rejects))
    assert code == 0 and "1 new edge" in out, out
    assert "line 5: target is empty" in rejects.read_text(encoding="utf-8-sig")


def test_an_alias_table_in_a_workbook(tmp_path):
    kb = str(tmp_path / "kb")
    relations = write_workbook(tmp_path / "relations.xlsx", [("关系", "visible", sheet_rows(
        ("source", "relation", "target"), ("order-service", "dependsOn", "redis-cluster")))])
    aliases = write_workbook(tmp_path / "aliases.xlsx", [("别名", "visible", sheet_rows(
        ("entity", "alias"), ("order-service", "订单服务"), ("", ""), ("nobody", "某服务")))])
    assert _kg("import", str(relations), "--data-dir", kb)[0] == 0
    code, out = _kg("import", str(aliases), "--data-dir", kb)
    assert code == 2 and "aliases.xlsx:4: no entity 'nobody'" in out, out
    code, out = _kg("import", str(aliases), "--data-dir", kb, "--skip-invalid")
    assert code == 0 and "2 alias rows: added 1 aliases" in out, out
    assert "order-service" in _kg("entity", "订单服务", "--data-dir", kb)[1]


def test_which_sheet_holds_the_table(tmp_path):
    header, row = ("source", "relation", "target"), ("a", "dependsOn", "b")
    two = write_workbook(tmp_path / "two.xlsx", [("2025", "visible", sheet_rows(header, row)),
                                                  ("2026", "visible", sheet_rows(header, row))])
    with pytest.raises(RelationTableError, match="the sheets '2025', '2026' each hold a table"):
        sheet_csv(two)
    none = write_workbook(tmp_path / "none.xlsx", [("说明", "visible", sheet_rows(("notes",))),
                                                   ("数据", "visible", sheet_rows(("源", "关系", "目标")))])
    with pytest.raises(RelationTableError, match="no sheet has the header source,relation,target .* its sheets: '说明', '数据'"):
        sheet_csv(none)
    one = write_workbook(tmp_path / "one.xlsx", [("数据", "visible", sheet_rows(("源", "关系", "目标"), row))])
    assert sheet_csv(one).decode() == "源,关系,目标\na,dependsOn,b\n"  # the only sheet: its header's problem said as a CSV's
    code, out = _kg("import", str(one), "--data-dir", str(tmp_path / "kb"))
    assert code == 2 and "one.xlsx: missing required columns 'source', 'relation', 'target'" in out, out
    kept = write_workbook(tmp_path / "kept.xlsx", [("新", "visible", sheet_rows(header, row)), ("旧", "hidden", sheet_rows(header))])
    assert sheet_csv(kept).decode() == "source,relation,target\na,dependsOn,b\n"


def test_rows_and_cells_keep_their_places(tmp_path):
    cells = ('<row r="3"><c r="B3" t="inlineStr"><is><t>source</t></is></c><c t="inlineStr"><is><t>relation</t></is></c>'
             '<c t="inlineStr"><is><t>target</t></is></c></row>'  # B3, then C3 and D3 by position
             '<row r="7"><c r="B7" t="inlineStr"><is><t>x</t></is></c><c r="D7" t="inlineStr"><is><t>y</t></is></c>'
             '<c r="G7" t="inlineStr"><is><t>stray</t></is></c></row>'
             '<row r="5"><c r="B5" t="inlineStr"><is><t>back</t></is></c></row>'  # out of order: the next line
             f'<row r="{MAX_ROWS * 1000}"><c r="B1" t="inlineStr"><is><t>far</t></is></c></row>')
    text = sheet_csv(write_workbook(tmp_path / "t.xlsx", [("S", "visible", cells)])).decode()
    assert text.split("\n") == ["", "", ",source,relation,target", "", "", "", ",x,,y,,,stray", ",back,,", ",far,,", ""]


@pytest.mark.parametrize(("data", "message"), [
    (b"source,relation,target\na,dependsOn,b\n", "not a workbook (not a zip archive"),
    (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\0" * 512, "a password-protected workbook, or an old binary one"),
], ids=["a-csv-renamed", "protected-or-xls"])
def test_a_file_that_is_not_a_workbook_is_refused_with_what_to_do(tmp_path, data, message):
    path = tmp_path / "relations.xlsx"
    path.write_bytes(data)
    with pytest.raises(InputError, match=re.escape(message)):
        sheet_csv(path)
    code, out = _kg("import", str(path), "--data-dir", str(tmp_path / "kb"))
    assert code == 2 and message.split(" (")[0] in out, out


def test_a_workbook_through_the_api_and_its_dry_run(tmp_path):
    from conftest import make_settings
    from fastapi.testclient import TestClient

    from api.app import create_app

    raw = (DATA / "relations.xlsx").read_bytes()
    with TestClient(create_app(make_settings(tmp_path / "kb", api_token="t0ken-for-tests"))) as client:
        auth = {"Authorization": "Bearer t0ken-for-tests"}
        files = {"file": ("服务依赖.xlsx", raw, "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet")}
        dry = client.post("/import", headers=auth, files=files, data={"dry_run": "true"})
        assert dry.status_code == 200 and dry.json()["summary"].startswith("dry run: would import 4 rows"), dry.text
        done = client.post("/import", headers=auth, files=files)
        assert done.status_code == 200 and "4 new edges" in done.json()["summary"], done.text
        edges = client.get("/entities/redis-cluster").json()
        assert "order-service" in json.dumps(edges, ensure_ascii=False)


def test_a_hostile_sheet_is_refused_unread(tmp_path, monkeypatch):
    from kg import ooxml

    made = write_workbook(tmp_path / "made.xlsx", [("S", "visible", sheet_rows(("source", "relation", "target")))])
    laughs = tmp_path / "laughs.xlsx"
    with zipfile.ZipFile(made) as src, zipfile.ZipFile(laughs, "w") as zf:  # its sheet declaring entities
        for name in src.namelist():
            if name != "xl/worksheets/sheet1.xml":
                zf.writestr(name, src.read(name))
        zf.writestr("xl/worksheets/sheet1.xml", '<?xml version="1.0"?><!DOCTYPE w [<!ENTITY a "aaaaaaaaaa">'
                    '<!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">]><worksheet><sheetData><row><c t="inlineStr"><is>'
                    '<t>&b;</t></is></c></row></sheetData></worksheet>')
    with pytest.raises(InputError, match="declares a DTD, which Office never writes"):
        sheet_csv(laughs)
    big = write_workbook(tmp_path / "big.xlsx", [("S", "visible", sheet_rows(("source", "relation", "target"),
                                                                       *[("a", "dependsOn", "b")] * 400))])
    monkeypatch.setattr(ooxml, "MAX_PART_BYTES", 10_000)
    with pytest.raises(InputError, match="inflates past"):
        sheet_csv(big)


def test_an_edge_a_workbook_still_states_stays_when_a_csv_drops_it(tmp_path):
    """Two tables state one edge, one kept as CSV, one in Excel: a row deleted from either leaves the edge while the
    other holds it (the record once took any file that is not a .csv for an ontology, which protects nothing)."""
    kb = str(tmp_path / "kb")
    rows = "source,relation,target\norder-service,dependsOn,redis-cluster\n"
    csv_table = tmp_path / "team.csv"
    csv_table.write_text(rows + "order-service,dependsOn,mysql-core\n", encoding="utf-8")
    book = write_workbook(tmp_path / "ops.xlsx", [("S", "visible", sheet_rows(("source", "relation", "target"),
                                                                         ("order-service", "dependsOn", "redis-cluster")))])
    assert _kg("import", str(csv_table), "--data-dir", kb)[0] == 0
    assert _kg("import", str(book), "--data-dir", kb)[0] == 0
    csv_table.write_text("source,relation,target\norder-service,dependsOn,mysql-core\n", encoding="utf-8")
    code, out = _kg("import", str(csv_table), "--data-dir", kb)
    assert code == 0 and "removed" not in out, out
    assert "redis-cluster (ops.xlsx:2)" in _kg("entity", "order-service", "--data-dir", kb, "--sources")[1]


def test_the_graph_exported_as_a_workbook_imports_back_the_same(tmp_path):
    """Protégé's edits to Excel and back: `kg export relations.xlsx` writes the table `kg import` reads, weights as
    numbers; imported into an empty knowledge base it gives the same table."""
    kb, other = str(tmp_path / "kb"), str(tmp_path / "other")
    assert _kg("import", str(DATA / "relations.xlsx"), "--data-dir", kb)[0] == 0
    book = tmp_path / "out" / "relations.xlsx"
    code, out = _kg("export", str(book), "--data-dir", kb)
    assert code == 0 and "exported 4 relations to" in out, out
    assert sheet_csv(book).decode().split("\n")[2] == "payment-service,dependsOn,redis-cluster,,,,,1,\"支付幂等键, 保存 24 小时\""
    with zipfile.ZipFile(book) as zf:
        assert '<c r="H2"><v>0.8</v></c>' in zf.read("xl/worksheets/sheet1.xml").decode()  # a number, not text
    assert _kg("import", str(book), "--data-dir", other)[0] == 0
    assert _kg("export", "--data-dir", other)[1] == _kg("export", "--data-dir", kb)[1]
    code, out = _kg("export", "--format", "xlsx", "--data-dir", kb)
    assert code == 2 and "a workbook is not text: give the file to write" in out, out
