"""The cheaper query path (issue 25, item 4) reads and computes less and returns the same: the catalog's per-entity
look-ups batched into one statement per table and question, the common terms' re-scoring walking the smaller side,
a hit's "why" words spelled without reading every word of its chunk, and settings without pydantic-settings."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest
from conftest import CROSS_DOC_QUERY
from hypothesis import given, settings
from hypothesis import strategies as st

from retrieval.catalog.anchors import anchors_about, anchors_about_many, document_sections
from retrieval.catalog.packs import PackStore, set_pack
from retrieval.index.analysis import _CJK_ONLY, _SEP, _runs, _stem, surface_words
from retrieval.index.whoosh_index import add_common_terms

# The per-entity statements graph evidence used to run once per reached entity, and their batched forms.
PER_ENTITY = ("WHERE a.entity = ?", "WHERE entity = ? GROUP BY chunk_id")
BATCHED = ("FROM about a JOIN chunks c USING (doc_id) WHERE a.entity IN", "OVER (PARTITION BY entity",
           "OVER (PARTITION BY a.entity")


def test_a_question_reads_each_entity_table_once_however_many_entities_it_reaches(fresh_kb) -> None:
    statements: list[str] = []
    fresh_kb.evidence.invalidate()  # nothing cached: what a fresh `kg query` process reads
    fresh_kb.store.db.set_trace_callback(statements.append)
    try:
        result = fresh_kb.query(CROSS_DOC_QUERY, mode="full")
    finally:
        fresh_kb.store.db.set_trace_callback(None)
    assert result.entities and any(h.why.get("graph", {}).get("path", "").count("→") >= 3 for h in result.hits)
    assert [s for s in statements if any(p in s for p in PER_ENTITY)] == []
    for marker in BATCHED:
        assert sum(marker in s for s in statements) == 1, marker
    # The same question again finds everything cached: no look-up at all.
    statements.clear()
    fresh_kb.store.db.set_trace_callback(statements.append)
    try:
        again = fresh_kb.query(CROSS_DOC_QUERY, mode="full")
    finally:
        fresh_kb.store.db.set_trace_callback(None)
    assert [s for s in statements if any(m in s for m in BATCHED)] == []
    assert [(h.chunk_id, h.score, h.why) for h in again.hits] == [(h.chunk_id, h.score, h.why) for h in result.hits]


def test_batched_look_ups_equal_the_per_entity_ones(fresh_kb) -> None:
    db = fresh_kb.store.db
    entities = [row[0] for row in db.execute("SELECT DISTINCT entity FROM mentions UNION SELECT entity FROM about"
                                             " UNION SELECT entity FROM anchors ORDER BY 1")] + ["urn:nobody"]
    docs = [row[0] for row in db.execute("SELECT doc_id FROM documents ORDER BY doc_id")]
    set_pack(db, "half", docs[: len(docs) // 2])
    for store in (fresh_kb.store, PackStore(fresh_kb.store, ["half"])):
        about = store.about_chunks_of(entities)
        mentioning = store.chunks_mentioning_of(entities, 3)
        assert about == {e: store.about_chunks(e) for e in entities}
        assert mentioning == {e: store.chunks_mentioning(e, 3) for e in entities}
    assert any(about.values()) and any(mentioning.values())
    anchored = anchors_about_many(db, entities, 2)
    assert any(anchored.values())
    assert anchored == {e: anchors_about(db, e, 2) for e in entities}


def test_document_sections_counts_each_document_once_and_as_before(fresh_kb) -> None:
    db = fresh_kb.store.db
    chunk_ids = [row[0] for row in db.execute("SELECT chunk_id FROM chunks")]
    reference = dict(db.execute("SELECT c.chunk_id, (SELECT COUNT(DISTINCT s.parent_id) FROM chunks s"
                                " WHERE s.doc_id = c.doc_id) FROM chunks c"))
    assert document_sections(db, chunk_ids + ["no-such-chunk"]) == reference
    assert max(reference.values()) > 1


def _add_common_terms_one_by_one(found, common, fields, term_scores, report=True) -> None:
    """What `add_common_terms` did before: every candidate looked up in every posting list."""
    for term, weight in common:
        for field, boost in fields.items():
            scores = term_scores(field, term)
            for entry in found:
                score = scores.get(entry[0])
                if score is not None:
                    entry[2] += score * weight * boost
                    if report:
                        entry[3].add(term)


_scores = st.dictionaries(st.integers(0, 60), st.floats(0.001, 30, allow_nan=False), max_size=50)


@settings(max_examples=200, deadline=None)
@given(candidates=st.dictionaries(st.integers(0, 60), st.floats(0, 50, allow_nan=False), max_size=40),
       postings=st.dictionaries(st.tuples(st.sampled_from("abc"), st.sampled_from(["body", "title"])), _scores),
       weights=st.lists(st.floats(0.1, 2, allow_nan=False), min_size=3, max_size=3), report=st.booleans())
def test_common_terms_add_the_same_floats_as_one_lookup_per_candidate(candidates, postings, weights, report) -> None:
    common = list(zip("abc", weights, strict=True))
    fields = {"body": 1.0, "title": 2.0}

    def term_scores(field, term):
        return postings.get((term, field), {})

    ours = [[d, str(d), s, {"x"}] for d, s in candidates.items()]
    reference = [[d, str(d), s, {"x"}] for d, s in candidates.items()]
    add_common_terms(ours, common, fields, term_scores, report=report)
    _add_common_terms_one_by_one(reference, common, fields, term_scores, report=report)
    assert ours == reference  # the same floats to the last bit, the same matched terms


def _surface_words_reading_everything(terms, *texts):
    """What `surface_words` did before: every word of every text stemmed, the first spelling kept."""
    spelled: dict[str, str] = {}
    for text in texts:
        for run, chinese in _runs(text):
            if chinese:
                continue
            lowered = run.lower()
            parts = [run] + ([p for p in _SEP.split(run) if p] if not lowered.isalpha() else [])
            for part in parts:
                low = part.lower()
                for term in ([_stem(low)] if low.isalpha() else [low]):
                    spelled.setdefault(term, part)
    return [spelled.get(term, term) for term in terms]


_words = st.sampled_from(["Redis", "redis", "caching", "Cache", "LORA-02", "lora", "02", "db.conf", "conf", "重启",
                          "配置", "Café", "cafe", "running", "Runs", "x_y", "服务", "k8s-node", "node", "the"])
_texts = st.lists(_words, max_size=12).map(" ".join)


@settings(max_examples=300, deadline=None)
@given(texts=st.lists(_texts, min_size=1, max_size=4), extra=st.lists(_words, max_size=4))
def test_why_words_are_spelled_as_when_every_word_was_read(texts, extra) -> None:
    from retrieval.index.analysis import query_terms

    terms = list(dict.fromkeys(query_terms(" ".join(texts[:1] + extra)) + ["02", "重启", "nowhere"]))
    assert surface_words(terms, *texts) == _surface_words_reading_everything(terms, *texts)
    assert not _CJK_ONLY.match("Redis")


def test_settings_read_the_environment_in_any_case_under_the_values_passed(monkeypatch: pytest.MonkeyPatch) -> None:
    from kg.settings import Settings

    monkeypatch.setenv("KG_DEFAULT_K", "7")
    monkeypatch.setenv("kg_gram_weight", "0.25")
    monkeypatch.setenv("KG_TODAY", "2024-03-01")
    monkeypatch.setenv("KG_NOT_A_SETTING", "whatever")
    s = Settings(gram_weight=0.75)
    assert (s.default_k, s.gram_weight, str(s.today)) == (7, 0.75, "2024-03-01")
    assert Settings().gram_weight == 0.25


def test_a_bad_environment_value_fails_with_pydantics_own_message(monkeypatch: pytest.MonkeyPatch) -> None:
    from pydantic import ValidationError

    from kg.settings import Settings

    monkeypatch.setenv("KG_DEFAULT_K", "0")
    monkeypatch.setenv("KG_FUSION", "max")
    with pytest.raises(ValidationError) as failed:
        Settings()
    text = str(failed.value)
    assert text.startswith("2 validation errors for Settings\ndefault_k\n  Input should be greater than or equal to 1"
                           " [type=greater_than_equal, input_value='0', input_type=str]\n")
    assert "fusion\n  String should match pattern '^(score|rrf)$' [type=string_pattern_mismatch, input_value='max'" in text


def test_settings_do_not_import_pydantic_settings() -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run([sys.executable, "-c", "import sys, kg.settings; kg.settings.Settings();"
                           " print(sorted(m for m in sys.modules if m.startswith('pydantic_settings')))"],
                          env=env, capture_output=True, text=True, check=True)
    assert re.fullmatch(r"\[\]\s*", done.stdout), done.stdout
