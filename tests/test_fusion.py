"""Fusion of ranked lists: a hand-computed RRF example and the permutation/determinism properties."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from retrieval.rank.fusion import reciprocal_rank_fusion, weighted_score_fusion


def test_rrf_hand_computed_example():
    # k = 60. a: bm25 #1, graph #3 -> 1/61 + 1/63; b: bm25 #2 -> 1/62; c: graph #1 -> 1/61;
    # d: bm25 #3, graph #2 -> 1/63 + 1/62.
    fused = reciprocal_rank_fusion({"bm25": ["a", "b", "d"], "graph": ["c", "d", "a"]}, k=60)
    assert [f.id for f in fused] == ["a", "d", "c", "b"]
    expected = {"a": 1 / 61 + 1 / 63, "d": 1 / 63 + 1 / 62, "c": 1 / 61, "b": 1 / 62}
    for f in fused:
        assert f.score == pytest.approx(expected[f.id], abs=1e-12)
    assert {f.id: f.ranks for f in fused} == {
        "a": {"bm25": 1, "graph": 3},
        "d": {"bm25": 3, "graph": 2},
        "c": {"graph": 1},
        "b": {"bm25": 2},
    }


def test_rrf_weights_scale_each_list():
    fused = reciprocal_rank_fusion({"bm25": ["a"], "graph": ["b"]}, weights={"graph": 2.0}, k=10)
    assert [(f.id, f.score) for f in fused] == [
        ("b", pytest.approx(2 / 11)),
        ("a", pytest.approx(1 / 11)),
    ]


def test_rrf_ties_break_by_best_rank_then_id():
    # x and y both score 1/(k+1) + 1/(k+2); z and w score 1/(k+2) only.
    fused = reciprocal_rank_fusion({"one": ["y", "x", "z"], "two": ["x", "y", "w"]}, k=60)
    assert [f.id for f in fused] == ["x", "y", "w", "z"]


def test_rrf_counts_a_duplicate_within_one_list_once_at_its_best_rank():
    fused = reciprocal_rank_fusion({"bm25": ["a", "b", "a"]}, k=60)
    assert [(f.id, f.ranks) for f in fused] == [("a", {"bm25": 1}), ("b", {"bm25": 2})]
    assert fused[0].score == pytest.approx(1 / 61)


def test_score_fusion_hand_computed_example():
    # bm25 max 4: a 1.0, b 0.5; graph max 0.8: b 1.0, c 0.25.
    fused = weighted_score_fusion(
        {"bm25": [("a", 4.0), ("b", 2.0)], "graph": [("b", 0.8), ("c", 0.2)]}
    )
    assert [(f.id, f.score) for f in fused] == [
        ("b", pytest.approx(1.5)),
        ("a", pytest.approx(1.0)),
        ("c", pytest.approx(0.25)),
    ]
    assert fused[0].ranks == {"bm25": 2, "graph": 1}


def test_empty_inputs_fuse_to_nothing():
    assert reciprocal_rank_fusion({"bm25": [], "graph": []}) == []
    assert weighted_score_fusion({"bm25": [], "graph": []}) == []


ids = st.text(alphabet="abcdefgh", min_size=1, max_size=2)
rankings = st.dictionaries(
    st.sampled_from(["bm25", "graph", "dense"]), st.lists(ids, max_size=12), max_size=3
)
weights = st.dictionaries(
    st.sampled_from(["bm25", "graph", "dense"]), st.floats(0.1, 5.0), max_size=3
)


@given(rankings=rankings, weights=weights, k=st.floats(1.0, 100.0))
def test_rrf_output_is_a_permutation_of_the_union_and_deterministic(rankings, weights, k):
    fused = reciprocal_rank_fusion(rankings, weights, k=k)
    out = [f.id for f in fused]
    assert sorted(out) == sorted({i for ranked in rankings.values() for i in ranked})
    assert [f.score for f in fused] == sorted((f.score for f in fused), reverse=True)
    assert [f.id for f in reciprocal_rank_fusion(rankings, weights, k=k)] == out
    for f in fused:
        for name, rank in f.ranks.items():
            assert rankings[name][rank - 1] == f.id
            assert f.id not in rankings[name][: rank - 1]  # the best (first) rank is recorded


@given(rankings=rankings, weights=weights)
def test_score_fusion_output_is_a_permutation_of_the_union_and_deterministic(rankings, weights):
    scored = {
        name: [(item, 1.0 / (i + 1)) for i, item in enumerate(ranked)]
        for name, ranked in rankings.items()
    }
    fused = weighted_score_fusion(scored, weights)
    out = [f.id for f in fused]
    assert sorted(out) == sorted({i for ranked in rankings.values() for i in ranked})
    assert [f.id for f in weighted_score_fusion(scored, weights)] == out
