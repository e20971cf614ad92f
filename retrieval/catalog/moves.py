"""A file moved or renamed stays the same document: its versions, chunks and links follow it to the new path.

A document's id comes from its key: the front matter `id:` (or --doc-id) when it has one, else the path it was
first read from. So a document keeps its id when its file moves, and the path that names the document now is
looked up here (`path_document`) rather than derived again from the path.

A move is recognised when nothing else could explain what an ingest sees: a document keyed by its id whose file
is gone and that is now read from another path; or a file at a path no version was read from whose text is the
latest text of exactly one document (keyed by its path, in no pack) whose file is gone, and no other new file of
that ingest has the same text; when several gone documents and new files share one text (copies moved together, a
folder renamed), those whose file name is one file's on each side are paired by it.

A file moved or renamed and edited at once, without an `id:` (a note moved into another folder and touched up, or
`plan-v1.md` renamed `plan-v2.md` and revised), is paired with a gone document whose file had its name or sat in its
folder, when at least half of the lines of the longer of the two texts are in both (`SAME_LINES`: an edit keeps most
of a document, another document shares little with it) and exactly one gone document is that close to it, and it to
no other new file. The ingest then makes the new text a new version of that document. Otherwise it is a new document
(and the old path's text answers until `kg ingest --sync`).
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable, Iterable

__all__ = ["document_chunk_ids", "is_gone_file", "move_source", "moved_files", "path_document"]

_BATCH = 500  # SQLite host parameters a statement
SAME_LINES = 0.5  # of the longer text's distinct lines, in both: a file moved and edited is still that document
_CANDIDATES = 50  # gone documents compared with one new file at most (the same name or folder)


def path_document(db: sqlite3.Connection, source: str) -> str | None:
    """The id of the document keyed by its path whose file is `source` now (it may have moved there)."""
    row = db.execute("SELECT doc_id FROM documents WHERE source = ? AND doc_key IS NULL", (source,)).fetchone()
    return row[0] if row else None


def is_gone_file(source: str, exists: Callable[[str], bool] = os.path.exists) -> bool:
    """A source that was a file path (not an API post's name) and is no longer there."""
    return os.path.isabs(source) and not exists(source)


def moved_files(db: sqlite3.Connection, sources: Iterable[str], fingerprint: Callable[[str], str],
                exists: Callable[[str], bool] = os.path.exists,
                text: Callable[[str], str] | None = None) -> dict[str, tuple[str, str]]:
    """New source -> (doc id, old source) for the files among `sources` (the files of one ingest with no key of their
    own; `fingerprint`: a source's text's fingerprint, asked only of the paths no version was read from) that moved,
    by the rule in this module's docstring; with `text` (a source's text), also those moved and edited at once."""
    new: dict[str, list[str]] = {}
    for source in sources:
        if not db.execute("SELECT 1 FROM versions WHERE source = ? LIMIT 1", (source,)).fetchone():
            new.setdefault(fingerprint(source), []).append(source)
    gone: dict[str, list[tuple[str, str]]] = {}
    prints = list(new)
    for i in range(0, len(prints), _BATCH):
        part = prints[i : i + _BATCH]
        for doc_id, source, print_ in db.execute(
                "SELECT d.doc_id, d.source, v.sha256 FROM versions v JOIN documents d"
                " ON d.doc_id = v.doc_id AND d.source = v.source AND d.doc_key IS NULL AND d.pack IS NULL"
                f" WHERE v.sha256 IN ({','.join('?' * len(part))})"
                " AND v.seq = (SELECT MAX(seq) FROM versions w WHERE w.doc_id = v.doc_id)", part):
            if is_gone_file(source, exists):
                gone.setdefault(print_, []).append((doc_id, source))
    moved: dict[str, tuple[str, str]] = {}
    for print_, olds in gone.items():
        news = new[print_]
        if len(olds) == 1 and len(news) == 1:
            moved[news[0]] = olds[0]
            continue
        # Several files with one text (copies moved together, a folder renamed): paired by file name where the name
        # is one file's on each side.
        old_names = _by_name(olds, lambda old: old[1])
        for name, sources in _by_name(news, str).items():
            if len(sources) == 1 and len(old_names.get(name, ())) == 1:
                moved[sources[0]] = old_names[name][0]
    if text is not None:
        rest = [source for group in new.values() for source in group if source not in moved]
        moved.update(_edited(db, rest, text, exists, {old for old in moved.values()}))
    return moved


def _edited(db: sqlite3.Connection, sources: list[str], text: Callable[[str], str], exists: Callable[[str], bool],
            taken: set[tuple[str, str]]) -> dict[str, tuple[str, str]]:
    """The new files among `sources` that are gone documents moved and edited at once (the module's rule)."""
    by_folder: dict[str, list[tuple[str, str]]] = {}
    by_name: dict[str, list[tuple[str, str]]] = {}
    for old in _gone_near(db, sources, exists):
        if old not in taken:
            by_folder.setdefault(os.path.dirname(old[1]), []).append(old)
            by_name.setdefault(os.path.basename(old[1]), []).append(old)
    close: dict[str, list[tuple[str, str]]] = {}
    for source in sources:
        folder, name = os.path.split(source)
        candidates = list(dict.fromkeys([*by_name.get(name, ()), *by_folder.get(folder, ())]))
        if not candidates or len(candidates) > _CANDIDATES:
            continue
        lines = _lines(text(source))
        close[source] = [old for old in candidates if _same_lines(lines, _document_lines(db, old[0])) >= SAME_LINES]
    claimed: dict[tuple[str, str], int] = {}
    for olds in close.values():
        for old in olds:
            claimed[old] = claimed.get(old, 0) + 1
    return {source: olds[0] for source, olds in close.items() if len(olds) == 1 and claimed[olds[0]] == 1}


def _gone_near(db: sqlite3.Connection, sources: list[str], exists: Callable[[str], bool]) -> list[tuple[str, str]]:
    """The path-keyed documents outside packs whose file is gone and had the file name of one of `sources` or sat in
    its folder: one pass over the documents, a file looked at only when its name or folder is one of those."""
    if not sources:
        return []
    folders = {os.path.dirname(source) for source in sources}
    names = {os.path.basename(source) for source in sources}
    rows = db.execute("SELECT doc_id, source FROM documents WHERE doc_key IS NULL AND pack IS NULL")
    return [(doc_id, old) for doc_id, old in rows
            if (os.path.dirname(old) in folders or os.path.basename(old) in names) and is_gone_file(old, exists)]


def _document_lines(db: sqlite3.Connection, doc_id: str) -> set[str]:
    return _lines("\n".join(r[0] for r in db.execute("SELECT text FROM chunks WHERE doc_id = ?", (doc_id,))))


def _lines(text: str) -> set[str]:
    return {" ".join(line.split()) for line in text.splitlines() if line.strip()}


def _same_lines(a: set[str], b: set[str]) -> float:
    return len(a & b) / max(len(a), len(b)) if a and b else 0.0


def _by_name(items: Iterable, path: Callable) -> dict[str, list]:
    """The items by the file name of their path."""
    named: dict[str, list] = {}
    for item in items:
        named.setdefault(os.path.basename(path(item)), []).append(item)
    return named


def move_source(db: sqlite3.Connection, doc_id: str, old: str, new: str) -> None:
    """The document's versions read from `old` were read from `new` (inside the write's transaction). The old
    path's file stamp goes: the new path's is recorded when the ingest ends."""
    db.execute("UPDATE versions SET source = ? WHERE doc_id = ? AND source = ?", (new, doc_id, old))
    db.execute("UPDATE documents SET source = ? WHERE doc_id = ? AND source = ?", (new, doc_id, old))
    try:
        db.execute("DELETE FROM file_stats WHERE source = ?", (old,))
    except sqlite3.OperationalError:  # a catalog from before file stamps
        pass


def document_chunk_ids(db: sqlite3.Connection, doc_id: str) -> list[str]:
    """Every chunk the catalog holds for the document (every version's)."""
    return [r[0] for r in db.execute("SELECT chunk_id FROM chunks WHERE doc_id = ? ORDER BY ordinal", (doc_id,))]
