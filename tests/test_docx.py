"""Word (.docx) notes: read as headed text with their lists and tables, through the real CLI, the API and the reader.

Three producers: LibreOffice (`data/docx/settlement-runbook.docx`, a Chinese runbook it converted from HTML),
python-docx (Word's own template: list styles that number through their style, "Title" and "Heading N"),
and hand-written parts for what those two do not write (a table of contents, tracked changes, field codes, text
boxes with their fallback, Chinese style names, the strict namespace) and for hostile files.
"""

from __future__ import annotations

import base64
import json
import shutil
import zipfile
from pathlib import Path

import pytest
from click.testing import CliRunner

from kg import ooxml
from kg.cli import cli
from kg.errors import InputError
from retrieval.ingest.chunking import cut_document
from retrieval.ingest.readers import read_source_bytes, read_source_file

DATA = Path(__file__).parent / "data" / "docx"
W = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"


def _zip(path: Path, parts: dict[str, str | bytes]) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in parts.items():
            zf.writestr(name, data)
    return path


def _docx(path: Path, body: str, styles: str = "", numbering: str = "", ns: str = W, title: str | None = None) -> Path:
    parts = {"[Content_Types].xml": "<Types/>",
             "word/document.xml": f'<w:document xmlns:w="{ns}" '
                                  'xmlns:mc="http://schemas.openxmlformats.org/markup-compatibility/2006">'
                                  f"<w:body>{body}</w:body></w:document>"}
    if styles:
        parts["word/styles.xml"] = f'<w:styles xmlns:w="{ns}">{styles}</w:styles>'
    if numbering:
        parts["word/numbering.xml"] = f'<w:numbering xmlns:w="{ns}">{numbering}</w:numbering>'
    if title is not None:
        parts["docProps/core.xml"] = ('<cp:coreProperties xmlns:cp="http://schemas.openxmlformats.org/package/2006/metadata/'
                                      'core-properties" xmlns:dc="http://purl.org/dc/elements/1.1/">'
                                      f"<dc:title>{title}</dc:title></cp:coreProperties>")
    return _zip(path, parts)


def _p(text: str, style: str | None = None, extra: str = "") -> str:
    ppr = f'<w:pPr><w:pStyle w:val="{style}"/>{extra}</w:pPr>' if style else (f"<w:pPr>{extra}</w:pPr>" if extra else "")
    return f"<w:p>{ppr}<w:r><w:t xml:space=\"preserve\">{text}</w:t></w:r></w:p>"


def _style(style_id: str, name: str, ppr: str = "") -> str:
    return f'<w:style w:type="paragraph" w:styleId="{style_id}"><w:name w:val="{name}"/><w:pPr>{ppr}</w:pPr></w:style>'


def test_a_libreoffice_runbook_reads_as_headed_text_with_its_table_and_numbered_steps():
    src = read_source_file(DATA / "settlement-runbook.docx")
    assert src.format == "docx" and src.title == "结算服务运行手册"  # from the document's properties
    lines = src.text.split("\n")
    assert lines[0] == "# 结算服务运行手册"  # no title paragraph: "Heading 1" is `#`, and the first names the document
    assert "## 结算任务失败" in lines and "### 注意事项" in lines
    assert "| settle.batch_size | 500 | 每批结算的订单数 |" in lines
    assert lines[lines.index("| 键 | 默认值 | 说明 |") + 1] == "| --- | --- | --- |"
    steps = [line for line in lines if line[:3] in ("1. ", "2. ", "3. ")]
    assert steps[0].startswith("1. 在 Grafana") and steps[2].startswith("3. 若账务系统恢复")
    assert "- 不得手工修改 ledger 表。" in lines
    assert "3. 若账务系统恢复，执行 `settlectl retry --batch` 重跑该批。" in lines  # LibreOffice's "Source Text"
    fence = lines.index("settlectl retry --batch 20261201-03")  # "Preformatted Text" paragraphs: one fenced block
    assert lines[fence - 1] == "```" and lines[fence + 1] == "settlectl status --batch 20261201-03" and lines[fence + 2] == "```"
    cut = cut_document(src)
    sections = {c.section for c in cut.children}
    assert any(s.endswith("结算任务失败") for s in sections) and any(s.endswith("配置项") for s in sections)


