"""Scanned PDF pages read by OCR: Tesseract, which MuPDF calls in-process (PyMuPDF's `get_textpage_ocr`), when it is
installed with its language data (Debian: `apt install tesseract-ocr tesseract-ocr-chi-sim`; nothing is fetched).

A scanned contract, a stamped regulation (盖章文件), a faxed runbook: a PDF of page images has no text layer, and was
skipped with advice to run OCR elsewhere. Where Tesseract is installed, a page without text but with an image is
read by it in the configured languages that are installed (`KG_OCR_LANGUAGES`, default Simplified Chinese and
English); `KG_OCR=off` keeps the old behaviour. 1.6-8.8 s of CPU a page of documentation here (bench/RESULTS-scanned.md);
a page larger than a poster is rendered at a lower resolution (MAX_PIXELS), never past the memory that takes.
"""

from __future__ import annotations

import functools
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

__all__ = ["INSTALL_HINT", "OCR_DPI", "Ocr", "configured", "ocr_languages", "ocr_textpage", "tesseract_remarks_dropped"]

OCR_DPI = 300  # Tesseract's own advice for body text
MAX_PIXELS = 40_000_000  # of a page rendered for OCR: an A4 page at 300 dpi is 8.7 M
# What Tesseract says to the process's stderr about a region of a page too small or too odd to read: nothing a user
# can act on, written across `kg ingest`'s progress bar. Its other messages (a missing language file) still show.
_TESSERACT_REMARKS = re.compile(r"^(?:Image too small to scale!!.*|Line cannot be recognized!!|Empty page!!|"
                                r"Detected \d+ diacritics|Too few characters\. Skipping this page.*|"
                                r"Warning: Invalid resolution 0 dpi\. Using \d+ instead\.|Estimating resolution as \d+)$")
_STDERR = threading.Lock()
INSTALL_HINT = ("to read it by OCR, install Tesseract (Debian: apt install tesseract-ocr tesseract-ocr-chi-sim; "
                "KG_OCR=auto, the default) or run OCR on it (e.g. ocrmypdf), and ingest it again")


@functools.cache
def _tessdata() -> tuple[str, frozenset[str]] | None:
    """Tesseract's language folder and the languages in it (TESSDATA_PREFIX, else what `tesseract --list-langs`
    says); None when Tesseract or its data is not installed."""
    folder = os.environ.get("TESSDATA_PREFIX")
    if not folder:
        exe = shutil.which("tesseract")
        if exe is None:
            return None
        try:
            out = subprocess.run([exe, "--list-langs"], capture_output=True, text=True, timeout=30, check=False).stdout
        except (OSError, subprocess.SubprocessError):
            return None
        found = re.search(r'List of available languages in "(.+)"', out or "")
        if found is None:
            return None
        folder = found.group(1)
    languages = frozenset(p.name.removesuffix(".traineddata") for p in Path(folder).glob("*.traineddata"))
    return (folder, languages) if languages else None


def ocr_languages(setting: str, wanted: str) -> str | None:
    """The Tesseract languages scanned pages are read in ("chi_sim+eng"): those of `wanted` that are installed; None
    when `setting` is "off", Tesseract is not installed, or none of the languages is."""
    if setting == "off":
        return None
    found = _tessdata()
    if found is None:
        return None
    return "+".join(lang for lang in wanted.split("+") if lang in found[1]) or None


@dataclass(frozen=True)
class Ocr:
    """How scanned pages are read: Tesseract's languages, and who hears of each page as it starts (a progress bar:
    a 300-page scan takes half an hour)."""

    languages: str
    on_page: Callable[[str], None] | None = None


def configured(setting: str, wanted: str, on_page: Callable[[str], None] | None = None) -> Ocr | None:
    """The `Ocr` the settings ask for (`ocr_languages`), None when it is off or cannot run here."""
    languages = ocr_languages(setting, wanted)
    return Ocr(languages, on_page) if languages else None


def ocr_textpage(page, languages: str):
    """The page's text as Tesseract reads its image (a PyMuPDF TextPage)."""
    found = _tessdata()
    assert found is not None, "ocr_languages said OCR is available"
    inches = (page.rect.width / 72) * (page.rect.height / 72)
    dpi = min(OCR_DPI, int(math.sqrt(MAX_PIXELS / inches))) if inches > 0 else OCR_DPI
    with tesseract_remarks_dropped():
        return page.get_textpage_ocr(language=languages, dpi=max(dpi, 72), full=True, tessdata=found[0])


@contextmanager
def tesseract_remarks_dropped() -> Iterator[None]:
    """Tesseract's remarks on what it could not read, written by the C library to file descriptor 2, are held back
    while it runs and dropped; every other line written there meanwhile (another thread's log too) is written on after
    it, in order. One OCR call at a time holds the descriptor."""
    with _STDERR:  # the descriptor saved inside the lock, so a second call never saves the first one's file
        try:
            saved = os.dup(2)
        except OSError:  # no descriptor 2 (a daemon started with it closed): nothing to keep clean
            yield
            return
        with tempfile.TemporaryFile() as held:
            sys.stderr.flush()
            os.dup2(held.fileno(), 2)
            try:
                yield
            finally:
                sys.stderr.flush()
                os.dup2(saved, 2)
                os.close(saved)
                held.seek(0)
                kept = [line for line in held.read().splitlines(keepends=True)
                        if not _TESSERACT_REMARKS.match(line.decode("utf-8", "replace").strip())]
                if kept:
                    os.write(2, b"".join(kept))
