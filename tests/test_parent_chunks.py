"""Parent and child chunks: children cut with overlap inside a paragraph, parents cut at headings and child boundaries, one hit per parent with the parent as context."""

from __future__ import annotations

from conftest import make_settings

from retrieval.ingest.chunking import ChunkSizes, cut_document, text_size
from retrieval.pipeline import KnowledgeBase
from retrieval.types import SourceDocument

SENTENCES = [f"第{i}句说明连接池参数需要按峰值并发估算。" for i in range(40)]
DOC = "# 连接池\n\n" + "".join(SENTENCES[:20]) + "\n\n" + "".join(SENTENCES[20:]) + "\n\n## 监控\n\n监控连接池的等待时间。\n"


def test_parents_follow_headings_and_paragraphs_and_children_stay_inside_them():
    cut = cut_document(SourceDocument("a.md", DOC), ChunkSizes(child=120, parent=500, overlap=30))
    assert [p.section for p in cut.parents] == ["", "", "监控"]
    assert all(text_size(p.text) <= 500 for p in cut.parents)
    # Parents are cut where children are; small children end with their paragraph, so here each long
    # paragraph is a parent.
    assert [p.text for p in cut.parents[:2]] == ["".join(SENTENCES[:20]), "".join(SENTENCES[20:])]
    by_parent = {p.parent_id: p for p in cut.parents}
    for child in cut.children:
        parent = by_parent[child.parent_id]
        assert child.text in parent.text
        assert parent.line_start <= child.line_start <= child.line_end <= parent.line_end
        assert text_size(child.text) <= 120 + 30
    first = [c for c in cut.children if c.parent_id == cut.parents[0].parent_id]
    assert len(first) >= 3
    for a, b in zip(first, first[1:], strict=False):  # neighbours share whole sentences, and nothing is lost
        last_sentence = a.text.split("。")[-2] + "。"
        assert b.text.startswith(last_sentence)
    assert "".join(SENTENCES[:20]) == "".join(dict.fromkeys(s + "。" for c in first for s in c.text.split("。") if s))


def test_without_overlap_children_partition_the_parent():
    cut = cut_document(SourceDocument("a.md", DOC), ChunkSizes(child=120, parent=500, overlap=0))
    first = [c.text for c in cut.children if c.parent_id == cut.parents[0].parent_id]
    assert "".join(first) == cut.parents[0].text


def test_a_hit_returns_its_parent_once(tmp_path):
    settings = make_settings(tmp_path / "kb", chunk_child_size=60, chunk_parent_size=800)
    with KnowledgeBase(settings, create=True) as kb:
        kb.ingest_documents([SourceDocument("api:pool", DOC)])
        hits = kb.query("连接池参数 峰值并发", mode="bm25", k=10).hits
        parents = [h.parent["chunk_id"] for h in hits]
        assert len(parents) == len(set(parents))  # one hit per parent
        assert hits[0].parent["text"] == "".join(SENTENCES[:20]) + "\n\n" + "".join(SENTENCES[20:])  # both paragraphs fit
        assert hits[0].text in hits[0].parent["text"]
    settings = make_settings(tmp_path / "kb2", chunk_child_size=60, chunk_parent_size=800, one_hit_per_parent=False)
    with KnowledgeBase(settings, create=True) as kb:
        kb.ingest_documents([SourceDocument("api:pool", DOC)])
        hits = kb.query("连接池参数 峰值并发", mode="bm25", k=10).hits
        assert len({h.parent["chunk_id"] for h in hits}) < len(hits)


ROWS = [f"| `key_{i}` | Integer | `{i * 64}` | 第{i}个参数的说明。超过上限时请求会被拒绝，需要按峰值调大。 |" for i in range(30)]
TABLE_DOC = "# 配置\n\n## 参数\n\n| 键 | 类型 | 默认值 | 描述 |\n| --- | --- | :---: | --- |\n" + "\n".join(ROWS) + "\n\n之后的段落。\n"


def test_a_long_table_is_cut_between_rows_and_every_piece_keeps_its_header():
    cut = cut_document(SourceDocument("config.md", TABLE_DOC))
    source = TABLE_DOC.split("\n")
    table = [c for c in cut.children if "key_" in c.text]
    assert len(table) >= 3  # the table is larger than one child
    header = "| 键 | 类型 | 默认值 | 描述 |\n| --- | --- | :---: | --- |\n"
    seen: list[str] = []
    for child in table:
        assert child.text.startswith(header)  # a continuation is read (and indexed) under its column names
        rows = [line for line in child.text.split("\n") if "key_" in line]
        first = source.index(rows[0])  # whole rows, inside the child's true lines
        assert rows == source[first : first + len(rows)] and child.line_start <= first + 1 and first + len(rows) <= child.line_end
        seen += rows
    assert seen == ROWS  # every row once, none cut inside
    parent = next(p for p in cut.parents if p.parent_id == table[-1].parent_id)
    assert parent.text.count("| 键 |") == 1  # the context shows the header once, above its rows