def test_word_template_styles_number_lists_through_the_style_and_headings_sit_under_the_title(tmp_path):
    docx = pytest.importorskip("docx", reason="python-docx (the [test] extra) writes Word's template")
    doc = docx.Document()
    doc.add_heading("支付服务运行手册", 0)
    doc.add_heading("故障切换", 1)
    doc.add_paragraph("切换前确认备库延迟。")
    doc.add_paragraph("停止写入", style="List Number")
    doc.add_paragraph("提升备库", style="List Number")
    doc.add_paragraph("检查告警", style="List Bullet")
    doc.add_heading("参数", 2)
    table = doc.add_table(rows=2, cols=3)
    for cell, text in zip(table.rows[0].cells + table.rows[1].cells, ["键", "默认值", "说明", "failover.timeout", "30s", "a|b"], strict=True):
        cell.text = text
    doc.save(tmp_path / "pay.docx")
    src = read_source_file(tmp_path / "pay.docx")
    assert src.text.split("\n") == [
        "# 支付服务运行手册", "", "## 故障切换", "", "切换前确认备库延迟。", "",
        "1. 停止写入", "2. 提升备库", "", "- 检查告警", "", "### 参数", "",
        "| 键 | 默认值 | 说明 |", "| --- | --- | --- |", "| failover.timeout | 30s | a\\|b |", ""]
    cut = cut_document(src)
    assert cut.document.title == "支付服务运行手册"
    assert {c.section for c in cut.children} >= {"故障切换", "故障切换 > 参数"}


def test_what_a_reader_does_not_see_is_not_indexed(tmp_path):
    styles = (_style("1", "heading 1") + _style("2", "标题 2") + _style("TOC1", "toc 1")
              + _style("Outline", "My chapter", '<w:outlineLvl w:val="0"/>') + _style("Mine", "Based", "")
              .replace("<w:pPr></w:pPr>", '<w:basedOn w:val="Outline"/>'))
    body = (
        _p("目录", "TOC1")
        + '<w:sdt><w:sdtPr><w:docPartObj><w:docPartGallery w:val="Table of Contents"/></w:docPartObj></w:sdtPr>'
          f'<w:sdtContent>{_p("部署 ........ 3")}</w:sdtContent></w:sdt>'
        + _p("部署", "1") + _p("准备", "2")
        + '<w:p><w:r><w:t>端口为 </w:t></w:r><w:del><w:r><w:delText>8080</w:delText></w:r></w:del>'
          '<w:ins><w:r><w:t>9090</w:t></w:r></w:ins><w:r><w:fldChar w:fldCharType="begin"/></w:r>'
          '<w:r><w:instrText> PAGEREF _Toc1 \\h </w:instrText></w:r><w:r><w:fldChar w:fldCharType="end"/></w:r>'
          '<w:r><w:tab/><w:t>（见附录）</w:t></w:r></w:p>'
        + '<w:p><w:r><w:t>架构图说明</w:t></w:r><w:r><mc:AlternateContent><mc:Choice><w:drawing><w:txbxContent>'
          f'{_p("网关在最前面")}</w:txbxContent></w:drawing></mc:Choice><mc:Fallback><w:pict><w:txbxContent>'
          f'{_p("网关在最前面")}</w:txbxContent></w:pict></mc:Fallback></mc:AlternateContent></w:r></w:p>'
        + _p("附录", "Outline") + _p("附录二", "Mine") + _p("第二章", None, '<w:outlineLvl w:val="1"/>')
        + '<w:tbl><w:tr><w:tc><w:p><w:r><w:t>注意：</w:t></w:r></w:p><w:p><w:r><w:t>先备份</w:t></w:r></w:p></w:tc></w:tr></w:tbl>'
        + '<w:tbl><w:tr><w:tc><w:tcPr><w:gridSpan w:val="2"/></w:tcPr><w:p><w:r><w:t>合并</w:t></w:r></w:p></w:tc>'
          '<w:tc><w:p><w:r><w:t>C</w:t></w:r></w:p></w:tc></w:tr><w:tr><w:tc><w:p><w:r><w:t>1</w:t></w:r></w:p></w:tc>'
          '<w:tc><w:p><w:r><w:t>2</w:t></w:r></w:p></w:tc><w:tc><w:p><w:r><w:t>3</w:t></w:r></w:p></w:tc></w:tr></w:tbl>'
        + "<w:sectPr/>")
    src = read_source_file(_docx(tmp_path / "deploy.docx", body, styles))
    assert src.text.split("\n") == [
        "## 部署", "", "### 准备", "", "端口为 9090 （见附录）", "", "架构图说明", "", "网关在最前面", "",
        "## 附录", "", "## 附录二", "", "### 第二章", "", "注意：", "", "先备份", "",
        "| 合并 |  | C |", "| --- | --- | --- |", "| 1 | 2 | 3 |", ""]
    # Three top-level headings are chapters, not a title: with no properties either, the file names the document.
    assert src.title is None
    cut = cut_document(src)
    assert cut.document.title == "deploy" and "附录二 > 第二章" in {c.section for c in cut.children}


