"""A pack's `PACK.md` in -> a `PackCard` out: id, title, what it covers and does not cover, entry files, key terms, language.

The card is written by a person, in either of two forms (or both: front matter wins per field):

    ---                                  # PACK.md
    id: ops
    title: Payment platform runbooks
    language: en
    covers: [deploying the payment services, on-call procedures]
    does not cover: [the mobile app, billing questions]
    entry files: [README.md]
    key terms: [payment-gateway, settlement]
    ---

or Markdown sections: `# <title>`, then `## Covers`, `## Does not cover`, `## Entry files`,
`## Key terms`, `## Language` (`## Id` too), each a bullet list or a comma-separated line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from kg.errors import InputError
from kg.files import read_text, without_controls, yaml_without_aliases

__all__ = ["CARD_FILE", "PackCard", "parse_card", "read_card", "valid_pack_id"]

CARD_FILE = "PACK.md"
_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
# Field names as a person may write them (front matter keys or section headings), folded.
_FIELDS = {
    "id": "id", "title": "title", "name": "title", "language": "language", "lang": "language", "语言": "language",
    "covers": "covers", "cover": "covers", "涵盖": "covers", "覆盖": "covers",
    "does not cover": "does_not_cover", "doesn't cover": "does_not_cover", "not covered": "does_not_cover",
    "does_not_cover": "does_not_cover", "不涵盖": "does_not_cover", "不覆盖": "does_not_cover",
    "entry files": "entry_files", "entry_files": "entry_files", "entry": "entry_files", "入口": "entry_files",
    "入口文件": "entry_files", "key terms": "key_terms", "key_terms": "key_terms", "keywords": "key_terms",
    "关键词": "key_terms", "术语": "key_terms",
}
_LISTS = ("covers", "does_not_cover", "entry_files", "key_terms")


@dataclass(frozen=True)
class PackCard:
    id: str
    title: str
    covers: tuple[str, ...] = ()
    does_not_cover: tuple[str, ...] = ()
    entry_files: tuple[str, ...] = ()
    key_terms: tuple[str, ...] = ()
    language: str = ""
    extra: dict = field(default_factory=dict, compare=False)  # front matter keys the card format does not know

    def to_json(self) -> dict:
        return {"id": self.id, "title": self.title, "covers": list(self.covers),
                "does_not_cover": list(self.does_not_cover), "entry_files": list(self.entry_files),
                "key_terms": list(self.key_terms), "language": self.language}


def valid_pack_id(pack_id: str) -> str:
    if not _ID.match(pack_id or ""):
        raise InputError(
            f"'{pack_id}' is not a usable pack id: use letters, digits, '-', '_' or '.', starting with a letter "
            "or digit (at most 64 characters), e.g. team-runbooks"
        )
    return pack_id


def read_card(folder: Path, default_id: str | None = None) -> PackCard:
    """The card of a pack folder; a folder without PACK.md gets a card with only its id and title."""
    path = Path(folder) / CARD_FILE
    if not path.is_file():
        name = default_id or Path(folder).name
        return PackCard(id=name, title=name)
    text = read_text(path, "save the card as UTF-8")
    return parse_card(text, default_id=default_id or Path(folder).name, where=path.name)


def parse_card(text: str, default_id: str, where: str = CARD_FILE) -> PackCard:
    values: dict[str, object] = {}
    extra: dict = {}
    body = text
    match = re.match(r"^---[ \t]*\r?\n(.*?)\r?\n---[ \t]*(?:\r?\n|$)", text, re.S)
    if match:
        front = _front_matter(match.group(1), where)
        body = text[match.end():]
        for key, value in front.items():
            name = _FIELDS.get(str(key).strip().lower().replace("-", " "))
            if name is None:
                extra[str(key)] = value
            else:
                values[name] = value
    for name, value in _sections(body).items():
        values.setdefault(name, value)
    pack_id = str(values.get("id") or default_id).strip()
    valid_pack_id(pack_id)
    card = {name: _as_list(values.get(name)) for name in _LISTS}
    title = _plain(str(values.get("title") or "")) or pack_id
    language = ", ".join(_as_list(values.get("language")))
    return PackCard(id=pack_id, title=title, language=language, extra=extra, **card)


def _front_matter(text: str, where: str) -> dict:
    import yaml

    try:
        data = yaml_without_aliases(text) or {}
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f":{mark.line + 2}" if mark is not None else ""
        raise InputError(f"{where}{line}: the front matter is not valid YAML ({getattr(exc, 'problem', exc)}); "
                         "write `key: value` lines, lists as `[a, b]` or `- item` lines") from exc
    if not isinstance(data, dict):
        raise InputError(f"{where}: the front matter must be `key: value` lines, got {type(data).__name__}")
    return data


def _sections(body: str) -> dict[str, object]:
    """`# Title` and the `## Field` sections of the card's body."""
    out: dict[str, object] = {}
    current: str | None = None
    lines: list[str] = []

    def flush() -> None:
        if current is not None and current not in out:
            items = [re.sub(r"^\s*(?:[-*+]|\d+[.)])\s+", "", line).strip() for line in lines if line.strip()]
            out[current] = items

    for line in body.splitlines():
        heading = re.match(r"^(#{1,6})\s+(.*?)\s*#*\s*$", line)
        if heading:
            flush()
            level, name = len(heading.group(1)), heading.group(2).strip()
            if level == 1 and "title" not in out:
                out["title"] = name
            current, lines = _FIELDS.get(name.lower().rstrip(":：")), []
        elif current is not None:
            lines.append(line)
    flush()
    return out


def _plain(text: str) -> str:
    """A card's value as one line of plain text: a card comes from someone else (a cloned repository), and its title and
    lists are printed in `kg pack list` and in every routed answer, so no terminal escape (YAML's "\\e" too) survives."""
    return " ".join(without_controls(text)[0].split())


def _as_list(value: object) -> tuple[str, ...]:
    """A YAML list, a bullet list or a comma-separated line -> items; '、' and '；' separate too."""
    if value is None:
        return ()
    items = value if isinstance(value, list | tuple) else [value]
    out: list[str] = []
    for item in items:
        text = _plain(str(item))
        parts = re.split(r"\s*[,，;；、]\s*", text) if not isinstance(value, list | tuple) or len(items) == 1 else [text]
        out.extend(p.strip().strip("`") for p in parts if p.strip())
    return tuple(dict.fromkeys(out))
