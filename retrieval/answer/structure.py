"""A passage's text in -> its `Piece`s out: sentences, list items, table rows and code blocks, each knowing the structural unit it belongs to.

Documentation says one thing across several lines: a list item may run over two sentences, a
list is a procedure, a table row means nothing without its header, and a sentence ending in
"：" / ":" introduces the command or value written after it. The extractive answer keeps these
units together; this module only finds them.
"""

from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass

from retrieval.answer.markup import FENCE, reader_line, without_links
from retrieval.answer.terms import split_sentences

__all__ = ["CODE_CHARS", "Piece", "code_excerpt", "ends_lead", "passage_pieces", "reader_text"]

FRAGMENT = 4  # characters: a shorter "sentence" is an initial or an abbreviation, not a sentence
CODE_CHARS = 240  # a code block longer than this is quoted up to here (at a line end)
_LIST_ITEM = re.compile(r"^\s*(?:\d+[.)、]|[-*+•])\s+")
_TABLE_RULE = re.compile(r"^\s*\|?\s*:?-{2,}")
_LEAD_END = ("：", ":")
# "运行以下命令。" / "run the following command." introduce what follows just as a colon does.
_FORWARD = re.compile(r"以下|如下|下列|下面的|the following|as follows|below", re.IGNORECASE)
# A sentence that only sends the reader elsewhere ("详见《运维手册》", "请参阅[X](y)。").
_POINTER = re.compile(r"^(?:参数)?(?:详细说明|详见|参见|见《|具体见)|(?:详见|参见|见)《[^》]+》[。.]?$|^see (?:the )?[\"“]?\w|"
                      r"(?:请参阅|请参考|参阅|请查看|参考|详见|refer to|see)\s*[:：]?\s*\[[^\]]+\]\([^)]*\)[。.]?$|"
                      r"^(?:请参阅|请参考|参阅|请查看|refer to|see)\s*\[[^\]]+\]\([^)]*\)", re.IGNORECASE)
_LINK_ONLY = re.compile(r"^!?\[[^\]]*\]\([^)]*\)[。.]?$")  # a picture or a bare link: nothing to read in an answer
_ORDERED = re.compile(r"^\s*\d+[.)、]\s+")
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+(.+?)\s*#*\s*$")
# What a wrapped line of a paragraph cannot be: the start of a block (a fence, a table row, a heading, a quote, a list
# item) or a rule.
_BLOCK_START = re.compile(r"^\s*(?:```|\||#{1,6}\s|>|(?:\d+[.)、]|[-*+•])\s|(?:-{3,}|\*{3,}|_{3,}|={3,})\s*$)")
_WIDE_END = re.compile(r"[\u3000-\u303f\u3400-\u9fff\uff00-\uffef]$")
_WIDE_START = re.compile(r"^[\u3000-\u303f\u3400-\u9fff\uff00-\uffef]")


def ends_lead(text: str) -> bool:
    """`text` ends in "：" / ":", in bold or not ("**组件：**"): what it introduces follows."""
    return text.rstrip().rstrip("*_").endswith(_LEAD_END)


@dataclass(frozen=True)
class Piece:
    position: int
    text: str
    kind: str  # "text", "heading", "item" (a list item's sentence), "header" / "row" (a table's), "code"
    block: int | None  # the list or table it is part of
    item: int | None  # the list item (or table row) it is a sentence of
    lead: bool  # ends in "：" / ":": what it introduces follows
    heading: str = ""  # the Markdown heading above it inside the passage ('' when none)
    ordered: bool = False  # an item of a numbered list (a procedure's steps)
    lines: tuple[str, ...] = ()  # a code block's lines, dedented (its text is their start, up to CODE_CHARS)
    pointer: bool = False  # only sends the reader elsewhere, as written (its links are text now)
    link_only: bool = False  # a picture or a bare link, as written: nothing to read in an answer
    lang: str = ""  # a code block's language, as its opening fence names it ("bash", "toml")


def _code_text(lines: list[str]) -> str:
    """A code block's lines up to CODE_CHARS (then "…"), one a line as written: a shell command's `\\` at a line's end
    goes on on the next line, as it does where a reader pastes it."""
    out, size = [], 0
    for line in lines:
        if out and size + len(line) > CODE_CHARS:
            out.append("…")
            break
        out.append(line)
        size += len(line) + 1
    return "\n".join(out)


_COMMENT = re.compile(r"^(?:#|//|--|;)")


def code_excerpt(lines: tuple[str, ...], matches) -> str:
    """A long code block quoted by the lines that matter: those `matches` accepts, each with the line after it
    when it is a comment (`## 慢查询的阈值。` is followed by `threshold = "30s"`), in order, up to CODE_CHARS."""
    keep: list[int] = []
    for i, line in enumerate(lines):
        if matches(line):
            keep.append(i)
            if _COMMENT.match(line.lstrip()) and i + 1 < len(lines):
                keep.append(i + 1)
    if not keep:
        return _code_text(list(lines))
    out, size, prev = [], 0, -1
    for i in sorted(set(keep)):
        if out and size + len(lines[i]) > CODE_CHARS:
            break
        if prev >= 0 and i > prev + 1:
            out.append("…")
        out.append(lines[i])
        size += len(lines[i]) + 1
        prev = i
    if prev < len(lines) - 1:
        out.append("…")
    return "\n".join(out)


