"""PowerPoint decks are read as a section a slide, with the slide of every line, through the reader, the CLI and the API.

`tests/data/pptx/oncall-training.pptx` was saved by LibreOffice Impress (from a flat ODP written for it): its titles
are text boxes, not placeholders, its third slide is hidden, its second has speaker notes, its fourth a table. The
other decks are written part by part as PowerPoint writes them: title and body placeholders, a title slide, numbered
and nested bullets, slide numbers, a group, a chart, notes in the notes page's body placeholder.
"""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest
from click.testing import CliRunner
from office_files import notes_folder, posted_to_api

from kg.cli import cli
from kg.errors import InputError
from retrieval.ingest.chunking import cut_document
from retrieval.ingest.readers import read_source_file

DATA = Path(__file__).parent / "data" / "pptx"
P = "http://schemas.openxmlformats.org/presentationml/2006/main"
A = "http://schemas.openxmlformats.org/drawingml/2006/main"
R = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
RELS = "http://schemas.openxmlformats.org/package/2006/relationships"


def _sp(text_xml: str, ph: str | None = None, y: int = 0) -> str:
    nv = f'<p:nvPr><p:ph type="{ph}"/></p:nvPr>' if ph else "<p:nvPr/>"
    return (f'<p:sp><p:nvSpPr><p:cNvPr id="2" name="s"/><p:cNvSpPr/>{nv}</p:nvSpPr>'
            f'<p:spPr><a:xfrm><a:off x="0" y="{y}"/></a:xfrm></p:spPr><p:txBody><a:bodyPr/>{text_xml}</p:txBody></p:sp>')


def _p(text: str, props: str = "") -> str:
    return f"<a:p>{props}<a:r><a:t>{text}</a:t></a:r></a:p>"


def _deck(path: Path, slides: list[str], notes: dict[int, str] | None = None, hidden: set[int] = frozenset(),
          title: str | None = None) -> Path:
    """slides: each slide's spTree content; notes: slide index -> its notes page's spTree content."""
    ns = f'xmlns:p="{P}" xmlns:a="{A}" xmlns:r="{R}"'
    ids = "".join(f'<p:sldId id="{256 + i}" r:id="rId{i + 1}"/>' for i in range(len(slides)))
    parts = {
        "ppt/presentation.xml": f"<p:presentation {ns}><p:sldIdLst>{ids}</p:sldIdLst></p:presentation>",
        "ppt/_rels/presentation.xml.rels": f'<Relationships xmlns="{RELS}">' + "".join(
            f'<Relationship Id="rId{i + 1}" Type="{R}/slide" Target="slides/slide{i + 1}.xml"/>'
            for i in range(len(slides))) + "</Relationships>",
    }
    for i, tree in enumerate(slides):
        show = ' show="0"' if i in hidden else ""
        parts[f"ppt/slides/slide{i + 1}.xml"] = f"<p:sld {ns}{show}><p:cSld><p:spTree>{tree}</p:spTree></p:cSld></p:sld>"
        if notes and i in notes:
            parts[f"ppt/slides/_rels/slide{i + 1}.xml.rels"] = (
                f'<Relationships xmlns="{RELS}"><Relationship Id="rId9" Type="{R}/notesSlide" '
                f'Target="../notesSlides/notesSlide{i + 1}.xml"/></Relationships>')
            parts[f"ppt/notesSlides/notesSlide{i + 1}.xml"] = (
                f"<p:notes {ns}><p:cSld><p:spTree>{notes[i]}</p:spTree></p:cSld></p:notes>")
    if title:
        parts["docProps/core.xml"] = ('<cp:coreProperties xmlns:cp="http://schemas.openxmlformats.org/package/2006/'
                                      f'metadata/core-properties" xmlns:dc="http://purl.org/dc/elements/1.1/">'
                                      f"<dc:title>{title}</dc:title></cp:coreProperties>")
    with zipfile.ZipFile(path, "w") as zf:
        for name, text in parts.items():
            zf.writestr(name, text)
    return path


