"""A passage line as written -> the line a reader sees: the markup documentation sites put in Markdown, which no
answer should quote, taken out before the answer stage cuts the passage into pieces.

Docs are rarely plain Markdown. Docusaurus and VuePress write admonitions between `:::tip 注意` and `:::`, MDX
pages hold components (`<AnchorAlias id="partition" />`, `<Tabs>`), GitHub pages fold output into
`<details><summary>期望输出</summary>`, Hugo and Jekyll sites call shortcodes (`{{% panel header="Coding" %}}`,
`{% include x.html %}`), and links point at other pages of the site (`[参考文档](/reference/sql/overview.md)`), a
path that means nothing where the answer is read. Quoted as they are, these became answer lines of their own
(":::tip。", "<AnchorAlias id="selector-type" />。") or buried a sentence's words in a path.

Only what is markup goes: an HTML element or a component (a capitalised name) by its tag, never a placeholder
such as `<path_to_file>` or `<YOUR_S3_BUCKET>`, and nothing inside an inline code span. Links are written out when
quoted (`without_links`), an Obsidian `[[note|alias]]` as Obsidian shows it.
"""

from __future__ import annotations

import re

__all__ = ["FENCE", "reader_line", "without_links"]

# A fenced code block's opening (or closing) line and its language: "```bash", "~~~".
FENCE = re.compile(r"^\s*(`{3,}|~{3,})\s*([\w+#.-]*)")
# A line that is markup alone: an admonition's fence ("::: warning 警告", ":::"), a shortcode or template tag, an
# HTML comment, a folded block's label ("<summary>期望输出</summary>": what the page shows to unfold it).
_MARKUP_LINE = re.compile(r"^\s*(?::{3,}.*|\{\{[<%].*[%>]\}\}|\{%.*%\}|<!--.*-->|<summary>.*</summary>)\s*$",
                          re.IGNORECASE)
HTML_ELEMENTS = frozenset("""a abbr article aside audio b blockquote br button caption center cite code col colgroup
    dd del details dfn div dl dt em figcaption figure font footer h1 h2 h3 h4 h5 h6 header hr i iframe img input ins
    kbd label li main mark nav ol p picture pre q s samp section small source span strong sub summary sup table tbody
    td tfoot th thead tr u ul var video wbr""".split())
_TAG = re.compile(r"</?([A-Za-z][\w.-]*)(?:\s[^<>]*)?/?>")
_COMPONENT = re.compile(r"[A-Z][a-z0-9]+(?:[A-Z.][A-Za-z0-9]*)*")  # AnchorAlias, Tabs, TabItem, Foo.Bar
_IMAGE = re.compile(r"!\[[^\]]*\]\([^)]*\)")
_LINK = re.compile(r"\[([^\[\]]+)\]\(\s*<?([^)\s>]*)>?(?:\s+[\"'][^)]*[\"'])?\s*\)")
_WEB = re.compile(r"(?:https?|ftp)://|mailto:", re.IGNORECASE)
# An Obsidian (or MediaWiki) link to another note, "[[Photo workflow]]", "[[router-setup|the router notes]]",
# "[[Note#Heading]]"; "![[scan.png]]" embeds a file. Not a TOML table header standing alone ("[[storage.providers]]").
_WIKILINK = re.compile(r"(!?)\[\[([^\[\]|\n]+?)(?:\|([^\[\]\n]+?))?\]\]")
_PICTURE = re.compile(r"\.(?:png|jpe?g|gif|svg|webp|bmp|excalidraw)\s*$", re.IGNORECASE)
_TOML_TABLE = re.compile(r"^\s*\[\[([A-Za-z0-9_.\-\"']+)\]\]\s*$")
_CODE_SPAN = re.compile(r"(`+)(.+?)\1")


def _markup_tag(m: re.Match) -> str:
    name = m.group(1)
    if name.lower() in HTML_ELEMENTS or _COMPONENT.fullmatch(name):
        return " " if name.lower() == "br" else ""  # a line break inside a table cell parts its words
    return m.group(0)


def _link(m: re.Match) -> str:
    text, target = m.group(1), m.group(2)
    return m.group(0) if _WEB.match(target) else text


def _outside_code(line: str, change) -> str:
    """`change` applied to the parts of `line` outside its inline code spans."""
    out, at = [], 0
    for m in _CODE_SPAN.finditer(line):
        out += [change(line[at:m.start()]), m.group(0)]
        at = m.end()
    return "".join(out + [change(line[at:])])


def reader_line(line: str) -> str:
    """A line of a passage outside its code blocks, without its markup ('' when it was markup alone). Links stay: the
    answer stage reads them (a sentence that only links elsewhere is a pointer) and `without_links` writes them out."""
    if _MARKUP_LINE.match(line):
        return ""
    if "<" not in line:
        return line
    cleaned = _outside_code(line, lambda part: _TAG.sub(_markup_tag, part))
    return cleaned if cleaned.strip() else ""


def _wikilink(m: re.Match) -> str:
    if m.group(1) or _PICTURE.search(m.group(2)):
        return ""  # an embedded file, a picture ("![[scan.png]]", its "!" cut off with a sentence): nothing to read
    target, shown = m.group(2).strip(), (m.group(3) or "").strip()
    return shown or target.replace("#", " > ")  # what Obsidian shows: the alias, else the note (and its heading)


def without_links(text: str) -> str:
    """`text` as an answer quotes it: a picture left out, a link to another page of the site (or another note, a
    `[[wikilink]]`) as its text; a web address a reader can open stays a link."""
    header = _TOML_TABLE.match(text)
    if "[[" in text and not (header and not _PICTURE.search(header.group(1))):
        text = _outside_code(text, lambda part: _WIKILINK.sub(_wikilink, part))
    return _LINK.sub(_link, _IMAGE.sub("", text)) if "](" in text else text
