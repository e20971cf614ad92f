"""Regression: a file removed from the folder kept answering queries, and there was no way to delete a document.

`kg ingest --sync DIR` now removes the documents whose files are gone, and `kg delete DOC` removes
one on request; neither leaves a chunk, mention or index entry behind. Real CLI, one process per command.
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import kg_in_new_process as _kg


def test_removed_and_deleted_files_stop_answering(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "osprey.md").write_text("# Osprey\n\nThe osprey nests on the cliff.\n", encoding="utf-8")
    (docs / "heron.md").write_text("# Heron\n\nThe heron wades in the shallows.\n", encoding="utf-8")
    (docs / "egret.md").write_text("# Egret\n\nThe egret follows the heron.\n", encoding="utf-8")
    kb = ["--data-dir", str(tmp_path / "kb")]
    _kg("ingest", "docs", "-q", *kb, cwd=tmp_path)

    def titles(question: str) -> list[str]:
        return [h["title"] for h in json.loads(_kg("query", question, "--json", *kb, cwd=tmp_path))["hits"]]

    assert titles("osprey") == ["Osprey"]
    (docs / "osprey.md").unlink()
    _kg("ingest", "docs", "-q", *kb, cwd=tmp_path)
    assert titles("osprey") == ["Osprey"]  # without --sync a missing file is not taken as a deletion
    _kg("ingest", "docs", "--sync", "-q", *kb, cwd=tmp_path)
    assert titles("osprey") == []
    assert _kg("delete", str(docs / "heron.md"), *kb, cwd=tmp_path).startswith("deleted Heron (")
    assert titles("heron") == ["Egret"]
    stats = json.loads(_kg("stats", "--json", *kb, cwd=tmp_path))
    assert (stats["documents"], stats["chunks"], stats["indexed_chunks"]) == (1, 1, 1)
