"""Regression: the CLI's "why" listed the index's stems ("redi", "cach", "capit franc") instead of the words of
the text. Each text hit's `why.bm25` now also carries `words`, the matched terms as the passage (else the question)
spells them, and `kg query` prints those; `terms` stay the index's terms. Real CLI, own processes."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import kg_in_new_process


def test_why_lists_the_passages_words_not_stems(tmp_path: Path) -> None:
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "sessions.md").write_text(
        "# Sessions\n\nRedis caches the sessions of the capital's French offices.\n", encoding="utf-8")
    kb = ["--data-dir", str(tmp_path / "kb")]
    kg_in_new_process("ingest", "notes", "-q", *kb, cwd=tmp_path)
    question = "redis caching capitals"

    shown = kg_in_new_process("query", question, *kb, cwd=tmp_path)
    why = next(line.strip() for line in shown.splitlines() if line.strip().startswith("why:"))
    assert why == "why: bm25 #1 (caches, capital, Redis)", shown

    [hit] = json.loads(kg_in_new_process("query", question, "--json", *kb, cwd=tmp_path))["hits"]
    assert hit["why"]["bm25"]["terms"] == ["cach", "capit", "redi"]
    assert hit["why"]["bm25"]["words"] == ["caches", "capital", "Redis"]
