"""The whoosh backend's own BM25F sums score and rank exactly as whoosh's `Or` of boosted `Term`s."""

from __future__ import annotations

import random

from whoosh.query import Or, Term

from retrieval.index.analysis import query_terms
from retrieval.index.scoped import ScopedIndex
from retrieval.index.whoosh_index import WhooshIndex
from retrieval.types import Chunk

WORDS = "订单 服务 依赖 缓存 集群 配置 心跳 间隔 主库 备份 恢复 导出 数据 redis kafka nginx timeout replica".split()


def _chunk(i: int, rng: random.Random) -> Chunk:
    body = " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 60)))
    return Chunk(chunk_id=f"c{i}", doc_id=f"d{i % 17}", ordinal=i, title=f"{rng.choice(WORDS)} 文档 {i}",
                 section=rng.choice(WORDS), text=body, line_start=1, line_end=1, sha256=str(i))


def _build(tmp_path) -> WhooshIndex:
    """Three segments and deleted documents, as an index gets after a few ingests and edits."""
    rng = random.Random(7)
    index = WhooshIndex(tmp_path / "index")
    for start in (0, 120, 240):
        index.add_chunks(_chunk(i, rng) for i in range(start, start + 120))
        index.commit()
    index.delete_chunks([f"c{i}" for i in range(0, 360, 7)])
    index.commit()
    return index


def test_term_scores_are_whooshs_bm25f_scores_over_segments_and_deletions(tmp_path):
    index = _build(tmp_path)
    searcher = index._searcher
    assert not searcher.is_atomic() and searcher.reader().has_deletions()
    for field in ("title", "section", "body"):
        for word in WORDS:
            term = query_terms(word)[0]
            expected = {}
            matcher = searcher.postings(field, term) if (field, term) in searcher.reader() else None
            scorer = index._weighting.scorer(searcher, field, term)
            while matcher is not None and matcher.is_active():
                expected[matcher.id()] = scorer.score(matcher)
                matcher.next()
            assert index._term_scores(field, term) == expected
    index.close()


def test_search_ranks_like_whooshs_or_query(tmp_path):
    index = _build(tmp_path)
    searcher = index._searcher
    rng = random.Random(3)
    for _ in range(40):
        words = rng.sample(WORDS, rng.randint(1, 6))
        terms = [(t, rng.choice([1.0, 0.6])) for w in words for t in query_terms(w)]
        # max_df_ratio=1: every term is "rare", so the whole ranking comes from the summed scores.
        index.max_df_ratio = 1.0
        hits = index.search(terms, limit=15)
        clauses = [Term(f, t, boost=w * b) for t, w in terms for f, b in index.field_boosts.items()]
        expected = searcher.search(Or(clauses), limit=15)
        assert [h.chunk_id for h in hits] == [r["chunk_id"] for r in expected]
        assert [round(h.score, 9) for h in hits] == [round(r.score, 9) for r in expected]
    index.close()


def test_the_cached_posting_scores_stay_within_their_byte_budget_and_rank_the_same(tmp_path, monkeypatch):
    from retrieval.index import whoosh_postings

    index = _build(tmp_path)
    rng = random.Random(5)
    questions = [[(t, 1.0) for w in rng.sample(WORDS, rng.randint(2, 6)) for t in query_terms(w)] for _ in range(30)]
    unbounded = [[(h.chunk_id, h.score) for h in index.search(terms, limit=10)] for terms in questions]
    scores = index._scores
    largest = max(p.ids.nbytes + p.scores.nbytes for p in scores._scores.values())
    assert scores._cached_bytes == sum(p.ids.nbytes + p.scores.nbytes for p in scores._scores.values()) > 3 * largest
    budget = 2 * largest  # a few lists: the cache is emptied many times over these questions
    monkeypatch.setattr(whoosh_postings, "MAX_CACHED_BYTES", budget)
    scores._scores.clear()
    scores._cached_bytes = 0
    seen = 0
    for terms, expected in zip(questions, unbounded, strict=True):
        assert [(h.chunk_id, h.score) for h in index.search(terms, limit=10)] == expected
        assert scores._cached_bytes <= budget
        seen = max(seen, len(scores._scores))
    assert 1 < seen < len(questions)
    index.close()


class _ScopeWeighting:
    """Reference: whoosh's BM25F with a scope's idf and average field lengths, as a whoosh weighting."""

    def __new__(cls, stats, B, K1):
        from whoosh import scoring

        class Scorer(scoring.BM25FScorer):
            def __init__(self, searcher, fieldname, text, idf, avgfl):
                self.idf, self.avgfl, self.B, self.K1, self.qf = idf, avgfl or 1.0, B, K1, 1
                self.setup(searcher, fieldname, text)

        class Weighting(scoring.BM25F):
            def scorer(self, searcher, fieldname, text, qf=1):
                term = text.decode("utf-8") if isinstance(text, bytes) else text
                return Scorer(searcher, fieldname, text, stats.idf(fieldname, term), stats.avgfl.get(fieldname, 1.0))

        return Weighting(B=B, K1=K1)


def test_a_scoped_search_ranks_like_whooshs_or_query_with_the_scopes_statistics(tmp_path):
    index = _build(tmp_path)
    index.max_df_ratio = 1.0
    scoped = ScopedIndex(index, frozenset(f"d{i}" for i in range(0, 17, 3)))
    rng = random.Random(5)
    for _ in range(30):
        words = rng.sample(WORDS, rng.randint(1, 6))
        terms = [(t, 1.0) for w in words for t in query_terms(w)]
        hits = scoped.search(terms, limit=12)
        stats = scoped._current()
        searcher = stats.searcher
        clauses = [Term(f, t, boost=w * b) for t, w in terms for f, b in index.field_boosts.items()]
        collector = searcher.collector(limit=12, filter=set(stats.docnums))
        weighting = _ScopeWeighting(stats, *index._bm25)
        searcher.search_with_collector(Or(clauses), collector, context=searcher.context(weighting=weighting))
        expected = collector.results()
        assert [h.chunk_id for h in hits] == [r["chunk_id"] for r in expected]
        assert [round(h.score, 9) for h in hits] == [round(r.score, 9) for r in expected]
        assert hits  # the sampled words always match some chunk of the scope
    index.close()
