"""PowerPoint (.pptx) bytes in, a Markdown-headed `SourceDocument` out: a section a slide (`## slide title`), its text
boxes, bullets and tables in order, its speaker notes after them, and the slide number of every line (`line_pages`),
so a citation says which slide to open.

Training decks, architecture reviews and release briefings are where much of a team's knowledge is written down, often
only there; the speaker notes hold what the bullets leave out. Read with the standard library as `docx.py` reads Word
(`kg/ooxml.py`: parts capped, DTDs refused, protected or old binary files told apart): the slides in the deck's order
(`presentation.xml`), each slide's shapes in their order on the slide with the title first, groups opened, and its notes
page's body. A body placeholder's paragraphs are bullets at their outline level (`- `, or `1. ` where the slide numbers
them) unless the slide turns the bullet off; a text box's are paragraphs unless it gives them bullets. Left out,
as a reader of the deck does not see them or they repeat: hidden slides, slide numbers, dates and footers, pictures
and charts. The document is named by the deck's properties, else by its title slide (the first slide's centred
title, whose subtitle then opens the document), else by its file.
"""

from __future__ import annotations

import posixpath
import zipfile

from kg.errors import InputError
from kg.ooxml import (
    UNREADABLE_MEMBER,
    attr,
    child,
    core_title,
    local,
    open_package,
    parse_part,
    table_lines,
)
from retrieval.types import SourceDocument

__all__ = ["read_pptx"]

_KIND = "PowerPoint deck"
_TITLES = {"title", "ctrTitle"}
_LEFT_OUT = {"sldNum", "dt", "ftr", "sldImg", "hdr"}  # placeholders whose text repeats on every slide
TITLE_CHARS = 80  # a slide's title drawn as a text box: one line, at most this long
_RELS = "http://schemas.openxmlformats.org/officeDocument/2006/relationships/"


def read_pptx(raw: bytes, source: str, label: str) -> SourceDocument:
    with open_package(raw, label, _KIND, ".pptx", "PowerPoint or WPS") as zf:
        try:
            lines, pages, first = _deck(zf, label)
            title = core_title(zf, label) or first
        except UNREADABLE_MEMBER as exc:
            raise InputError(f"{label}: a part of the deck cannot be read ({exc}); save it again as .pptx") from None
    if not any(line.strip() for line in lines):
        raise InputError(f"{label}: the deck holds no text (its slides are empty, pictures or hidden)")
    if first and title != first:  # named by its properties: the title slide's words are still the deck's text
        lines, pages = [first, "", *lines], [1, 1, *pages]
    return SourceDocument(source=source, text="\n".join(lines), format="pptx", title=title, line_pages=tuple(pages))


def _deck(zf: zipfile.ZipFile, label: str) -> tuple[list[str], list[int], str | None]:
    """The deck's lines, the slide number of each, and the title slide's title (None: no title slide)."""
    presentation = parse_part(zf, "ppt/presentation.xml", label, _KIND, required=True)
    targets = _targets(zf, "ppt/presentation.xml", label)
    listed = child(presentation, "sldIdLst")
    lines: list[str] = []
    pages: list[int] = []
    deck_title = None
    for number, slide_id in enumerate(listed if listed is not None else (), start=1):
        rel = next((v for k, v in slide_id.attrib.items() if k.startswith("{") and local(k) == "id"), "")  # r:id, not id
        part = targets.get(rel)
        root = parse_part(zf, part, label, _KIND) if part else None
        if root is None or (attr(root, "show") or "1").lower() in ("0", "false"):
            continue  # a hidden slide, or one the package lacks
        title, body = _slide(root)
        notes = _notes(zf, part, label)
        if number == 1 and title and _is_title_slide(root):
            deck_title, heading = title, []  # the title slide names the deck; its subtitle opens it
        else:
            heading = [f"## {title or f'Slide {number}'}", ""]
        block = [*heading, *body, *(["", *notes] if notes and body else notes), ""]
        lines += block
        pages += [number] * len(block)
    return lines, pages, deck_title


def _targets(zf: zipfile.ZipFile, part: str, label: str, kind: str = "") -> dict[str, str]:
    """Relationship id -> the part it points to (of `kind`, a relationship type's last word, when given)."""
    folder, name = posixpath.split(part)
    rels = parse_part(zf, f"{folder}/_rels/{name}.rels", label, _KIND)
    out = {}
    for rel in rels if rels is not None else ():
        target, rel_type = attr(rel, "Target") or "", attr(rel, "Type") or ""
        if (attr(rel, "TargetMode") or "") == "External" or (kind and rel_type != _RELS + kind):
            continue
        out[attr(rel, "Id") or ""] = target.lstrip("/") if target.startswith("/") else \
            posixpath.normpath(posixpath.join(folder, target))
    return out


