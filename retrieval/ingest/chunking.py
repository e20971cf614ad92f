"""A `SourceDocument` in, a `Cut` out: the Document, its parent chunks (sections, cut at paragraphs) and their child chunks (what is indexed and linked).

Ids are content hashes: a document's id comes from its logical key (front matter `id:`, --doc-id,
else its source name), a chunk's from the document id and the fingerprint of what is indexed of it
(title, section path, text), so ingesting the same file twice yields the same ids, and an edit
changes the ids of the chunks it touches and no others.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from kg.errors import InputError
from retrieval.ingest.readers import SUPPORTED_SUFFIXES, find_source_files, read_source_file
from retrieval.types import Chunk, Document, ParentChunk, SourceDocument

__all__ = [
    "ChunkSizes",
    "Cut",
    "SUPPORTED_SUFFIXES",
    "chunk_document",
    "cut_document",
    "fingerprint",
    "source_fingerprint",
    "doc_id_for",
    "find_source_files",
    "normalize_document",
    "read_source_file",
    "sha256_hex",
]

CHUNK_TARGET = 480  # a child chunk aims at this size (see `text_size`) ...
CHUNK_MAX = 900  # ... and a single paragraph larger than this is cut at sentence ends
_CJK_CHAR = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
ASCII_CHAR_SIZE = 0.4  # an English character carries less than a Chinese one (~2.5 : 1)


def text_size(text: str) -> float:
    """Chunk size in 'Chinese characters': CJK characters count 1, everything else 0.4."""
    return _size_of(len(_CJK_CHAR.findall(text)), len(text))


def _size_of(cjk: int, length: int) -> float:
    """`text_size` of a text of `length` characters, `cjk` of them Chinese (sizes of pieces add up)."""
    return cjk + (length - cjk) * ASCII_CHAR_SIZE
_HEADING = re.compile(r"^(#{1,6})\s+(.+?)(?:\s+#+)?\s*$")
_SENTENCE_END = re.compile(r"(?<=[。！？!?；;])|(?<=\.)\s+")
_TABLE_RULE = re.compile(r"^\s*\|?(?:\s*:?-+:?\s*\|)+\s*(?::?-+:?\s*)?$")  # |---|:--:| under a table's header


def sha256_hex(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def doc_id_for(source: str) -> str:
    """The id of the logical document whose key (path, front matter `id:`, --doc-id) is `source`."""
    return "d" + sha256_hex("doc\x00" + source)[:15]


# The invisible formatting characters (Unicode category Cf) editors leave behind.
_INVISIBLE = re.compile("[\u00ad\u061c\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb]")


def fingerprint(text: str) -> str:
    """SHA-256 of the text without whitespace and invisible formatting (zero-width, soft hyphen, BOM):
    re-flowing, re-wrapping or re-saving a file does not make a new version."""
    squeezed = "".join(text.split())
    if _INVISIBLE.search(squeezed):  # rare: only then pay for the substitution
        squeezed = _INVISIBLE.sub("", squeezed)
    return sha256_hex(squeezed)


def source_fingerprint(src: SourceDocument) -> str:
    """What makes a new version: the normalized text and the title it was given (front matter, upload)."""
    return fingerprint(f"{src.title or ''}\x00{src.text}")


@dataclass(frozen=True)
class ChunkSizes:
    """Sizes in `text_size` units (a Chinese character 1, another character 0.4: roughly a token)."""

    child: int = CHUNK_TARGET
    parent: int = 1200
    overlap: int = 0


@dataclass(frozen=True)
class Cut:
    document: Document
    parents: list[ParentChunk]
    children: list[Chunk]


def normalize_document(text: str) -> str:
    """Unix newlines, no trailing spaces, no BOM. Line count is preserved so line numbers stay true.

    Width folding (NFKC) is left to analysis and linking so that stored text reads as written.
    """
    text = text.lstrip("\ufeff").replace("\r\n", "\n").replace("\r", "\n")
    return "\n".join(line.rstrip() for line in text.split("\n"))


@dataclass
class _Section:
    path: str  # "Heading > Sub heading"
    lines: list[tuple[int, str]]  # (1-based line number, text)


def _sections(text: str, fmt: str) -> tuple[str | None, list[_Section]]:
    """Split into heading-delimited sections; returns the first level-1 heading as the title."""
    title: str | None = None
    stack: list[tuple[int, str]] = []
    sections = [_Section("", [])]
    in_fence = False
    for number, line in enumerate(text.split("\n"), start=1):
        if fmt == "md" and line.lstrip().startswith("```"):
            in_fence = not in_fence
        match = _HEADING.match(line) if fmt == "md" and not in_fence else None
        if match:
            level, heading = len(match.group(1)), match.group(2).strip()
            if level == 1 and title is None:
                title = heading
                continue
            while stack and stack[-1][0] >= level:
                stack.pop()
            stack.append((level, heading))
            sections.append(_Section(" > ".join(h for _, h in stack), []))
            continue
        sections[-1].lines.append((number, line))
    return title, [s for s in sections if any(t.strip() for _, t in s.lines)]


def _paragraphs(lines: list[tuple[int, str]]) -> list[tuple[int, int, str]]:
    paras: list[tuple[int, int, str]] = []
    current: list[tuple[int, str]] = []
    for number, line in lines + [(0, "")]:
        if line.strip():
            current.append((number, line))
        elif current:
            paras.append((current[0][0], current[-1][0], "\n".join(t for _, t in current)))
            current = []
    return paras


class Piece(NamedTuple):
    start: int  # first line
    end: int  # last line
    text: str
    glue: str  # what joins it to the piece before it ("\n\n" between paragraphs)
    head: str = ""  # a table's header rows, when the piece continues a table cut in pieces


def _table_pieces(start: int, text: str, size: float) -> list[Piece] | None:
    """A Markdown table too large for one piece as runs of whole rows up to `size`, or None for other text.

    A row is read with its column names, so every run after the first carries the header rows as its
    `head` (a continuation child is indexed and shown under them: `| 键 | 默认值 |` above its rows);
    sentence ends would cut a table inside its rows. Each run has the true lines of its rows.
    """
    lines = text.split("\n")
    if len(lines) < 4 or not _TABLE_RULE.match(lines[1]) or not all(line.lstrip().startswith("|") for line in lines):
        return None
    head = "\n".join(lines[:2])
    head_size = text_size(head)
    pieces: list[Piece] = []
    first, rows = start, list(lines[:2])
    # the run's Chinese characters and length, kept as rows join it (not measured again per row)
    cjk, length = len(_CJK_CHAR.findall(head)), len(head)
    for number, row in enumerate(lines[2:], start=start + 2):
        row_cjk = len(_CJK_CHAR.findall(row))
        grown_cjk, grown_length = cjk + row_cjk, length + 1 + len(row)  # + the line break before it
        if len(rows) > (0 if pieces else 2) and _size_of(grown_cjk, grown_length) + (head_size if pieces else 0) > size:
            pieces.append(Piece(first, number - 1, "\n".join(rows), "\n" if pieces else "\n\n", head if pieces else ""))
            first, rows = number, []
            grown_cjk, grown_length = row_cjk, len(row)
        rows.append(row)
        cjk, length = grown_cjk, grown_length
    pieces.append(Piece(first, start + len(lines) - 1, "\n".join(rows), "\n" if pieces else "\n\n", head if pieces else ""))
    return pieces


def _split_long(start: int, end: int, text: str, limit: float = CHUNK_MAX, target: float | None = None) -> list[Piece]:
    """A paragraph as one piece, or, when larger than `limit`, as its sentences (glued back as written),
    merged into pieces of up to `target` when given."""
    if text_size(text) <= limit:
        return [Piece(start, end, text, "\n\n")]
    table = _table_pieces(start, text, target or limit)
    if table is not None:
        return table
    pieces = _sentence_pieces(start, end, text, target)
    if all(text_size(p.text) <= limit for p in pieces):
        return pieces
    return _line_pieces(start, text, target or limit)


def _sentence_pieces(start: int, end: int, text: str, target: float | None) -> list[Piece]:
    pieces: list[Piece] = []
    previous = buf = ""
    for sentence in _SENTENCE_END.split(text):
        if not sentence.strip():
            previous += sentence
            continue
        glue = "" if previous.endswith("\n") or not sentence[:1].isascii() else " "
        previous = sentence
        if target is not None and buf and text_size(buf) + text_size(sentence) <= target:
            buf += glue + sentence
            continue
        if target is not None and buf:
            pieces.append(Piece(start, end, buf.strip(), "\n\n" if not pieces else glue))
        if target is None:
            # Line numbers are kept at paragraph granularity for sentence pieces.
            pieces.append(Piece(start, end, sentence.strip(), "\n\n" if not pieces else glue))
        else:
            buf = sentence
    if target is not None and buf.strip():
        pieces.append(Piece(start, end, buf.strip(), "\n\n" if not pieces else glue))
    return pieces


def _line_pieces(start: int, text: str, size: float) -> list[Piece]:
    """A paragraph that sentence ends do not cut small enough (a pasted config file in a code fence, a list of
    thousands of lines, a log: 45 KB became one chunk) as runs of whole lines up to `size`, each with its true
    lines; a line longer than that alone is cut at spaces. A run after the first inside a code fence carries the
    fence's opening line as its `head`, so that it is read, and shown, as code."""
    lines = text.split("\n")
    fence = lines[0] if lines[0].lstrip().startswith(("```", "~~~")) and text_size(lines[0]) <= size / 4 else ""
    head_size = text_size(fence)
    pieces: list[Piece] = []
    run: list[tuple[int, str, str]] = []  # (line, part, glue before it)
    used = 0.0
    for number, line in enumerate(lines, start=start):
        for part, glue in _cut_line(line, size - head_size):
            if run and used + text_size(glue + part) + (head_size if pieces else 0) > size:
                pieces.append(_line_run(run, pieces, fence))
                run, used = [], 0.0
            used += text_size(glue + part if run else part)
            run.append((number, part, glue))
    pieces.append(_line_run(run, pieces, fence))
    return pieces


