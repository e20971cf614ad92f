"""The text index's segments under many small commits: their count stays bounded by the merge policy
(logarithmic in the index's size, never one per ingest), searches score exactly as over one segment,
and `optimize` merges everything into one."""

from __future__ import annotations

import random

from retrieval.index import whoosh_index
from retrieval.index.whoosh_index import MERGE_FACTOR, WhooshIndex
from retrieval.index.whoosh_segments import tier as _tier
from retrieval.types import Chunk

WORDS = [f"w{i:02d}" for i in range(80)] + ["缓存", "网关", "副本", "超时"]


def _chunks(rng, start: int, n: int) -> list[Chunk]:
    return [Chunk(chunk_id=f"c{i}", doc_id=f"d{i}", ordinal=0, title=f"t{i % 7}", section="",
                  text=" ".join(rng.choice(WORDS) for _ in range(25)), line_start=1, line_end=1, sha256=f"h{i}")
            for i in range(start, start + n)]


def _tiers_bound(documents: int) -> int:
    return (MERGE_FACTOR - 1) * (_tier(documents) + 1)


def test_many_small_commits_keep_few_segments_and_the_same_scores(tmp_path):
    rng = random.Random(3)
    batches = [_chunks(rng, i * 12, 12) for i in range(60)]
    grown, whole = WhooshIndex(tmp_path / "grown"), WhooshIndex(tmp_path / "whole")
    try:
        counts = []
        for batch in batches:
            grown.add_chunks(batch)
            grown.commit()
            counts.append(grown.segment_count())
        # One segment per commit without merging (60); the policy keeps < MERGE_FACTOR per size tier.
        assert max(counts) <= _tiers_bound(12 * 60)
        assert counts[-1] < 60 / 4
        whole.add_chunks([c for batch in batches for c in batch])
        whole.commit()
        assert whole.segment_count() == 1
        for _ in range(20):
            terms = [(w, 1.0) for w in rng.sample(WORDS, 3)]
            got = {h.chunk_id: h.score for h in grown.search(terms, 1000)}
            want = {h.chunk_id: h.score for h in whole.search(terms, 1000)}
            assert got.keys() == want.keys()  # every match (ties between equal scores go by docnum, which merging renumbers)
            assert all(abs(got[c] - want[c]) < 1e-9 * max(1.0, abs(want[c])) for c in want)
        grown.add_chunks(_chunks(rng, 10_000, 3))
        grown.commit(optimize=True)
        assert grown.segment_count() == 1
    finally:
        grown.close()
        whole.close()


def test_an_index_past_the_segment_bound_is_merged_once(tmp_path, monkeypatch):
    rng = random.Random(4)
    index = WhooshIndex(tmp_path / "ix")
    try:
        monkeypatch.setattr(whoosh_index, "tiered_merge", lambda writer, segments: segments)  # an older kgrag
        for i in range(whoosh_index.MAX_SEGMENTS):
            index.add_chunks(_chunks(rng, i * 5, 5))
            index.commit()
        assert index.segment_count() == whoosh_index.MAX_SEGMENTS
        monkeypatch.undo()
        index.add_chunks(_chunks(rng, 1000, 5))
        index.commit()
        assert index.segment_count() == 1
        assert index.doc_count() == 5 * whoosh_index.MAX_SEGMENTS + 5
    finally:
        index.close()


def test_a_prepared_commit_rolled_back_leaves_the_index_as_it_was(tmp_path):
    rng = random.Random(5)
    index = WhooshIndex(tmp_path / "ix")
    try:
        index.add_chunks(_chunks(rng, 0, 10))
        index.commit()
        index.add_chunks(_chunks(rng, 10, 10))
        index.prepare()
        index.rollback()
        index.commit()
        assert index.doc_count() == 10
        index.add_chunks(_chunks(rng, 10, 10))  # the write lock was released: a new writer works
        index.commit()
        assert index.doc_count() == 20
    finally:
        index.close()


