"""Document chunks are linked by the Aho-Corasick matcher alone (no spaCy import on the edit path);
this differential test holds it to the spaCy pipeline's spans (our tokenizer + the matcher component)
on every chunk of the bundled demo and of the ops_dev_zh documentation set with its relation table."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import build_demo_kb, make_settings, run_in_own_process

SHARED = Path(__file__).resolve().parents[1] / ".." / "shared" / "bench" / "ops_dev_zh"


def _compare(kb) -> dict:
    linker = kb.linker
    texts = [c.text for c in kb.store.iter_chunks()]
    texts += [f"{c.title}\n{c.section}" for c in kb.store.iter_chunks()]
    fast = list(linker.link_many(texts))
    slow = list(linker.link_many_with_spacy(texts))
    different = [t[:80] for t, a, b in zip(texts, fast, slow, strict=True) if a != b]
    return {"texts": len(texts), "mentions": sum(map(len, fast)), "different": different}


def compare_on_the_demo(data_dir: Path) -> dict:
    kb = build_demo_kb(data_dir)
    try:
        return _compare(kb)
    finally:
        kb.close()


def compare_on_ops_dev_zh(data_dir: Path) -> dict:
    from retrieval.pipeline import KnowledgeBase
    from retrieval.types import SourceDocument

    kb = KnowledgeBase(make_settings(data_dir), create=True)
    try:
        kb.import_file(SHARED / "relations.csv")
        with (SHARED / "corpus.jsonl").open(encoding="utf-8") as fh:
            rows = [json.loads(line) for line in fh]
        kb.ingest_documents([SourceDocument(f"api:{r['id']}", f"# {r['title']}\n\n{r['text']}") for r in rows])
        return _compare(kb)
    finally:
        kb.close()


def test_the_matcher_links_the_demo_as_the_spacy_pipeline_does(tmp_path):
    report = run_in_own_process("test_linking_paths_agree", "compare_on_the_demo", tmp_path / "kb")
    assert report["different"] == []
    assert report["mentions"] > 100


@pytest.mark.skipif(not (SHARED / "corpus.jsonl").exists(), reason="the shared benchmark sets (../shared/bench) are absent")
def test_the_matcher_links_ops_dev_zh_as_the_spacy_pipeline_does(tmp_path):
    report = run_in_own_process("test_linking_paths_agree", "compare_on_ops_dev_zh", tmp_path / "kb")
    assert report["different"] == []
    assert report["mentions"] > 500
