"""A PDF's text blocks (in reading order, page by page) in, Markdown lines and the page of each line out: headings at
the levels their font sizes give, code blocks fenced with their lines kept, list items one a line, tables as
Markdown tables.

A PDF keeps no structure, only positioned text in fonts. An office suite or a browser that printed it drew each
heading level in its own size (LibreOffice: 24, 18, 14 pt and bold body text for headings 1-4), code in a monospace
font with its lines as they were, and list items behind a bullet glyph or a number. Read back as paragraphs, a
document is one flat run: code lines glued into one line, a list one sentence, every heading at one level. Worse,
a page mostly of code made the monospace size the "body", so every short paragraph in the larger text font was taken
for a heading and cut into a section of its own. The levels here are the ranks of the heading sizes in the document,
largest first, so a document's sections nest as its author made them. A table of contents is left out.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

from kg.ooxml import table_lines

__all__ = ["MONO_SHARE", "Block", "join_lines", "markdown_lines"]

# A block read from the text layer is a heading when its letters are this much larger than the body's, and short.
LARGER, HEADING_CHARS = 1.15, 80
# A block read by OCR is a heading only when clearly larger than the body (Tesseract's sizes are estimates: a bullet
# read as "。" or a line of code came out 1.2-1.5 times the body in scans of ops_dev_zh's pages) and short.
OCR_TITLE, OCR_SECTION, OCR_HEADING_CHARS = 1.8, 1.4, 40
# A block is code when this share of its letters is in a monospace font (a sentence with a command in it is not).
MONO_SHARE = 0.9
# A list item's marker: a bullet character, or a number or letter (`1.`, `a)`, and `(1)`, `①` as Chinese documents
# number lists); "e.g." and "1.5 GB" are none. A numbered marker may also be a sentence's text cut by a line break.
_ITEM = re.compile(r"^\s*(?:[\u2022\u2023\u2043\u2219\u25aa\u25cf\u25e6\u25cb\u25a0\u25a1\u00b7\uf0a7\uf0b7\uf0d8\uf076]\s*"
                   r"|(\d{1,2}[.)、](?!\d)\s*|[a-z][.)]\s+|[（(]\d{1,2}[）)]\s*|[\u2460-\u2473]\s*))(?=\S)")
_NUMBERED = re.compile(r"^\s*(?:\d{1,2}[.)、]|[a-z][.)]\s|[（(]\d{1,2}[）)])")
# A table of contents' line: a title, dot leaders, its page ("第一章 总则 ........ 3"); it names every section, so it
# would match a question about any of them and send the reader to the contents page.
_CONTENTS_TITLE = re.compile(r"^#+ (?:目\s*录|目\s*次|contents|table of contents)$", re.I)
_CONTENTS_LINE = re.compile(r"^.{1,120}?\s*(?:[.．·…‥・]\s*){4,}\d{1,4}\s*$")
_SENTENCE_END = ("。", "：", ":", "；", ";", "，", ",", "！", "？", ".", "?", "!")
_FULL_STOP = ("。", "：", ":", "；", ";", "！", "？", ".", "?", "!")
_CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff\u3000-\u303f\uff00-\uffef]")


@dataclass
class Block:
    page: int
    x0: float
    y0: float
    x1: float
    y1: float
    text: str  # the block's lines as one paragraph
    size: float  # the largest font size in the block (read by OCR: its words' median)
    ocr: bool = False  # read by OCR: its size an estimate, so it is a heading only when clearly larger
    lines: tuple[str, ...] = ()  # its lines as drawn (leading spaces kept): a code block's lines, a list's items
    mono: bool = False  # MONO_SHARE of its letters in a monospace font: code
    bold: bool = False  # every letter bold
    rows: tuple[tuple[str, ...], ...] = ()  # a table's cells, row by row (its first row its header)


def join_lines(lines: list[str]) -> str:
    """Lines of one paragraph as one: joined without a space between Chinese characters."""
    out = ""
    for line in (ln.strip() for ln in lines):
        if not line:
            continue
        if out and not (_CJK.match(line[0]) and _CJK.match(out[-1])):
            out += "" if out.endswith("-") and line[:1].islower() else " "
        out += line
    return out


def _body_size(pages: list[list[Block]]) -> float:
    """The size most of the prose is set in (code's smaller monospace size aside, unless the document is all code)."""
    prose: Counter[int] = Counter()
    every: Counter[int] = Counter()
    for b in (b for page in pages for b in page):
        every[round(b.size)] += len(b.text)
        if not b.mono and not b.rows:
            prose[round(b.size)] += len(b.text)
    return (prose or every).most_common(1)[0][0]


def _heading_levels(pages: list[list[Block]], body: float) -> dict[float, int]:
    """Each heading size of the text layer -> its level: the sizes clearly above the body, largest first."""
    sizes = {round(b.size) for page in pages for b in page
             if not b.ocr and not b.rows and len(b.text) <= HEADING_CHARS and b.size >= body * LARGER}
    return {size: min(level, 6) for level, size in enumerate(sorted(sizes, reverse=True), start=1)}


def _heading(block: Block, body: float, levels: dict[float, int]) -> int:
    """The block's heading level, 0 when it is not a heading."""
    if block.ocr:
        if len(block.text) > OCR_HEADING_CHARS:
            return 0
        return 1 if block.size >= body * OCR_TITLE else 2 if block.size >= body * OCR_SECTION else 0
    if len(block.text) > HEADING_CHARS:
        return 0
    if round(block.size) in levels:  # also a heading that is a name in a monospace font (`### \`BatchingTask\``)
        return levels[round(block.size)]
    if block.mono:  # code, even when bold
        return 0
    # Bold body text standing alone as a short line (LibreOffice's heading 4, a run-in title): one level below the
    # smallest sized heading; a bold sentence (it ends as one) is emphasis, not a title.
    if block.bold and block.size >= body * 0.95 and not block.text.endswith(_SENTENCE_END):
        return min(len(levels) + 1, 6)
    return 0


def _groups(block: Block) -> list[str]:
    """The block's text as paragraphs and list items, one a line: an item from each line with a bullet or a number
    to the next such line; the lines before the first item (a paragraph, or the end of an item begun in the block
    before: MuPDF cuts a list into blocks where it likes) are one paragraph. A line opening with a number starts an
    item only after a sentence's end or another item, else it goes on with the line before (a range "[10, 20)" cut
    after its comma)."""
    groups: list[tuple[bool, list[str]]] = []
    for line in block.lines or (block.text,):
        if _CONTENTS_LINE.match(line):
            continue
        cut = groups and _NUMBERED.match(line) and not groups[-1][0] and not groups[-1][1][-1].rstrip().endswith(_FULL_STOP)
        if _ITEM.match(line) and not cut:
            groups.append((True, [line.strip()]))
        elif groups:
            groups[-1][1].append(line)
        else:
            groups.append((False, [line]))
    return [_item_line(join_lines(parts)) if item else join_lines(parts) for item, parts in groups]


def _item_line(item: str) -> str:
    found = _ITEM.match(item)
    marker, rest = (found.group(1) or "").strip(), item[found.end():]
    return f"{marker} {rest}" if marker else f"- {rest}"


class _Writer:
    """Markdown lines and their pages, written block by block; a code fence stays open for the code block after."""

    def __init__(self, body: float, levels: dict[float, int]) -> None:
        self.body, self.levels = body, levels
        self.lines: list[str] = []
        self.pages: list[int] = []
        self.in_code = False
        self.prose: tuple[int, Block] | None = None  # the last paragraph's line and block, while nothing came after
        self.first_on_page = False

    def put(self, text: str, page: int) -> None:
        self.lines.append(text)
        self.pages.append(page)

    def block(self, block: Block) -> None:
        level = 0 if block.rows else _heading(block, self.body, self.levels)
        if not level and block.mono and block.lines:
            self.code(block)
            return
        self.close_code(block.page)
        if block.rows:
            rows = table_lines([list(row) for row in block.rows])
        elif level:
            rows = [f"{'#' * level} {block.text}"]
        else:
            rows = _groups(block)
            if not rows:  # the block was a table of contents: its title goes too
                if len(self.lines) >= 2 and _CONTENTS_TITLE.match(self.lines[-2]):
                    del self.lines[-2:], self.pages[-2:]
                return
            if self.prose is not None and self._goes_on(block) and not _ITEM.match((block.lines or (block.text,))[0]):
                at = self.prose[0]
                self.lines[at] = join_lines([self.lines[at], rows.pop(0)])
                if not rows:
                    self.prose = (at, block)
                    return
        for row in (*rows, ""):
            self.put(row, block.page)
        self.prose = (len(self.lines) - 2, block) if not block.rows and not level else None

    def _goes_on(self, block: Block) -> bool:
        """A paragraph cut by a page break: the block opens the page after the last paragraph, which closed its page
        without a sentence's end, in the same size (a list item ends without one as a rule: it is not carried on)."""
        at, before = self.prose
        return (block.page == before.page + 1 and at == len(self.lines) - 2 and abs(before.size - block.size) <= 1
                and not self.lines[at].rstrip().endswith(_FULL_STOP) and not self.lines[at].startswith("- ")
                and not _ITEM.match(self.lines[at])
                and self.first_on_page)

    def code(self, block: Block) -> None:
        """A code block printed across blocks (LibreOffice starts one at each blank line) or pages is one fence."""
        self.prose = None
        self.put("" if self.in_code else "```", block.page)
        for line in block.lines:
            self.put(line.rstrip(), block.page)
        self.in_code = True

    def close_code(self, page: int) -> None:
        if self.in_code:
            self.put("```", page)
            self.put("", page)
            self.in_code = False


def markdown_lines(pages: list[list[Block]]) -> tuple[list[str], list[int]]:
    """The document's Markdown lines and the page each line is on."""
    body = _body_size(pages)
    writer = _Writer(body, _heading_levels(pages, body))
    for page in pages:
        for n, block in enumerate(page):
            writer.first_on_page = n == 0
            writer.block(block)
    if writer.pages:
        writer.close_code(writer.pages[-1])
    return writer.lines, writer.pages
