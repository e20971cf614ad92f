"""A CSV file beside the notes (an inventory, a port plan exported from a spreadsheet or a CMDB) is read as a table, each
line knowing the row Excel shows for it; a relation or alias table among the notes is told apart and left to `kg import`.
Through the reader, the real CLI (human output and `--json`) and the real ASGI app."""

from __future__ import annotations

import base64
import json

import pytest
from click.testing import CliRunner

from kg.cli import cli
from kg.errors import InputError
from retrieval.ingest import csv_table
from retrieval.ingest.readers import read_source_file

INVENTORY = '服务,负责团队,端口,,\npayment-service,资金结算组,8443,,\n\n"gateway, edge",网关组,443,,\norder-service,交易组,8080,,\n'


def test_a_csv_reads_as_a_table_whose_lines_know_their_rows(tmp_path):
    path = tmp_path / "inventory.csv"
    path.write_text(INVENTORY, encoding="utf-8-sig")  # Excel's "CSV UTF-8", with its byte order mark
    src = read_source_file(path)
    assert src.format == "csv" and not src.warnings
    assert src.text.split("\n") == ["| 服务 | 负责团队 | 端口 |", "| --- | --- | --- |", "| payment-service | 资金结算组 | 8443 |",
                                    "| gateway, edge | 网关组 | 443 |", "| order-service | 交易组 | 8080 |"]
    assert src.line_pages == (1, 1, 2, 4, 5)  # the rows as Excel numbers them (row 3 is empty)
    roster = tmp_path / "roster.csv"
    roster.write_text("值班\n周一 张三\n周二 李四\n", encoding="utf-8")
    assert read_source_file(roster).text == "值班\n周一 张三\n周二 李四"  # one column: lines


def test_the_separator_and_encoding_are_the_files(tmp_path):
    hosts = tmp_path / "hosts.csv"
    hosts.write_bytes("主机;地址;机柜\nedge-01;10.0.0.1;A1\nedge-02;0,5;A2\n".encode("gbk"))  # a semicolon file in GBK
    src = read_source_file(hosts)
    assert src.text.split("\n")[3] == "| edge-02 | 0,5 | A2 |" and src.warnings == (f"{hosts}: read as GBK (it is not UTF-8)",)
    tabs = tmp_path / "ports.csv"
    tabs.write_text("port\tservice\n8443\tpayment\n", encoding="utf-8")
    assert read_source_file(tabs).text.split("\n")[2] == "| 8443 | payment |"


def test_a_relation_or_alias_table_among_the_notes_is_left_to_kg_import(tmp_path):
    for name, text, kind in (("relations.csv", "Source,Relation,Target\na,dependsOn,b\n", "a relation"),
                             ("aliases.csv", "entity,alias\na,甲\n", "an alias")):
        path = tmp_path / name
        path.write_text(text, encoding="utf-8")
        with pytest.raises(InputError, match=f"{kind} table, not a document: import it with `kg import {path}`"):
            read_source_file(path)


def test_a_csv_past_the_cell_bound_is_read_up_to_it_and_says_so(tmp_path, monkeypatch):
    monkeypatch.setattr(csv_table, "MAX_CELLS", 5)
    path = tmp_path / "big.csv"
    path.write_text("k,v\na,1\nb,2\nc,3\n", encoding="utf-8")
    src = read_source_file(path)
    assert src.text.split("\n")[2:] == ["| a | 1 |"] and "more than 5 cells" in src.warnings[0]


def test_csv_files_in_a_folder_through_the_cli_and_the_api(tmp_path):
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "inventory.csv").write_text(INVENTORY, encoding="utf-8")
    (notes / "relations.csv").write_text("source,relation,target\npayment-service,dependsOn,redis-cluster\n", encoding="utf-8")
    kb = str(tmp_path / "kb")
    runner = CliRunner()
    result = runner.invoke(cli, ["ingest", str(notes), "--data-dir", kb])
    assert result.exit_code == 0 and "1 new" in result.output, result.output
    assert f"skipped {notes / 'relations.csv'}: a relation table, not a document: import it with" in result.output
    answer = runner.invoke(cli, ["ask", "payment-service 的负责团队是哪个？", "--data-dir", kb]).output
    assert "负责团队：资金结算组" in answer and "inventory.csv row 1)" in answer, answer
    hits = json.loads(runner.invoke(cli, ["query", "order-service 端口", "--data-dir", kb, "--json"]).output)["hits"]
    assert hits[0]["page"] == 1 and "| order-service | 交易组 | 8080 |" in hits[0]["text"]

    from conftest import make_settings
    from fastapi.testclient import TestClient

    from api.app import create_app

    with TestClient(create_app(make_settings(tmp_path / "api-kb", api_token="t0ken-for-tests"))) as client:
        auth = {"Authorization": "Bearer t0ken-for-tests"}
        raw = "主机,地址\nedge-01,10.0.0.1\n".encode("gbk")
        sent = client.post("/documents", headers=auth, json={"content_base64": base64.b64encode(raw).decode(),
                                                              "filename": "hosts.csv"})
        assert sent.status_code == 201 and sent.json()["added"] == 1, sent.text
        hits = client.post("/query", json={"query": "edge-01 地址"}).json()["hits"]
        assert "| edge-01 | 10.0.0.1 |" in hits[0]["text"]
