"""PDF through PyMuPDF (the [pdf] extra): a generated two-column page with Chinese text read column by column, running headers and page numbers dropped, pages on chunks and hits, scanned pages reported."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from kg.cli import cli
from kg.errors import InputError
from retrieval.ingest.chunking import ChunkSizes, cut_document
from retrieval.ingest.ocr import INSTALL_HINT
from retrieval.ingest.readers import read_source_file

pymupdf = pytest.importorskip("pymupdf", reason="PDF reading needs the [pdf] extra")
DATA = Path(__file__).parent / "data"


def _two_column_pdf(path, pages=3):
    doc = pymupdf.open()
    for n in range(1, pages + 1):
        page = doc.new_page(width=595, height=842)
        page.insert_textbox(pymupdf.Rect(50, 20, 545, 50), "内部资料 订单系统手册", fontname="china-s", fontsize=9)
        if n == 1:
            page.insert_textbox(pymupdf.Rect(50, 90, 545, 130), "订单系统设计", fontname="china-s", fontsize=20)
        page.insert_textbox(pymupdf.Rect(50, 150, 290, 400), f"左栏第{n}页上段：订单服务负责下单。", fontname="china-s", fontsize=11)
        page.insert_textbox(pymupdf.Rect(50, 420, 290, 700), f"左栏第{n}页下段：超时为八百毫秒。", fontname="china-s", fontsize=11)
        page.insert_textbox(pymupdf.Rect(305, 150, 545, 400), f"右栏第{n}页上段：支付服务负责回调。", fontname="china-s", fontsize=11)
        page.insert_textbox(pymupdf.Rect(305, 420, 545, 700), f"右栏第{n}页下段：回调重试三次。", fontname="china-s", fontsize=11)
        page.insert_textbox(pymupdf.Rect(250, 800, 350, 830), f"第 {n} 页", fontname="china-s", fontsize=9)
    doc.save(path)


def test_a_two_column_pdf_reads_left_column_then_right_without_headers_or_page_numbers(tmp_path):
    path = tmp_path / "design.pdf"
    _two_column_pdf(path)
    src = read_source_file(path)
    paragraphs = [p for p in src.text.split("\n") if p]
    expected = ["# 订单系统设计"]
    for n in range(1, 4):
        expected += [f"左栏第{n}页上段：订单服务负责下单。", f"左栏第{n}页下段：超时为八百毫秒。",
                     f"右栏第{n}页上段：支付服务负责回调。", f"右栏第{n}页下段：回调重试三次。"]
    assert paragraphs == expected
    assert "内部资料" not in src.text and "第 1 页" not in src.text
    cut = cut_document(src, ChunkSizes(child=20, parent=40))
    assert cut.document.title == "订单系统设计"
    assert [c.page for c in cut.children] == [1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3]
    assert [p.page for p in cut.parents] == [1, 1, 2, 2, 3, 3]
    for chunk in cut.children:
        first = chunk.text.split("\n")[0]
        assert f"第{chunk.page}页" in first  # the page on every chunk is the page its text starts on


def test_a_scanned_page_without_text_is_reported_and_an_all_scanned_pdf_is_refused(tmp_path):
    png = pymupdf.Pixmap(pymupdf.csRGB, pymupdf.IRect(0, 0, 20, 20), False)
    png.clear_with(200)
    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_textbox(pymupdf.Rect(50, 100, 500, 300), "扫描件前的说明页。", fontname="china-s", fontsize=11)
    scanned = doc.new_page()
    scanned.insert_image(pymupdf.Rect(50, 50, 300, 300), pixmap=png)
    path = tmp_path / "mixed.pdf"
    doc.save(path)
    src = read_source_file(path)
    assert src.warnings == (f"{path}: page 2 has no text layer (a scanned image?): {INSTALL_HINT}",)  # OCR not asked for
    only_scan = pymupdf.open()
    only_scan.new_page().insert_image(pymupdf.Rect(50, 50, 300, 300), pixmap=png)
    scan_path = tmp_path / "scan.pdf"
    only_scan.save(scan_path)
    with pytest.raises(InputError) as error:
        read_source_file(scan_path)
    assert str(error.value) == f"{scan_path}: no text layer on any of its 1 page(s) (a scanned document?): {INSTALL_HINT}"


def test_a_file_named_pdf_that_is_not_one_is_skipped_with_the_reason(tmp_path):
    path = tmp_path / "fake.pdf"
    path.write_bytes(b"this is not a pdf at all")
    with pytest.raises(InputError) as error:
        read_source_file(path)
    assert str(error.value).startswith(f"{path}: not a readable PDF (")


def test_a_damaged_or_blank_pdf_is_not_called_a_scan(tmp_path):
    import pymupdf

    cut = tmp_path / "cut.pdf"
    cut.write_bytes(b"%PDF-1.4\n1 0 obj garbage")  # a header and nothing after it: PyMuPDF opens it with no pages
    with pytest.raises(InputError) as error:
        read_source_file(cut)
    assert str(error.value) == (f"{cut}: not a readable PDF (no pages: damaged or cut short); re-export it as PDF and "
                                "ingest it again")
    blank = tmp_path / "blank.pdf"
    doc = pymupdf.open()
    doc.new_page()
    doc.new_page()
    doc.save(blank)
    with pytest.raises(InputError) as error:
        read_source_file(blank)
    assert str(error.value) == f"{blank}: no text on any of its 2 page(s)"


def test_pdf_hits_carry_their_page(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    _two_column_pdf(docs / "design.pdf")
    kb = tmp_path / "kb"
    runner = CliRunner()
    assert runner.invoke(cli, ["ingest", str(docs), "--data-dir", str(kb), "-q"]).exit_code == 0
    result = runner.invoke(cli, ["query", "回调重试", "--data-dir", str(kb), "--json", "--mode", "bm25"])
    hits = json.loads(result.stdout)["hits"]
    assert hits and all(isinstance(h["page"], int) for h in hits)
    assert all(f"第{h['page']}页" in h["text"].split("\n")[0] for h in hits)


def test_a_page_whose_drawing_instructions_inflate_past_the_bound_is_skipped_unread(tmp_path, monkeypatch):
    """A 470 KB PDF whose page inflates to 240 MB of text operators took 3.6 GB and 20 s to read; such a page is
    measured as it inflates (a MB at a time) and skipped with a warning, and the document's other pages come in.
    The bound is lowered here so that the test's page stays small (3 MB of operators against 1 MB)."""
    from retrieval.ingest import pdf

    monkeypatch.setattr(pdf, "PAGE_CONTENT_BYTES", 2**20)
    doc = pymupdf.open()
    doc.new_page().insert_text((72, 72), "redis-cluster 的端口是 6379", fontname="china-s")
    bomb = doc.new_page()
    bomb.insert_text((72, 72), "placeholder", fontname="helv")  # a content stream, replaced below
    body = b"BT /helv 1 Tf 1 0 0 1 10 10 Tm " + b"(aaaaaaaaaa) Tj " * 200_000 + b"ET"
    doc.update_stream(bomb.get_contents()[0], body, compress=True)
    doc.save(tmp_path / "two.pdf", deflate=True)
    assert (tmp_path / "two.pdf").stat().st_size < 50_000
    src = read_source_file(tmp_path / "two.pdf")
    assert "6379" in src.text and "aaaa" not in src.text and set(src.line_pages) == {1}
    assert src.warnings == (f"{tmp_path / 'two.pdf'}: page 2 holds over 1 MB of drawing instructions (a PDF made to "
                            "exhaust memory, or a huge drawing): skipped",)
    monkeypatch.setattr(pdf, "PAGE_CONTENT_BYTES", 4 * 2**20)  # under the bound: read as before
    assert "aaaaaaaaaa" in read_source_file(tmp_path / "two.pdf").text