def _line_run(run: list[tuple[int, str, str]], before: list[Piece], fence: str) -> Piece:
    """Consecutive (line, part, glue) as one piece: the first of a paragraph opens it ("\n\n"), the others continue
    it (a line break, or nothing inside a cut line)."""
    text = run[0][1] + "".join(glue + part for _, part, glue in run[1:])
    return Piece(run[0][0], run[-1][0], text, run[0][2] if before else "\n\n", fence if before else "")


def _cut_line(line: str, size: float) -> list[tuple[str, str]]:
    """(part, glue) of one line: the line itself, or, when larger than `size`, parts cut after a space (anywhere in a
    run without one) whose glue is "" (they join back as written); the first part's glue is the line break."""
    if text_size(line) <= size:
        return [(line, "\n")]
    parts: list[tuple[str, str]] = []
    at = 0
    while at < len(line):
        stop, used = at, 0.0
        while stop < len(line) and used <= size:
            used += 1 if _CJK_CHAR.match(line[stop]) else ASCII_CHAR_SIZE
            stop += 1
        if stop < len(line):
            stop = max(line.rfind(" ", at, stop) + 1, at + 1) if " " in line[at:stop] else stop - 1
        parts.append((line[at:stop], "\n" if not parts else ""))
        at = stop
    return parts


