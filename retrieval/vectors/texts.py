"""A chunk (or an entity label) in -> the text its vector is made of and that text's key out.

A vector is keyed by the sha256 of exactly what was embedded (the document title, the heading path and the
chunk text), so an unchanged chunk keeps its vector across versions and re-ingests, and a changed title or
heading is embedded again.
"""

from __future__ import annotations

import hashlib

__all__ = ["label_text", "passage_text", "vector_key"]


def passage_text(title: str, section: str, text: str) -> str:
    head = " / ".join(part for part in (title.strip(), section.strip()) if part)
    return f"{head}\n{text}" if head else text


def label_text(label: str, aliases: list[str] | tuple[str, ...] = ()) -> str:
    """An entity's label with its other names: what a question's words are compared with for query expansion."""
    names = [label] + [a for a in aliases if a and a != label]
    return " / ".join(names)


def vector_key(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
