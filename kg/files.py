"""A file's change stamp: a path in, (mtime ns, size) or None out; every store that re-reads a file a person may edit (graph.ttl, synonyms.txt, REGISTRY.md, PACK.md) compares these. A data dir file replaced whole or not at all (`replace_file`). The text of a file a person wrote, in the encodings their editors save (`decode_text`). And what a write cannot get past: a full disk (`disk_full`), a folder it may not write (`unwritable`). What comes from someone else made safe to read and to print: text without terminal escapes (`without_controls`), a name with its control characters spelled out (`visible`), an address without its credentials (`masked`), YAML without alias bombs (`yaml_without_aliases`)."""

from __future__ import annotations

import codecs
import errno
import os
import re
import tempfile
from pathlib import Path

from kg.errors import InputError

__all__ = ["NAME_CONTROLS", "TEXT_CONTROLS", "decode_text", "disk_full", "file_stamp", "read_text", "replace_file",
           "masked", "unwritable", "visible", "without_controls", "yaml_without_aliases"]

_FULL = {errno.ENOSPC, errno.EDQUOT}
# Control characters in text a person or a tool wrote: none belongs in a note's text (tabs and line ends aside) or in a
# name (a label, an alias: one line of plain text). What drives a terminal (ESC, CSI) is among them.
TEXT_CONTROLS = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
NAME_CONTROLS = re.compile(r"[\x00-\x1f\x7f-\x9f]")
# Terminal escape sequences (CSI: colours, clearing the screen, hiding text; OSC: the window's title, links, the
# clipboard) and the control characters left after them: text for reading holds none, and a document, a pack's card or
# a model's reply from someone else must not drive the terminal it is printed in. Tabs and line ends stay.
_ESCAPES = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[@-Z\\-_]?|\x9b[0-?]*[ -/]*[@-~]")


def without_controls(text: str) -> tuple[str, int]:
    """`text` without terminal escape sequences and control characters (each control character becomes a space, so
    columns and line numbers stay), and how many were removed."""
    if not TEXT_CONTROLS.search(text):
        return text, 0
    text, escapes = _ESCAPES.subn("", text)
    text, controls = TEXT_CONTROLS.subn(" ", text)
    return text, escapes + controls


def visible(name: str) -> str:
    """A name (a file's path) to print: each control character spelled out (`\\n`, `\\x1b`), so that a name cannot move
    the cursor, recolour the screen or break a report's line, and the user can still tell which file it is."""
    if not NAME_CONTROLS.search(name):
        return name
    return NAME_CONTROLS.sub(lambda m: {"\n": "\\n", "\r": "\\r", "\t": "\\t"}.get(m[0], f"\\x{ord(m[0]):02x}"), name)


# Secrets a configured address may carry: an http(s) URL's user info (`https://oauth2:TOKEN@`, `https://TOKEN@`: a
# user name alone there is a token too), another URL's password (`postgresql://kgrag:PASSWORD@`), a connection
# string's `password=`. ssh's `git@host` names no secret and stays.
_HTTP_USERINFO = re.compile(r"\b(https?://)[^/@\s'\"]+@", re.I)
_URL_PASSWORD = re.compile(r"\b([a-z][a-z0-9+.-]*://[^:/@\s'\"]+:)[^@\s'\"]+@", re.I)
_KEY_PASSWORD = re.compile(r"\b(password\s*=\s*)('[^']*'|\S+)", re.I)


def masked(text: str) -> str:
    """`text` (an address, or a message naming one) with its credentials as `***`: what is printed, listed, served or
    returned in an error for a pack's git URL, the PostgreSQL DSN, the model's endpoint."""
    text = _HTTP_USERINFO.sub(r"\1***@", text)
    text = _URL_PASSWORD.sub(r"\1***@", text)
    return _KEY_PASSWORD.sub(r"\1***", text)


def yaml_without_aliases(text: str):
    """`yaml.safe_load` of a front matter or a card, refusing anchors' aliases (`*name`) and nesting past 100 levels:
    nine aliases of nine aliases are 9^9 strings to whatever walks the value, so one file in a shared folder or a
    cloned pack took 4 GB and never finished. Raises `yaml.YAMLError` (with `problem` and `problem_mark`)."""
    import yaml

    class Loader(yaml.SafeLoader):
        depth = 0

        def compose_node(self, parent, index):
            if self.check_event(yaml.AliasEvent):
                raise yaml.composer.ComposerError(None, None, "an alias (*name) of an anchor: kgrag does not expand "
                                                  "them; write the value out", self.peek_event().start_mark)
            self.depth += 1
            try:
                if self.depth > 100:
                    raise yaml.composer.ComposerError(None, None, "more than 100 levels of nesting",
                                                      self.peek_event().start_mark)
                return super().compose_node(parent, index)
            finally:
                self.depth -= 1

    loader = Loader(text)
    try:
        return loader.get_single_data()
    finally:
        loader.dispose()


