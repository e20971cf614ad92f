"""HTML text in, a Markdown-headed `SourceDocument` out: the page's main text with its headings, without navigation, scripts or boilerplate.

Built on the standard library's `html.parser` on purpose: the readers need the main text and the
heading structure (h1-h6 become `#` headings, so HTML is cut into sections like Markdown), which a
tag-level walk gives exactly; extractors such as trafilatura bring lxml and a dozen packages and
guess at the main text with scores tuned on news pages, which drops short reference sections.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser

from kg.ooxml import table_lines
from retrieval.types import SourceDocument

__all__ = ["html_to_text", "read_html"]

# Never text: their content is code, styling or chrome around the document.
_DROP = {"script", "style", "noscript", "template", "svg", "canvas", "nav", "footer", "aside", "form",
         "button", "select", "iframe", "head"}
_MAIN = {"main", "article"}
_BLOCK = {"p", "div", "section", "li", "ul", "ol", "table", "tr", "blockquote", "dl", "dt", "dd", "figure",
          "figcaption", "header", "main", "article", "br", "hr", "pre", "h1", "h2", "h3", "h4", "h5", "h6"}
_VOID = {"br", "hr", "img", "input", "meta", "link", "area", "base", "col", "embed", "source", "track", "wbr"}


class _Extractor(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.blocks: list[tuple[bool, list[str]]] = []  # (inside main/article, lines)
        self.drop = 0
        self.main = 0
        self.pre = 0
        self.heading: int | None = None
        self.line: list[str] = []
        self.title = ""
        self.in_title = False
        self.lines: list[tuple[bool, str]] = []
        self.seen_main = False
        self.tables = 0  # depth of <table>: the outermost is written as a Markdown table, the ones inside as text
        self.rows: list[list[str]] = []
        self.cell: list[str] | None = None
        self.caption = False  # the open cell is the table's caption

    def _flush(self) -> None:
        text = "".join(self.line)
        self.line = []
        if self.pre:
            for row in text.split("\n"):
                self.lines.append((self.main > 0, row.rstrip()))
            return
        text = re.sub(r"\s+", " ", text).strip()
        if not text:
            return
        if self.heading:
            text = "#" * self.heading + " " + text
        self.lines.append((self.main > 0, text))
        self.lines.append((self.main > 0, ""))

    def handle_starttag(self, tag, attrs):
        if tag == "title":
            self.in_title = True
        if tag in _DROP:
            if tag not in _VOID:
                self.drop += 1
            return
        if self.drop:
            return
        if tag == "table" or self.tables:
            self._table_start(tag)
            return
        if tag in _BLOCK:
            self._flush()
        if tag in _MAIN:
            self.main += 1
            self.seen_main = True
        if tag == "pre":
            self.pre += 1
            self.lines.append((self.main > 0, "```"))
        if re.fullmatch(r"h[1-6]", tag):
            self.heading = int(tag[1])
        if tag == "li":
            self.line.append("- ")

    def handle_endtag(self, tag):
        if tag == "title":
            self.in_title = False
        if tag in _DROP:
            self.drop = max(0, self.drop - 1)
            return
        if self.drop:
            return
        if self.tables:
            self._table_end(tag)
            return
        if tag in _BLOCK:
            self._flush()
        if re.fullmatch(r"h[1-6]", tag):
            self.heading = None
        if tag == "pre":
            self.pre = max(0, self.pre - 1)
            self.lines.append((self.main > 0, "```"))
            self.lines.append((self.main > 0, ""))
        if tag in _MAIN:
            self.main = max(0, self.main - 1)

    def handle_data(self, data):
        if self.in_title:
            self.title += data
        if self.drop:
            return
        if self.tables:
            if self.cell is not None:
                self.cell.append(data)
            return
        self.line.append(data)

    # A table is written as Markdown's: a row a line, its cells between bars, the first row the header (as the Word
    # and PDF readers write theirs), so an answer can quote a row with its column names. A table inside a cell is that
    # cell's text; a table of one column is a list of paragraphs (a layout box, not a table).
    def _table_start(self, tag: str) -> None:
        if tag == "table":
            if not self.tables:
                self._flush()
                self.rows = []
            self.tables += 1
        elif self.tables == 1 and tag == "tr":
            self._close_cell()  # </td> and </tr> may be left out: a new row or cell ends the one before
            self.rows.append([])
        elif self.tables == 1 and tag in ("td", "th", "caption"):
            self._close_cell()
            if not self.rows and tag != "caption":
                self.rows.append([])
            self.cell = []
            self.caption = tag == "caption"
        elif self.cell is not None and (tag in _BLOCK or tag in ("td", "th")):
            self.cell.append(" ")

    def _table_end(self, tag: str) -> None:
        if tag == "table":
            self.tables -= 1
            if not self.tables:
                self._write_table()
        elif self.tables == 1 and tag in ("td", "th", "caption", "tr"):
            self._close_cell()

    def _close_cell(self) -> None:
        if self.cell is None:
            return
        text = re.sub(r"\s+", " ", "".join(self.cell)).strip()
        if self.caption:  # the table's title, above it
            self.lines += [(self.main > 0, text), (self.main > 0, "")] if text else []
        else:
            self.rows[-1].append(text)
        self.cell = None

    def finish(self) -> None:
        """What an unclosed table held (a page cut short)."""
        if self.tables:
            self.tables = 0
            self._write_table()
        self._flush()

    def _write_table(self) -> None:
        self._close_cell()
        rows = [row for row in self.rows if any(row)]
        self.rows, self.cell = [], None
        inside = self.main > 0
        if not rows:
            return
        if len(rows) == 1 or max(len(row) for row in rows) == 1:
            for row in rows:
                self.lines += [(inside, " ".join(c for c in row if c)), (inside, "")]
            return
        self.lines += [(inside, line) for line in (*table_lines(rows), "")]


def html_to_text(html: str) -> tuple[str | None, str]:
    """(the page's <title>, its main text as Markdown-headed lines)."""
    parser = _Extractor()
    parser.feed(html)
    parser.close()
    parser.finish()
    lines = parser.lines
    if parser.seen_main:  # the page marks its main content: take only that
        lines = [(inside, text) for inside, text in lines if inside]
    out: list[str] = []
    for _, text in lines:
        if text == "" and (not out or out[-1] == ""):
            continue
        out.append(text)
    title = re.sub(r"\s+", " ", parser.title).strip() or None
    return title, "\n".join(out).strip("\n") + "\n"


def read_html(html: str, source: str) -> SourceDocument:
    title, text = html_to_text(html)
    # The first <h1> is the title when there is one (as in Markdown); else the page's <title>.
    has_h1 = re.search(r"^# ", text, re.M) is not None
    return SourceDocument(source=source, text=text, format="html", title=None if has_h1 else title)
