"""The diversity re-ordering of the fused head (`retrieval.rank.diversity`, KG_DIVERSITY): near-copies of the best
hit give way to a passage of another kind, through the real query path and the CLI; off, nothing moves.

The embedder is a stub through the `Embedder` protocol: a passage's vector is its share of two topics (`restart`,
`quota`) plus a small hashed remainder, so the three pages about restarting are near-copies in meaning and the
quota page is far from them, whatever their words.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from kg.settings import Settings
from retrieval.rank.diversity import diversify
from retrieval.rank.fusion import Fused
from tests.meaning_helpers import TopicEmbedder, printed_lines

QUESTION = "what limits a gateway restart?"
DOCS = {
    # Three pages that say the same thing about restarts, each naming the gateway and restart twice: BM25's top 3.
    "restart-a.md": "# Gateway restart\n\nRestart the gateway with `gwctl restart`; a gateway restart takes 10 s.\n",
    "restart-b.md": "# Gateway restart checklist\n\nBefore a gateway restart drain it; the gateway restart itself is `gwctl restart`.\n",
    "restart-c.md": "# Restarting the gateway\n\nThe gateway restart: `gwctl restart`, then watch the gateway restart log.\n",
    # The other half of the answer, about the quota on restarts: it names the gateway and restart once.
    "quota.md": "# Tenant quotas\n\nA gateway restart counts against the tenant's quota: 3 an hour, then the quota "
                "blocks it.\n",
}


TOPICS = {"restart": 1.0, "quota": 3.0}  # the stub embedder's topic words and weights


@pytest.fixture
def kb(tmp_path: Path):
    from retrieval.pipeline import KnowledgeBase

    docs = tmp_path / "docs"
    docs.mkdir()
    for name, text in DOCS.items():
        (docs / name).write_text(text, encoding="utf-8")
    kb = KnowledgeBase(Settings(data_dir=tmp_path / "kb"), create=True)
    try:
        kb.ingest_paths([docs])
        kb.vectors.use(TopicEmbedder(TOPICS, "topic-stub-1"))
        kb.vectors.embed_missing()
        yield kb
    finally:
        kb.close()


def _names(result) -> list[str]:
    return [h.source.rsplit("/", 1)[-1] for h in result.hits]


def test_diversity_lifts_the_other_half_of_the_answer_and_says_why(kb):
    kb.settings = kb.settings.model_copy(update={"diversity": 0.0})
    off = kb.query(QUESTION, k=4)
    assert _names(off) == ["restart-a.md", "restart-b.md", "restart-c.md", "quota.md"]
    assert all("diversity" not in h.why for h in off.hits)

    kb.settings = kb.settings.model_copy(update={"diversity": 1.0})
    on = kb.query(QUESTION, k=4)
    assert _names(on) == ["restart-a.md", "quota.md", "restart-b.md", "restart-c.md"]
    moved = on.hits[1].why["diversity"]
    assert moved["from"] == 4 and 0 < moved["similarity_above"] < 0.5
    assert [h.score for h in on.hits] == sorted((h.score for h in on.hits), reverse=True)
    assert [("diversity" in h.why) for h in on.hits] == [False, True, False, False]  # only the hit moved up says so


def test_diversity_is_said_by_the_cli(kb):
    kb.settings = kb.settings.model_copy(update={"diversity": 1.0})
    result = kb.query(QUESTION, k=3)

    lines = printed_lines(result)
    second = next(i for i, line in enumerate(lines) if line.startswith(" 2. "))
    assert "Tenant quotas" in lines[second]
    assert "| moved up from #4 for diversity (similarity to the hits above 0.1" in lines[second + 2]  # its why: line
    assert not any("for diversity" in line for line in lines[:second])


def test_diversify_is_mmr_over_the_head_only():
    unit = {name: np.array(v, np.float32) / np.linalg.norm(v) for name, v in
            {"a": [1, 0, 0], "a2": [0.99, 0.1, 0], "a3": [0.98, 0.15, 0], "b": [0.1, 1, 0], "c": [0, 0, 1]}.items()}
    fused = [Fused(i, s) for i, s in [("a", 1.0), ("a2", 0.95), ("a3", 0.9), ("b", 0.8), ("c", 0.5)]]
    assert [f.id for f in diversify(fused, unit, 0.0)] == ["a", "a2", "a3", "b", "c"]  # off: as fused
    on = diversify(fused, unit, 0.5)
    # b: 0.8 - 0.5 * 0.10 beats a2: 0.95 - 0.5 * 0.99; then c (0.5, unlike both) beats a2 (0.95 - 0.5 * 0.99)
    assert [f.id for f in on] == ["a", "b", "c", "a2", "a3"]
    assert [f.score for f in on] == [1.0, 0.95, 0.9, 0.8, 0.5]  # each slot keeps its score
    assert on[1].diversity == {"from": 4, "similarity_above": pytest.approx(0.0995, abs=1e-3)}
    assert on[2].diversity == {"from": 5, "similarity_above": 0.0}
    assert on[3].diversity is None and on[4].diversity is None  # a2 and a3 went down, not up
    # Outside the window nothing moves; a hit without a vector keeps its slot.
    assert [f.id for f in diversify(fused, unit, 0.5, window=3)] == ["a", "a2", "a3", "b", "c"]
    no_vector = {k: v for k, v in unit.items() if k != "a2"}
    assert [f.id for f in diversify(fused, no_vector, 0.5)][1] == "a2"
