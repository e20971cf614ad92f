"""The text search over posting arrays (issue 25: a full-mode question at 100k chunks in ~20 ms) scores and ranks
exactly as before: whoosh's BM25F floats for posting lists of many blocks, the same sums, tie order and matched
terms as the one-posting-at-a-time loop it replaced, and a catalog answer kept only while the catalog is unchanged."""

from __future__ import annotations

import datetime as dt
import heapq
import pickle
import random
import sqlite3

from conftest import make_settings
from hypothesis import given, settings
from hypothesis import strategies as st
from test_hidden_chunks import _every_version
from whoosh.query import Or, Term

from retrieval.index.analysis import query_terms
from retrieval.index.candidates import add_common_terms, top_chunks
from retrieval.index.posting_arrays import Postings, as_postings
from retrieval.index.whoosh_files import ViewFile
from retrieval.index.whoosh_index import WhooshIndex
from retrieval.pipeline import KnowledgeBase
from retrieval.types import Chunk, SourceDocument

WORDS = "订单 服务 依赖 缓存 集群 配置 redis kafka nginx timeout replica backup".split()


def _build(tmp_path) -> WhooshIndex:
    """Posting lists of several 128-posting blocks per segment, two segments, deleted documents."""
    rng = random.Random(11)
    index = WhooshIndex(tmp_path / "index")
    for start, n in ((0, 700), (700, 300)):
        index.add_chunks(Chunk(chunk_id=f"c{i}", doc_id=f"d{i % 23}", ordinal=i, title=f"{rng.choice(WORDS)} {i}",
                               section=rng.choice(WORDS), text=" ".join(rng.choices(WORDS, k=rng.randint(2, 40))),
                               line_start=1, line_end=1, sha256=str(i)) for i in range(start, start + n))
        index.commit()
    index.delete_chunks([f"c{i}" for i in range(0, 1000, 9)])
    index.commit()
    return index


def test_posting_arrays_of_many_blocks_hold_whooshs_postings_and_scores(tmp_path):
    from retrieval.index.whoosh_postings import w3_postings

    index = _build(tmp_path)
    searcher = index._searcher
    longest = 0
    for field in ("title", "section", "body"):
        for word in WORDS:
            term = query_terms(word)[0]
            scores = index._term_scores(field, term)
            assert isinstance(scores, Postings)
            expected = {}
            if (field, term) in searcher.reader():
                matcher, scorer = searcher.postings(field, term), index._weighting.scorer(searcher, field, term)
                while matcher.is_active():
                    expected[matcher.id()] = scorer.score(matcher)
                    matcher.next()
            assert dict(scores.items()) == expected  # the same floats, deleted documents left out
            longest = max(longest, len(scores))
            # Each segment's list read from the file is what whoosh's matcher reads (deleted ones included).
            tbytes = searcher.schema[field].to_bytes(term)
            for sub, _ in searcher.leaf_searchers():
                reader = sub.reader()
                if (field, term) not in reader:
                    continue
                terminfo = reader._terms.term_info(field, tbytes)
                ids, weights = w3_postings(reader._terms._postfile, terminfo)
                matcher = reader._terms.matcher(field, tbytes, searcher.schema[field].format)
                assert ids.tolist() == list(matcher.all_ids())
                matcher = reader._terms.matcher(field, tbytes, searcher.schema[field].format)
                assert weights.tolist() == [w for _, w in matcher.items_as("weight")]
    assert longest > 3 * 128  # several blocks
    # And the search over them ranks as whoosh's `Or` of boosted terms.
    index.max_df_ratio = 1.0  # every term selects candidates: the ranking is the summed scores alone
    searcher = index._searcher
    rng = random.Random(4)
    for _ in range(25):
        terms = [(query_terms(w)[0], rng.choice([1.0, 0.6])) for w in rng.sample(WORDS, rng.randint(1, 5))]
        hits = index.search(terms, limit=40)
        clauses = [Term(f, t, boost=w * b) for t, w in terms for f, b in index.field_boosts.items()]
        expected = searcher.search(Or(clauses), limit=40)
        assert [h.chunk_id for h in hits] == [r["chunk_id"] for r in expected]
        assert [round(h.score, 9) for h in hits] == [round(r.score, 9) for r in expected]
    index.close()