def test_numbered_lists_count_per_list_and_level_and_a_sub_list_starts_again(tmp_path):
    numbering = (
        '<w:abstractNum w:abstractNumId="0"><w:lvl w:ilvl="0"><w:numFmt w:val="decimal"/></w:lvl>'
        '<w:lvl w:ilvl="1"><w:numFmt w:val="bullet"/></w:lvl></w:abstractNum>'
        '<w:abstractNum w:abstractNumId="1"><w:lvl w:ilvl="0"><w:numFmt w:val="chineseCounting"/></w:lvl>'
        '<w:lvl w:ilvl="1"><w:numFmt w:val="lowerLetter"/></w:lvl></w:abstractNum>'
        '<w:num w:numId="1"><w:abstractNumId w:val="0"/></w:num><w:num w:numId="2"><w:abstractNumId w:val="1"/></w:num>')

    def item(text, num, level=0):
        return _p(text, None, f'<w:numPr><w:ilvl w:val="{level}"/><w:numId w:val="{num}"/></w:numPr>')

    body = (item("停服", 1) + item("通知用户", 1, 1) + item("备份", 1) + _p("然后：")
            + item("一", 2) + item("甲", 2, 1) + item("乙", 2, 1) + item("二", 2) + item("丙", 2, 1) + item("无编号", 0))
    src = read_source_file(_docx(tmp_path / "steps.docx", body, numbering=numbering))
    assert src.text.split("\n") == [
        "1. 停服", "   - 通知用户", "2. 备份", "", "然后：", "",
        "1. 一", "   1. 甲", "   2. 乙", "2. 二", "   1. 丙", "", "无编号", ""]


def test_code_is_fenced_or_backticked_and_chinese_in_a_monospaced_font_is_prose(tmp_path):
    styles = _style("Pre", "HTML Preformatted") + (
        '<w:style w:type="character" w:styleId="Src"><w:name w:val="Source Text"/></w:style>')

    def run(text, font=None, style=None):
        rpr = (f'<w:rFonts w:ascii="{font}" w:hAnsi="{font}"/>' if font else "") + (f'<w:rStyle w:val="{style}"/>' if style else "")
        return f'<w:r><w:rPr>{rpr}</w:rPr><w:t xml:space="preserve">{text}</w:t></w:r>'

    body = (f'<w:p>{run("把 ")}{run("max_", "Consolas")}{run("connections", "Consolas")}{run(" 调到 ")}'
            f'{run("500", style="Src")}{run("。")}</w:p>'
            + _p("kubectl get pods", "Pre") + '<w:p><w:pPr><w:pStyle w:val="Pre"/></w:pPr></w:p>'
            + '<w:p><w:pPr><w:pStyle w:val="Pre"/></w:pPr><w:r><w:tab/><w:t>-n prod</w:t></w:r></w:p>'
            + f'<w:p>{run("systemctl restart nginx", "Courier New")}</w:p>'
            + f'<w:p>{run("注意：以下命令需要 root", "Courier New")}</w:p>')
    src = read_source_file(_docx(tmp_path / "code.docx", body, styles))
    assert src.text.split("\n") == [
        "把 `max_connections` 调到 `500`。", "",
        "```", "kubectl get pods", "", "    -n prod", "systemctl restart nginx", "```", "",
        "注意：以下命令需要 root", ""]


