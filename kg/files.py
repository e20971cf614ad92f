"""A file's change stamp: a path in, (mtime ns, size) or None out; every store that re-reads a file a person may edit (graph.ttl, synonyms.txt, REGISTRY.md, PACK.md) compares these. And a data dir file replaced whole or not at all (`replace_file`)."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

__all__ = ["file_stamp", "replace_file"]


def file_stamp(path: Path) -> tuple[int, int] | None:
    try:
        st = Path(path).stat()
    except FileNotFoundError:
        return None
    return (st.st_mtime_ns, st.st_size)


def replace_file(path: Path, data: bytes, prefix: str, suffix: str = "") -> None:
    """`data` becomes `path`, whole or not at all: a temporary file beside it (`prefix`, which `kg check` knows, so
    that one a killed process left is removed), on disk before the rename, with the mode the umask gives (mkstemp
    makes it private; graph.ttl is meant to be opened in Protégé)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=prefix, suffix=suffix, dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())  # the rename must never publish a file whose bytes are not on disk
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
