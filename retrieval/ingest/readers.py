"""Paths in, `SourceDocument`s out: which files a folder holds (and which it skips, and why), and one reader per format.

Markdown and text are read here (YAML front matter becomes metadata, not body text); HTML, PDF, Word and Excel
have their own modules. A reader that cannot read a file raises `InputError` naming the full path
and how to fix it, so a folder ingest can skip that file and carry on.
"""

from __future__ import annotations

import datetime as dt
import os
import re
import stat
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePosixPath

from kg.errors import InputError
from kg.files import NAME_CONTROLS, visible, without_controls, yaml_without_aliases
from kg.files import decode_text as decode_files_text
from retrieval.ingest.ignore import Ignores
from retrieval.ingest.ocr import Ocr
from retrieval.types import SourceDocument

__all__ = [
    "FoundFiles",
    "SUPPORTED_SUFFIXES",
    "Skipped",
    "cut_long_runs",
    "decode_text",
    "find_files",
    "find_source_files",
    "path_words",
    "read_source_bytes",
    "read_source_file",
    "read_sources",
    "split_front_matter",
]

SUPPORTED_SUFFIXES = {
    ".md": "md", ".markdown": "md", ".txt": "txt", ".text": "txt",
    ".html": "html", ".htm": "html", ".pdf": "pdf", ".docx": "docx", ".xlsx": "xlsx",
    ".pptx": "pptx", ".csv": "csv",
}
# Files that are certainly not documents: said so in one word instead of "unsupported".
_BINARY_SUFFIXES = {
    ".png", ".jpg", ".jpeg", ".gif", ".webp", ".bmp", ".ico", ".zip", ".gz", ".tar", ".7z", ".exe",
    ".dll", ".so", ".bin", ".pyc", ".mp3", ".mp4", ".mov", ".woff", ".woff2", ".ttf", ".sqlite", ".db",
}
# Office suites' own formats: what to do with them, instead of "unsupported".
_SAVE_AS = {".doc": ("a Word 97-2003 document", ".docx"), ".wps": ("a WPS Writer document", ".docx"),
            ".odt": ("an OpenDocument text", ".docx"), ".rtf": ("a Rich Text document", ".docx"),
            ".xls": ("an Excel 97-2003 workbook", ".xlsx"), ".et": ("a WPS Spreadsheets workbook", ".xlsx"),
            ".ods": ("an OpenDocument spreadsheet", ".xlsx"), ".ppt": ("a PowerPoint 97-2003 presentation", ".pptx"),
            ".dps": ("a WPS Presentation deck", ".pptx"), ".odp": ("an OpenDocument presentation", ".pptx")}
_FRONT_MATTER_KEYS = ("title", "summary", "aliases", "id", "effective", "tags", "version")
_PATH_PREFIX = re.compile(r"^[^/:]*:(?=[^/]*/|[^/:]*$)")  # a drive (C:) or a label (set:dir/file.md)
_FOLDER_INDEX = {"_index", "index", "readme"}  # a folder's own page is named for the folder
# A name with a line break or a terminal escape would be printed in every list of sources and every answer citing
# it; such a file is left where it is and said (its name spelled out), never renamed behind the user's back.
_CONTROL_NAME = "the name holds a line break, tab or control character (shown as \\n, \\t, \\xNN): not read; rename it"
# A file's text is checked against the document size limit once read; a file this many times over it is refused
# unread (a 600 MB log took 19 s and 3.5 GB to refuse). Generous, as a document's bytes on disk are not its text:
# a page's markup, a PDF's images, the data-URI images a Markdown export embeds (each kept as 40 characters).
FILE_SIZE_FACTOR = 20
PATH_DEPTH = 2  # the file's name and its folder's: "datanode/overview.md" is Datanode's overview


@dataclass(frozen=True)
class Skipped:
    path: str  # as printed: a control character in it spelled out (`visible`)
    reason: str

    def __post_init__(self) -> None:
        object.__setattr__(self, "path", visible(self.path))

    def __str__(self) -> str:
        return f"{self.path}: {self.reason}"


@dataclass
class FoundFiles:
    files: list[Path] = field(default_factory=list)
    roots: dict[Path, Path] = field(default_factory=dict)  # file -> the folder it was found under
    skipped: list[Skipped] = field(default_factory=list)
    ignored: int = 0  # files and folders left out by .kgignore / .gitignore / ALWAYS_IGNORED (not listed one by one)


