"""Scanned PDF pages read by OCR (Tesseract through PyMuPDF) where Tesseract is installed with Chinese and English;
`.ci/run` installs Debian's `tesseract-ocr` and `tesseract-ocr-chi-sim`. The scans are made here: a page of text in
PyMuPDF's built-in Chinese font rendered to an image, which alone makes the page (no text layer), as a scanner does."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from kg.cli import cli
from retrieval.ingest import ocr
from retrieval.ingest.readers import read_source_file

pymupdf = pytest.importorskip("pymupdf", reason="PDF reading needs the [pdf] extra")
LANGUAGES = ocr.ocr_languages("auto", "chi_sim+eng")
needs_tesseract = pytest.mark.skipif(LANGUAGES != "chi_sim+eng",
                                     reason="Tesseract with chi_sim and eng is not installed (Debian: tesseract-ocr "
                                            "tesseract-ocr-chi-sim)")
RULES = ["数据备份管理办法", "第一条 每天凌晨两点对订单库做全量备份。", "第二条 备份保留三十天，存放在归档存储。",
         "The restore runbook is RB-017."]


def _scan(doc, lines: list[str]) -> None:
    """A page that is only an image of `lines` (the first as a title)."""
    page = pymupdf.open().new_page()
    y = 90
    for i, line in enumerate(lines):
        size = 20 if i == 0 else 12
        page.insert_text((72, y), line, fontname="china-s", fontsize=size)
        y += 40 if i == 0 else 26
    scanned = doc.new_page(width=page.rect.width, height=page.rect.height)
    scanned.insert_image(scanned.rect, pixmap=page.get_pixmap(dpi=300, colorspace=pymupdf.csGRAY))


@needs_tesseract
def test_a_scanned_pdf_is_read_by_ocr_through_the_cli(tmp_path):
    doc = pymupdf.open()
    first = doc.new_page()
    first.insert_textbox(pymupdf.Rect(72, 72, 520, 200), "扫描件前的说明页：以下为制度原文。", fontname="china-s", fontsize=11)
    _scan(doc, RULES)
    path = tmp_path / "备份制度.pdf"
    doc.save(path)
    kb = str(tmp_path / "kb")
    runner = CliRunner()
    result = runner.invoke(cli, ["ingest", str(path), "--data-dir", kb])
    assert result.exit_code == 0 and "1 new" in result.output, result.output
    assert "page 2 without a text layer read by OCR (Tesseract, chi_sim+eng)" in result.output, result.output
    hits = json.loads(runner.invoke(cli, ["query", "备份保留多少天", "--data-dir", kb, "--json"]).output)["hits"]
    assert "备份保留三十天" in hits[0]["text"] and "RB-017" in hits[0]["text"], hits[0]  # no spaces between the characters
    answer = runner.invoke(cli, ["ask", "备份保留多少天？", "--data-dir", kb]).output
    assert "三十天" in answer and "备份制度.pdf p. 1)" in answer, answer  # its passage starts on page 1
    src = read_source_file(path, ocr=ocr.Ocr(LANGUAGES))
    at = dict(zip(src.text.split("\n"), src.line_pages, strict=True))
    assert at["扫描件前的说明页：以下为制度原文。"] == 1
    assert [page for line, page in at.items() if "备份保留三十天" in line] == [2]  # the scanned page's lines: page 2


@needs_tesseract
def test_ocr_off_or_absent_skips_a_scan_with_what_to_do(tmp_path, monkeypatch):
    doc = pymupdf.open()
    _scan(doc, RULES)
    path = tmp_path / "scan.pdf"
    doc.save(path)
    monkeypatch.setenv("KG_OCR", "off")
    result = CliRunner().invoke(cli, ["ingest", str(path), "--data-dir", str(tmp_path / "kb")])
    assert result.exit_code == 0 and "skipped" in result.output and ocr.INSTALL_HINT in result.output, result.output
    src = read_source_file(path, ocr=ocr.Ocr(LANGUAGES))
    heading = src.text.split("\n")[0]
    assert heading.startswith("# ") and "备份管理办法" in heading, src.text  # the title's larger letters: a heading
    assert set(src.line_pages) == {1} and src.warnings[-1].endswith("its text may hold misread characters")


def test_the_languages_are_those_asked_for_that_are_installed(monkeypatch, tmp_path):
    (tmp_path / "eng.traineddata").write_bytes(b"x")
    (tmp_path / "chi_sim.traineddata").write_bytes(b"x")
    monkeypatch.setenv("TESSDATA_PREFIX", str(tmp_path))
    ocr._tessdata.cache_clear()
    try:
        assert ocr.ocr_languages("auto", "chi_sim+eng+deu") == "chi_sim+eng"
        assert ocr.ocr_languages("auto", "chi_tra") is None
        assert ocr.ocr_languages("off", "chi_sim+eng") is None
        monkeypatch.setenv("TESSDATA_PREFIX", str(tmp_path / "nowhere"))
        ocr._tessdata.cache_clear()
        assert ocr.ocr_languages("auto", "chi_sim+eng") is None
    finally:
        ocr._tessdata.cache_clear()


@needs_tesseract
def test_a_progress_bar_hears_of_each_page_read_by_ocr(tmp_path):
    """A 300-page scan takes minutes: the bar says which page of which file is being read (the CLI's `Progress.note`)."""
    from conftest import make_settings

    from retrieval.pipeline import KnowledgeBase

    doc = pymupdf.open()
    _scan(doc, RULES)
    _scan(doc, ["第四条 备份文件加密存放。"])
    path = tmp_path / "备份制度.pdf"
    doc.save(path)

    class Bar:
        def __init__(self):
            self.notes, self.done = [], 0

        def __call__(self, n=1):
            self.done += n

        def note(self, text):
            self.notes.append(text)

    bar = Bar()
    with KnowledgeBase(make_settings(tmp_path / "kb"), create=True) as kb:
        report = kb.ingest_paths([path], progress=bar)
    assert report.added == 1 and bar.done == 1
    assert bar.notes == [f"OCR: {path.name} page 1/2", f"OCR: {path.name} page 2/2"]


def test_tesseracts_remarks_on_unreadable_regions_are_dropped_and_other_lines_kept(capfd):
    """MuPDF's Tesseract writes "Image too small to scale!!" and "Line cannot be recognized!!" to the process's stderr
    for slivers of some scans (seen in bench/scanned_files.py's run), across `kg ingest`'s progress bar."""
    import os
    import sys

    from retrieval.ingest.ocr import tesseract_remarks_dropped

    os.write(2, b"before\n")
    with tesseract_remarks_dropped():
        os.write(2, b"Image too small to scale!! (2x36 vs min width of 3)\nLine cannot be recognized!!\n")
        os.write(2, b"Error opening data file chi_sim.traineddata\n")
        os.write(2, b"a log line from another thread\n")
        print("a line from Python", file=sys.stderr)
    os.write(2, b"after\n")
    err = capfd.readouterr().err
    assert "too small" not in err and "cannot be recognized" not in err
    assert err.index("before") < err.index("Error opening data file") < err.index("a log line from another") < err.index("after")
    assert "a line from Python" in err


def test_two_ocr_calls_at_once_give_the_descriptor_back(capfd):
    """A second call that starts while the first holds the descriptor must not save the first one's temporary file as
    "stderr" and put that back at its end (everything written to stderr after would be lost)."""
    import os
    import threading
    import time

    from retrieval.ingest.ocr import tesseract_remarks_dropped

    first_in, second_starting = threading.Event(), threading.Event()

    def first() -> None:
        with tesseract_remarks_dropped():
            first_in.set()
            second_starting.wait(10)
            time.sleep(0.2)  # the second call is now waiting for the descriptor
            os.write(2, b"Line cannot be recognized!!\npage 1 kept\n")

    def second() -> None:
        first_in.wait(10)
        second_starting.set()
        with tesseract_remarks_dropped():
            os.write(2, b"page 2 kept\n")

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    os.write(2, b"still the real stderr\n")
    err = capfd.readouterr().err
    assert "page 1 kept" in err and "page 2 kept" in err and "still the real stderr" in err
    assert "cannot be recognized" not in err
