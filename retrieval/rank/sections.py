"""The fused ranking + the best hit's document in -> the same ranking with the section the best hit names by its heading brought up to place NAMED_PLACE + 1.

Documentation introduces its sections by name. "要防止元数据变更，你可以暂停 Procedure Manager" opens a page whose section
"暂停 Procedure Manager" holds the steps; "在以下情况下必须手动启用 Metasrv 的维护模式" stands above a section "启用维护模式"
on another page of the same document. A question asking how to do it finds the introduction (it says what the question
says) and not the steps (they say `curl -X POST` and a path). When the best hit's text names, word for word, the
heading of another section of its document, that section is where the text points: it comes in at place
NAMED_PLACE + 1 (or moves up to it), unless one of the first NAMED_HEAD hits is in it already, saying why
(`why.named`). The others move down one; scores stay in order. One catalog look-up a question (the best hit's
document's sections); nothing changes when no heading is named.
"""

from __future__ import annotations

import re
from collections.abc import Collection

from retrieval.catalog.anchors import chunk_parents, document_outline
from retrieval.index.analysis import normalize_text
from retrieval.rank.fusion import Fused, bring_to

__all__ = ["NAMED_HEAD", "NAMED_PLACE", "NAMED_WORDS", "heading_words", "named_section"]

NAMED_PLACE = 3  # the named section comes in after this many hits (as the second search in meaning's chunk does)
NAMED_HEAD = 5  # ... unless one of the first NAMED_HEAD hits is in it already
# A heading named must weigh this many words, a Chinese character half a word ("启用维护模式", "暂停 Procedure Manager",
# "People Business Partners"): a text says "数据同步", "Interim" or "Promotions" without pointing at the section of that
# name. Chosen on ops_dev_zh's odd question ids (2 words: R@5 with vectors 76.7, one concept question lost; 3: 77.9; 4:
# no heading named), then measured on the even ones, gitlab_handbook_dev and the other sets (bench/RESULTS.md).
NAMED_WORDS = 3
_LATIN_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")
_HAN = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")
_MARKUP = re.compile(r"\{#[^}]*\}|[`*]")  # an anchor ({#product-groups}), code and bold marks (not `_`: max_connections)


def heading_words(heading: str) -> float:
    """How many words a heading weighs: its Latin words and numbers, and half of its Chinese characters."""
    return len(_LATIN_WORD.findall(heading)) + len(_HAN.findall(heading)) / 2


def _heading(section: str) -> str:
    """The last heading of a heading path, as its text reads (markup left out)."""
    return " ".join(_MARKUP.sub(" ", section.rsplit(" > ", 1)[-1]).split())


def _folded(text: str) -> str:
    return " ".join(normalize_text(text).lower().split())


def named_section(store, fused: list[Fused], hidden: Collection[str], parent_of: dict[str, str]) -> list[Fused]:
    """`fused` with the first section (in document order) of the best hit's document whose heading the best hit's
    text names brought up to place NAMED_PLACE + 1; unchanged when there is none, or when it is among the first
    NAMED_HEAD hits. `hidden`: chunks of versions not in force, never brought in."""
    if not fused:
        return fused
    best = store.chunks([fused[0].id]).get(fused[0].id)
    if best is None:
        return fused
    text = _folded(best.text)
    taken = None  # the first NAMED_HEAD hits' sections, looked up once a heading is named
    seen: set[str] = set()
    for chunk_id, parent, section in document_outline(store.db, best.doc_id):
        if chunk_id in hidden or section in seen:
            continue
        seen.add(section)  # a section's first chunk in force stands for it
        if not section or section == best.section or best.section.startswith(section + " > "):
            continue
        heading = _heading(section)
        if heading_words(heading) < NAMED_WORDS or _folded(heading) not in text:
            continue
        if taken is None:
            head = [f.id for f in fused[:NAMED_HEAD]]
            looked_up = chunk_parents(store.db, [cid for cid in head if cid not in parent_of])
            taken = {parent_of.get(cid) or looked_up.get(cid) or cid for cid in head}
        if parent in taken:
            continue
        return bring_to(fused, chunk_id, NAMED_PLACE, named={"heading": heading})
    return fused
