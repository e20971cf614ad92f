"""Readers: Markdown front matter as metadata, HTML main text with headings, folder ingest that skips bad files (PDF: test_pdf.py)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from kg.cli import cli
from kg.errors import InputError
from retrieval.ingest.chunking import cut_document
from retrieval.ingest.html import html_to_text
from retrieval.ingest.readers import (
    find_files,
    read_source_bytes,
    read_source_file,
    split_front_matter,
)

FRONT = """\
---
title: 产品需求说明书
summary: 预算与范围的说明
aliases: [PRD, 需求说明]
id: prd
version: v1.3
effective: 2025-01-16
tags: 产品, 预算
---

## 预算

本期预算为 120 万元。
"""


def test_front_matter_is_metadata_and_line_numbers_stay_true(tmp_path):
    path = tmp_path / "prd.md"
    path.write_text(FRONT, encoding="utf-8")
    src = read_source_file(path)
    assert (src.title, src.doc_key, src.version_label, src.effective_date) == ("产品需求说明书", "prd", "v1.3", "2025-01-16")
    assert (src.summary, src.aliases, src.tags) == ("预算与范围的说明", ("PRD", "需求说明"), ("产品", "预算"))
    assert "title:" not in src.text and "summary" not in src.text
    cut = cut_document(src)
    [chunk] = cut.children
    assert chunk.text == "本期预算为 120 万元。"
    assert FRONT.split("\n")[chunk.line_start - 1] == "本期预算为 120 万元。"
    assert cut.document.title == "产品需求说明书"


def test_a_rule_at_the_top_without_a_closing_one_is_body_text():
    meta, body = split_front_matter("---\n\nJust a thematic break.\n")
    assert meta == {} and body == "---\n\nJust a thematic break.\n"


def test_front_matter_that_does_not_parse_names_the_file_and_line(tmp_path):
    path = tmp_path / "bad.md"
    path.write_text("---\ntitle: [unclosed\n---\n\ntext\n", encoding="utf-8")
    with pytest.raises(InputError) as error:
        read_source_file(path)
    assert str(error.value) == f"{path}: the YAML front matter does not parse (line 2: expected ',' or ']', but got '<stream end>'); fix it or remove the `---` block"


def test_an_effective_date_that_is_not_a_date_is_refused():
    with pytest.raises(InputError) as error:
        read_source_bytes(b"---\neffective: next tuesday\n---\n\ntext\n", "md", "api:x")
    assert str(error.value) == "api:x: effective date 'next tuesday' is not a date; write it as YYYY-MM-DD"


PAGE = """<!doctype html><html><head><title>Redis runbook</title><style>p {color: red}</style>
<script>var x = "do not index";</script></head><body>
<nav><a href="/">Home</a> | <a href="/about">About us</a></nav>
<main><h1>Redis 故障处理</h1><p>先确认 <b>主从</b> 状态。</p>
<h2>切换</h2><ol><li>执行 failover</li><li>检查 lag</li></ol>
<pre>redis-cli -p 6379
  info replication</pre></main>
