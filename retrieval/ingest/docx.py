"""Word (.docx) bytes in, a Markdown-headed `SourceDocument` out: headings, numbered and bulleted lists and tables, in the document's order.

A .docx is a zip of XML parts; only three are read: the body (`word/document.xml`), the styles (which paragraph
style is a heading, at which level, or a list) and the numbering (whether a list is numbered or bulleted), plus the
title in the document's properties. The standard library reads them (python-docx needs lxml and would be one more
compiled dependency for a few hundred lines of XML walking). What a reader of the document sees is what gets
indexed: deleted tracked changes, field codes, a table of contents (it repeats the headings, each with a page
number), headers, footers and comments are left out; a text box's paragraphs follow the paragraph that anchors it.

Headings become `#` lines (a style named "heading N" / "标题 N", or a paragraph with an outline level): one "Heading
1" names the document, as a Markdown note's `#` does; under a "Title" paragraph, or where several "Heading 1" are the
chapters, the headings sit one level down and the document is named by its properties or its file), list paragraphs `1. ` or `- ` lines indented by their level, a table a Markdown table with its
first row as the header (a one-column table, a box around notes, is read as its paragraphs), so the chunker,
the answer's list and table handling and the citations see the same structure as in a Markdown note.

Guarded as a file from someone else: the XML parts read are capped in size (read, not trusted from the zip's
directory), a part declaring a DTD is refused (entity expansion), and a password-protected document or an old
binary .doc renamed (both are OLE compound files) is refused with what to do.
"""

from __future__ import annotations

import re
import zipfile
from dataclasses import dataclass, field

from kg.errors import InputError
from kg.ooxml import (
    UNREADABLE_MEMBER,
    core_title,
    open_package,
    parse_part,
    table_lines,
)
from kg.ooxml import attr as _attr
from kg.ooxml import child as _child
from kg.ooxml import local as _local
from retrieval.types import SourceDocument

__all__ = ["read_docx"]

_KIND = "Word document"
_HEADING_NAME = re.compile(r"^(?:heading|标题)\s*([1-9])$", re.IGNORECASE)
_UNNUMBERED = {"bullet", "none", ""}
# A style for code (LibreOffice's "Preformatted Text" and "Source Text", Word's "HTML Code" and "Plain Text", a
# house style "Code" / "代码"), or a run set in a monospaced font: what a Markdown note writes in backticks or fences.
_CODE_STYLE = re.compile(r"preformatted|source text|\bcode\b|html (?:code|keyboard|typewriter|sample)|plain text|"
                         r"macro text|代码", re.IGNORECASE)
_MONO_FONT = re.compile(r"mono|courier|consolas|menlo|monaco|lucida console|source code|cascadia|fira code|等宽",
                        re.IGNORECASE)
_CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff\u3000-\u303f\uff00-\uffef]")
_SKIPPED = {"del", "moveFrom", "instrText", "delInstrText", "fldChar", "footnoteReference", "endnoteReference",
            "commentReference", "Fallback", "pPr", "rPr", "sectPr", "tblPr", "trPr", "tcPr"}


@dataclass
class _Style:
    name: str = ""
    based_on: str | None = None
    outline: int | None = None  # 0-8; 9 is body text
    num: tuple[str, int] | None = None  # (numId, level) a list style numbers its paragraphs with


@dataclass
class _Parts:
    styles: dict[str, _Style] = field(default_factory=dict)
    code_runs: set[str] = field(default_factory=set)  # character styles for code
    formats: dict[tuple[str, int], str] = field(default_factory=dict)  # (numId, level) -> numFmt


def _numbering(pPr) -> tuple[str, int] | None:
    num_pr = _child(pPr, "numPr") if pPr is not None else None
    if num_pr is None:
        return None
    num_id, ilvl = _child(num_pr, "numId"), _child(num_pr, "ilvl")
    value = _attr(num_id, "val") if num_id is not None else None
    return (value, int(_attr(ilvl, "val") or 0) if ilvl is not None else 0) if value else None