def _supported() -> str:
    return ", ".join(sorted(SUPPORTED_SUFFIXES))


def _unsupported(suffix: str) -> str:
    if suffix in _SAVE_AS:
        what, to = _SAVE_AS[suffix]
        return (f"{what}: save it as {to} (Office or WPS: Save As; LibreOffice: "
                f"soffice --headless --convert-to {to[1:]} FILE) and ingest that")
    return f"unsupported file type '{visible(suffix)}' (kgrag reads {_supported()})"


def find_files(paths: Iterable[Path], ignore: bool = True) -> FoundFiles:
    """Every readable file under `paths` (files or folders), sorted, and what was skipped and why.

    Hidden files and folders are skipped silently (they are tool state: .git, .obsidian), and so are the
    `~$…` lock files Word keeps beside an open document; what `.kgignore` / `.gitignore` leave out is counted
    (`retrieval.ingest.ignore`; `ignore=False` reads it too); binary and
    unsupported files, and symlinks that lead outside the folder being ingested, are reported.
    A file named directly must be supported: that is an error, not a skip.
    """
    found = FoundFiles()
    for path in paths:
        path = Path(path)
        if not path.exists():
            raise InputError(f"{path}: no such file or folder")
        if path.is_file():
            if path.suffix.lower() not in SUPPORTED_SUFFIXES:
                raise InputError(f"{visible(path.name)}: {_unsupported(path.suffix.lower())}")
            if NAME_CONTROLS.search(str(path.resolve())):
                raise InputError(f"{visible(str(path))}: {_CONTROL_NAME}")
            found.files.append(path)
            continue
        root = path.resolve()
        if NAME_CONTROLS.search(str(root)):
            raise InputError(f"{visible(str(path))}: {_CONTROL_NAME}")

        rules = Ignores(root, enabled=ignore)

        def unreadable(error: OSError, root: Path = root) -> None:  # os.walk passes over such a folder in silence
            found.skipped.append(Skipped(os.path.abspath(error.filename or root), f"cannot be read ({error.strerror or error})"))

        # Walked from the resolved folder, so that a file's path is already its resolved source name.
        for dirpath, dirnames, filenames in os.walk(root, onerror=unreadable, followlinks=False):
            here = Path(dirpath)
            kept = []
            for name in sorted(dirnames):
                sub = here / name
                if name.startswith("."):
                    continue
                if rules.ignored(sub, is_dir=True):
                    found.ignored += 1
                    continue
                if NAME_CONTROLS.search(name):
                    found.skipped.append(Skipped(os.path.abspath(sub), f"folder: {_CONTROL_NAME}"))
                    continue
                if sub.is_symlink():
                    target = _link_target(sub)
                    if isinstance(target, Skipped):
                        found.skipped.append(target)
                        continue
                    if not target.is_relative_to(root):
                        found.skipped.append(Skipped(os.path.abspath(sub), f"symlink to {visible(str(target))}, outside {visible(str(path))}: not followed"))
                        continue
                    found.skipped.append(Skipped(os.path.abspath(sub), "symlinked folder inside the ingested folder: read where it lives"))
                    continue
                kept.append(name)
            dirnames[:] = kept
            for name in sorted(filenames):
                file = here / name
                if name.startswith((".", "~$")):  # ~$: the lock file Word and WPS keep beside an open document
                    continue
                if rules.ignored(file):
                    found.ignored += 1
                    continue
                if NAME_CONTROLS.search(name):
                    found.skipped.append(Skipped(os.path.abspath(file), _CONTROL_NAME))
                    continue
                suffix = file.suffix.lower()
                if file.is_symlink():
                    target = _link_target(file)
                    if isinstance(target, Skipped):
                        found.skipped.append(target)
                        continue
                    if not target.is_relative_to(root):
                        found.skipped.append(Skipped(os.path.abspath(file), f"symlink to {visible(str(target))}, outside {visible(str(path))}: not followed"))
                        continue
                if suffix in _BINARY_SUFFIXES:
                    found.skipped.append(Skipped(os.path.abspath(file), "binary file"))
                elif suffix not in SUPPORTED_SUFFIXES:
                    found.skipped.append(Skipped(os.path.abspath(file), _unsupported(suffix) if suffix else
                                                 f"unsupported file type '{name}' (kgrag reads {_supported()})"))
                elif (odd := _not_regular(file)) is not None:
                    found.skipped.append(odd)
                else:
                    found.files.append(file)
                    found.roots[file] = path
    found.files.sort()
    return found