def test_a_libreoffice_deck_reads_as_a_section_a_slide_with_its_notes():
    src = read_source_file(DATA / "oncall-training.pptx")
    assert src.format == "pptx" and src.title is None and not src.warnings
    lines = src.text.split("\n")
    assert lines == [
        "## 支付系统值班培训", "", "资金结算组 · 2026 年 11 月", "",
        "## 告警升级流程", "", "- P1 告警 5 分钟内电话值班长", "- P2 告警 30 分钟内在群里确认", "  - 夜间可以次日处理",
        "- 升级后在 settlectl 里登记 incident-id", "", "值班长的电话在 on-call 表里，不要打个人手机。", "",  # its notes
        "## 结算任务时间表", "", "| 任务 | 时间 | 负责人 |", "| --- | --- | --- |", "| 日终对账 | 02:00 | 张三 |",
        "| 清算文件上传 | 04:30 | 李四 |", "", "时间均为北京时间。", ""]  # slide 3 is hidden: not read
    pages = dict(zip(lines, src.line_pages, strict=True))
    assert pages["## 告警升级流程"] == 2 and pages["| 日终对账 | 02:00 | 张三 |"] == 4  # the slide as numbered in the deck
    cut = cut_document(src)
    assert {c.section for c in cut.children} == {"支付系统值班培训", "告警升级流程", "结算任务时间表"}
    assert {c.page for c in cut.children if c.section == "结算任务时间表"} == {4}


def test_powerpoint_placeholders_bullets_numbers_tables_and_notes(tmp_path):
    table = ('<p:graphicFrame><p:nvGraphicFramePr><p:cNvPr id="9" name="t"/><p:cNvGraphicFramePr/><p:nvPr/>'
             '</p:nvGraphicFramePr><a:graphic><a:graphicData><a:tbl>'
             + "".join("<a:tr>" + "".join(f"<a:tc><a:txBody>{_p(c)}</a:txBody></a:tc>" for c in row) + "</a:tr>"
                       for row in (("端口", "用途"), ("8443", "支付 | 回调"))) + "</a:tbl></a:graphicData></a:graphic></p:graphicFrame>")
    chart = ('<p:graphicFrame><p:nvGraphicFramePr><p:cNvPr id="10" name="c"/><p:cNvGraphicFramePr/><p:nvPr/>'
             '</p:nvGraphicFramePr><a:graphic><a:graphicData uri="chart"/></a:graphic></p:graphicFrame>')
    number = '<a:pPr><a:buAutoNum type="arabicPeriod"/></a:pPr>'
    slides = [
        _sp(_p("网关手册"), "ctrTitle") + _sp(_p("v2.3"), "subTitle"),
        _sp(_p("上线步骤"), "title") + _sp(_p("检查", number) + _p("子项不编号", '<a:pPr lvl="1"/>') + _p("灰度", number)
                                            + _p("说明文字", "<a:pPr><a:buNone/></a:pPr>"), "body")
        + _sp(_p("7"), "sldNum") + _sp(_p("内部资料"), "ftr"),
        _sp(_p("端口"), "title") + f"<p:grpSp>{_sp(_p('组内文字'))}{table}</p:grpSp>" + chart,
        _sp(_p("没有标题的页"), None),
        _sp(_p("草稿"), "title"),
    ]
    notes = {1: '<p:sp><p:nvSpPr><p:cNvPr id="2" name="i"/><p:cNvSpPr/><p:nvPr><p:ph type="sldImg"/></p:nvPr>'
                '</p:nvSpPr></p:sp>' + _sp(_p("先在预发环境验证。") + "<a:p><a:r><a:t>再</a:t></a:r><a:br/>"
                                           "<a:r><a:t>上线</a:t></a:r></a:p>", "body") + _sp(_p("2"), "sldNum")}
    src = read_source_file(_deck(tmp_path / "gw.pptx", slides, notes, hidden={4}))
    assert src.title == "网关手册"  # the title slide names the deck; its subtitle opens it
    assert src.text.split("\n") == [
        "v2.3", "",
        "## 上线步骤", "", "1. 检查", "  - 子项不编号", "2. 灰度", "", "说明文字", "", "先在预发环境验证。", "", "再 上线", "",
        "## 端口", "", "组内文字", "", "| 端口 | 用途 |", "| --- | --- |", "| 8443 | 支付 \\| 回调 |", "",
        "## Slide 4", "", "没有标题的页", ""]
    assert src.line_pages[:3] == (1, 1, 2) and src.line_pages[-1] == 4
    named = read_source_file(_deck(tmp_path / "named.pptx", slides[:2], title="网关运维手册"))
    assert named.title == "网关运维手册" and named.text.startswith("网关手册\n\nv2.3\n")  # the properties name it