def disk_full(exc: BaseException | None) -> BaseException | None:
    """The full disk or exhausted quota that `exc` is, or was raised from or while handling (ENOSPC / EDQUOT from the
    OS, SQLite's "database or disk is full"); None when it is something else."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, OSError) and exc.errno in _FULL:
            return exc
        if type(exc).__name__ == "OperationalError" and "database or disk is full" in str(exc):
            return exc
        exc = exc.__cause__ or exc.__context__
    return None


def decode_text(raw: bytes, label: str, advice: str = "save the file as UTF-8") -> tuple[str, str]:
    """A person's text file's text and encoding, by the relation import's rule: UTF-8 (with or without a BOM), else
    Chinese GBK, read as its superset GB18030 (what Windows editors in China save as "ANSI"), else Big5 (cp950: the
    "ANSI" of Windows in Taiwan and Hong Kong). A file that opens with a UTF-16 byte order mark is UTF-16: what Notepad
    saves as "Unicode" and Windows PowerShell's `>` writes. GB18030 reads almost any bytes, Big5's among them, as
    characters, so Big5 wins when GB18030 gives mostly rare characters or kana and Big5 common ones (`_chinese_share`).
    Anything else is an `InputError` naming `label`, the first byte that is not UTF-8, and `advice`."""
    if raw.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)) and not raw.startswith(codecs.BOM_UTF32_LE):
        try:
            return raw.decode("utf-16"), "utf-16"
        except UnicodeDecodeError as exc:
            raise InputError(f"{label}: starts as UTF-16 text but is not (byte {exc.start}); {advice}") from None
    try:
        return raw.decode("utf-8-sig"), "utf-8"
    except UnicodeDecodeError as exc:
        utf8_error = exc.start
    for encoding in ("gbk", "gb18030"):
        try:
            text = raw.decode(encoding)
        except UnicodeDecodeError:
            continue
        if _chinese_share(text) >= _GB_READS_AS_CHINESE:
            return text, encoding
        big5 = _big5(raw)
        return (big5, "big5") if big5 is not None else (text, encoding)
    big5 = _big5(raw)
    if big5 is not None:
        return big5, "big5"
    raise InputError(f"{label}: neither UTF-8, GBK/GB18030 nor Big5 text (byte {utf8_error}); {advice}") from None


# Measured on the passages of ops_dev_zh, domainrag_zh_dev and rgb_zh_dev encoded both ways (11,307 GBK texts, 14,194
# Big5 ones): GBK text read as GBK has a common-character share of 0.88 at the least (0.99 at the 1st percentile);
# Big5 text read as GB18030 0.57 at the most (0.31 at the 99th percentile), read as Big5 0.82 at the least.
_GB_READS_AS_CHINESE = 0.7
_BIG5_READS_AS_CHINESE = 0.8
_SAMPLE = 20_000  # letters looked at: enough to tell, and a large file costs no more


def legacy_chinese_codec(sample: bytes) -> str:
    """The codec of a Chinese file that is not UTF-8, from a sample of its first lines, by `decode_text`'s rule: "gbk"
    (GB18030 reads it as common characters, or Big5 does not either) or Big5's "cp950" / "big5hkscs". For a file read
    one line at a time (a relation table), where the whole text is not at hand."""
    if _chinese_share(sample.decode("gb18030", errors="replace")) >= _GB_READS_AS_CHINESE:
        return "gbk"
    big5 = _big5_reading(sample)
    return big5[1] if big5 is not None else "gbk"


def _big5(raw: bytes) -> str | None:
    """The text read as Big5 (cp950, else with Hong Kong's characters) when that reads as Chinese, else None."""
    big5 = _big5_reading(raw)
    return big5[0] if big5 is not None else None


def _big5_reading(raw: bytes) -> tuple[str, str] | None:
    """(text, codec) of `raw` read as Big5 (cp950, else with Hong Kong's characters) when that reads as Chinese."""
    for encoding in ("cp950", "big5hkscs"):
        try:
            text = raw.decode(encoding)
        except UnicodeDecodeError:
            continue
        return (text, encoding) if _chinese_share(text) >= _BIG5_READS_AS_CHINESE else None
    return None


def _chinese_share(text: str) -> float:
    """Among the text's CJK letters (ideographs, kana, hangul, private-use), the share that are common Chinese
    characters: in GB2312 (simplified) or Big5's first level (traditional). 1.0 for a text with fewer than 4 of them:
    too little to tell."""
    letters = _CJK_LETTERS.findall(text, 0, 4 * _SAMPLE)[:_SAMPLE]
    if len(letters) < 4:
        return 1.0
    return sum(map(_common_chinese, letters)) / len(letters)


_CJK_LETTERS = re.compile("[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af\ue000-\uf8ff\uf900-\ufaff]")


def _common_chinese(char: str) -> bool:
    if not "\u4e00" <= char <= "\u9fff":
        return False
    try:
        char.encode("gb2312")
        return True
    except UnicodeEncodeError:
        pass
    try:
        return 0xA440 <= int.from_bytes(char.encode("big5"), "big") <= 0xC67E
    except UnicodeEncodeError:
        return False


def unwritable(folder: Path, *files: str) -> str | None:
    """Why this process cannot write in `folder` (or to those of `files` in it that exist): "on a read-only file
    system", "not writable by this user"; None when it can."""
    folder = Path(folder)
    paths = [folder, *(p for p in (folder / f for f in files) if p.exists())]
    if all(os.access(p, os.W_OK) for p in paths):
        return None
    try:
        if os.statvfs(folder).f_flag & os.ST_RDONLY:
            return "on a read-only file system"
    except OSError:
        pass
    return "not writable by this user"


def read_text(path: Path, advice: str = "save the file as UTF-8") -> str:
    """`decode_text` of the file at `path`, named by its file name."""
    return decode_text(Path(path).read_bytes(), Path(path).name, advice)[0]


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