def _link_target(link: Path) -> Path | Skipped:
    """Where a symlink leads, or why it leads nowhere (a loop, a missing target)."""
    try:
        return link.resolve(strict=True)
    except RuntimeError:  # Python < 3.13 reports a loop this way
        return Skipped(os.path.abspath(link), "symlink loop: not followed")
    except OSError as exc:
        import errno

        if exc.errno == errno.ELOOP:
            return Skipped(os.path.abspath(link), "symlink loop: not followed")
        return Skipped(os.path.abspath(link), f"broken symlink ({exc.strerror or exc}): not followed")


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISSOCK, "a socket"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"), (stat.S_ISDIR, "a folder")):
        if test(mode):
            return name
    return "not a regular file"


def _not_regular(file: Path) -> Skipped | None:
    """A FIFO, device or socket named like a document: reading it would wait for ever (or forever read)."""
    try:
        mode = os.stat(file).st_mode
    except OSError as exc:
        return Skipped(os.path.abspath(file), f"cannot be read ({exc.strerror or exc})")
    if stat.S_ISREG(mode):
        return None
    return Skipped(os.path.abspath(file), f"{_kind(mode)}, not a file: not read")


def find_source_files(paths: Iterable[Path]) -> list[Path]:
    """The readable files of `find_files`, without the report."""
    return find_files(paths).files


def read_sources(files: Iterable[Path], skipped: list[Skipped], *, strict: bool = False, progress=None,
                 doc_key: str | None = None, effective: str | None = None,
                 max_text_bytes: int | None = None, ocr: Ocr | None = None) -> Iterator[SourceDocument]:
    """Each file as a `SourceDocument` (its source: the resolved path); one that cannot be read is added to
    `skipped` (and counted in `progress`), or, with `strict`, raises. `doc_key`/`effective` override the file's own.
    `max_text_bytes`: the largest document's text; a file over FILE_SIZE_FACTOR times that is not read. `ocr`: how a
    scanned PDF page is read (`ocr.configured`), None: it is not."""
    for file in files:
        try:
            file = Path(file)
            resolved = file if file.is_absolute() and not file.is_symlink() and ".." not in file.parts else file.resolve()
            src = read_source_file(file, str(resolved), max_text_bytes, ocr)
        except InputError as exc:
            if strict:
                raise
            skipped.append(Skipped(os.path.abspath(file), str(exc).removeprefix(f"{file}: ")))
            if progress:
                progress(1)
            continue
        except Exception as exc:  # a file no reader foresaw (a parser's own error): it is skipped, never the folder
            reason = f"cannot be read ({type(exc).__name__}: {exc}); please report it with the file"
            if strict:
                raise InputError(f"{file}: {reason}") from exc
            skipped.append(Skipped(os.path.abspath(file), reason))
            if progress:
                progress(1)
            continue
        if doc_key or effective:
            src = replace(src, doc_key=doc_key or src.doc_key, effective_date=effective or src.effective_date)
        yield src


def read_source_file(path: Path, source: str | None = None, max_text_bytes: int | None = None,
                     ocr: Ocr | None = None) -> SourceDocument:
    """One file -> a `SourceDocument` (format from the suffix). Raises `InputError` with the path and a fix; a file
    over FILE_SIZE_FACTOR x `max_text_bytes` (the document size limit) without reading it."""
    path = Path(path)
    fmt = SUPPORTED_SUFFIXES.get(path.suffix.lower())
    if fmt is None:
        raise InputError(f"{path}: unsupported file type '{path.suffix}' (kgrag reads {_supported()})")
    try:
        # Opened without blocking and checked before reading: a FIFO put in a file's place (after the
        # folder was listed) must not hang the ingest.
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        with os.fdopen(fd, "rb") as f:
            st = os.fstat(f.fileno())
            if not stat.S_ISREG(st.st_mode):
                raise InputError(f"{path}: {_kind(st.st_mode)}, not a file: not read")
            if max_text_bytes is not None and st.st_size > FILE_SIZE_FACTOR * max_text_bytes:
                raise InputError(f"{path}: {st.st_size:,} bytes, not read: documents may hold {max_text_bytes:,} bytes of "
                                 f"text, and files over {FILE_SIZE_FACTOR} times that are not read; split it, or raise "
                                 "KG_MAX_DOCUMENT_BYTES")
            raw = f.read()
    except OSError as exc:
        raise InputError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    return read_source_bytes(raw, fmt, source or str(path), label=str(path), ocr=ocr)