def _top_chunks_one_by_one(rare, fields, limit, scope, term_scores, chunk_id):
    """What `top_chunks` did before: a dict of sums filled one posting at a time, ranked with heapq."""
    totals, matched = {}, {}
    for term, weight in rare:
        for field, boost in fields.items():
            factor = weight * boost
            for docnum, score in term_scores(field, term).items():
                if scope is not None and docnum not in scope:
                    continue
                if docnum in totals:
                    totals[docnum] += score * factor
                    matched[docnum].add(term)
                else:
                    totals[docnum] = score * factor
                    matched[docnum] = {term}
    best = heapq.nsmallest(limit, totals.items(), key=lambda item: (-item[1], item[0]))
    return [[docnum, chunk_id(docnum), score, matched[docnum]] for docnum, score in best]


class _Whole(Postings):
    """Posting arrays that refuse to be walked one posting at a time."""

    def items(self):
        raise AssertionError("walked one posting at a time")

    def __iter__(self):
        raise AssertionError("walked one posting at a time")

    def get(self, docnum, default=None):
        raise AssertionError("looked up one posting at a time")


# Scores from a handful of values: many chunks tie, so the docnum order of ties is exercised.
_lists = st.dictionaries(st.integers(0, 300), st.sampled_from([0.25, 0.5, 1.1, 2.0, 3.3, 7.7]), max_size=120)


@settings(max_examples=150, deadline=None)
@given(lists=st.dictionaries(st.tuples(st.sampled_from("abcd"), st.sampled_from(["body", "title"])), _lists),
       weights=st.lists(st.sampled_from([1.0, 0.6, 0.3, 0.5]), min_size=4, max_size=4),
       limit=st.integers(1, 60), scope=st.none() | st.sets(st.integers(0, 320), max_size=200),
       arrays=st.booleans())
def test_top_chunks_sum_whole_arrays_to_the_one_by_one_sums_ties_and_terms(lists, weights, limit, scope, arrays):
    rare = list(zip("abcd", weights, strict=True))
    fields = {"body": 1.0, "title": 2.0}
    postings = {key: _Whole(as_postings(scores).ids, as_postings(scores).scores) if arrays else scores
                for key, scores in lists.items()}

    def term_scores(field, term):
        return postings.get((term, field), {})

    ours = top_chunks(rare, fields, limit, scope, term_scores, str)
    reference = _top_chunks_one_by_one(rare, fields, limit, scope, lambda f, t: lists.get((t, f), {}), str)
    assert ours == reference  # docnums, ids, the same floats to the last bit, the same matched terms
    # The common terms' scores are added to the candidates from whole arrays too, as the same floats.
    found = [[d, c, s, set(m)] for d, c, s, m in ours]
    expected = [[d, c, s, set(m)] for d, c, s, m in ours]
    add_common_terms(found, rare[:2], fields, term_scores)
    for entry in expected:
        for term, weight in rare[:2]:
            for field, boost in fields.items():
                score = lists.get((term, field), {}).get(entry[0])
                if score is not None:
                    entry[2] += score * weight * boost
                    entry[3].add(term)
    assert found == expected


def test_postings_answer_as_the_dict_they_replace():
    scores = {9: 0.5, 2: 1.25, 40: 3.0}
    postings = as_postings(scores)
    assert isinstance(postings, Postings) and postings.ids.tolist() == [2, 9, 40]  # sorted for binary search
    assert postings == scores and dict(postings.items()) == scores and len(postings) == 3
    assert postings.get(9) == 0.5 and postings.get(10) is None and 40 in postings and 41 not in postings
    assert postings[2] == 1.25 and sorted(postings) == [2, 9, 40]
    assert not as_postings({}) and as_postings(postings) is postings


