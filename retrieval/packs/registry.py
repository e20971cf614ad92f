"""`REGISTRY.md` in the data dir (a Markdown table a person edits) <-> `RegistryRow`s: kinds of questions -> pack id.

    | pack | intent | example questions |
    |------|--------|-------------------|
    | ops  | deploying and running the payment services | how do I restart the gateway?; 网关怎么扩容？ |

Any table whose header has a `pack` column counts; `intent` and `example questions` may be
named `when` / `questions` (or 用途 / 示例); examples are separated by `;` or `<br>`. Several rows
may name the same pack. The file is re-read when it changes on disk, like `graph.ttl`.
"""

from __future__ import annotations

import os
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path

from kg.files import file_stamp, read_text

__all__ = ["REGISTRY_FILE", "Registry", "RegistryRow"]

REGISTRY_FILE = "REGISTRY.md"
_HEADER = (
    "# Knowledge packs\n\n"
    "Which kinds of questions go to which pack. One row per kind of question; edit freely (kgrag\n"
    "re-reads this file when it changes). Separate example questions with `;`.\n\n"
    "| pack | intent | example questions |\n"
    "|------|--------|-------------------|\n"
)
_PACK_COLUMNS = ("pack", "pack id", "id", "知识包", "包")
_INTENT_COLUMNS = ("intent", "when", "kind of question", "用途", "意图")
_EXAMPLE_COLUMNS = ("example questions", "examples", "questions", "example", "示例", "示例问题", "例子")


@dataclass(frozen=True)
class RegistryRow:
    pack: str
    intent: str
    examples: tuple[str, ...] = ()
    line: int = 0  # 1-based line in REGISTRY.md

    def text(self) -> str:
        return " ".join((self.intent, *self.examples))

    def to_json(self) -> dict:
        return {"pack": self.pack, "intent": self.intent, "examples": list(self.examples), "line": self.line}


class Registry:
    def __init__(self, data_dir: Path) -> None:
        self.path = Path(data_dir) / REGISTRY_FILE
        self._stamp: tuple[int, int] | None = None
        self.rows: list[RegistryRow] = []
        self.version = 0  # bumped on every (re-)read: routing caches derived state per version
        self.reload()

    def _disk_stamp(self) -> tuple[int, int] | None:
        return file_stamp(self.path)

    def reload(self) -> None:
        self._stamp = self._disk_stamp()
        self.rows = parse_registry(read_text(self.path)) if self._stamp else []
        self.version += 1

    def refresh_if_changed(self) -> bool:
        if self._disk_stamp() != self._stamp:
            self.reload()
            return True
        return False

    def rows_of(self, pack: str) -> list[RegistryRow]:
        return [r for r in self.rows if r.pack == pack]

    # -- writes (kg pack add / remove); everything else in the file is kept as the person wrote it --
    def add_row(self, pack: str, intent: str, examples: tuple[str, ...] = ()) -> bool:
        """Append a row for `pack` unless the registry already has one; True when written."""
        self.refresh_if_changed()
        if self.rows_of(pack):
            return False
        text = read_text(self.path) if self.path.exists() else ""
        if not any(True for _ in _tables(text)):
            text = (text.rstrip() + "\n\n" if text.strip() else "") + _HEADER
        row = f"| {_cell(pack)} | {_cell(intent)} | {_cell('; '.join(examples))} |\n"
        lines = text.splitlines(keepends=True)
        last = max(end for _, end in _tables(text))  # after the last row of the last table
        lines.insert(last, row)
        if last and not lines[last - 1].endswith("\n"):
            lines[last - 1] += "\n"
        self._write("".join(lines))
        return True

    def remove_pack(self, pack: str) -> int:
        """Drop every row naming `pack`; returns how many."""
        self.refresh_if_changed()
        drop = {r.line for r in self.rows_of(pack)}
        if not drop:
            return 0
        lines = read_text(self.path).splitlines(keepends=True)
        self._write("".join(line for n, line in enumerate(lines, 1) if n not in drop))
        return len(drop)

    def _write(self, text: str) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".registry-", suffix=".md", dir=self.path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(text)
            os.chmod(tmp, 0o644)
            os.replace(tmp, self.path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        self.reload()


def parse_registry(text: str) -> list[RegistryRow]:
    rows: list[RegistryRow] = []
    lines = text.splitlines()
    for start, end in _tables(text):
        header = [c.lower() for c in _cells(lines[start])]
        pack_col = _column(header, _PACK_COLUMNS)
        if pack_col is None:
            continue
        intent_col = _column(header, _INTENT_COLUMNS)
        example_col = _column(header, _EXAMPLE_COLUMNS)
        for n in range(start + 2, end):
            cells = _cells(lines[n])

            def get(col: int | None, cells: list[str] = cells) -> str:
                return cells[col] if col is not None and col < len(cells) else ""

            pack = get(pack_col).strip("` ")
            if not pack:
                continue
            examples = tuple(e.strip() for e in re.split(r"\s*(?:;|；|<br\s*/?>)\s*", get(example_col)) if e.strip())
            rows.append(RegistryRow(pack=pack, intent=get(intent_col), examples=examples, line=n + 1))
    return rows


def _tables(text: str):
    """(header line index, index after the last row) of each Markdown table."""
    lines = text.splitlines()
    i = 0
    while i + 1 < len(lines):
        if lines[i].strip().startswith("|") and re.match(r"^\s*\|?\s*:?-{2,}", lines[i + 1]):
            end = i + 2
            while end < len(lines) and lines[end].strip().startswith("|"):
                end += 1
            yield i, end
            i = end
        else:
            i += 1


def _cells(line: str) -> list[str]:
    body = line.strip()
    body = body[1:] if body.startswith("|") else body
    body = body[:-1] if body.endswith("|") and not body.endswith("\\|") else body
    return [c.replace("\\|", "|").strip() for c in re.split(r"(?<!\\)\|", body)]


def _column(header: list[str], names: tuple[str, ...]) -> int | None:
    for name in names:
        if name in header:
            return header.index(name)
    return None


def _cell(text: str) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")
