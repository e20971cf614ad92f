"""`kg eval` on a corpus whose passages carry `doc`: documents with sections, aliases imported, passage-level ranks."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from kg.cli import cli
from retrieval.eval.datasets import load_dataset
from retrieval.eval.evaluate import evaluate_dataset
from retrieval.eval.grouping import group_passages
from retrieval.ingest.chunking import chunk_document

BENCH = Path(__file__).parent / "data" / "anchors" / "bench"


def test_passages_with_doc_become_one_document_each_with_their_titles_as_headings():
    dataset = load_dataset(BENCH)
    corpus = group_passages(dataset.name, dataset.passages)
    sources = {s.source: s for s in corpus.sources}
    assert sorted(sources) == ["bench:ax-008", "bench:docs/cache-config.md", "bench:docs/export-tool.md"]
    doc, chunks = chunk_document(sources["bench:docs/cache-config.md"])
    assert doc.title == "缓存服务配置参考"
    # ax-004 has no heading of its own: the part of its title after the document title becomes one.
    assert [c.section for c in chunks] == ["", "容量与过期 > cache.capacity", "容量与过期 > cache.ttl", "网络"]
    assert [corpus.passages_of(doc.source, c.line_start, c.line_end) for c in chunks] == [
        ["ax-001"], ["ax-002"], ["ax-003"], ["ax-004"]
    ]
    # ax-007 continues the section before it: the same heading again, so the chunker still cuts there.
    tool, tool_chunks = chunk_document(sources["bench:docs/export-tool.md"])
    assert [c.section for c in tool_chunks] == ["", "常见问题", "常见问题"]
    assert [corpus.passages_of(tool.source, c.line_start, c.line_end) for c in tool_chunks] == [
        ["ax-005"], ["ax-006"], ["ax-007"]
    ]
    # A passage without doc stays a document of its own, titled with the passage title.
    assert sources["bench:ax-008"].title == "Release notes"
    assert corpus.passages_of("bench:ax-008", 1, 1) == ["ax-008"]


def test_evaluate_dataset_ingests_documents_imports_aliases_and_scores_passages():
    result = evaluate_dataset(BENCH, mode="full", ks=(1, 5))
    assert result["kb"]["documents"] == 3  # two grouped documents + the passage without doc
    assert result["kb"]["relation_rows_rejected"] == 0
    assert result["n"] == 3
    # q1 names cache-service only by its alias 缓存服务 (from aliases.csv) and its gold is a passage
    # inside a document: found at rank 1 means aliases were imported and chunks map to passages.
    assert result["by_type"]["entity"]["metrics"]["R@1"] == 100.0
    assert result["metrics"]["R@5"] == 100.0


def test_kg_eval_on_a_doc_grouped_folder(tmp_path):
    out = tmp_path / "result.json"
    result = CliRunner().invoke(cli, ["eval", str(BENCH), "--json", str(out), "--quiet"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    data = json.loads(out.read_text(encoding="utf-8"))
    assert data["kb"]["documents"] == 3
    assert data["metrics"]["R@5"] == 100.0