@pytest.mark.parametrize(("make", "message"), [
    (lambda p: p.write_bytes(b"not a zip"), "not a PowerPoint deck (not a zip archive"),
    (lambda p: p.write_bytes(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\0" * 512), "a password-protected PowerPoint deck"),
    (lambda p: _deck(p, []), "the deck holds no text"),
    (lambda p: _deck(p, [_sp(_p("x"), "title")], hidden={0}), "the deck holds no text"),
    (lambda p: zipfile.ZipFile(p, "w").writestr("ppt/presentation.xml", '<!DOCTYPE x [<!ENTITY a "a">]><x/>'),
     "declares a DTD"),
], ids=["renamed", "protected-or-ppt", "no-slides", "all-hidden", "dtd"])
def test_a_deck_that_cannot_be_read_says_why(tmp_path, make, message):
    path = tmp_path / "deck.pptx"
    make(path)
    with pytest.raises(InputError, match=message.replace("(", r"\(")):
        read_source_file(path)


def test_a_deck_in_a_folder_through_the_cli_and_the_api(tmp_path):
    notes = notes_folder(tmp_path, DATA / "oncall-training.pptx", "值班培训.pptx", "旧版.ppt")
    kb = str(tmp_path / "kb")
    runner = CliRunner()
    result = runner.invoke(cli, ["ingest", str(notes), "--data-dir", kb])
    assert result.exit_code == 0 and "1 new" in result.output, result.output
    assert "旧版.ppt: a PowerPoint 97-2003 presentation: save it as .pptx" in result.output
    out = runner.invoke(cli, ["query", "值班长的电话在哪里", "--data-dir", kb]).output
    assert "值班培训 § 告警升级流程" in out and "值班培训.pptx slide 2" in out, out  # the notes are found on their slide
    hits = json.loads(runner.invoke(cli, ["query", "日终对账 时间", "--data-dir", kb, "--json"]).output)["hits"]
    assert hits[0]["section"] == "结算任务时间表" and hits[0]["page"] == 4 and "| 日终对账 | 02:00 |" in hits[0]["text"]
    answer = runner.invoke(cli, ["ask", "日终对账几点开始？", "--data-dir", kb]).output
    assert "02:00" in answer and "值班培训.pptx slide 4)" in answer, answer

    with posted_to_api(tmp_path, DATA / "oncall-training.pptx", "training.pptx") as (client, auth):
        as_text = client.post("/documents", headers=auth, json={"text": "x", "filename": "t.pptx"})
        assert as_text.status_code == 400 and "a PowerPoint deck cannot be sent as `text`" in as_text.text
        hits = client.post("/query", json={"query": "清算文件上传 负责人"}).json()["hits"]
        assert "| 清算文件上传 | 04:30 | 李四 |" in hits[0]["text"] and hits[0]["page"] == 4


def test_where_a_hit_is_said_as_its_files_program_shows_it():
    from retrieval.types import place

    assert place("notes/a.md", (3, 9), None) == ":3-9"
    assert place("notes/a.txt", [1, 2], None) == ":1-2"
    assert place("docs/manual.pdf", (40, 52), 7) == " p. 7"
    assert place("decks/oncall.PPTX", (7, 12), 2) == " slide 2"
    assert place("inventory.xlsx", (3, 8), 5) == " row 5"
    assert place("runbook.docx", (15, 19), None) == "" and place("page.html", (1, 4), None) == ""
    assert place("api:note-1", (1, 2), None) == ":1-2"  # no suffix: the lines of the text sent
