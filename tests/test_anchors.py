"""Section anchors on small real-looking docs: a config reference with `###` keys, a tool page whose
title names the tool, a definition table and list; expansion landing on them; the ablation switch."""

from __future__ import annotations

from pathlib import Path

import pytest

from kg.settings import Settings
from retrieval.pipeline import KnowledgeBase

DATA = Path(__file__).parent / "data" / "anchors"


@pytest.fixture(scope="module")
def anchored_kb(tmp_path_factory) -> KnowledgeBase:
    root = tmp_path_factory.mktemp("anchors")
    kb = KnowledgeBase(Settings(data_dir=root / "kb"), create=True)
    kb.import_file(DATA / "relations.csv")
    kb.import_file(DATA / "aliases.csv")
    kb.ingest_paths([DATA / "docs"])
    yield kb
    kb.close()


def _sections(kb: KnowledgeBase, key: str) -> list[tuple[str, str, float, str]]:
    return [(s["title"], s["section"], s["strength"], s["reason"]) for s in kb.entity(key)["sections_about"]]


def test_a_heading_that_is_the_key_anchors_its_section_strongest(anchored_kb):
    assert _sections(anchored_kb, "cache.capacity") == [
        ("缓存服务配置参考", "容量与过期 > cache.capacity", 1.0, "heading is cache.capacity")
    ]
    assert _sections(anchored_kb, "listen-addr") == [("缓存服务配置参考", "网络 > listen-addr", 1.0, "heading is listen-addr")]


def test_a_title_that_names_the_tool_anchors_every_chunk_of_its_page_the_first_most(anchored_kb):
    sections = _sections(anchored_kb, "dumpling")
    assert sections[0] == ("使用 dumpling 导出数据", "", 0.7, "title names dumpling")
    assert {s[1] for s in sections[1:]} == {"安装", "导出到本地目录", "常见问题"}
    assert all(s[2] == 0.49 and s[3] == "title names dumpling" for s in sections[1:])
    # The overview only says "请使用 dumpling" in passing: not a section about it.
    assert "系统概览" not in {s[0] for s in sections}


def test_a_definition_table_row_and_a_definition_list_item_anchor_their_keys(anchored_kb):
    # The chunk defines four entities (two table rows, a list item and "存储节点是…"), so the
    # definition weight is shared: 0.7 / sqrt(4).
    assert _sections(anchored_kb, "max-connections") == [("存储节点参数", "", 0.35, "table row defines max-connections")]
    assert _sections(anchored_kb, "flush-interval") == [("存储节点参数", "", 0.35, "table row defines flush-interval")]
    assert _sections(anchored_kb, "compaction-threads") == [("存储节点参数", "", 0.35, "list item defines compaction-threads")]


def test_an_alias_in_a_title_anchors_the_entity_and_the_reason_names_the_alias(anchored_kb):
    sections = _sections(anchored_kb, "cache-service")
    assert sections[0] == ("缓存服务配置参考", "", 0.7, "title names 缓存服务")


def test_expansion_lands_on_the_key_section_and_says_why(anchored_kb):
    result = anchored_kb.query("存储节点依赖的缓存服务内存上限是多少", k=5)
    by_section = {h.section: h for h in result.hits}
    hit = by_section["容量与过期 > cache.capacity"]
    graph = hit.why["graph"]
    assert graph["via"] == "section"
    assert graph["about"] == "heading is cache.capacity"
    assert graph["path"] == "query: cache-service → configuredBy → cache.capacity → section about it"


def test_a_tool_named_by_its_alias_brings_the_matching_section_of_its_page_first(anchored_kb):
    result = anchored_kb.query("导出工具 的线程数怎么调", k=5)
    top = result.hits[0]
    assert (top.title, top.section) == ("使用 dumpling 导出数据", "常见问题")
    assert top.why["graph"]["about"] == "title names dumpling"
    assert top.why["graph"]["path"] == "query: dumpling → section about it"


def test_with_anchors_off_no_hit_comes_through_a_section(tmp_path):
    kb = KnowledgeBase(Settings(data_dir=tmp_path / "kb", section_anchors=False), create=True)
    kb.import_file(DATA / "relations.csv")
    kb.import_file(DATA / "aliases.csv")
    kb.ingest_paths([DATA / "docs"])
    try:
        result = kb.query("存储节点依赖的缓存服务内存上限是多少", k=10)
        assert result.hits
        assert not [h for h in result.hits if h.why.get("graph", {}).get("via") == "section"]
        # The anchors are still recorded (the switch is about ranking, not about what is known).
        assert kb.entity("cache.capacity")["sections_about"][0]["reason"] == "heading is cache.capacity"
    finally:
        kb.close()


def test_reingesting_a_changed_document_replaces_its_anchors(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    page = docs / "cache-config.md"
    page.write_text((DATA / "docs" / "cache-config.md").read_text(encoding="utf-8"), encoding="utf-8")
    kb = KnowledgeBase(Settings(data_dir=tmp_path / "kb"), create=True)
    try:
        kb.import_file(DATA / "relations.csv")
        kb.ingest_paths([docs])
        assert _sections(kb, "cache.ttl")[0][3] == "heading is cache.ttl"
        page.write_text("# 缓存服务配置参考\n\n## 其他\n\n这里不再介绍过期时间。\n", encoding="utf-8")
        kb.ingest_paths([docs])
        assert _sections(kb, "cache.ttl") == []
    finally:
        kb.close()


def test_a_named_keys_own_section_keeps_its_graph_evidence_when_the_other_words_are_generic(anchored_kb):
    # "说明" is in another document's table but in no section of the reference: the fit to the
    # question's other words is 0, which drops a section of a many-section document; the section
    # headed by the key the question names stays.
    result = anchored_kb.query("cache.ttl 的说明", k=5)
    top = result.hits[0]
    assert top.section == "容量与过期 > cache.ttl"
    assert top.why["graph"]["via"] == "section"
    assert top.why["graph"]["about"] == "heading is cache.ttl"


def test_a_cue_word_after_how_is_a_procedure_verb_not_a_relation(anchored_kb):
    names = anchored_kb._relation_matcher().find_names
    assert "dependsOn" in names("存储节点依赖哪些服务")
    assert "configures" in names("哪些参数配置了存储节点") | names("存储节点的配置项有哪些")
    assert names("怎么配置存储节点的压缩线程") == set()
    assert names("如何 配置 cache-service") == set()