def _join(pieces: list[Piece]) -> str:
    """The pieces' text as written; a run that starts inside a table starts with the table's header rows."""
    head = pieces[0].head + "\n" if pieces and pieces[0].head else ""
    return head + "".join((p.glue if i else "") + p.text for i, p in enumerate(pieces))


def _first_line_title(text: str) -> str | None:
    """A plain-text note's first line is its title when it is short and more text follows."""
    lines = [line.strip() for line in text.split("\n") if line.strip()]
    if len(lines) >= 2 and len(lines[0]) <= 60 and not lines[0].endswith(("。", ".", "：", ":")):
        # A note written Markdown-style in a .txt file ("# 值班手册"): the title is the words, not the marks.
        heading = _HEADING.match(lines[0])
        return heading.group(2) if heading else lines[0]
    return None


def _size(pieces: list[Piece]) -> float:
    """The size of grouped pieces; the blank line between paragraphs does not count."""
    head = text_size(pieces[0].head) if pieces else 0
    return head + sum(text_size(p.text) + (text_size(p.glue) if i and p.glue != "\n\n" else 0) for i, p in enumerate(pieces))


def _group(pieces: list[Piece], target: float, overlap: float = 0, by_paragraph: bool = False) -> list[list[int]]:
    """Runs of consecutive pieces (their indices) up to `target` each; with `overlap`, a run starts with the
    previous one's last pieces up to that size (a sentence cut at a chunk border is then whole in one).
    `by_paragraph`: a run at least half full also ends where a paragraph ends."""
    groups: list[list[int]] = []
    group: list[int] = []
    fresh = 0  # pieces of the group that are not carried over from the previous one
    for i, piece in enumerate(pieces):
        size = _size([pieces[j] for j in group])
        if fresh and (size + text_size(piece[2]) > target or (by_paragraph and piece[3] == "\n\n" and size >= target / 2)):
            groups.append(group)
            carried: list[int] = []
            for j in reversed(group if piece[3] != "\n\n" else []):  # overlap stays inside a paragraph
                if _size([pieces[k] for k in [j] + carried]) > overlap:
                    break
                carried.insert(0, j)
            group, fresh = carried, 0
        group.append(i)
        fresh += 1
    if fresh:
        groups.append(group)
    return groups


