"""Regression: YAML front matter was indexed as body text, so a question with the word "title" or "summary" matched every file that had front matter.

The readers now take `title: … summary: …` as metadata (the title becomes the document's title);
the body is what is indexed. Real CLI, one process per command.
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import kg_in_new_process as _kg


def test_front_matter_keys_are_not_searchable_text(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    for name in ("alpha", "beta", "gamma"):
        (docs / f"{name}.md").write_text(
            f"---\ntitle: {name} notes\nsummary: short summary of {name}\ntags: [ops]\n---\n\nThe {name} gateway restarts nightly.\n",
            encoding="utf-8")
    (docs / "style.md").write_text("# Style guide\n\nEvery page needs a title and a summary line.\n", encoding="utf-8")
    kb = ["--data-dir", str(tmp_path / "kb")]
    _kg("ingest", "docs", "-q", *kb, cwd=tmp_path)
    hits = json.loads(_kg("query", "title summary", "--json", "--mode", "bm25", *kb, cwd=tmp_path))["hits"]
    assert [h["title"] for h in hits] == ["Style guide"]
    gateway = json.loads(_kg("query", "beta gateway", "--json", "--mode", "bm25", "-k", "1", *kb, cwd=tmp_path))["hits"]
    assert (gateway[0]["title"], gateway[0]["text"], gateway[0]["lines"]) == ("beta notes", "The beta gateway restarts nightly.", [7, 7])