def test_a_runbook_printed_by_libreoffice_reads_as_the_markdown_it_was_written_in():
    """`data/pdf/settlement-runbook.pdf`: test_docx's runbook printed to PDF by LibreOffice (its headings in 24, 18 and
    14 pt, code in a 10 pt monospace font, a table drawn with rules, numbered steps and bullets). Read back as one
    paragraph a block, the code lines were glued into one, the steps into one sentence, the table's header taken for a
    heading with its cells run together."""
    src = read_source_file(DATA / "pdf" / "settlement-runbook.pdf")
    lines = src.text.split("\n")
    assert [line for line in lines if line.startswith("#")] == [
        "# 结算服务运行手册", "## 配置项", "## 结算任务失败", "### 注意事项", "## Contact"]
    table = lines.index("| 键 | 默认值 | 说明 |")  # the cells from the page's words: the underscore stays in its name
    assert lines[table + 1: table + 5] == ["| --- | --- | --- |", "| settle.batch_size | 500 | 每批结算的订单数 |",
                                           "| settle.cron | 0 2 * * * | 每日凌晨 2 点开始结算 |",
                                           "| ledger.timeout_ms | 3000 | 调用账务系统的超时 |"]
    assert "2. 查看 settlement-service 日志中的 LedgerTimeout 异常。" in lines  # a step a line
    fence = lines.index("```")
    assert lines[fence: fence + 4] == ["```", "settlectl retry --batch 20261201-03", "settlectl status --batch 20261201-03",
                                       "```"]
    assert "- 不得手工修改 ledger 表。" in lines and "- 重跑前确认该批次未部分入账。" in lines
    assert len(src.line_pages) == len(lines) and set(src.line_pages) == {1}
    cut = cut_document(src, ChunkSizes())  # sections nest as the document's headings do
    assert [c.section for c in cut.children] == ["", "配置项", "结算任务失败", "结算任务失败 > 注意事项", "Contact"]