def _whole_sentences(sentences: list[str]) -> list[str]:
    """An initial or abbreviation cut off as its own "sentence" ("S.", "Dr.") joins the sentence after it."""
    out: list[str] = []
    carry = ""
    for sentence in sentences:
        if len(sentence) < FRAGMENT:
            carry = f"{carry} {sentence}".strip()
            continue
        out.append(f"{carry} {sentence}".strip() if carry else sentence)
        carry = ""
    if carry:
        if out:
            out[-1] = f"{out[-1]} {carry}"
        else:
            out.append(carry)
    return out


def _reader_lines(lines: list[str], in_code: bool) -> list[str]:
    """The passage's lines as a reader sees them: markup out (`retrieval.answer.markup`), and a paragraph's or list
    item's lines wrapped in the source ("要将 GreptimeDB 集成到 Prometheus 中，" / "请按照以下步骤……") joined into the
    one line Markdown renders, so a sentence is not cut in two. Code blocks are left as they are."""
    out: list[str] = []
    open_line = False  # the last line out is running text the next line may continue
    for line in lines:
        if line.strip().startswith("```"):
            in_code, open_line = not in_code, False
            out.append(line)
            continue
        if in_code:
            out.append(line)
            continue
        hard_break = line.endswith(("  ", "\\"))
        line = reader_line(line)
        stripped = line.strip()
        block = bool(_BLOCK_START.match(line)) or " | " in stripped  # a table's row written without its outer pipes
        if open_line and stripped and not block:
            before = out[-1].rstrip()
            out[-1] = before + stripped if _WIDE_END.search(before) and _WIDE_START.match(stripped) else f"{before} {stripped}"
        else:
            out.append(line)
            open_line = bool(stripped) and (not block or bool(_LIST_ITEM.match(line)))
        open_line = open_line and not hard_break
    return out


def _starts_in_code(lines: list[str]) -> bool:
    """The passage starts inside a code block its chunk cut (an odd number of fences, the first a bare one that does
    not open the passage)."""
    fences = [line.strip() for line in lines if line.strip().startswith("```")]
    return bool(len(fences) % 2 and fences[0] == "```" and not lines[0].strip().startswith("```"))


def reader_text(text: str) -> str:
    """A passage as a reader sees it (`_reader_lines`): what a model is given to read, without the site's markup and
    with a sentence wrapped over two lines whole."""
    lines = (text or "").splitlines()
    return re.sub(r"\n\s*\n(?:\s*\n)+", "\n\n", "\n".join(_reader_lines(lines, _starts_in_code(lines)))).strip("\n")


def passage_pieces(text: str) -> list[Piece]:
    out: list[Piece] = []
    block = -1
    item = -1
    in_list = in_table = False
    code: list[str] | None = None
    lang = ""  # the open code block's language
    heading = ""
    ordered = False

    def add(piece: str, kind: str, block_id: int | None, item_id: int | None, lines: tuple[str, ...] = ()) -> None:
        pointer, link_only = bool(_POINTER.search(piece)), bool(_LINK_ONLY.match(piece))
        if kind != "code":
            piece = without_links(piece)  # a link to another page of the site as its text, a picture out
        lead = ends_lead(piece) or (kind in ("text", "item") and bool(_FORWARD.search(piece)))
        out.append(Piece(len(out), piece, kind, block_id, item_id, lead, heading, ordered and kind == "item", lines,
                         pointer, link_only, lang if kind == "code" else ""))

    all_lines = (text or "").splitlines()
    if _starts_in_code(all_lines):
        code = []  # the passage starts inside a code block its chunk cut: the first fence closes it
    for line in _reader_lines(all_lines, code is not None):
        stripped = line.strip()
        if stripped.startswith("```"):
            if code is None:
                code, lang = [], FENCE.match(stripped).group(2)
            else:  # a code block is one piece: a command or a config snippet is not cut into lines
                if code:
                    code = textwrap.dedent("\n".join(code)).split("\n")  # a YAML file's indentation is its meaning
                    add(_code_text(code), "code", block if in_list else None, item if in_list else None, tuple(code))
                code = None
            continue
        if code is not None:
            if stripped:
                code.append(line.rstrip())
            continue
        if stripped.startswith("|"):
            if _TABLE_RULE.match(stripped.strip("|")):
                continue
            if not in_table:
                block += 1
                in_table, in_list = True, False
                kind = "header"
            else:
                kind = "row"
            item += 1
            cells = [c.strip() for c in stripped.strip("|").split("|")]
            if any(cells):  # a line of bars alone ("     |", "| | |") says nothing to quote
                add(" | ".join(c for c in cells), kind, block, item)
            continue
        in_table = False
        title = _HEADING.match(line)
        if title:
            in_list = False
            heading = ""  # a heading is not under itself
            add(title.group(1).strip(), "heading", None, None)
            heading = title.group(1).strip()
            continue
        is_item = bool(_LIST_ITEM.match(line))
        if is_item:
            if not in_list:
                block += 1
                ordered = bool(_ORDERED.match(line))
            item += 1
        # An indented continuation stays in its list item; a blank line between items does not end the list.
        in_list = is_item or (in_list and (line.startswith("  ") or not stripped))
        for sentence in _whole_sentences(split_sentences(line)):
            if in_list:
                add(sentence, "item", block, item)
            else:
                add(sentence, "text", None, None)
    if code:
        code = textwrap.dedent("\n".join(code)).split("\n")
        add(_code_text(code), "code", None, None, tuple(code))
    return out
