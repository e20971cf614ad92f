"""A document's chunks + their entity mentions -> section anchors: (chunk, entity, strength, reason) for the sections *about* an entity.

Documentation says what a section is about in a few fixed ways, and these are the rules, from
strongest to weakest:

- the heading path names the entity: a heading that *is* the key (`### max-open-files`) is the
  strongest; a heading that names it in a longer heading ("使用 X 导出数据", "Y 简介", "Configuring
  Y") a little less; a shallower heading of the path less than the deepest;
- the document title names it (the whole title, or inside a longer title): every chunk of the
  document, its opening chunk the most;
- the chunk defines it: a table row or a definition-list item whose first cell is the key, or a
  sentence that opens with it ("X 是…", "X is …", "X 用于…");
- a prominent mention: named in the chunk's first sentence and again later. How specific such a
  mention is (an entity named in hundreds of chunks anchors nothing by it) is judged at query time
  (`retrieval.graph.expand`), because at ingest the rest of the corpus is not known yet.

Only entities the linker found (its surfaces: labels and aliases) are anchored.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from retrieval.index.analysis import normalize_text
from retrieval.types import Chunk, Mention

__all__ = ["Anchor", "MENTION_REASON", "anchor_chunks", "anchor_document"]

HEADING_IS = 1.0  # the deepest heading is the key itself
HEADING_NAMES = 0.8  # the deepest heading names it inside a longer heading
LEVEL_DECAY = 0.7  # per heading level above the deepest
TITLE_IS = 0.9
TITLE_NAMES = 0.7
LATER_CHUNK = 0.7  # a title anchor on a chunk other than the document's first
DEFINES = 0.7
PROMINENT = 0.35
WHOLE = 0.85  # a name covering this share of a heading (without markup) is the heading
MENTION_REASON = "prominent mention"
FIRST_SENTENCE = 120  # characters
_MARKUP = re.compile(r"[`*_~\[\]()<>\"'“”‘’「」【】:：,，.。!！?？/\\|#-]+")
_DEFINING_VERBS = re.compile(r"^\s*[`*_\"“「]*\s*(?:是|即|指|表示|用于|用来|定义为|为|,|，|:|：|\(|（|is\b|are\b|means\b|refers to\b|specifies\b|sets\b|controls\b|defines\b)", re.I)
_SENTENCE_END = re.compile(r"[。！？!?；;\n]|\.\s")
_QUALIFIER = re.compile(r"[\s`*_]*(?:[A-Za-z0-9_-]+\.)*")  # markup, then `section.` qualifiers
_CELL_END = re.compile(r"[`*_]*\s*\|")  # markup, padding, the cell's end


@dataclass(frozen=True)
class Anchor:
    chunk_id: str
    entity: str
    strength: float
    reason: str

    def row(self) -> tuple[str, str, float, str]:
        return (self.chunk_id, self.entity, round(self.strength, 4), self.reason)


def anchor_chunks(
    title: str,
    chunks: Sequence[Chunk],
    mentions: Sequence[Sequence[Mention]],
    link: Callable[[Sequence[str]], list[list[Mention]]],
) -> list[Anchor]:
    """Anchors of one document; `link` is the linker's `link_many` (used on the title and headings)."""
    headings = sorted({h for c in chunks for h in _heading_parts(c.section)} | {title})
    named = dict(zip(headings, list(link(headings)), strict=True))
    best: dict[tuple[str, str], Anchor] = {}

    def add(chunk: Chunk, entity: str, strength: float, reason: str) -> None:
        key = (chunk.chunk_id, entity)
        if key not in best or best[key].strength < strength:
            best[key] = Anchor(chunk.chunk_id, entity, strength, reason)

    first_ordinal = min((c.ordinal for c in chunks), default=0)
    for chunk, found in zip(chunks, mentions, strict=True):
        later = 1.0 if chunk.ordinal == first_ordinal else LATER_CHUNK
        for entity, surface, whole in _names(title, named.get(title, ())):
            add(chunk, entity, (TITLE_IS if whole else TITLE_NAMES) * later,
                f"title {'is' if whole else 'names'} {surface}")
        parts = _heading_parts(chunk.section)
        for depth, heading in enumerate(reversed(parts)):
            for entity, surface, whole in _names(heading, named.get(heading, ())):
                strength = (HEADING_IS if whole else HEADING_NAMES) * LEVEL_DECAY ** depth
                add(chunk, entity, strength, f"heading {'is' if whole else 'names'} {surface}")
        defined = _definitions(chunk.text, found)
        # A table of twenty keys is about each of them a little: the strength is shared.
        share = DEFINES / math.sqrt(len({e for e, _, _ in defined}) or 1)
        for entity, surface, how in defined:
            add(chunk, entity, share, f"{how} defines {surface}")
        for entity, surface in _prominent(chunk.text, found):
            add(chunk, entity, PROMINENT, f"{MENTION_REASON} of {surface}")
    return list(best.values())


