"""PDF bytes in, a Markdown-headed `SourceDocument` out (with the page of every line): blocks in reading order, two-column pages read column by column, repeated headers, footers and page numbers dropped.

Needs PyMuPDF (`pip install 'kgrag[pdf]'`; AGPL-licensed). PyMuPDF's own `sort=True` orders blocks
top to bottom across the whole page, which interleaves the two columns of a two-column page line by
line; here a page is cut into horizontal bands at every block that crosses the middle (a title, a
full-width figure), and inside a band the left column is read before the right one. What the fonts say of the
structure (heading levels, code, lists) is read back by `pdf_markdown.py`; a table drawn with rules is found here, its
cells from the page's words. A page without a text layer (a scan) is read by OCR where Tesseract is installed
(`ocr.py`), and said so.
"""

from __future__ import annotations

import re
import zlib
from collections import Counter

from kg.errors import InputError
from retrieval.ingest.ocr import INSTALL_HINT, Ocr, ocr_textpage
from retrieval.ingest.pdf_markdown import MONO_SHARE, Block, join_lines, markdown_lines
from retrieval.types import SourceDocument

__all__ = ["PDF_AVAILABLE", "read_pdf"]

try:  # optional: the [pdf] extra
    import pymupdf  # noqa: F401

    PDF_AVAILABLE = True
except ImportError:  # pragma: no cover - depends on the install
    PDF_AVAILABLE = False

_PAGE_NUMBER = re.compile(
    r"^\W*(?:(?:page|p\.?)\s*)?\d{1,4}(?:\s*(?:/|of|／)\s*\d{1,4})?\W*$|^第\s*\d{1,4}\s*页(?:\s*[/／共]\s*\d{1,4}\s*页?)?$",
    re.I,
)
# A page whose drawing instructions (its content streams and forms, decoded) pass this is skipped, with a warning: a
# 470 KB file inflating to 240 MB of text operators took 3.6 GB of memory to read (MuPDF holds every glyph), so a few
# MB more would take the machine's. A page of text is ~10-100 KB of them; a dense vector drawing a few MB.
PAGE_CONTENT_BYTES = 32 * 1024 * 1024
_EDGE = 0.1  # top and bottom tenth of a page: where running headers and footers live
_BETWEEN_CJK = re.compile(r"(?<=[\u3400-\u9fff\u3000-\u303f\uff00-\uffef]) +(?=[\u3400-\u9fff\u3000-\u303f\uff00-\uffef])")


_MONO_FONT = re.compile(r"mono|courier|consol|menlo|code|typewriter", re.I)
_MONOSPACED, _BOLD = 8, 16  # PyMuPDF's span flags


def _text_layer_blocks(page, number: int) -> list[Block]:
    """The page's text layer as blocks, a ruled table as one: one text extraction and one walk of the page's drawings
    serve the blocks, the bullets drawn as dots and the tables' rules."""
    import pymupdf

    textpage = page.get_textpage(flags=pymupdf.TEXTFLAGS_DICT)  # what get_text("dict") would make
    drawings = page.get_cdrawings()
    blocks = _page_blocks(page, number, textpage, bullets=_drawn_bullets(drawings))
    return _ruled_tables(page, number, blocks, textpage, drawings)


