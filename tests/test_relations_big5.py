"""A relation table saved by Excel in Taiwan or Hong Kong ("CSV" there is Big5) is read as Big5, through the real CLI;
GBK stays GBK (GB18030 reads Big5's bytes as rare characters, so the first lines decide, as for notes)."""

from __future__ import annotations

import json

from click.testing import CliRunner

from kg.cli import cli
from kg.files import legacy_chinese_codec

TABLE = ("source,relation,target,source_aliases,note\n"
         "帳務系統,dependsOn,資料庫叢集,帳務服務,每日凌晨結算\n"
         "訂單服務,dependsOn,帳務系統,,下單後呼叫帳務\n"
         "資料庫叢集,ownedBy,資料平台組,,\n")


def test_a_big5_table_imports_with_its_names_and_says_so(tmp_path):
    path = tmp_path / "relations.csv"
    path.write_bytes(TABLE.encode("cp950"))
    kb = tmp_path / "kb"
    runner = CliRunner()
    result = runner.invoke(cli, ["import", str(path), "--data-dir", str(kb)])
    assert result.exit_code == 0, result.output
    assert "the file was read as Big5" in result.output
    result = runner.invoke(cli, ["entity", "帳務服務", "--data-dir", str(kb), "--sources"])  # by its alias
    assert result.exit_code == 0, result.output
    assert "帳務系統" in result.output and "資料庫叢集" in result.output and "relations.csv:2" in result.output
    data = json.loads(runner.invoke(cli, ["entity", "訂單服務", "--data-dir", str(kb), "--json"]).output)
    assert "帳務系統" in json.dumps(data, ensure_ascii=False)


def test_the_codec_of_a_table_that_is_not_utf8():
    assert legacy_chinese_codec(TABLE.encode("cp950")) == "cp950"
    simplified = TABLE.replace("帳務系統", "账务系统").replace("資料庫叢集", "数据库集群").replace("訂單服務", "订单服务")
    assert legacy_chinese_codec(simplified.encode("gbk")) == "gbk"
    assert legacy_chinese_codec(b"source,relation,target\na,dependsOn,b\n") == "gbk"  # no Chinese: as before