<footer>© 2025 Example Corp</footer></body></html>"""


def test_html_keeps_main_text_and_headings_and_drops_chrome():
    title, text = html_to_text(PAGE)
    assert title == "Redis runbook"
    assert text.split("\n") == [
        "# Redis 故障处理", "", "先确认 主从 状态。", "", "## 切换", "", "- 执行 failover", "", "- 检查 lag", "",
        "```", "redis-cli -p 6379", "  info replication", "```", "",
    ]
    cut = cut_document(read_source_bytes(PAGE.encode(), "html", "page.html"))
    assert cut.document.title == "Redis 故障处理"
    assert [c.section for c in cut.children] == ["", "切换"]
    assert all("About us" not in c.text and "do not index" not in c.text for c in cut.children)


def test_html_without_main_keeps_the_body_and_takes_the_title_tag():
    src = read_source_bytes(b"<html><head><title>Glossary</title></head><body><p>zebrafish: a test env.</p></body></html>",
                            "html", "g.html")
    assert (src.title, src.format) == ("Glossary", "html")
    assert cut_document(src).children[0].text == "zebrafish: a test env."



def test_an_html_table_is_a_markdown_table_and_an_answer_quotes_a_row_with_its_column_names(tmp_path):
    """A wiki's or a Confluence export's table was written as "| a | b" lines with blank lines between, no header:
    the answer could not name a cell's column. A table in a cell is that cell's text; a one-column table is a box."""
    page = """<html><body><main><h1>结算配置</h1><table><caption>结算参数</caption>
    <thead><tr><th>键</th><th>默认值</th><th>说明</th></tr></thead>
    <tbody><tr><td><code>settle.batch_size</code></td><td>500</td><td><p>每批结算的</p><p>订单数</p></td></tr>
    <tr><td>ledger.timeout_ms</td><td>3000</td><td>调用账务系统的超时 <table><tr><td>毫秒</td></tr></table></td></tr>
    <tr><td>a|b</td></tr></tbody></table>
    <table><tr><td>提示：改动后重启结算服务。</td></tr></table></main></body></html>"""
    _, text = html_to_text(page)
    assert text.split("\n") == [
        "# 结算配置", "", "结算参数", "", "| 键 | 默认值 | 说明 |", "| --- | --- | --- |",
        "| settle.batch_size | 500 | 每批结算的 订单数 |", "| ledger.timeout_ms | 3000 | 调用账务系统的超时 毫秒 |",
        "| a\\|b |  |  |", "", "提示：改动后重启结算服务。", ""]
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "settle.html").write_text(page, encoding="utf-8")
    runner = CliRunner()
    assert runner.invoke(cli, ["ingest", str(notes), "--data-dir", str(tmp_path / "kb"), "-q"]).exit_code == 0
    answer = runner.invoke(cli, ["ask", "ledger.timeout_ms 的默认值是多少？", "--data-dir", str(tmp_path / "kb")]).output
    assert "默认值：3000" in answer, answer
    # </td> and </tr> may be left out (valid HTML), and a page cut short leaves its table open: no cell is lost.
    assert html_to_text("<table><tr><th>键<th>默认值<tr><td>a<td>1</table>")[1].split("\n")[:3] == [
        "| 键 | 默认值 |", "| --- | --- |", "| a | 1 |"]
    assert html_to_text("<p>前</p><table><tr><td>k<td>v<tr><td>x<td>y")[1] == "前\n\n| k | v |\n| --- | --- |\n| x | y |\n"
    _, wide = html_to_text("<table><tr>" + "<td>x</td>" * 5000 + "</tr>" + "<tr><td>y</td></tr>" * 5000 + "</table>")
    assert len(wide) < 100_000  # a hostile page's rows are not padded to its 5,000 columns (125 MB of bars)

# ---------------------------------------------------------------- folder ingest


def _bad_folder(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "good.md").write_text("# Good\n\nosprey nests on the cliff.\n", encoding="utf-8")
    (docs / "also-good.txt").write_text("heron notes\n\nherons wade in the shallows.\n", encoding="utf-8")
    (docs / "empty.md").write_text("", encoding="utf-8")
    (docs / "gbk.md").write_bytes(b"# x\n\n\xff\xfe\xff")  # neither UTF-8 nor GBK
    (docs / "broken.md").write_text("---\ntitle: [x\n---\n\nbody\n", encoding="utf-8")
    (docs / "photo.png").write_bytes(b"\x89PNG\r\n")
    (docs / "slides.key").write_bytes(b"PK")
    (docs / ".hidden.md").write_text("# hidden\n\nnever\n", encoding="utf-8")
    outside = tmp_path / "outside.md"
    outside.write_text("# Secret\n\nsecret text\n", encoding="utf-8")
    os.symlink(outside, docs / "link.md")
    return docs


def test_find_files_reports_what_it_skips_and_why(tmp_path):
    docs = _bad_folder(tmp_path)
    found = find_files([docs])
    assert [p.name for p in found.files] == ["also-good.txt", "broken.md", "empty.md", "gbk.md", "good.md"]
    assert {os.path.basename(s.path): s.reason for s in found.skipped} == {
        "photo.png": "binary file",
        "slides.key": "unsupported file type '.key' (kgrag reads .csv, .docx, .htm, .html, .markdown, .md, .pdf, .pptx, .text, .txt, .xlsx)",
        "link.md": f"symlink to {tmp_path / 'outside.md'}, outside {docs}: not followed",
    }


def test_kg_ingest_skips_bad_files_with_full_path_and_ingests_the_rest(tmp_path):
    docs = _bad_folder(tmp_path)
    kb = tmp_path / "kb"
    result = CliRunner().invoke(cli, ["ingest", str(docs), "--data-dir", str(kb), "--json"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["added"] == 2
    skipped = {s["path"]: s["reason"] for s in report["skipped"]}
    assert skipped[str(docs / "empty.md")] == "the document is empty"
    assert skipped[str(docs / "gbk.md")] == "neither UTF-8, GBK/GB18030 nor Big5 text (byte 5); save the file as UTF-8 and ingest it again"
    assert skipped[str(docs / "broken.md")].startswith("the YAML front matter does not parse")
    assert str(docs / "link.md") in skipped and str(docs / "photo.png") in skipped
    query = CliRunner().invoke(cli, ["query", "secret", "--data-dir", str(kb), "--json"], catch_exceptions=False)
    assert json.loads(query.stdout)["hits"] == []  # the symlink's target was never read


def _good_and(tmp_path, name: str, text: str) -> tuple[Path, dict]:
    """A folder of a good note and `name`, ingested with `kg ingest --json`: the folder and the report."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "good.md").write_text("# Good\n\nosprey nests on the cliff.\n", encoding="utf-8")
    (docs / name).write_text(text, encoding="utf-8")
    result = CliRunner().invoke(cli, ["ingest", str(docs), "--data-dir", str(tmp_path / "kb"), "--json"],
                                catch_exceptions=False)
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["added"] == 1
    return docs, report


