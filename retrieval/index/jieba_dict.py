"""jieba's word dictionary -> a tokenizer that reads from disk only the words the text at hand needs.

`jieba.initialize()` unmarshals a prefix dictionary of ~580,000 words (0.5-0.8 s, ~100 MB) before the
first cut. A `kg query` in a new process cuts one question, so that load was most of its start-up.
Here the same prefix dictionary lives in an SQLite file (built once from jieba's own dictionary, in
the user's cache directory) and `LazyFreq` answers jieba's look-ups from it, remembering each answer.
Once a process has looked up many distinct fragments (an ingest, a server warming up) the whole
dictionary is loaded into a plain dict and handed to jieba, so long runs cut at full speed. jieba
sees the same frequencies either way, so the words it cuts are the same.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import sys
import tempfile
import threading
from pathlib import Path

__all__ = ["LazyFreq", "dictionary_file", "load_tokenizer"]

# The whole dictionary (0.3-0.5 s to load) is handed to jieba once a process has read this many
# fragments from disk (~4 µs each) or asked this many questions of the mapping (~1 µs each, a plain
# dict ~0.05 µs): a question or two stay lazy, an ingest or a busy server soon runs on the dict.
PROMOTE_AFTER = 20_000
PROMOTE_AFTER_CALLS = 300_000
_MISSING = -1


def _import_jieba():
    """`import jieba` without its optional `pkg_resources` import (0.1-0.5 s of start-up): jieba then
    opens its data files by path, which is what it falls back to anyway."""
    if "jieba" in sys.modules:
        return sys.modules["jieba"]
    blocked = "pkg_resources" not in sys.modules
    if blocked:
        sys.modules["pkg_resources"] = None  # type: ignore[assignment]  # makes the import raise ImportError
    try:
        import jieba
    finally:
        if blocked and sys.modules.get("pkg_resources", 0) is None:
            del sys.modules["pkg_resources"]
    return jieba


def _cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "kgrag"


def _dictionary_key(jieba) -> str:
    """A key read from the installed dictionary's stat (no read of its 5 MB): the same install, the same key."""
    stat = _dict_txt(jieba).stat()
    return hashlib.sha256(f"{jieba.__version__}:{stat.st_size}:{stat.st_mtime_ns}".encode()).hexdigest()[:16]


def _content_key(jieba) -> str:
    """A key of the dictionary's bytes: every install of the same jieba (a new venv, a reinstall) has it."""
    return hashlib.sha256(_dict_txt(jieba).read_bytes()).hexdigest()[:16]


def _dict_txt(jieba) -> Path:
    return Path(jieba.__file__).parent / "dict.txt"


def _build(path: Path, tokenizer) -> None:
    """Write jieba's prefix dictionary (word or prefix -> frequency, 0 for a bare prefix) to `path`, atomically."""
    freq, total = tokenizer.gen_pfdict(tokenizer.get_dict_file())
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
    os.close(fd)
    try:
        conn = sqlite3.connect(tmp)
        with conn:
            conn.execute("CREATE TABLE freq (word TEXT PRIMARY KEY, n INTEGER NOT NULL) WITHOUT ROWID")
            conn.execute("CREATE TABLE meta (total INTEGER NOT NULL)")
            conn.executemany("INSERT INTO freq VALUES (?, ?)", freq.items())
            conn.execute("INSERT INTO meta VALUES (?)", (total,))
        conn.close()
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


class LazyFreq:
    """The mapping jieba reads as `Tokenizer.FREQ` (`in`, `[]`, `.get`, `[]=`), answered from SQLite."""

    def __init__(self, path: Path, tokenizer, promote_after: int = PROMOTE_AFTER,
                 promote_after_calls: int = PROMOTE_AFTER_CALLS) -> None:
        self.promote_after, self.promote_after_calls = promote_after, promote_after_calls
        self._calls = 0
        self._conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, check_same_thread=False)
        self._lock = threading.Lock()
        self._known: dict[str, int] = {}  # fragment -> frequency, or _MISSING
        self._added: dict[str, int] = {}  # what jieba wrote (add_word): kept over a promotion
        self._tokenizer = tokenizer
        self.total = self._conn.execute("SELECT total FROM meta").fetchone()[0]

    def _lookup(self, word: str) -> int:
        self._calls += 1
        n = self._known.get(word)
        if n is None:
            with self._lock:
                row = self._conn.execute("SELECT n FROM freq WHERE word = ?", (word,)).fetchone()
                n = self._known[word] = row[0] if row else _MISSING
                if len(self._known) >= self.promote_after:
                    self._promote()
        elif self._calls >= self.promote_after_calls:
            with self._lock:
                self._promote()
        return n

    def _promote(self) -> None:
        """Hand jieba the whole dictionary as a plain dict (what `jieba.initialize` would have built)."""
        if self._tokenizer.FREQ is not self:
            return
        full = dict(self._conn.execute("SELECT word, n FROM freq"))
        full.update(self._added)
        self._tokenizer.FREQ = full

    def __contains__(self, word: str) -> bool:
        return self._lookup(word) != _MISSING

    def __getitem__(self, word: str) -> int:
        n = self._lookup(word)
        if n == _MISSING:
            raise KeyError(word)
        return n

    def get(self, word: str, default=None):
        n = self._lookup(word)
        return default if n == _MISSING else n

    def __setitem__(self, word: str, n: int) -> None:
        with self._lock:
            self._known[word] = self._added[word] = n
            full = self._tokenizer.FREQ
            if full is not self:  # promoted meanwhile by another thread
                full[word] = n

    def __delitem__(self, word: str) -> None:
        """Forget what jieba wrote for `word` (a taught word forgotten): it reads as on disk again."""
        with self._lock:
            self._known.pop(word, None)
            self._added.pop(word, None)
            full = self._tokenizer.FREQ
            if full is not self:
                del full[word]


def dictionary_file(tokenizer=None) -> Path:
    """The on-disk prefix dictionary for the installed jieba, built on first use. It is kept under its content's
    key (`jieba-c<key>.sqlite`, 8.7 MB), found through a link named by the install's stat key, so each new venv or
    reinstall of the same jieba adds a link, not another copy (one a fresh install piled up in the user's cache)."""
    jieba = _import_jieba()
    link = _cache_dir() / f"jieba-{_dictionary_key(jieba)}.sqlite"
    if link.exists():
        return link
    path = _cache_dir() / f"jieba-c{_content_key(jieba)}.sqlite"
    if not path.exists():
        _build(path, tokenizer or jieba.Tokenizer())
    try:
        tmp = link.with_name(f".{link.name}.{os.getpid()}")
        tmp.unlink(missing_ok=True)
        tmp.symlink_to(path.name)  # relative: the cache folder may move as a whole
        os.replace(tmp, link)
    except OSError:  # no symbolic links here: the content's file is found by reading the dictionary each time
        return path
    return link


def load_tokenizer():
    """jieba's default tokenizer (`jieba.dt`), initialised from the on-disk dictionary when one can be
    built or read; jieba's own in-memory load otherwise (read-only home, no SQLite file)."""
    import logging

    jieba = _import_jieba()
    jieba.setLogLevel(logging.WARNING)
    dt = jieba.dt
    if dt.initialized:
        return dt
    try:
        freq = LazyFreq(dictionary_file(dt), dt)
    except (OSError, sqlite3.Error):
        jieba.initialize()
        return dt
    with dt.lock:
        if not dt.initialized:
            dt.FREQ, dt.total = freq, freq.total
            dt.initialized = True
    return dt
