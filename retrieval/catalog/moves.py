"""A file moved or renamed stays the same document: its versions, chunks and links follow it to the new path.

A document's id comes from its key: the front matter `id:` (or --doc-id) when it has one, else the path it was
first read from. So a document keeps its id when its file moves, and the path that names the document now is
looked up here (`path_document`) rather than derived again from the path.

A move is recognised when nothing else could explain what an ingest sees: a document keyed by its id whose file
is gone and that is now read from another path; or a file at a path no version was read from whose text is the
latest text of exactly one document (keyed by its path, in no pack) whose file is gone, and no other new file of
that ingest has the same text; when several gone documents and new files share one text (copies moved together, a
folder renamed), those whose file name is one file's on each side are paired by it. A file moved and edited at once,
without an `id:`, is a new document (and the old path's text answers until `kg ingest --sync`), as before.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable, Iterable

__all__ = ["document_chunk_ids", "is_gone_file", "move_source", "moved_files", "path_document"]

_BATCH = 500  # SQLite host parameters a statement


def path_document(db: sqlite3.Connection, source: str) -> str | None:
    """The id of the document keyed by its path whose file is `source` now (it may have moved there)."""
    row = db.execute("SELECT doc_id FROM documents WHERE source = ? AND doc_key IS NULL", (source,)).fetchone()
    return row[0] if row else None


def is_gone_file(source: str, exists: Callable[[str], bool] = os.path.exists) -> bool:
    """A source that was a file path (not an API post's name) and is no longer there."""
    return os.path.isabs(source) and not exists(source)


def moved_files(db: sqlite3.Connection, sources: Iterable[str], fingerprint: Callable[[str], str],
                exists: Callable[[str], bool] = os.path.exists) -> dict[str, tuple[str, str]]:
    """New source -> (doc id, old source) for the files among `sources` (the files of one ingest with no key of their
    own; `fingerprint`: a source's text's fingerprint, asked only of the paths no version was read from) that moved,
    by the rule in this module's docstring."""
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
    return moved


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
