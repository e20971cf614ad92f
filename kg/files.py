"""A file's change stamp: a path in, (mtime ns, size) or None out; every store that re-reads a file a person may edit (graph.ttl, synonyms.txt, REGISTRY.md, PACK.md) compares these."""

from __future__ import annotations

from pathlib import Path

__all__ = ["file_stamp"]


def file_stamp(path: Path) -> tuple[int, int] | None:
    try:
        st = Path(path).stat()
    except FileNotFoundError:
        return None
    return (st.st_mtime_ns, st.st_size)
