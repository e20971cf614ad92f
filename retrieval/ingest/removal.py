"""Document names or folders in, catalog rows and index entries removed out: `kg delete`, `DELETE /documents/{id}` and `kg ingest --sync`.

Both run inside the caller's `DocStore.transaction()` with the index writer open; the caller
commits the index and the transaction (or rolls both back), as the ingest does.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from kg.errors import InputError, NotFoundError
from retrieval.ingest.ignore import Ignores

__all__ = ["Removed", "delete_documents", "remove_missing_sources", "resolve_documents"]


@dataclass
class Removed:
    versions: int = 0
    chunks: int = 0
    documents: list[str] = field(default_factory=list)  # sources of the documents removed whole


def resolve_documents(history, keys: Sequence[str]) -> list[str]:
    """doc ids for names (doc_id, front matter `id:`, source path, or the document's title when it names one
    document); every unknown name is an error, and so is a title several documents share (with their list)."""
    resolved = {key: history.resolve(key) or history.resolve(str(Path(key).resolve())) or _by_title(history, key)
                for key in keys}
    unknown = [key for key, doc in resolved.items() if doc is None]
    if unknown:
        raise NotFoundError(f"no document {', '.join(repr(k) for k in unknown)} "
                            "(give a doc_id, a front matter id, a source path or a title; `kg documents` lists them)")
    return list(dict.fromkeys(resolved.values()))


def _by_title(history, key: str) -> str | None:
    found = history.titled(key)
    if len(found) > 1:
        listed = "; ".join(f"{doc_id} ({source})" for doc_id, _, source in found)
        raise InputError(f"{len(found)} documents are titled '{found[0][1]}': name one by its doc_id or path: {listed}",
                         problems=[f"{doc_id}: {title} ({source})" for doc_id, title, source in found])
    return found[0][0] if found else None


def delete_documents(store, history, index, doc_ids: Sequence[str]) -> list[dict]:
    out = []
    for doc_id in doc_ids:
        doc = store.document(doc_id)
        removed = history.delete_document(doc_id)
        index.delete_chunks(removed)
        out.append({"doc_id": doc_id, "title": doc.title, "source": doc.source, "chunks_removed": len(removed)})
    return out


def remove_missing_sources(store, history, index, folders: Sequence[Path], ignore: bool = True) -> Removed:
    """The versions whose source is a file under `folders` that no longer exists, or (`ignore`) that the folders'
    .kgignore / .gitignore now leave out (and documents left with none)."""
    roots = [Path(p).resolve() for p in folders]
    rules = {root: Ignores(root, enabled=ignore) for root in roots if root.is_dir()}

    def exists(source: str) -> bool:
        path = Path(source)
        if not path.is_absolute() or not any(path.is_relative_to(r) for r in roots):
            return True  # not a file of these folders (an API document, another folder): not ours to judge
        if any(path.is_relative_to(root) and r.ignored_file(path) for root, r in rules.items()):
            return False  # left out of the folder by its rules: no longer one of its files
        return path.is_file()

    removed = Removed()
    for doc_id, version_ids in history.versions_from_missing_sources(exists).items():
        doc = store.document(doc_id)
        chunk_ids = history.remove_versions(doc_id, version_ids)
        removed.versions += len(version_ids)
        removed.chunks += index.delete_chunks(chunk_ids) if chunk_ids else 0
        if store.document(doc_id) is None:
            removed.documents.append(doc.source)
    return removed