def read_source_bytes(raw: bytes, fmt: str, source: str, label: str | None = None,
                      ocr: Ocr | None = None) -> SourceDocument:
    """Bytes of a file (or an upload) -> a `SourceDocument`. `label` names it in error messages; `ocr`: how a scanned
    PDF page is read (`ocr.configured`), None: it is not."""
    src = _read_source_bytes(raw, fmt, source, label or source, ocr)
    text, removed = without_controls(src.text)
    title, in_title = without_controls(src.title) if src.title else (src.title, 0)
    if not removed + in_title:
        return src
    note = f"{label or source}: {removed + in_title} terminal escape sequence(s) or control character(s) removed"
    return replace(src, text=text, title=title, warnings=(*src.warnings, note))


def _read_source_bytes(raw: bytes, fmt: str, source: str, label: str, ocr: Ocr | None = None) -> SourceDocument:
    if not raw.strip():
        raise InputError(f"{label}: the document is empty")
    if fmt == "pdf":
        from retrieval.ingest.pdf import read_pdf

        return read_pdf(raw, source, label, ocr)
    if fmt == "docx":
        from retrieval.ingest.docx import read_docx

        return read_docx(raw, source, label)
    if fmt == "xlsx":
        from retrieval.ingest.xlsx import read_xlsx

        return read_xlsx(raw, source, label)
    if fmt == "pptx":
        from retrieval.ingest.pptx import read_pptx

        return read_pptx(raw, source, label)
    text, encoding = decode_text(raw, label)
    if "\x00" in text:
        head = raw[:4096]
        if head.count(0) * 3 >= len(head):  # every other byte: Latin text in UTF-16 saved without its byte order mark
            raise InputError(f"{label}: looks like UTF-16 text without a byte order mark; save the file as UTF-8 and "
                             "ingest it again")
        raise InputError(f"{label}: binary content (NUL bytes) in a .{fmt} file; kgrag reads text files of these types")
    if fmt == "html":
        from retrieval.ingest.html import read_html

        src = read_html(text, source)
    elif fmt == "csv":
        from retrieval.ingest.csv_table import read_csv

        src = read_csv(text, source, label)
    elif fmt == "md":
        meta, text = split_front_matter(text, label)
        src = _with_meta(SourceDocument(source=source, text=text, format="md"), meta, label)
    else:
        src = SourceDocument(source=source, text=text, format=fmt)
    text, notes = cut_long_runs(src.text)
    if encoding != "utf-8":
        notes.insert(0, f"read as {encoding.upper()} (it is not UTF-8)")
    return replace(src, text=text, warnings=(*src.warnings, *(f"{label}: {n}" for n in notes))) if notes else src


def decode_text(raw: bytes, label: str) -> tuple[str, str]:
    """A document's text and encoding (`kg.files.decode_text`: UTF-8, GBK/GB18030, UTF-16 with its byte order mark)."""
    return decode_files_text(raw, label, "save the file as UTF-8 and ingest it again")


# An unbroken run of base64/hex-like characters (a data-URI image, an embedded blob) is no word anyone
# asks for, and a long one stops the entity linker (spaCy refuses texts over 1,000,000 characters).
_BLOB = re.compile(r"[A-Za-z0-9+/=_-]{1000,}")
BLOB_KEPT = 40
MAX_LINE = 100_000  # whatever is longer after that (a minified file) is cut at this length


def cut_long_runs(text: str) -> tuple[str, list[str]]:
    """`text` with each blob shortened to its first characters and each line cut to MAX_LINE characters
    (line breaks kept, so line numbers stay true), and what was cut, said once each."""
    if len(text) < 1000:
        return text, []
    notes: list[str] = []
    blobs = 0

    def shorten(match: re.Match) -> str:
        nonlocal blobs
        blobs += 1
        return match.group()[:BLOB_KEPT] + "…"

    text = _BLOB.sub(shorten, text)
    if blobs:
        notes.append(f"{blobs} unbroken run(s) of 1,000+ letters and digits (data URIs, base64) shortened to their first {BLOB_KEPT}")
    if len(text) > MAX_LINE:
        lines = text.split("\n")
        long = [i for i, line in enumerate(lines) if len(line) > MAX_LINE]
        if long:
            for i in long:
                lines[i] = lines[i][:MAX_LINE]
            text = "\n".join(lines)
            notes.append(f"line {long[0] + 1}{f' and {len(long) - 1} more' if len(long) > 1 else ''} cut to "
                         f"{MAX_LINE:,} characters")
    return text, notes