def _outline(pPr) -> int | None:
    el = _child(pPr, "outlineLvl") if pPr is not None else None
    value = _attr(el, "val") if el is not None else None
    return int(value) if value and value.isdigit() else None


def _read_parts(zf: zipfile.ZipFile, label: str) -> _Parts:
    parts = _Parts()
    styles = parse_part(zf, "word/styles.xml", label, _KIND)
    for el in styles.iter() if styles is not None else ():
        if _local(el.tag) != "style" or not _attr(el, "styleId"):
            continue
        name, based, pPr = _child(el, "name"), _child(el, "basedOn"), _child(el, "pPr")
        if _attr(el, "type") == "character":
            rPr = _child(el, "rPr")
            if _CODE_STYLE.search(_attr(name, "val") or "" if name is not None else "") or _mono(rPr):
                parts.code_runs.add(_attr(el, "styleId"))
            continue
        if _attr(el, "type") != "paragraph":
            continue
        parts.styles[_attr(el, "styleId")] = _Style((_attr(name, "val") or "") if name is not None else "",
                                                    _attr(based, "val") if based is not None else None,
                                                    _outline(pPr), _numbering(pPr))
    numbering = parse_part(zf, "word/numbering.xml", label, _KIND)
    if numbering is not None:
        abstract: dict[str, dict[int, str]] = {}
        for el in numbering:
            if _local(el.tag) == "abstractNum":
                levels = abstract.setdefault(_attr(el, "abstractNumId") or "", {})
                for lvl in el:
                    fmt = _child(lvl, "numFmt") if _local(lvl.tag) == "lvl" else None
                    if fmt is not None:
                        levels[int(_attr(lvl, "ilvl") or 0)] = _attr(fmt, "val") or ""
        for el in numbering:
            ref = _child(el, "abstractNumId") if _local(el.tag) == "num" else None
            if ref is not None:
                for level, fmt in abstract.get(_attr(ref, "val") or "", {}).items():
                    parts.formats[(_attr(el, "numId") or "", level)] = fmt
    return parts


def _mono(rPr) -> bool:
    fonts = _child(rPr, "rFonts") if rPr is not None else None
    return fonts is not None and any(_MONO_FONT.search(_attr(fonts, key) or "") for key in ("ascii", "hAnsi"))


def _joined(segments: list[tuple[str, bool]], inline_code: bool) -> str:
    """Runs' text, code runs in backticks (`inline_code`): adjacent code runs are one span, and a span with Chinese
    in it is prose set in a monospaced font, not code."""
    merged: list[list] = []
    for text, code in segments:
        if merged and merged[-1][1] == code:
            merged[-1][0] += text
        else:
            merged.append([text, code])
    out = []
    for text, code in merged:
        body = text.strip()
        if inline_code and code and body and "`" not in body and "\n" not in body and not _CJK.search(body):
            out.append(text.replace(body, f"`{body}`", 1))
        else:
            out.append(text)
    return "".join(out)


def _is_title(style: _Style) -> bool:
    return style.name.lower() in ("title", "标题")


def _is_toc(el) -> bool:
    """A content control holding a table of contents (its properties name the gallery)."""
    props = _child(el, "sdtPr") if _local(el.tag) == "sdt" else None
    gallery = next((g for g in props.iter() if _local(g.tag) == "docPartGallery"), None) if props is not None else None
    return gallery is not None and "contents" in (_attr(gallery, "val") or "").lower()


def _style_chain(parts: _Parts, style_id: str | None):
    seen = set()
    while style_id and style_id in parts.styles and style_id not in seen and len(seen) < 20:
        seen.add(style_id)
        yield parts.styles[style_id]
        style_id = parts.styles[style_id].based_on


