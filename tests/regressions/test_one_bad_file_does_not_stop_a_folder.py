"""Regression: one empty or non-UTF-8 file aborted a whole folder ingest (0 of 5 good files in), the error named only the base name, and a symlink to a file outside the folder was followed and served.

Bad files are now skipped and listed with their full path and reason, the rest is ingested, and a
symlink leading outside the folder is reported, not read. Real CLI, one process per command.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from tests.conftest import kg_in_new_process as _kg


def test_bad_files_are_skipped_with_full_path_and_good_ones_ingested(tmp_path: Path) -> None:
    docs = tmp_path / "notes"
    docs.mkdir()
    for i in range(5):
        (docs / f"good-{i}.md").write_text(f"# Good {i}\n\nkestrel note {i}.\n", encoding="utf-8")
    (docs / "empty.md").write_bytes(b"")
    (docs / "latin.md").write_bytes(b"# x\n\n\xff\xfe\xff")  # neither UTF-8 nor GBK (GBK notes are read since)
    secret = tmp_path / "secret.md"
    secret.write_text("# Secret\n\nhunter2\n", encoding="utf-8")
    os.symlink(secret, docs / "passwd.md")
    kb = ["--data-dir", str(tmp_path / "kb")]
    report = json.loads(_kg("ingest", "notes", "--json", *kb, cwd=tmp_path))
    assert report["added"] == 5
    assert {s["path"]: s["reason"] for s in report["skipped"]} == {
        str(docs / "empty.md"): "the document is empty",
        str(docs / "latin.md"): "neither UTF-8, GBK/GB18030 nor Big5 text (byte 5); save the file as UTF-8 and ingest it again",
        str(docs / "passwd.md"): f"symlink to {secret}, outside notes: not followed",
    }
    assert json.loads(_kg("query", "hunter2", "--json", *kb, cwd=tmp_path))["hits"] == []