def _page_blocks(page, number: int, textpage, *, ocr: bool = False, bullets=()) -> list[Block]:
    """The page's text blocks from `textpage`; with `ocr` an OCR reading, whose word sizes are estimates: a block's
    size is then its words' median, not their largest, so one tall word does not make a paragraph a heading.
    `bullets`: the dots drawn left of lines (`_drawn_bullets`)."""
    blocks = []
    for block in page.get_text("dict", textpage=textpage)["blocks"]:
        if block.get("type") != 0:
            continue
        lines, sizes, mono, bold, letters = [], [], 0, 0, 0
        for line in block["lines"]:
            spans = line["spans"]
            text = (" " if ocr else "").join(s["text"] for s in spans)
            x0, y0, _, y1 = line["bbox"]
            if any(0 < x0 - right <= 2.5 * (y1 - y0) and y0 <= middle <= y1 for right, middle in bullets):
                text = "\u2022 " + text.lstrip()
            lines.append(text)
            for s in spans:
                if n := len(s["text"].strip()):
                    sizes.append(s["size"])
                    letters += n
                    mono += n * bool(s["flags"] & _MONOSPACED or _MONO_FONT.search(s["font"]))
                    bold += n * bool(s["flags"] & _BOLD or "bold" in s["font"].lower())
        size = (sorted(sizes)[len(sizes) // 2] if ocr else max(sizes)) if sizes else 0.0
        text = join_lines(lines)
        if ocr:  # Tesseract spaces the words it found: one space, none between Chinese characters
            text = _BETWEEN_CJK.sub("", " ".join(text.split()))
            lines = [_BETWEEN_CJK.sub("", " ".join(line.split())) for line in lines]
        if text:
            x0, y0, x1, y1 = block["bbox"]
            fonts = not ocr and letters > 0  # an OCR reading's font is a placeholder
            blocks.append(Block(number, x0, y0, x1, y1, text, size, ocr,
                                tuple(line for line in lines if line.strip()),
                                fonts and mono >= MONO_SHARE * letters, fonts and bold == letters))
    return blocks


def _drawn_bullets(drawings: list[dict]) -> list[tuple[float, float]]:
    """(right edge, vertical middle) of each small filled dot or square on the page: the bullets a browser draws as
    shapes rather than as a character ("Save as PDF" of a web page), so its list items would read as one paragraph.
    A page of hundreds of them is a chart's points, not a list."""
    found = []
    for drawing in drawings:
        x0, y0, x1, y1 = drawing["rect"]
        if "f" in drawing.get("type", "") and 2 <= x1 - x0 <= 8 and 2 <= y1 - y0 <= 8 and 0.5 <= (x1 - x0) / (y1 - y0) <= 2:
            found.append((x1, (y0 + y1) / 2))
    return found if len(found) <= 300 else []


def _ruled_tables(page, number: int, blocks: list[Block], textpage, drawings: list[dict]) -> list[Block]:
    """The page's blocks with each table drawn with rules (borders) as one block of rows in place of its cells' text.

    MuPDF's table finder gives the cells; their text is taken from the page's words by where each word's middle falls,
    because the finder's own text of a cell breaks an identifier at its underscore (`settle.batch size\n_`). The
    finder costs ~60 ms a page, so only a page with rules between columns is searched: one with only horizontal lines
    (links' underlines, a rule under a heading) has no table it would find."""
    if not _has_column_rules(drawings):
        return blocks
    try:
        found = page.find_tables().tables
    except Exception:  # the finder's own failures on odd line art: the page is read as text, as before
        return blocks
    words = page.get_text("words", sort=True, textpage=textpage)
    tables = []
    for table in found:
        rows = tuple(tuple(_cell_text(words, cell) for cell in row.cells) for row in table.rows)
        rows = tuple(row for row in rows if any(row))
        if len(rows) >= 2 and len(rows[0]) >= 2:  # one row or one column is a frame around text, not a table
            x0, y0, x1, y1 = table.bbox
            tables.append(Block(number, x0, y0, x1, y1, " ".join(c for row in rows for c in row), 0.0, rows=rows))
    if not tables:
        return blocks

    def inside(b: Block) -> bool:
        x, y = (b.x0 + b.x1) / 2, (b.y0 + b.y1) / 2
        return any(t.x0 <= x <= t.x1 and t.y0 <= y <= t.y1 for t in tables)

    return [b for b in blocks if not inside(b)] + tables


def _has_column_rules(drawings: list[dict]) -> bool:
    """Two vertical lines, or a stroked rectangle: what the finder builds cells from."""
    vertical = 0
    for drawing in drawings:
        for item in drawing["items"]:
            if item[0] == "l" and abs(item[1][0] - item[2][0]) < 1 and abs(item[1][1] - item[2][1]) > 3:
                vertical += 1
            elif item[0] == "re":
                x0, y0, x1, y1 = item[1]
                vertical += 2 if "s" in drawing.get("type", "") else (x1 - x0 < 2 and y1 - y0 > 3)
            if vertical >= 2:
                return True
    return False


def _cell_text(words: list, cell) -> str:
    if cell is None:  # a cell merged into the one before it
        return ""
    x0, y0, x1, y1 = cell
    inside = [w[4] for w in words if x0 <= (w[0] + w[2]) / 2 <= x1 and y0 <= (w[1] + w[3]) / 2 <= y1]
    return _BETWEEN_CJK.sub("", " ".join(inside))


def _reading_order(blocks: list[Block], width: float) -> list[Block]:
    """Bands between blocks that cross the page's middle; in each band, left column, then right."""
    middle = width / 2
    ordered: list[Block] = []
    band: list[Block] = []

    def flush() -> None:
        left = sorted((b for b in band if (b.x0 + b.x1) / 2 < middle), key=lambda b: (b.y0, b.x0))
        right = sorted((b for b in band if (b.x0 + b.x1) / 2 >= middle), key=lambda b: (b.y0, b.x0))
        ordered.extend(left + right)
        band.clear()

    for block in sorted(blocks, key=lambda b: (b.y0, b.x0)):
        spans_middle = block.x0 < middle - 0.05 * width and block.x1 > middle + 0.05 * width
        if spans_middle:
            flush()
            ordered.append(block)
        else:
            band.append(block)
    flush()
    return ordered


def _edge_key(text: str) -> str:
    return re.sub(r"\d+", "#", text.strip().lower())


def _drop_running_text(pages: list[tuple[list[Block], float]]) -> list[list[Block]]:
    """Page numbers at the page edges, and a text repeated at the top or bottom of many pages."""
    counts: Counter[str] = Counter()
    for blocks, height in pages:
        counts.update({_edge_key(b.text) for b in blocks if b.y1 < height * _EDGE or b.y0 > height * (1 - _EDGE)})
    repeated = {key for key, n in counts.items() if len(pages) >= 2 and n >= max(2, len(pages) // 2)}
    kept = []
    for blocks, height in pages:
        page_kept = []
        for b in blocks:
            at_edge = b.y1 < height * _EDGE or b.y0 > height * (1 - _EDGE)
            if at_edge and (_PAGE_NUMBER.match(b.text.strip()) or _edge_key(b.text) in repeated):
                continue
            page_kept.append(b)
        kept.append(page_kept)
    return kept


def _content_bytes(doc, page, cap: int) -> int:
    """The decoded size of a page's content streams and the forms it draws, counted up to just past `cap` without
    holding more than a MB of it (a Flate stream is inflated piece by piece; another filter is decoded whole)."""
    total = 0
    for xref in [*page.get_contents(), *(x[0] for x in page.get_xobjects())]:
        kind, value = doc.xref_get_key(xref, "Filter")
        if value in ("/FlateDecode", "[/FlateDecode]"):
            inflate, data = zlib.decompressobj(), doc.xref_stream_raw(xref)
            try:
                while data and total <= cap:
                    total += len(inflate.decompress(data, 2**20))
                    data = inflate.unconsumed_tail
            except zlib.error:
                continue  # MuPDF reads what it can of a damaged stream; so does the page's text
        else:
            total += len(doc.xref_stream(xref) or b"") if kind != "null" else len(doc.xref_stream_raw(xref) or b"")
        if total > cap:
            break
    return total


def _read_by_ocr(page, number: int, languages: str, label: str, warnings: list[str]) -> list[Block]:
    try:
        return _page_blocks(page, number, ocr_textpage(page, languages), ocr=True)
    except Exception as exc:  # MuPDF's and Tesseract's own errors (a page it cannot render, damaged language data)
        warnings.append(f"{label}: page {number}: OCR failed ({type(exc).__name__}: {exc})")
        return []


def _pages(numbers: list[int]) -> str:
    shown = ", ".join(map(str, numbers[:10])) + (", …" if len(numbers) > 10 else "")
    return f"page {numbers[0]}" if len(numbers) == 1 else f"{len(numbers)} pages ({shown})"


def read_pdf(raw: bytes, source: str, label: str, ocr: Ocr | None = None) -> SourceDocument:
    """`ocr`: how a page without a text layer is read (`ocr.configured`); None: it is not."""
    if not PDF_AVAILABLE:
        raise InputError(f"{label}: reading PDF needs PyMuPDF: pip install 'kgrag[pdf]' (AGPL-licensed)")
    import pymupdf

    if hasattr(pymupdf, "no_recommend_layout"):  # else its table finder prints an advert on stdout (a `--json` reply's)
        pymupdf.no_recommend_layout()
    try:
        doc = pymupdf.open(stream=raw, filetype="pdf")
    except Exception as exc:  # PyMuPDF raises its own FileDataError and RuntimeError variants
        raise InputError(f"{label}: not a readable PDF ({exc}); re-export it as PDF and ingest it again") from None
    if doc.needs_pass:
        raise InputError(f"{label}: the PDF is password-protected; save an unprotected copy and ingest that")
    if doc.page_count == 0:
        raise InputError(f"{label}: not a readable PDF (no pages: damaged or cut short); re-export it as PDF and ingest it "
                         "again")
    pages, warnings, scanned, oversized = [], [], False, 0
    read_by_ocr: list[int] = []
    with doc:
        title = (doc.metadata or {}).get("title") or None
        for number, page in enumerate(doc, start=1):
            if _content_bytes(doc, page, PAGE_CONTENT_BYTES) > PAGE_CONTENT_BYTES:
                warnings.append(f"{label}: page {number} holds over {PAGE_CONTENT_BYTES // 2**20} MB of drawing "
                                "instructions (a PDF made to exhaust memory, or a huge drawing): skipped")
                pages.append(([], page.rect.height))
                oversized += 1
                continue
            blocks = _text_layer_blocks(page, number)
            if not blocks and ocr and page.get_images():
                if ocr.on_page is not None:
                    ocr.on_page(f"OCR: {label.rsplit('/', 1)[-1]} page {number}/{doc.page_count}")
                blocks = _read_by_ocr(page, number, ocr.languages, label, warnings)
                if blocks:
                    read_by_ocr.append(number)
            if not blocks:
                if page.get_images():
                    scanned = True
                    warnings.append(f"{label}: page {number} has no text layer (a scanned image?): "
                                    + ("OCR found no text on it" if ocr else INSTALL_HINT))
                else:
                    warnings.append(f"{label}: page {number} has no text")
            pages.append((_reading_order(blocks, page.rect.width), page.rect.height))
    kept = _drop_running_text(pages)
    read_any = any(page for page in kept)
    if not read_any and scanned:
        raise InputError(f"{label}: no text layer on any of its {len(pages)} page(s) (a scanned document?): "
                         + ("OCR found no text on them" if ocr else INSTALL_HINT))
    if read_by_ocr:
        warnings.append(f"{label}: {_pages(read_by_ocr)} without a text layer read by OCR (Tesseract, {ocr.languages}): "
                        "its text may hold misread characters")
    if not read_any and oversized:
        raise InputError(f"{label}: no text on any of its {len(pages)} page(s) read; {oversized} page(s) skipped, each "
                         f"holding over {PAGE_CONTENT_BYTES // 2**20} MB of drawing instructions (a PDF made to exhaust "
                         "memory, or huge drawings)")
    if not read_any:
        raise InputError(f"{label}: no text on any of its {len(pages)} page(s)")
    lines, line_pages = markdown_lines(kept)
    return SourceDocument(source=source, text="\n".join(lines), format="pdf", title=title,
                          line_pages=tuple(line_pages), warnings=tuple(warnings))
