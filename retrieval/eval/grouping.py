"""Benchmark passages in -> the documents a user would ingest (SourceDocuments) and a chunk -> passage map out.

Where passages carry `doc` (sections of one file, in order), they are put back together as one
Markdown document: the shared part of the passage titles is the document title, each passage
opens with its own heading (its first line when it is one, else the part of its title after the
document title), so the chunker cuts at every passage boundary and a chunk's lines name its
passage. Passages without `doc` stay one document each, titled with the passage title.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import dataclass, field

from retrieval.eval.datasets import Passage
from retrieval.types import SourceDocument

__all__ = ["GroupedCorpus", "group_passages"]

TITLE_SEPARATOR = " - "  # "<document title> - <section> > <subsection>"
SECTION_SEPARATOR = " > "


@dataclass
class GroupedCorpus:
    sources: list[SourceDocument] = field(default_factory=list)
    # source name -> (first line of each passage, passage id), in line order
    lines: dict[str, tuple[list[int], list[str]]] = field(default_factory=dict)
    single: dict[str, str] = field(default_factory=dict)  # source name -> passage id (one-passage documents)

    def passages_of(self, source: str, line_start: int, line_end: int) -> list[str]:
        """The passages a chunk's lines fall in (one, unless a passage boundary was not a cut)."""
        if source in self.single:
            return [self.single[source]]
        starts, ids = self.lines.get(source, ([], []))
        if not starts:
            return []
        first = max(0, bisect.bisect_right(starts, line_start) - 1)
        last = max(first, bisect.bisect_right(starts, line_end) - 1)
        return ids[first : last + 1]


def group_passages(name: str, passages: Sequence[Passage]) -> GroupedCorpus:
    out = GroupedCorpus()
    docs: dict[str, list[Passage]] = {}
    for p in passages:
        if p.doc:
            docs.setdefault(p.doc, []).append(p)
        else:
            source = f"{name}:{p.id}"
            out.sources.append(SourceDocument(source=source, text=p.text or p.title, format="txt", title=p.title or None))
            out.single[source] = p.id
    for doc, members in docs.items():
        source = f"{name}:{doc}"
        text, starts = _document_text(members)
        out.sources.append(SourceDocument(source=source, text=text, format="md"))
        out.lines[source] = (starts, [p.id for p in members])
    return out


def _document_title(members: Sequence[Passage]) -> str:
    first = members[0].title.split(TITLE_SEPARATOR)[0].strip()
    if first and all(p.title == first or p.title.startswith(first + TITLE_SEPARATOR) for p in members):
        return first
    return members[0].title or members[0].doc


def _document_text(members: Sequence[Passage]) -> tuple[str, list[int]]:
    title = _document_title(members)
    lines = [f"# {title}", ""]
    starts: list[int] = []
    open_headings: dict[int, str] = {}  # level -> the heading last opened at that level
    last_heading = ""

    def emit(level: int, text: str) -> None:
        nonlocal last_heading
        last_heading = "#" * level + " " + text
        lines.extend([last_heading, ""])
        open_headings[level] = text
        for deeper in [lv for lv in open_headings if lv > level]:
            del open_headings[deeper]

    for i, p in enumerate(members):
        body = p.text.strip("\n")
        first = next((line for line in body.split("\n") if line.strip()), "")
        section = p.title[len(title) + len(TITLE_SEPARATOR):] if p.title.startswith(title + TITLE_SEPARATOR) else ""
        parts = [part.strip() for part in section.split(SECTION_SEPARATOR)] if section else []
        starts.append(len(lines) + 1)
        own = _heading_level(first)
        if own:
            # The passage opens with its heading; its title may name the parents that an earlier
            # (dropped or empty) passage would have opened: open them first, as the source did.
            for depth, part in enumerate(parts[:-1]):
                level = own - (len(parts) - 1) + depth
                if level >= 2 and open_headings.get(level) != part:
                    emit(level, part)
            open_headings[own] = first.lstrip("#").strip()
            last_heading = first.strip()
        elif parts:
            for depth, part in enumerate(parts):
                level = min(6, 2 + depth)
                if depth == len(parts) - 1 or open_headings.get(level) != part:
                    emit(level, part)
        elif i > 0:
            # A passage that continues the previous section: the same heading again keeps the
            # section path and still makes the chunker cut here.
            lines.extend([last_heading or f"## {title}", ""])
        block = body.split("\n")
        if sum(1 for line in block if line.lstrip().startswith("```")) % 2:
            block.append("```")  # an unclosed code fence would hide every later heading
        lines += block + [""]
    return "\n".join(lines), starts


def _heading_level(line: str) -> int:
    stripped = line.lstrip()
    hashes = len(stripped) - len(stripped.lstrip("#"))
    return hashes if 1 <= hashes <= 6 and stripped[hashes : hashes + 1] == " " else 0
