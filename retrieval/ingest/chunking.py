"""Files or texts -> (Document, [Chunk]): parse Markdown/plain text, normalize, cut into section-aware child chunks.

Ids are content hashes: a document's id comes from its source name, a chunk's from the document id,
its position and its normalized text, so ingesting the same file twice yields the same ids.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from kg.errors import InputError
from retrieval.types import Chunk, Document, SourceDocument

__all__ = [
    "SUPPORTED_SUFFIXES",
    "chunk_document",
    "doc_id_for",
    "find_source_files",
    "normalize_document",
    "read_source_file",
    "sha256_hex",
]

SUPPORTED_SUFFIXES = {".md": "md", ".markdown": "md", ".txt": "txt", ".text": "txt"}
CHUNK_TARGET = 480  # a child chunk aims at this size (see `text_size`) ...
CHUNK_MAX = 900  # ... and a single paragraph larger than this is cut at sentence ends
_CJK_CHAR = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
ASCII_CHAR_SIZE = 0.4  # an English character carries less than a Chinese one (~2.5 : 1)


def text_size(text: str) -> float:
    """Chunk size in 'Chinese characters': CJK characters count 1, everything else 0.4."""
    cjk = len(_CJK_CHAR.findall(text))
    return cjk + (len(text) - cjk) * ASCII_CHAR_SIZE
_HEADING = re.compile(r"^(#{1,6})\s+(.+?)(?:\s+#+)?\s*$")
_SENTENCE_END = re.compile(r"(?<=[。！？!?；;])|(?<=\.)\s+")


def sha256_hex(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def doc_id_for(source: str) -> str:
    return "d" + sha256_hex("doc\x00" + source)[:15]


def find_source_files(paths: Iterable[Path]) -> list[Path]:
    """Every supported file under `paths` (files or folders), sorted, hidden files skipped."""
    found: list[Path] = []
    for path in paths:
        path = Path(path)
        if not path.exists():
            raise InputError(f"{path}: no such file or folder")
        if path.is_file():
            if path.suffix.lower() not in SUPPORTED_SUFFIXES:
                raise InputError(
                    f"{path.name}: unsupported file type '{path.suffix}' "
                    f"(kgrag reads {', '.join(sorted(SUPPORTED_SUFFIXES))})"
                )
            found.append(path)
            continue
        for file in sorted(path.rglob("*")):
            rel = file.relative_to(path)
            if any(part.startswith(".") for part in rel.parts):
                continue
            if file.is_file() and file.suffix.lower() in SUPPORTED_SUFFIXES:
                found.append(file)
    return found


def read_source_file(path: Path, source: str | None = None) -> SourceDocument:
    raw = path.read_bytes()
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(
            f"{path.name}: not UTF-8 text (byte {exc.start}); save the file as UTF-8 and ingest it again"
        ) from None
    return SourceDocument(
        source=source or str(path), text=text, format=SUPPORTED_SUFFIXES[path.suffix.lower()]
    )


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


def _split_long(start: int, end: int, text: str) -> list[tuple[int, int, str]]:
    if text_size(text) <= CHUNK_MAX:
        return [(start, end, text)]
    pieces, buf = [], ""
    for sentence in _SENTENCE_END.split(text):
        if buf and text_size(buf) + text_size(sentence) > CHUNK_TARGET:
            pieces.append(buf)
            buf = ""
        buf += sentence if not buf or buf.endswith("\n") else (" " + sentence if sentence[:1].isascii() else sentence)
    if buf:
        pieces.append(buf)
    # Line numbers are kept at paragraph granularity for sentence-split pieces.
    return [(start, end, p.strip()) for p in pieces if p.strip()]


def _first_line_title(text: str) -> str | None:
    """A plain-text note's first line is its title when it is short and more text follows."""
    lines = [line.strip() for line in text.split("\n") if line.strip()]
    if len(lines) >= 2 and len(lines[0]) <= 60 and not lines[0].endswith(("。", ".", "：", ":")):
        return lines[0]
    return None


def chunk_document(src: SourceDocument) -> tuple[Document, list[Chunk]]:
    text = normalize_document(src.text)
    if not text.strip():
        raise InputError(f"{src.source}: the document is empty")
    heading_title, sections = _sections(text, src.format)
    if heading_title is None and src.format == "txt":
        heading_title = _first_line_title(text)
    title = src.title or heading_title or Path(src.source).stem or src.source
    doc_id = doc_id_for(src.source)
    chunks: list[Chunk] = []
    for section in sections:
        parent_id = "p" + sha256_hex(f"{doc_id}\x00{section.path}")[:15]
        pieces: list[tuple[int, int, str]] = []
        for para in _paragraphs(section.lines):
            pieces += _split_long(*para)
        group: list[tuple[int, int, str]] = []
        for piece in pieces + [None]:  # type: ignore[list-item]
            size = sum(text_size(t) for _, _, t in group)
            if group and (piece is None or size + text_size(piece[2]) > CHUNK_TARGET):
                body = "\n\n".join(t for _, _, t in group)
                digest = sha256_hex(body)
                ordinal = len(chunks)
                chunks.append(
                    Chunk(
                        chunk_id="c" + sha256_hex(f"{doc_id}\x00{ordinal}\x00{digest}")[:19],
                        doc_id=doc_id,
                        ordinal=ordinal,
                        title=title,
                        section=section.path,
                        text=body,
                        line_start=group[0][0],
                        line_end=group[-1][1],
                        sha256=digest,
                        parent_id=parent_id,
                    )
                )
                group = []
            if piece is not None:
                group.append(piece)
    if not chunks:  # a document that is only a title
        digest = sha256_hex(title)
        chunks.append(Chunk("c" + sha256_hex(f"{doc_id}\x000\x00{digest}")[:19], doc_id, 0, title, "", title, 1, 1, digest, ""))
    document = Document(
        doc_id=doc_id, source=src.source, title=title, sha256=sha256_hex(text), version=1, n_chunks=len(chunks)
    )
    return document, chunks