class _Writer:
    """The body's blocks in order -> Markdown lines."""

    def __init__(self, parts: _Parts) -> None:
        self.parts = parts
        self.shift = 0  # 1 when the headings sit under a title: see `heading_shift`
        self.lines: list[str] = []
        self.counters: dict[tuple[str, int], int] = {}
        self.in_list: str | None = None  # the list (numId) the last block was an item of: its next item continues it
        self.code: list[str] = []  # lines of code paragraphs in a row, written as one fenced block

    def blocks(self, container) -> None:
        for el in container:
            tag = _local(el.tag)
            if tag == "p":
                self.paragraph(el)
            elif tag == "tbl":
                self.table(el)
            elif tag in ("sdt", "sdtContent", "customXml", "ins", "moveTo") and not _is_toc(el):
                self.blocks(el)  # a content control's properties are passed over, its content read

    def _segments(self, el, boxes: list, code: bool = False) -> list[tuple[str, bool]]:
        """The text under `el` as (text, set as code) pieces, a piece per run."""
        out = []
        for child in el:
            tag = _local(child.tag)
            if tag in _SKIPPED:
                continue
            if tag == "t":
                out.append((child.text or "", code))
            elif tag in ("tab", "ptab"):
                out.append(("\t", code))
            elif tag in ("br", "cr"):
                out.append(("" if _attr(child, "type") == "page" else "\n", code))
            elif tag == "noBreakHyphen":
                out.append(("-", code))
            elif tag == "txbxContent":
                boxes.append(child)  # its paragraphs are blocks of their own, after this one
            elif tag == "r":
                rPr = _child(child, "rPr")
                style = _child(rPr, "rStyle") if rPr is not None else None
                out.extend(self._segments(child, boxes, _mono(rPr) or (style is not None and _attr(style, "val") in
                                                                       self.parts.code_runs)))
            else:
                out.extend(self._segments(child, boxes, code))
        return out

    def _text(self, el, boxes: list) -> str:
        return _joined(self._segments(el, boxes), inline_code=True)

    def _style(self, p) -> tuple:
        """A paragraph's properties and its style with the styles it is based on."""
        pPr = _child(p, "pPr")
        style_el = _child(pPr, "pStyle") if pPr is not None else None
        return pPr, list(_style_chain(self.parts, _attr(style_el, "val") if style_el is not None else None))

    def paragraph(self, p) -> None:
        boxes: list = []
        segments = self._segments(p, boxes)
        pPr, chain = self._style(p)
        level = self._heading_level(pPr, chain)
        raw = "".join(text for text, _ in segments)
        if level is None and (any(_CODE_STYLE.search(s.name) for s in chain) or (
                raw.strip() and all(code for text, code in segments if text.strip()) and not _CJK.search(raw))):
            if raw.strip() or self.code:  # a code block's blank line, not one before it
                self.code.extend(raw.replace("\t", "    ").replace("\u00a0", " ").rstrip().split("\n"))
            for box in boxes:
                self.blocks(box)
            return
        text = re.sub(r"[ \t\u00a0]+", " ", _joined(segments, inline_code=True)).strip()
        text = "\n".join(line.strip() for line in text.split("\n") if line.strip())
        if text and not any(s.name.lower().startswith("toc") for s in chain[:1]):
            if level is not None:
                self._block(f"{'#' * min(level, 6)} {' '.join(text.split())}")
            elif (num := _numbering(pPr) or next((s.num for s in chain if s.num), None)) and num[0] != "0":
                self._item(text, num)
            else:
                self._block(text)
        for box in boxes:
            self.blocks(box)

    def heading_shift(self, body) -> int:
        """1 when the document has a "Title" paragraph or several top-level headings (chapters: the document is
        named by its properties or its file), 0 when one top-level heading names it, as a Markdown note's `#` does."""
        tops = 0
        for p in (el for el in body.iter() if _local(el.tag) == "p"):
            pPr, chain = self._style(p)
            if chain and _is_title(chain[0]):
                return 1
            tops += self._heading_level(pPr, chain) == 1
        return int(tops > 1)

    def _heading_level(self, pPr, chain: list[_Style]) -> int | None:
        # The title is the one `#`; "Heading 1" (outline level 0) is `#` when it names the document, else `##`.
        for style in chain[:1]:
            if _is_title(style):
                return 1
            match = _HEADING_NAME.match(style.name)
            if match:
                return int(match.group(1)) + self.shift
        outline = _outline(pPr)
        if outline is None:
            outline = next((s.outline for s in chain if s.outline is not None), None)
        return outline + 1 + self.shift if outline is not None and outline < 9 else None

    def flush_code(self) -> None:
        while self.code and not self.code[-1].strip():
            self.code.pop()
        if self.code:
            self.lines.extend(["```", *self.code, "```", ""])
            self.in_list = None
        self.code = []

    def _block(self, text: str) -> None:
        self.flush_code()
        self.lines.extend(text.split("\n"))
        self.lines.append("")
        self.in_list = None

    def _item(self, text: str, num: tuple[str, int]) -> None:
        self.flush_code()
        num_id, level = num
        fmt = self.parts.formats.get(num, "bullet")
        for key in [k for k in self.counters if k[0] == num_id and k[1] > level]:
            del self.counters[key]  # a sub-list starts again under each item of its parent
        if fmt in _UNNUMBERED:
            marker = "- "
        else:
            self.counters[num] = self.counters.get(num, 0) + 1
            marker = f"{self.counters[num]}. "
        if self.in_list == num_id or (self.in_list and level):
            self.lines.pop()  # one list, not items each a paragraph
        indent = "   " * min(level, 5)
        first, *rest = text.split("\n")
        self.lines.append(f"{indent}{marker}{first}")
        self.lines.extend(f"{indent}{' ' * len(marker)}{line}" for line in rest)
        self.lines.append("")
        self.in_list = num_id

    def table(self, tbl) -> None:
        rows = []
        for tr in (r for r in tbl if _local(r.tag) == "tr"):
            cells = []
            for tc in (c for c in tr if _local(c.tag) == "tc"):
                boxes: list = []
                text = " ".join(" ".join(self._text(p, boxes).split()) for p in tc.iter() if _local(p.tag) == "p")
                cells.append(" ".join(text.split()))
                tcPr = _child(tc, "tcPr")
                span = _child(tcPr, "gridSpan") if tcPr is not None else None
                cells.extend([""] * (int(_attr(span, "val") or 1) - 1 if span is not None else 0))
            if any(cells):
                rows.append(cells)
        if not rows:
            return
        self.flush_code()
        if max(len(r) for r in rows) == 1:  # a box around paragraphs, not a table of values
            for tc in (c for tr in tbl if _local(tr.tag) == "tr" for c in tr if _local(c.tag) == "tc"):
                self.blocks(tc)
            return
        self._block("\n".join(table_lines(rows)))


def read_docx(raw: bytes, source: str, label: str) -> SourceDocument:
    with open_package(raw, label, _KIND, ".docx", "Word or WPS") as zf:
        try:
            body = _child(parse_part(zf, "word/document.xml", label, _KIND, required=True), "body")
            parts = _read_parts(zf, label)
            writer = _Writer(parts)
            if body is not None:
                writer.shift = writer.heading_shift(body)
                writer.blocks(body)
            writer.flush_code()
            title = core_title(zf, label)
        except UNREADABLE_MEMBER as exc:
            raise InputError(f"{label}: a part of the Word document cannot be read ({exc}); save it again as .docx") from None
    text = "\n".join(writer.lines).strip("\n")
    if not text.strip():
        raise InputError(f"{label}: the Word document holds no text (only pictures or drawings?)")
    # The first heading is the title, as in Markdown, unless the document's properties name one.
    return SourceDocument(source=source, text=text + "\n", format="docx", title=title)