def test_a_front_matter_date_that_is_no_date_skips_its_file_not_the_folder(tmp_path):
    # YAML reads 2024-13-45 as a date and Python refuses it: a ValueError, not a YAML error.
    docs, report = _good_and(tmp_path, "month13.md", "---\ntitle: x\neffective: 2024-13-45\n---\n# X\n\nbody\n")
    assert {s["path"]: s["reason"] for s in report["skipped"]} == {str(docs / "month13.md"): (
        "the YAML front matter holds a value that is no real date or number (month must be in 1..12); fix it or put it "
        "in quotes")}


def test_a_reader_failing_in_a_way_nobody_foresaw_skips_that_file_only(tmp_path, monkeypatch):
    # A stand-in for the next month-13 date: the HTML reader raising what no reader is meant to raise.
    import retrieval.ingest.html as html

    def broken(text, source):
        raise RuntimeError("parser lost its place")

    monkeypatch.setattr(html, "read_html", broken)
    docs, report = _good_and(tmp_path, "page.html", "<h1>x</h1><p>y</p>")
    assert report["skipped"] == [{"path": str(docs / "page.html"), "reason": (
        "cannot be read (RuntimeError: parser lost its place); please report it with the file")}]
    strict = CliRunner().invoke(cli, ["ingest", str(docs), "--strict", "--data-dir", str(tmp_path / "kb2")])
    assert strict.exit_code == 2
    assert "page.html: cannot be read (RuntimeError: parser lost its place)" in strict.stderr


def test_kg_ingest_strict_stops_at_the_first_bad_file_and_ingests_nothing(tmp_path):
    docs = _bad_folder(tmp_path)
    kb = tmp_path / "kb"
    result = CliRunner().invoke(cli, ["ingest", str(docs), "--strict", "--data-dir", str(kb), "-q"])
    assert result.exit_code == 2
    assert result.stderr.strip() == f"error: {docs / 'broken.md'}: the YAML front matter does not parse (line 2: expected ',' or ']', but got '<stream end>'); fix it or remove the `---` block"
    stats = CliRunner().invoke(cli, ["stats", "--data-dir", str(kb), "--json"])
    assert json.loads(stats.stdout)["documents"] == 0


def test_a_text_notes_first_line_is_its_title_without_heading_marks():
    from retrieval.types import SourceDocument

    assert cut_document(SourceDocument("notes/oncall.txt", "# 值班手册\n\n夜间告警先看 Grafana。\n", format="txt")).document.title == "值班手册"
    assert cut_document(SourceDocument("notes/plain.txt", "值班手册\n\n夜间告警先看 Grafana。\n", format="txt")).document.title == "值班手册"
    assert cut_document(SourceDocument("notes/tag.txt", "#incident\n\n夜间告警先看 Grafana。\n", format="txt")).document.title == "#incident"


def test_a_file_far_over_the_size_limit_is_refused_unread_and_the_folder_goes_on(tmp_path):
    """A 600 MB log in a notes folder took 19 s and 3.5 GB to read, then was refused for its size; a file over
    FILE_SIZE_FACTOR times the limit is refused from its size on disk, one under it is read and judged by its text
    (a page's markup or a Markdown export's embedded images make a file larger than its text)."""
    from retrieval.ingest.readers import FILE_SIZE_FACTOR

    docs = tmp_path / "docs"
    docs.mkdir()
    limit = 1000
    (docs / "huge.txt").write_text("log line\n" * (FILE_SIZE_FACTOR * limit // 9 + 10), encoding="utf-8")
    (docs / "images.md").write_text("# Export\n\nA note.\n\n![x](data:image/png;base64," + "QUJD" * 2000 + ")\n",
                                    encoding="utf-8")  # 8 KB on disk, a few dozen bytes of text
    (docs / "ok.md").write_text("# Ok\n\nfine\n", encoding="utf-8")
    env = {"KG_MAX_DOCUMENT_BYTES": str(limit)}
    result = CliRunner().invoke(cli, ["ingest", str(docs), "--data-dir", str(tmp_path / "kb")], env=env)
    assert result.exit_code == 0, result.output
    assert "2 new" in result.output and "1 file(s) skipped" in result.output
    size = (docs / "huge.txt").stat().st_size
    assert (f"huge.txt: {size:,} bytes, not read: documents may hold 1,000 bytes of text, and files over 20 times "
            "that are not read; split it, or raise KG_MAX_DOCUMENT_BYTES") in result.output
