"""HTML text in, a Markdown-headed `SourceDocument` out: the page's main text with its headings, without navigation, scripts or boilerplate.

Built on the standard library's `html.parser` on purpose: the readers need the main text and the
heading structure (h1-h6 become `#` headings, so HTML is cut into sections like Markdown), which a
tag-level walk gives exactly; extractors such as trafilatura bring lxml and a dozen packages and
guess at the main text with scores tuned on news pages, which drops short reference sections.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser

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
        if tag in ("td", "th") and self.line:
            self.line.append(" | ")

    def handle_endtag(self, tag):
        if tag == "title":
            self.in_title = False
        if tag in _DROP:
            self.drop = max(0, self.drop - 1)
            return
        if self.drop:
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
        if not self.drop:
            self.line.append(data)


def html_to_text(html: str) -> tuple[str | None, str]:
    """(the page's <title>, its main text as Markdown-headed lines)."""
    parser = _Extractor()
    parser.feed(html)
    parser.close()
    parser._flush()
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