def test_a_pickle_is_read_from_a_view_in_a_few_calls():
    """whoosh reads each posting block's header with pickle.load on the file: with `peek`, pickle reads it in two
    calls, not one per opcode."""
    calls = []

    class Counted(ViewFile):
        def read(self, n=-1):
            calls.append(n)
            return super().read(n)

    header = (128, 123456, 2.5, 3, 17, 200)
    long = (list(range(2000)), "x" * 3000)  # longer than what one peek hands out
    view = Counted(pickle.dumps(header, 2) + pickle.dumps(long, 2) + b"rest")
    assert pickle.load(view) == header
    assert len(calls) <= 2
    assert pickle.load(view) == long
    assert view.read() == b"rest"  # the position is right after each pickle


def test_hidden_chunks_are_read_once_until_the_catalog_changes(tmp_path):
    day = dt.date(2024, 6, 1)
    with KnowledgeBase(make_settings(tmp_path / "kb", today=day), create=True) as kb:
        kb.ingest_documents([SourceDocument(f"api:plain{i}", f"# plain {i}\n\nshard {i} of the ledger") for i in range(5)])
        for when, words in (("2023-01-01", "old budget"), ("2024-01-01", "new budget")):
            kb.ingest_documents([SourceDocument("api:prd", f"# prd\n\n{words}", effective_date=when)])
        db = kb.store.db
        first = kb.history.hidden_chunks(day)
        assert first and first == _every_version(db, day, False)
        statements: list[str] = []
        db.set_trace_callback(statements.append)
        try:
            assert kb.history.hidden_chunks(day) == first
        finally:
            db.set_trace_callback(None)
        assert statements == ["PRAGMA data_version"]  # kept: no scan of the versions tables
        # A write through this connection (a third version) is seen at once.
        kb.ingest_documents([SourceDocument("api:prd", "# prd\n\nnewest budget", effective_date="2024-03-01")])
        second = kb.history.hidden_chunks(day)
        assert second == _every_version(db, day, False) and second != first
        # So is another connection's commit: every version of the document ended yesterday.
        other = sqlite3.connect(kb.settings.data_dir / "kb.sqlite")
        other.execute("UPDATE versions SET effective_to = '2024-05-31' WHERE effective_to IS NULL AND source = 'api:prd'")
        other.commit()
        other.close()
        third = kb.history.hidden_chunks(day)
        assert third == _every_version(db, day, False) and third != second


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 40), st.integers(1, 5000)), min_size=1, max_size=60),
       st.integers(100, 10**6), st.floats(1.0, 900.0))
def test_postgres_posting_lists_as_packed_arrays_score_as_the_row_loop_did(postings, n, avgfl):
    """PostgreSQL's posting lists come packed (docnum, tf, length in binary) and are scored over whole
    arrays; every score is the float the per-row loop made (the whoosh comparison in test_backends_text.py
    relies on it), and a scope keeps exactly its docnums."""
    import math
    import struct

    import numpy as np

    from retrieval.index.postgres_cache import _unpack, bm25f_scores
    from retrieval.index.postgres_schema import rounded_length

    rows = [(docnum * 3 + 1, tf, length) for docnum, (tf, length) in enumerate(postings)]
    arrays = _unpack(b"".join(struct.pack(">qii", *row) for row in reversed(rows)))  # put back in docnum order
    assert arrays.ids.tolist() == [r[0] for r in rows] and arrays.tf.tolist() == [r[1] for r in rows]
    assert arrays.length.tolist() == [r[2] for r in rows]
    B, K1 = 0.75, 1.2
    idf = math.log(n / (len(rows) + 1)) + 1
    loop = {d: idf * ((tf * (K1 + 1)) / (tf + K1 * ((1 - B) + B * rounded_length(length) / avgfl))) for d, tf, length in rows}
    assert dict(bm25f_scores(arrays, n, avgfl, (B, K1)).items()) == loop  # exact, not approximately
    scope = np.array([r[0] for r in rows[::2]], dtype=np.int64)
    assert arrays.within(scope).ids.tolist() == scope.tolist()
    assert len(_unpack(None)) == 0 and len(bm25f_scores(_unpack(b""), n, avgfl, (B, K1))) == 0