def test_kg_check_repair_optimize_merges_the_segments_and_changes_no_answer(tmp_path):
    from click.testing import CliRunner
    from conftest import make_settings

    from kg.cli import cli
    from retrieval.pipeline import KnowledgeBase
    from retrieval.types import SourceDocument

    rng = random.Random(6)
    data = tmp_path / "kb"
    with KnowledgeBase(make_settings(data), create=True) as kb:
        for i in range(4):  # four ingests of one tier: four segments (the fifth would merge them)
            kb.ingest_documents([SourceDocument(f"api:b{i}d{j}", f"# note {i} {j}\n\n" + " ".join(rng.choice(WORDS) for _ in range(40)))
                                 for j in range(8)])
        assert kb.index.segment_count() == 4
        before = [(h.chunk_id, round(h.score, 9)) for h in kb.query("w01 w02 缓存", k=20, mode="bm25").hits]
    import retrieval.consistency as consistency

    hint = consistency.SEGMENTS_HINT
    consistency.SEGMENTS_HINT = 4  # this small index's four segments stand for the many of a large one
    try:
        advised = CliRunner().invoke(cli, ["check", "--data-dir", str(data)], catch_exceptions=False)
        assert advised.exit_code == 0 and advised.output.startswith("clean: "), advised.output
        assert "4 segments" in advised.output.splitlines()[0]
        assert "note: the text index has 4 segments: `kg check --repair --optimize`" in advised.output
        consistency.SEGMENTS_HINT = 5
        assert "note:" not in CliRunner().invoke(cli, ["check", "--data-dir", str(data)]).output
        consistency.SEGMENTS_HINT = 4
    finally:
        consistency.SEGMENTS_HINT = hint
    refused = CliRunner().invoke(cli, ["check", "--optimize", "--data-dir", str(data)])
    assert refused.exit_code == 2 and "give it with --repair" in refused.output
    consistency.SEGMENTS_HINT = 4
    try:
        done = CliRunner().invoke(cli, ["check", "--repair", "--optimize", "--data-dir", str(data)],
                                  catch_exceptions=False)
    finally:
        consistency.SEGMENTS_HINT = hint
    assert done.exit_code == 0, done.output
    assert "optimized: 4 text index segments merged into one" in done.output
    assert "merging the text index's 4 segments into one" in done.output  # said before the merge starts
    # what it reports is the index after the merge, not the 4 segments the check found before it
    assert "1 segments" in done.output and "note:" not in done.output, done.output
    with KnowledgeBase(make_settings(data)) as kb:
        assert kb.index.segment_count() == 1
        after = [(h.chunk_id, round(h.score, 9)) for h in kb.query("w01 w02 缓存", k=20, mode="bm25").hits]
    assert sorted(after) == sorted(before)  # the same chunks with the same scores (ties may reorder by docnum)
    again = CliRunner().invoke(cli, ["check", "--repair", "--optimize", "--data-dir", str(data)], catch_exceptions=False)
    assert "optimized: the text index is one segment already" in again.output
    assert "note:" not in again.output and "1 segments" in again.output


def test_kg_ingest_notes_many_segments_after_it_wrote_chunks(tmp_path, monkeypatch):
    from click.testing import CliRunner

    import retrieval.consistency as consistency
    from kg.cli import cli

    monkeypatch.setattr(consistency, "SEGMENTS_HINT", 2)  # two small ingests stand for the many of a large one
    data, notes = tmp_path / "kb", tmp_path / "notes"
    notes.mkdir()
    args = ["ingest", str(notes), "--data-dir", str(data), "--quiet"]
    (notes / "a.md").write_text("# 缓存\n\nredis 缓存默认 TTL 300 秒。\n", encoding="utf-8")
    first = CliRunner().invoke(cli, args, catch_exceptions=False)
    assert first.exit_code == 0 and "note:" not in first.output, first.output  # one segment
    (notes / "b.md").write_text("# 网关\n\n网关心跳间隔 15 秒。\n", encoding="utf-8")
    second = CliRunner().invoke(cli, args, catch_exceptions=False)
    assert second.exit_code == 0, second.output
    assert "note: the text index has 2 segments: `kg check --repair --optimize`" in second.output
    again = CliRunner().invoke(cli, args, catch_exceptions=False)  # nothing indexed: no advice
    assert again.exit_code == 0 and "note:" not in again.output, again.output
    (notes / "c.md").write_text("# 副本\n\n副本数 3。\n", encoding="utf-8")
    as_json = CliRunner().invoke(cli, [*args, "--json"], catch_exceptions=False)
    assert "note:" not in as_json.output