def test_a_page_mostly_of_code_does_not_make_its_prose_headings(tmp_path):
    """The body size is the prose's: on a page of 10 pt code with 12 pt sentences between, the sentences were taken
    for headings (1.2 times "the body") and each cut into a section of its own."""
    doc = pymupdf.open()
    page = doc.new_page(width=595, height=842)
    page.insert_text((50, 60), "集群扩容手册", fontname="china-s", fontsize=24)
    page.insert_text((50, 100), "准备", fontname="china-s", fontsize=18)
    page.insert_text((50, 130), "先保存以下配置：", fontname="china-s", fontsize=12)
    code = ["datanode:", "  replicas: 3", "  storage:", "    size: 20Gi", "    class: ssd", "meta:", "  replicas: 3"]
    page.insert_text((60, 160), "\n".join(code), fontname="cour", fontsize=10)
    page.insert_text((50, 290), "再执行：", fontname="china-s", fontsize=12)
    page.insert_text((60, 320), "helm upgrade --install cluster ./chart -f values.yaml -n prod", fontname="cour", fontsize=10)
    page.insert_text((50, 360), "Rollback", fontname="hebo", fontsize=12)  # bold body text alone: a run-in title
    page.insert_text((50, 390), "Run helm rollback with the last good revision.", fontname="helv", fontsize=12)
    page.insert_text((50, 420), "Never delete the volumes.", fontname="hebo", fontsize=12)  # a bold sentence
    path = tmp_path / "scale.pdf"
    doc.save(path)
    lines = read_source_file(path).text.split("\n")
    assert [line for line in lines if line.startswith("#")] == ["# 集群扩容手册", "## 准备", "### Rollback"]
    assert "先保存以下配置：" in lines and "再执行：" in lines and "Never delete the volumes." in lines
    fence = lines.index("```")
    assert lines[fence: fence + len(code) + 2] == ["```", *code, "```"]  # the lines and their indentation kept


def test_a_heading_in_a_monospace_font_lists_cut_anywhere_and_numbers_inside_a_sentence(tmp_path):
    doc = pymupdf.open()
    page = doc.new_page(width=595, height=842)
    page.insert_text((50, 60), "调度器", fontname="china-s", fontsize=24)
    page.insert_text((50, 100), "BatchingEngine", fontname="cour", fontsize=18)  # `## \`BatchingEngine\`` printed
    page.insert_text((50, 130), "节点包括：\n\u2022 一个 gRPC 服务\n\u2022 一个 HTTP 服务", fontname="china-s", fontsize=12)
    page.insert_text((50, 200), "取值范围为 [10,\n20) 之间的整数。", fontname="china-s", fontsize=12)  # "20)" is no step
    page.insert_text((60, 250), "SHOW REGIONS;", fontname="cour", fontsize=10)
    path = tmp_path / "scheduler.pdf"
    doc.save(path)
    lines = [line for line in read_source_file(path).text.split("\n") if line]
    assert lines == ["# 调度器", "## BatchingEngine", "节点包括：", "- 一个 gRPC 服务", "- 一个 HTTP 服务",
                     "取值范围为 [10, 20) 之间的整数。", "```", "SHOW REGIONS;", "```"]