def test_the_strict_namespace_reads_the_same(tmp_path):
    strict = "http://purl.oclc.org/ooxml/wordprocessingml/main"
    body = _p("标题", "H") + _p("正文")
    src = read_source_file(_docx(tmp_path / "s.docx", body, _style("H", "Heading 1"), ns=strict, title="Strict"))
    assert src.text == "# 标题\n\n正文\n" and src.title == "Strict"


@pytest.mark.parametrize(("content", "message"), [
    (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\x00" * 600, "password-protected Word document, or an old binary one"),
    (b"just some text, renamed", "not a Word document (not a zip archive"),
], ids=["ole-compound-file", "not-a-zip"])
def test_a_protected_or_renamed_file_is_refused_with_what_to_do(tmp_path, content, message):
    path = tmp_path / "x.docx"
    path.write_bytes(content)
    with pytest.raises(InputError, match=message.replace("(", r"\(")):
        read_source_file(path)


def test_hostile_parts_are_refused_unread(tmp_path, monkeypatch):
    dtd = ('<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;">]>'
           f'<w:document xmlns:w="{W}"><w:body><w:p><w:r><w:t>&lol2;</w:t></w:r></w:p></w:body></w:document>')
    with pytest.raises(InputError, match="declares a DTD"):
        read_source_file(_zip(tmp_path / "dtd.docx", {"word/document.xml": dtd}))
    with pytest.raises(InputError, match=r"no word/document.xml inside"):
        read_source_file(_zip(tmp_path / "other.docx", {"content.xml": "<x/>"}))
    with pytest.raises(InputError, match="not well-formed XML"):
        read_source_file(_zip(tmp_path / "cut.docx", {"word/document.xml": "<w:document"}))
    with pytest.raises(InputError, match="holds no text"):
        read_source_file(_docx(tmp_path / "empty.docx", "<w:p/><w:sectPr/>"))
    # A part that inflates past the bound (the zip's directory saying otherwise changes nothing): refused.
    monkeypatch.setattr(ooxml, "MAX_PART_BYTES", 10_000)
    with pytest.raises(InputError, match="inflates past"):
        read_source_file(_docx(tmp_path / "big.docx", _p("重复" * 20_000)))


def test_a_folder_of_word_notes_through_the_cli(tmp_path):
    notes = tmp_path / "notes"
    notes.mkdir()
    shutil.copy(DATA / "settlement-runbook.docx", notes / "结算服务运行手册.docx")
    (notes / "~$结算服务运行手册.docx").write_bytes(b"\x0cowner" + b"\x00" * 150)  # Word's lock file beside an open document
    (notes / "旧版手册.doc").write_bytes(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\x00" * 600)
    (notes / "note.md").write_text("# 值班\n\n结算失败先看面板。\n", encoding="utf-8")
    kb = tmp_path / "kb"
    runner = CliRunner()
    result = runner.invoke(cli, ["ingest", str(notes), "--data-dir", str(kb)])
    assert result.exit_code == 0, result.output
    assert "2 new" in result.output or "2 files" in result.output, result.output
    assert "旧版手册.doc: a Word 97-2003 document: save it as .docx" in result.output
    assert "~$" not in result.output  # tool state, like a hidden file: not listed

    result = runner.invoke(cli, ["query", "ledger.timeout_ms 的默认值是多少", "--data-dir", str(kb), "--json"])
    hits = json.loads(result.output)["hits"]
    assert hits[0]["source"].endswith("结算服务运行手册.docx") and "| ledger.timeout_ms | 3000 |" in hits[0]["text"]
    assert hits[0]["section"].endswith("配置项")

    result = runner.invoke(cli, ["ask", "结算任务失败怎么处理？", "--data-dir", str(kb)])
    assert result.exit_code == 0, result.output
    assert "settlectl retry --batch" in result.output and "结算服务运行手册" in result.output
    # Cited by its section: line numbers of the text read from a Word file point nowhere in Word.
    assert "结算服务运行手册.docx)" in result.output and "结算服务运行手册.docx:" not in result.output, result.output

    # Unchanged: skipped without reading; edited in Word (here: written again with a changed cell): a new version.
    assert "nothing changed: 2 document(s) already up to date" in runner.invoke(cli, ["ingest", str(notes), "--data-dir", str(kb)]).output
    edited = (notes / "结算服务运行手册.docx")
    with zipfile.ZipFile(DATA / "settlement-runbook.docx") as zf:
        parts = {name: zf.read(name) for name in zf.namelist()}
    parts["word/document.xml"] = parts["word/document.xml"].replace(b"3000", b"5000")
    _zip(edited, parts)
    result = runner.invoke(cli, ["ingest", str(notes), "--data-dir", str(kb), "--json"])
    assert json.loads(result.output)["updated"] == 1
    result = runner.invoke(cli, ["query", "ledger.timeout_ms 默认值", "--data-dir", str(kb), "--json"])
    assert "| ledger.timeout_ms | 5000 |" in json.loads(result.output)["hits"][0]["text"]


def test_a_word_file_named_on_the_command_line_in_an_old_format_is_an_error_that_says_what_to_do(tmp_path):
    old = tmp_path / "手册.wps"
    old.write_bytes(b"\xd0\xcf\x11\xe0" + b"\x00" * 100)
    result = CliRunner().invoke(cli, ["ingest", str(old), "--data-dir", str(tmp_path / "kb")])
    assert result.exit_code != 0 and "a WPS Writer document: save it as .docx" in result.output


def test_a_word_document_posted_to_the_api(tmp_path):
    from conftest import make_settings
    from fastapi.testclient import TestClient

    from api.app import create_app

    raw = (DATA / "settlement-runbook.docx").read_bytes()
    app = create_app(make_settings(tmp_path / "kb", api_token="t0ken-for-tests"))
    with TestClient(app) as client:
        auth = {"Authorization": "Bearer t0ken-for-tests"}
        sent = client.post("/documents", headers=auth, json={"content_base64": base64.b64encode(raw).decode(),
                                                              "filename": "runbook.docx"})
        assert sent.status_code == 201, sent.text
        assert sent.json()["added"] == 1
        as_text = client.post("/documents", headers=auth, json={"text": "x", "format": "docx"})
        assert as_text.status_code == 400 and "send its bytes as `content_base64`" in as_text.json()["error"]["message"]
        hits = client.post("/query", json={"query": "settle.cron 什么时候结算"}).json()["hits"]
        assert "每日凌晨 2 点开始结算" in hits[0]["text"]
    assert read_source_bytes(raw, "docx", "api:runbook.docx").title == "结算服务运行手册"


def test_values_that_are_not_what_the_format_says_make_a_damaged_file_not_a_crash(tmp_path):
    # A hand-edited or hostile file: a list level, a column span and a heading level that are not numbers.
    numbering = ('<w:abstractNum w:abstractNumId="0"><w:lvl w:ilvl="one"><w:numFmt w:val="decimal"/></w:lvl></w:abstractNum>'
                 '<w:num w:numId="1"><w:abstractNumId w:val="0"/></w:num>')
    path = _docx(tmp_path / "odd.docx", _p("正文"), numbering=numbering)
    with pytest.raises(InputError, match="a part of the Word document cannot be read"):
        read_source_file(path)
    span = ('<w:tbl><w:tr><w:tc><w:tcPr><w:gridSpan w:val="wide"/></w:tcPr><w:p><w:r><w:t>a</w:t></w:r></w:p></w:tc>'
            '<w:tc><w:p><w:r><w:t>b</w:t></w:r></w:p></w:tc></w:tr></w:tbl>')
    with pytest.raises(InputError, match="cannot be read"):
        read_source_file(_docx(tmp_path / "span.docx", span))