def _heading_parts(section: str) -> list[str]:
    return [p.strip() for p in section.split(" > ") if p.strip()] if section else []


def _names(text: str, found: Sequence[Mention]) -> list[tuple[str, str, bool]]:
    """(entity, surface, whether the name is the whole text) for each entity named in a heading/title."""
    bare = "".join(_MARKUP.sub("", normalize_text(text)).casefold().split())
    out = []
    for m in found:
        surface = "".join(_MARKUP.sub("", normalize_text(m.surface)).casefold().split())
        whole = bool(bare) and len(surface) >= WHOLE * len(bare)
        out.append((m.entity, m.surface, whole))
    return out


def _definitions(text: str, found: Sequence[Mention]) -> list[tuple[str, str, str]]:
    """Entities the chunk defines: a table row or list item that starts with the name, or a sentence
    opening with it and a defining verb."""
    out = []
    line_starts = [0] + [i + 1 for i, ch in enumerate(text) if ch == "\n"]
    for m in found:
        line_start = max(s for s in line_starts if s <= m.start)
        before = text[line_start : m.start]
        lead = before.strip()
        after = text[m.end : m.end + 12]
        # A table row's first cell, however far an aligned table pads it, and whether it writes the
        # key alone or qualified by its section (`wal.num_topics` for the key num_topics).
        line_end = text.find("\n", m.end)
        rest = text[m.end : line_end if line_end >= 0 else len(text)]
        if lead.startswith("|") and _QUALIFIER.fullmatch(lead[1:]) and _CELL_END.match(rest):
            out.append((m.entity, m.surface, "table row"))
        elif re.fullmatch(r"\s*(?:[-*+]|\d+[.)])\s+[`*_\[]*", before) and re.match(r"^[`*_\]]*\s*(?:[:：—–-]|\(|（|是|\s+-)", after):
            out.append((m.entity, m.surface, "list item"))
        elif _opens_sentence(text, m.start) and _DEFINING_VERBS.match(after):
            out.append((m.entity, m.surface, "sentence"))
    return out


def _only_markup(text: str) -> bool:
    return not text.strip(" `*_")


def _opens_sentence(text: str, start: int) -> bool:
    """Only markup between the last sentence end (or the chunk start) and `start`."""
    before = text[max(0, start - 60) : start]
    return _only_markup(re.split(r"[。！？!?；;\n]|\.\s", before)[-1])


def _prominent(text: str, found: Sequence[Mention]) -> list[tuple[str, str]]:
    """Entities named in the first sentence and again later in the chunk."""
    match = _SENTENCE_END.search(text[:FIRST_SENTENCE])
    first_end = match.end() if match else min(len(text), FIRST_SENTENCE)
    counts: dict[str, int] = {}
    early: dict[str, str] = {}
    for m in found:
        counts[m.entity] = counts.get(m.entity, 0) + 1
        if m.start < first_end:
            early.setdefault(m.entity, m.surface)
    return [(e, s) for e, s in early.items() if counts[e] >= 2]


def anchor_document(db, title: str, chunks: Sequence[Chunk], mentions: Sequence[Sequence[Mention]],
                    link: Callable[[Sequence[str]], list[list[Mention]]]) -> int:
    """Decide and store (replacing older ones) the anchors of one document's chunks; returns how many."""
    from retrieval.catalog.anchors import clear_anchors, put_anchors

    clear_anchors(db, [c.chunk_id for c in chunks])
    anchors = anchor_chunks(title, chunks, mentions, link)
    put_anchors(db, (a.row() for a in anchors))
    return len(anchors)