def test_a_table_of_contents_is_left_out_and_chinese_list_numbers_start_items(tmp_path):
    """A contents page names every section, so it matched questions about any of them and sent the reader to page 2."""
    doc = pymupdf.open()
    contents = doc.new_page(width=595, height=842)
    contents.insert_text((50, 60), "目录", fontname="china-s", fontsize=20)
    contents.insert_text((50, 100), "第一章 总则 ........................ 3\n第二章 备份 ........................ 5", fontname="china-s",
                         fontsize=12)
    page = doc.new_page(width=595, height=842)
    page.insert_text((50, 60), "第二章 备份", fontname="china-s", fontsize=20)
    page.insert_text((50, 100), "备份前：\n（1）停止写入；\n（2）记录位点。\n① 检查磁盘", fontname="china-s", fontsize=12)
    path = tmp_path / "manual.pdf"
    doc.save(path)
    src = read_source_file(path)
    lines = [line for line in src.text.split("\n") if line]
    assert lines == ["# 第二章 备份", "备份前：", "（1） 停止写入；", "（2） 记录位点。", "① 检查磁盘"]
    assert src.line_pages[src.text.split("\n").index("（1） 停止写入；")] == 2


def test_bullets_a_browser_draws_as_dots_make_list_items(tmp_path):
    """Chromium's "Save as PDF" draws a list's bullets as filled circles, not as a character: the items read as one
    paragraph. A page of many dots (a chart) is left as it is."""
    doc = pymupdf.open()
    page = doc.new_page(width=595, height=842)
    page.insert_text((50, 60), "组件", fontname="china-s", fontsize=20)
    page.insert_text((50, 100), "一个 datanode 包含以下组件，这里列出比较重要的部分：", fontname="china-s", fontsize=12)
    page.insert_text((70, 130), "gRPC 服务提供读写\nHTTP 服务提供指标", fontname="china-s", fontsize=12)
    for y in (126, 141):  # beside each line's middle, as Chromium places them
        page.draw_circle((60, y), 1.9, color=None, fill=(0, 0, 0))
    chart = doc.new_page(width=595, height=842)
    chart.insert_text((70, 130), "吞吐随时间变化", fontname="china-s", fontsize=12)
    for n in range(400):
        chart.draw_circle((60 + (n % 40) * 10, 126 + (n // 40) * 15), 1.9, color=None, fill=(0, 0, 0))
    path = tmp_path / "components.pdf"
    doc.save(path)
    lines = [line for line in read_source_file(path).text.split("\n") if line]
    assert lines == ["# 组件", "一个 datanode 包含以下组件，这里列出比较重要的部分：", "- gRPC 服务提供读写", "- HTTP 服务提供指标",
                     "吞吐随时间变化"]


def test_a_sentence_cut_by_a_page_break_is_one_again(tmp_path):
    """A paragraph going on past the bottom of a page came back as two, with a word cut in half ("通" / "过") and a
    citation quoting half a sentence. Only a paragraph that stops short of a sentence's end, in the same size, goes on."""
    doc = pymupdf.open()
    first = doc.new_page(width=595, height=842)
    first.insert_text((50, 60), "数据段", fontname="china-s", fontsize=20)
    first.insert_text((50, 700), "数据段的行数由引擎选项控制，默认为 1024。较小的值意味着更精确的索引。通", fontname="china-s", fontsize=12)
    second = doc.new_page(width=595, height=842)
    second.insert_text((50, 100), "过调整该选项，可以在存储成本和查询性能之间进行权衡。", fontname="china-s", fontsize=12)
    second.insert_text((50, 140), "这一段到此为止，下一页另起一段。", fontname="china-s", fontsize=12)
    third = doc.new_page(width=595, height=842)
    third.insert_text((50, 100), "另起的一段，与上一页无关，也足够长以免被当成标题。", fontname="china-s", fontsize=12)
    path = tmp_path / "segments.pdf"
    doc.save(path)
    src = read_source_file(path)
    lines = [line for line in src.text.split("\n") if line]
    assert lines == ["# 数据段", "数据段的行数由引擎选项控制，默认为 1024。较小的值意味着更精确的索引。通过调整该选项，可以在存储成本和查询性能之间进行权衡。",
                     "这一段到此为止，下一页另起一段。", "另起的一段，与上一页无关，也足够长以免被当成标题。"]
    at = src.text.split("\n").index(lines[1])
    assert src.line_pages[at] == 1  # the joined paragraph is where it starts
