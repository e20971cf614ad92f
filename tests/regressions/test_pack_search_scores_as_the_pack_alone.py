"""Regression (issue 11, measured in bench/packs.py): a search inside the routed packs filtered a search of the
whole index, so BM25 weighed its words with the whole mixture's idf and average field lengths. A word common in
one pack and rare in another ranked the other pack's passages as the mixture, not as that pack alone would; the
routed R@5 stayed 0.9 points under each pack searched alone. A scoped search now counts the packs' own statistics
(whoosh keeps each chunk's field length rounded to one byte, so the packs' average length is an estimate: scores
agree within a few percent, ranks exactly here)."""

from __future__ import annotations

import pytest

from retrieval.index.analysis import query_terms
from retrieval.index.scoped import ScopedIndex
from retrieval.index.whoosh_index import WhooshIndex
from retrieval.types import Chunk

# Pack "ops": "restart" is in every chunk. Pack "garden": "restart" is rare, "compost" is common.
OPS = [f"restart the worker {i} after a deploy, then restart the queue" for i in range(60)]
GARDEN = (["restart the compost pile after winter"] + ["turn the compost pile weekly"] * 30
          + [f"compost bin number {i} with a long note about leaves, grass, kitchen scraps and water" for i in range(29)])


def chunks(prefix: str, texts: list[str]) -> list[Chunk]:
    return [Chunk(f"{prefix}-{i}#0", f"{prefix}-{i}", 0, f"{prefix} note {i}", "", t, 1, 1, str(i))
            for i, t in enumerate(texts)]


def index_of(path, *parts: list[Chunk]) -> WhooshIndex:
    ix = WhooshIndex(path)
    for part in parts:
        ix.add_chunks(part)
    ix.commit(optimize=True)
    return ix


@pytest.fixture
def indexes(tmp_path):
    ops, garden = chunks("ops", OPS), chunks("garden", GARDEN)
    mixed = index_of(tmp_path / "mixed", ops, garden)
    alone = index_of(tmp_path / "alone", garden)
    yield mixed, alone, frozenset(c.doc_id for c in garden)
    mixed.close()
    alone.close()


def test_a_scoped_search_scores_as_the_packs_alone(indexes):
    mixed, alone, garden_docs = indexes
    terms = [(t, 1.0) for t in query_terms("restart compost pile")]
    expected = alone.search(terms, 20)
    scoped = ScopedIndex(mixed, garden_docs)
    got = scoped.search(terms, 20)
    assert [h.chunk_id for h in got] == [h.chunk_id for h in expected]
    assert [h.score for h in got] == pytest.approx([h.score for h in expected], rel=0.04)
    # the filtered search of the whole index (what a routed search was before) scores far otherwise:
    # "restart", in every ops chunk, weighs as a common word there
    filtered = mixed.search(terms, 20, doc_ids=garden_docs)
    assert filtered[0].score < 0.85 * expected[0].score
    assert scoped.doc_count() == 60 and scoped.doc_frequency("restart") == 1 == alone.doc_frequency("restart")


def test_section_pooling_scores_are_the_packs_alone_too(indexes):
    mixed, alone, garden_docs = indexes
    terms = [(t, 1.0) for t in query_terms("compost water")]
    scoped = ScopedIndex(mixed, garden_docs)
    hits_scoped, hits_alone = scoped.search(terms, 5), alone.search(terms, 5)
    assert [h.chunk_id for h in hits_scoped] == [h.chunk_id for h in hits_alone]
    per_scoped = scoped.term_scores(terms, [h.docnum for h in hits_scoped])
    per_alone = alone.term_scores(terms, [h.docnum for h in hits_alone])
    for a, b in zip(hits_scoped, hits_alone, strict=True):
        assert per_scoped[a.docnum].keys() == per_alone[b.docnum].keys() == {"compost", "water"}
        assert per_scoped[a.docnum] == pytest.approx(per_alone[b.docnum], rel=0.04)


def test_a_scoped_index_sees_new_commits_and_stays_inside_its_documents(indexes, tmp_path):
    mixed, _, garden_docs = indexes
    scoped = ScopedIndex(mixed, garden_docs)
    terms = [(t, 1.0) for t in query_terms("worker deploy")]
    assert scoped.search(terms, 10) == []  # only ops chunks hold these words
    mixed.add_chunks(chunks("garden", ["a worker mulched the beds before the deploy of the new hose"]))
    mixed.commit()
    assert [h.chunk_id for h in scoped.search(terms, 10)] == ["garden-0#0"]  # garden-0 was replaced
    assert scoped.doc_count() == 60
    assert ScopedIndex(mixed, frozenset()).search(terms, 10) == []
    with pytest.raises(ValueError, match="searches its own documents only"):
        scoped.search(terms, 10, doc_ids=frozenset({"ops-1"}))
