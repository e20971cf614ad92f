"""Regression: in a fresh process, synonyms of an entity label never expanded.

The synonym table was analyzed when the knowledge base opened, before the entity labels were
taught to jieba, so `熔断, 熔断降级, circuit breaker` was filed under 熔断 + 降级; the question's
熔断降级 (cut whole once the labels are known) then matched no group. A second knowledge base opened
in the same process worked, which hid the bug from in-process tests: this one runs the real CLI
in new processes.
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import kg_in_new_process as _kg

DOC = """# 熔断降级

下游变慢时，熔断降级让调用方快速失败，保护线程池。
"""
RULES = """# Sentinel 规则

circuit breaker 规则：慢调用比例超过 50% 时打开，半开探测间隔 10s。
"""



def test_a_fresh_process_expands_synonyms_of_entity_labels(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "circuit-breaking.md").write_text(DOC, encoding="utf-8")
    (tmp_path / "docs" / "sentinel.md").write_text(RULES, encoding="utf-8")
    (tmp_path / "relations.csv").write_text("source,relation,target\n熔断降级,relatedTo,Sentinel 规则\n", encoding="utf-8")
    (tmp_path / "synonyms.txt").write_text("熔断, 熔断降级, circuit breaker\n", encoding="utf-8")
    kb = ["--data-dir", str(tmp_path / "kb")]
    _kg("import", "relations.csv", *kb, cwd=tmp_path)
    _kg("import", "synonyms.txt", *kb, cwd=tmp_path)
    _kg("ingest", "docs", "-q", *kb, cwd=tmp_path)
    result = json.loads(_kg("query", "熔断降级怎么配置", "--json", "--mode", "bm25", *kb, cwd=tmp_path))
    rules = [h for h in result["hits"] if h["title"] == "Sentinel 规则"]
    assert rules, [h["title"] for h in result["hits"]]
    assert {"circuit", "breaker"} <= set(rules[0]["why"]["bm25"]["terms"])
