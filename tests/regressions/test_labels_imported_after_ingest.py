"""Regression: a Chinese label imported after its documents were ingested was never found by BM25.

`kg ingest` cut "熔断降级" into 熔断 + 降级 (jieba did not know the word yet); `kg import
relations.csv` then taught jieba the label, so every later question cut it whole and matched no
indexed term. Import now re-indexes the chunks that contain a newly taught word. Real CLI, one
process per command, as a user runs it.
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import kg_in_new_process as _kg


def _bm25_terms(question: str, cwd: Path, kb: list[str]) -> dict[str, list[str]]:
    result = json.loads(_kg("query", question, "--json", "--mode", "bm25", *kb, cwd=cwd))
    return {h["title"]: h["why"]["bm25"]["terms"] for h in result["hits"]}


def test_labels_and_synonyms_imported_after_ingest_are_searchable(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "limits.md").write_text("# 限流说明\n\n下游变慢时，熔断降级让调用方快速失败。\n", encoding="utf-8")
    (tmp_path / "docs" / "pool.md").write_text("# 连接池\n\n这里讲数据库连接池的大小和灰度发版。\n", encoding="utf-8")
    (tmp_path / "relations.csv").write_text("source,relation,target\n熔断降级,relatedTo,限流说明\n", encoding="utf-8")
    (tmp_path / "synonyms.txt").write_text("灰度发版, 金丝雀发布\n", encoding="utf-8")
    kb = ["--data-dir", str(tmp_path / "kb")]
    _kg("ingest", "docs", "-q", *kb, cwd=tmp_path)

    out = _kg("import", "relations.csv", *kb, cwd=tmp_path)
    assert "re-indexed 1 chunk(s)" in out
    assert _bm25_terms("熔断降级", tmp_path, kb) == {"限流说明": ["熔断降级"]}

    out = _kg("import", "synonyms.txt", *kb, cwd=tmp_path)
    assert "re-indexed 1 chunk(s)" in out
    assert "灰度发版" in _bm25_terms("金丝雀发布怎么做", tmp_path, kb)["连接池"]

    # Nothing new to teach: nothing re-indexed.
    assert "re-indexed" not in _kg("import", "relations.csv", *kb, cwd=tmp_path)
