"""A measured section of a results file, written in place: the text from its start marker through its end marker is
replaced (the notes around it kept), or the section is added at the end when the file has none yet."""

from __future__ import annotations

from pathlib import Path


def put_section(path: Path, section: str, start: str, end: str) -> None:
    """Write `section` (it runs from `start` through `end`) into `path` in place of the one there."""
    text = path.read_text("utf-8") if path.exists() else ""
    if start in text and end in text:
        text = text[:text.index(start)] + section + text[text.index(end) + len(end):]
    else:
        text = text.rstrip("\n") + "\n\n" + section + "\n"
    path.write_text(text, "utf-8")