def _is_title_slide(root) -> bool:
    return any(attr(ph, "type") == "ctrTitle" for ph in root.iter() if local(ph.tag) == "ph")


def _slide(root) -> tuple[str, list[str]]:
    """The slide's title and the lines of everything else on it. Without a title placeholder (a deck drawn with text
    boxes), the topmost shape holding one short line is the title, if something else on the slide holds text."""
    tree = child(child(root, "cSld"), "spTree") if child(root, "cSld") is not None else None
    shapes = [(shape, kind) for shape in _shapes(tree) if (kind := _placeholder(shape)) not in _LEFT_OUT]
    titled = next((shape for shape, kind in shapes if kind in _TITLES), None)
    if titled is None:
        texts = [(shape, paragraphs) for shape, _ in shapes if (paragraphs := _texts(shape))]
        top = min(texts, key=lambda found: _top(found[0]), default=None)
        if top is not None and len(texts) > 1 and len(top[1]) == 1 and len(top[1][0]) <= TITLE_CHARS:
            titled = top[0]
    title, lines = " ".join(_texts(titled)) if titled is not None else "", []
    for shape, kind in shapes:
        if shape is titled:
            continue
        found = _shape_lines(shape, bullets=kind is not None and kind not in ("subTitle", *_TITLES))
        if found:
            lines += ([""] if lines else []) + found
    return title, lines


def _top(shape) -> int:
    """How far down the slide the shape starts (its offset; shapes without one count as at the top)."""
    off = next((el for el in shape.iter() if local(el.tag) == "off"), None)
    value = attr(off, "y") if off is not None else None
    return int(value) if value and value.lstrip("-").isdigit() else 0


def _texts(shape) -> list[str]:
    return [text for p in _paragraphs(shape) if (text := " ".join(_paragraph_text(p).split()))]


def _notes(zf: zipfile.ZipFile, slide_part: str, label: str) -> list[str]:
    """The speaker notes of the slide: the text on its notes page but the slide's image, number, header and footer."""
    for part in _targets(zf, slide_part, label, "notesSlide").values():
        root = parse_part(zf, part, label, _KIND)
        tree = child(child(root, "cSld"), "spTree") if root is not None and child(root, "cSld") is not None else None
        return [line for shape in _shapes(tree) if _placeholder(shape) not in _LEFT_OUT
                for line in _shape_lines(shape, bullets=False)]
    return []


def _shapes(tree):
    """The shapes that hold text, groups opened, in their order on the slide."""
    for shape in tree if tree is not None else ():
        tag = local(shape.tag)
        if tag == "grpSp":
            yield from _shapes(shape)
        elif tag in ("sp", "graphicFrame"):
            yield shape


def _placeholder(shape) -> str | None:
    """The placeholder type of a shape ("body" for a content placeholder without one), None for a text box or table."""
    for el in shape.iter():
        if local(el.tag) == "ph":
            return attr(el, "type") or "body"
    return None


def _shape_lines(shape, bullets: bool) -> list[str]:
    table = next((el for el in shape.iter() if local(el.tag) == "tbl"), None)
    if table is not None:
        rows = [[" ".join(" ".join(_paragraph_text(p) for p in _paragraphs(tc)).split()) for tc in tr
                 if local(tc.tag) == "tc"] for tr in table if local(tr.tag) == "tr"]
        rows = [row for row in rows if any(row)]
        return table_lines(rows) if rows else []
    out: list[str] = []
    counters: dict[int, int] = {}
    for p in _paragraphs(shape):
        text = " ".join(_paragraph_text(p).split())
        if not text:
            continue
        props = child(p, "pPr")
        level = int(attr(props, "lvl") or 0) if props is not None else 0
        marks = {local(el.tag) for el in props} if props is not None else set()
        if "buAutoNum" in marks:
            counters = {lv: n for lv, n in counters.items() if lv <= level}
            counters[level] = counters.get(level, 0) + 1
            out.append(f"{'   ' * level}{counters[level]}. {text}")
        elif (bullets and "buNone" not in marks) or "buChar" in marks:
            out.append(f"{'  ' * level}- {text}")
        else:
            out += ([""] if out else []) + [text]
    return out


def _paragraphs(el):
    body = next((b for b in el.iter() if local(b.tag) == "txBody"), None)
    return [p for p in body if local(p.tag) == "p"] if body is not None else []


def _paragraph_text(p) -> str:
    """A paragraph's runs and fields, a line break as a space."""
    out = []
    for run in p:
        tag = local(run.tag)
        if tag in ("r", "fld"):
            t = child(run, "t")
            out.append((t.text or "") if t is not None else "")
        elif tag == "br":
            out.append(" ")
    return "".join(out)