def split_front_matter(text: str, label: str = "") -> tuple[dict, str]:
    """YAML front matter (`---` ... `---` at the very top) -> (metadata, body).

    The front matter's lines are replaced by empty lines, so line numbers in the body stay true.
    """
    stripped = text.lstrip("\ufeff")
    lines = stripped.replace("\r\n", "\n").split("\n")
    if not lines or lines[0].strip() != "---":
        return {}, text
    for end in range(1, len(lines)):
        if lines[end].strip() in ("---", "..."):
            break
    else:
        return {}, text  # an opening rule with no closing one is a thematic break, not front matter
    import yaml

    try:
        meta = yaml_without_aliases("\n".join(lines[1:end])) or {}
    except yaml.YAMLError as exc:
        mark, problem = getattr(exc, "problem_mark", None), getattr(exc, "problem", None)
        where = f" (line {mark.line + 2}{f': {problem}' if problem else ''})" if mark else ""
        raise InputError(f"{label}: the YAML front matter does not parse{where}; fix it or remove the `---` block") from None
    except (ValueError, OverflowError) as exc:  # YAML reads 2024-13-45 as a date, and Python refuses it
        raise InputError(f"{label}: the YAML front matter holds a value that is no real date or number ({exc}); fix it "
                         "or put it in quotes") from None
    if not isinstance(meta, dict):
        return {}, text
    body = "\n" * (end + 1) + "\n".join(lines[end + 1 :])
    return meta, body


def _as_list(value) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        return tuple(v.strip() for v in value.split(",") if v.strip())
    if isinstance(value, (list, tuple)):
        return tuple(str(v).strip() for v in value if str(v).strip())
    return (str(value),)


def parse_effective(value, label: str) -> str | None:
    """A front matter or CLI date -> ISO `YYYY-MM-DD`; a month or year means its first day."""
    if value is None or value == "":
        return None
    if isinstance(value, dt.datetime):
        return value.date().isoformat()
    if isinstance(value, dt.date):
        return value.isoformat()
    text = str(value).strip()
    for fmt in ("%Y-%m-%d", "%Y/%m/%d", "%Y.%m.%d", "%Y-%m", "%Y/%m", "%Y"):
        try:
            return dt.datetime.strptime(text, fmt).date().isoformat()
        except ValueError:
            continue
    try:
        return dt.datetime.fromisoformat(text).date().isoformat()
    except ValueError:
        raise InputError(f"{label}: effective date '{text}' is not a date; write it as YYYY-MM-DD") from None


def _with_meta(src: SourceDocument, meta: dict, label: str) -> SourceDocument:
    meta = {str(k).lower(): v for k, v in meta.items() if str(k).lower() in _FRONT_MATTER_KEYS}
    if not meta:
        return src
    title = meta.get("title")
    doc_key = meta.get("id")
    version = meta.get("version")
    return SourceDocument(
        source=src.source, text=src.text, format=src.format,
        title=str(title).strip() if title not in (None, "") else None,
        effective_date=parse_effective(meta.get("effective"), label),
        doc_key=str(doc_key).strip() if doc_key not in (None, "") else None,
        summary=str(meta.get("summary") or "").strip(),
        aliases=_as_list(meta.get("aliases")), tags=_as_list(meta.get("tags")),
        version_label=str(version).strip() if version not in (None, "") else None,
    )


def path_words(source: str) -> str:
    """What a document's file path says it is about: its folder's name and its own, words apart.

    People name files and folders for what they hold (`runbooks/redis-cluster-failure.md`,
    `datanode/wal.md`): "datanode wal" is as much a heading of every section as the headings are.
    The file's name alone is not enough ("overview", "configuration"), and the folders above its
    own are the place it sits in (a home folder, "docs/current"). Only a source that is the path of
    a file kgrag reads says anything ("" for a pasted text or a benchmark passage id)."""
    path = _PATH_PREFIX.sub("", source.replace("\\", "/").split("://", 1)[-1])
    suffix = PurePosixPath(path).suffix
    if suffix.lower() not in SUPPORTED_SUFFIXES:
        return ""
    parts = [part for part in path[: -len(suffix)].split("/") if part]
    if parts and parts[-1].casefold() in _FOLDER_INDEX:
        parts = parts[:-1]
    return " ".join(re.sub(r"[-_.]+", " ", part).strip() for part in parts[-PATH_DEPTH:])
