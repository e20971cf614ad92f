"""The section the best hit names by its heading (`retrieval.rank.sections`, KG_NAMED_SECTIONS): a question that finds
a page's introduction gets the section the introduction points to, through the real query path (whoosh on disk, the
catalog, versions), the CLI's human output and the web page's words; off, in bm25 mode, for a heading too short to be
a name, or when that section is among the first hits already, nothing moves.

The maintenance page's introduction says what the question says (upgrading a cluster) and names its section "启用维护模式",
which says how (a curl command) and shares no word with the question; five other pages share more words with the
question than that section does."""

from __future__ import annotations

from pathlib import Path

import pytest

from kg.settings import Settings
from retrieval.rank.sections import NAMED_WORDS, heading_words
from tests.meaning_helpers import printed_lines

QUESTION = "手工升级集群之前要先做什么？"
MAINTENANCE = """# 集群维护模式

## 何时使用

手工升级集群之前，必须先启用维护模式，集群升级完成后再停用。升级集群时自动调度会打断升级。

## 数据同步

维护模式不影响数据同步。

## 启用维护模式

向 HTTP 端口发请求：`curl -X POST http://localhost:4000/admin/maintenance/enable`，返回 {"enabled":true}。
"""
FILLERS = {
    f"page{i}.md": f"# 升级说明 {i}\n\n升级集群的第 {i} 条说明：升级集群前先备份，手工升级时逐台重启。\n" for i in range(5)
}


def _kb(tmp_path: Path, maintenance: str = MAINTENANCE, **settings):
    from retrieval.pipeline import KnowledgeBase

    folder = tmp_path / "docs"
    folder.mkdir()
    for name, text in {"maintenance.md": maintenance, **FILLERS}.items():
        (folder / name).write_text(text, encoding="utf-8")
    kb = KnowledgeBase(Settings(data_dir=tmp_path / "kb", **settings), create=True)
    kb.ingest_paths([folder])
    return kb


def _sections(result) -> list[str]:
    return [h.section.rsplit(" > ", 1)[-1] for h in result.hits]


def test_the_section_the_best_hit_names_comes_in_fourth_saying_why(tmp_path):
    with _kb(tmp_path) as kb:
        result = kb.query(QUESTION, k=6)
        assert _sections(result)[0] == "何时使用"
        assert _sections(result)[3] == "启用维护模式"
        named = result.hits[3]
        assert named.why["named"]["heading"] == "启用维护模式"
        moved_from = named.why["named"]["from"]
        assert moved_from is None or moved_from > 5  # where fusion had it: below the first five, or nowhere
        assert [h.score for h in result.hits] == sorted((h.score for h in result.hits), reverse=True)
        assert "数据同步" not in _sections(result)[:4]  # named too, but two words is no name
        assert any('the section hit #1 names: "启用维护模式"' in line for line in printed_lines(result))
        from api.web.render import why_in_words

        assert "第一条结果提到了这一节：“启用维护模式”" in why_in_words(named.why, "zh")
        # the words alone: the index has the steps nowhere near the top
        assert "启用维护模式" not in _sections(kb.query(QUESTION, k=6, mode="bm25"))[:4]


def test_off_nothing_moves(tmp_path):
    with _kb(tmp_path, named_sections=False) as kb:
        result = kb.query(QUESTION, k=6)
        assert "启用维护模式" not in _sections(result)[:4]
        assert not any("named" in h.why for h in result.hits)


def test_a_section_among_the_first_hits_stays_where_it_is(tmp_path):
    # The question says "启用维护模式" itself: the section is found by its words, at the top.
    with _kb(tmp_path) as kb:
        result = kb.query("怎么启用维护模式？", k=6)
        assert "启用维护模式" in _sections(result)[:5]
        assert not any("named" in h.why for h in result.hits)


def test_a_heading_of_another_version_is_not_brought_in(tmp_path):
    # The steps section exists only in the version before; the one in force names it but no longer has it.
    with _kb(tmp_path) as kb:
        (tmp_path / "docs" / "maintenance.md").write_text(MAINTENANCE.split("## 启用维护模式")[0], encoding="utf-8")
        kb.ingest_paths([tmp_path / "docs"])
        [doc] = [d for d in kb.documents() if d["source"].endswith("maintenance.md")]
        assert len(kb.versions(doc["doc_id"])) == 2
        result = kb.query(QUESTION, k=6)
        assert "启用维护模式" not in _sections(result)
        assert not any("named" in h.why for h in result.hits)


@pytest.mark.parametrize(("heading", "weighs"), [("启用维护模式", 3), ("暂停 Procedure Manager", 3),
                                                 ("People Business Partners", 3), ("数据同步", 2), ("Interim", 1),
                                                 ("SST 文件", 2), ("SST文件", 2), ("max_connections 的取值", 2.5)])
def test_how_much_a_heading_weighs(heading, weighs):
    assert heading_words(heading) == weighs
    assert (weighs >= NAMED_WORDS) == (heading_words(heading) >= NAMED_WORDS)