def _parents(pieces: list[Piece], children: list[list[int]], target: float) -> list[tuple[int, int, list[int]]]:
    """Consecutive children grouped up to `target`: (first piece, last piece, the children's numbers).

    A parent boundary is always a child boundary, so parents never change how children are cut; it
    is moved back to the last child that starts a paragraph when there is one.
    """
    out: list[list[int]] = []  # children's numbers per parent

    def span(members: list[int]) -> list[Piece]:
        return pieces[children[members[0]][0] : children[members[-1]][-1] + 1]

    for n in range(len(children)):
        if out and _size(span(out[-1] + [n])) <= target:
            out[-1].append(n)
            continue
        if out:
            starts = [i for i, m in enumerate(out[-1]) if i and pieces[children[m][0]][3] == "\n\n"]
            if starts and pieces[children[n][0]][3] != "\n\n" and _size(span(out[-1][starts[-1]:] + [n])) <= target:
                out.append(out[-1][starts[-1]:] + [n])
                del out[-2][starts[-1]:]
                continue
        out.append([n])
    return [(children[m[0]][0], children[m[-1]][-1], m) for m in out]


def _page_of(line_pages: tuple[int, ...], line: int) -> int | None:
    return line_pages[line - 1] if line_pages and 0 < line <= len(line_pages) else None


def cut_document(src: SourceDocument, sizes: ChunkSizes | None = None, doc_id: str | None = None) -> Cut:
    sizes = sizes or ChunkSizes()
    text = normalize_document(src.text)
    if not text.strip():
        raise InputError(f"{src.source}: the document is empty")
    headed = src.format != "txt"  # html and pdf readers write Markdown headings
    heading_title, sections = _sections(text, "md" if headed else "txt")
    if heading_title is None and not headed:
        heading_title = _first_line_title(text)
    title = src.title or heading_title or Path(src.source).stem or src.source
    doc_id = doc_id or doc_id_for(src.doc_key or src.source)
    parents: list[ParentChunk] = []
    chunks: list[Chunk] = []
    seen: dict[str, int] = {}

    def unique(prefix: str, digest: str) -> str:
        n = seen.get(prefix + digest, 0)
        seen[prefix + digest] = n + 1
        return prefix + sha256_hex(f"{doc_id}\x00{digest}\x00{n}")[: 19 if prefix == "c" else 15]

    for section in sections:
        # A child of the default size or larger groups paragraphs, and sentence runs of a paragraph too long
        # for one child; a smaller one (or one with overlap) groups sentences.
        whole = sizes.child >= CHUNK_TARGET and not sizes.overlap
        limit, target = (CHUNK_MAX, sizes.child) if whole else (sizes.child, None)
        pieces = [p for para in _paragraphs(section.lines) for p in _split_long(*para, limit=limit, target=target)]
        children = _group(pieces, sizes.child, sizes.overlap, by_paragraph=not whole)
        for first, last, members in _parents(pieces, children, max(sizes.parent, sizes.child)):
            span = pieces[first : last + 1]
            body = _join(span)
            parent_id = unique("p", fingerprint(f"{section.path}\x00{body}"))
            parents.append(ParentChunk(parent_id, doc_id, len(parents), section.path, body, span[0][0], span[-1][1],
                                       sha256_hex(body), _page_of(src.line_pages, span[0][0])))
            for n in members:
                child = [pieces[i] for i in children[n]]
                body = _join(child)
                chunks.append(Chunk(
                    chunk_id=unique("c", fingerprint(f"{title}\x00{section.path}\x00{body}")),
                    doc_id=doc_id, ordinal=len(chunks), title=title, section=section.path, text=body,
                    line_start=child[0][0], line_end=child[-1][1], sha256=sha256_hex(body), parent_id=parent_id,
                    page=_page_of(src.line_pages, child[0][0]),
                ))
    if not chunks:  # a document that is only a title
        chunks.append(Chunk(unique("c", fingerprint(title)), doc_id, 0, title, "", title, 1, 1, sha256_hex(title), ""))
    document = Document(doc_id=doc_id, source=src.source, title=title, sha256=source_fingerprint(src), version=1,
                        n_chunks=len(chunks))
    return Cut(document, parents, chunks)


def chunk_document(src: SourceDocument, sizes: ChunkSizes | None = None) -> tuple[Document, list[Chunk]]:
    """The document and its child chunks (see `cut_document` for the parents too)."""
    cut = cut_document(src, sizes)
    return cut.document, cut.children
