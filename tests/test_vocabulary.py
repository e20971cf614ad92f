"""Words taught to jieba -> forgotten again: a reset returns jieba's own dictionary, a closed knowledge base's
words leave with it, and what other owners taught stays as it was taught."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import make_settings

from retrieval.index.analysis import (
    add_user_words,
    compound_terms,
    query_terms,
    reset_user_words,
    taught_words,
    vocabulary_version,
)
from retrieval.index.vocabulary import Vocabulary, taught, tokenizer

# None of them is in jieba's dictionary; each later one starts with the one before it.
WORDS = ["看门狗超时", "看门狗超时阈值", "翡翠流水线"]
TEXTS = ["LORA-02 新的看门狗超时阈值 90 秒。", "看门狗超时多少", "部署翡翠流水线", "翡翠流水"]


def _keys(words) -> set[str]:
    return {w[:end] for w in words for end in range(1, len(w) + 1)}


def _state(words=WORDS) -> tuple[dict[str, int | None], int, list[list[str]]]:
    """What teaching `words` can change: their dictionary keys, jieba's total and the cuts of TEXTS."""
    dt = tokenizer()
    return {k: dt.FREQ.get(k) for k in _keys(words)}, dt.total, [query_terms(t) for t in TEXTS]


@pytest.fixture(autouse=True)
def _pristine():
    reset_user_words()
    yield
    reset_user_words()


def test_a_reset_returns_jiebas_own_dictionary_and_cuts():
    pristine = _state()
    assert "看门狗" in pristine[2][0]  # the chunk holds 看门狗 only while jieba does not know 看门狗超时
    version = vocabulary_version()
    assert add_user_words(WORDS) == 3
    assert vocabulary_version() > version
    assert query_terms("看门狗超时多少")[0] == "看门狗超时"
    assert "看门狗" not in query_terms(TEXTS[0])
    assert "看门狗超时" in compound_terms(["看门狗"])
    assert _state() != pristine

    version = vocabulary_version()
    reset_user_words()
    assert _state() == pristine
    assert taught() == {} and taught_words(WORDS) == set() and compound_terms(["看门狗"]) == []
    assert vocabulary_version() > version  # caches of cut text (synonym tables) cut again
    assert add_user_words(WORDS) == 3  # taught again from scratch, as in a new process


def test_forgetting_one_owner_keeps_the_others_words_as_they_were_taught():
    first, second = Vocabulary("first"), Vocabulary("second")
    pristine = _state()
    add_user_words(WORDS[:1], first)
    add_user_words(WORDS[1:], second)  # 看门狗超时阈值 is found through first's 看门狗超时
    frequencies = taught()
    assert first.forget() == 1
    assert taught() == {w: frequencies[w] for w in WORDS[1:]}
    # 看门狗超时 is a word no more, but still the prefix that leads jieba to 看门狗超时阈值.
    assert query_terms("看门狗超时阈值") == ["看门狗超时阈值"]
    assert query_terms("看门狗超时多少") == pristine[2][1]
    assert tokenizer().FREQ.get("看门狗超时") == 0
    assert tokenizer().total == pristine[1] + sum(taught().values())
    assert second.forget() == 2
    assert _state() == pristine


def test_a_word_two_owners_asked_for_stays_until_both_forget_it():
    first, second = Vocabulary("first"), Vocabulary("second")
    assert add_user_words(["翡翠流水线"], first) == 1
    assert add_user_words(["翡翠流水线", "看门狗超时"], second) == 1  # one was taught already
    assert first.forget() == 0
    assert taught_words(WORDS) == {"翡翠流水线", "看门狗超时"}
    assert second.forget() == 2
    assert taught() == {}


def test_a_closed_knowledge_base_leaves_the_next_one_jiebas_own_cuts(tmp_path: Path):
    from retrieval.pipeline import KnowledgeBase

    pristine = _state()
    (tmp_path / "relations.csv").write_text("source,relation,target\n看门狗超时,relatedTo,翡翠流水线\n", encoding="utf-8")
    with KnowledgeBase(make_settings(tmp_path / "one"), create=True) as kb:
        kb.import_file(tmp_path / "relations.csv")
        assert query_terms("看门狗超时多少")[0] == "看门狗超时"
    assert _state() == pristine  # `kg eval` over several sets: the next set cuts as in a process of its own
    with KnowledgeBase(make_settings(tmp_path / "two"), create=True) as kb:
        kb.ingest_documents([])
        assert "看门狗" in query_terms(TEXTS[0])


def test_an_open_knowledge_base_teaches_its_words_again_after_a_reset(tmp_path: Path):
    from retrieval.pipeline import KnowledgeBase

    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "watchdog.md").write_text("# 网关\n\n看门狗超时之后网关会重启。\n", encoding="utf-8")
    (tmp_path / "relations.csv").write_text("source,relation,target\n看门狗超时,relatedTo,网关\n", encoding="utf-8")
    with KnowledgeBase(make_settings(tmp_path / "kb"), create=True) as kb:
        kb.import_file(tmp_path / "relations.csv")
        kb.ingest_paths([tmp_path / "docs"])
        reset_user_words()
        assert query_terms("看门狗超时") == ["看门狗", "超时"]
        hits = kb.query("看门狗超时", mode="bm25").hits
        assert [h.title for h in hits] == ["网关"]
        assert hits[0].why["bm25"]["terms"] == ["看门狗超时"]  # the question cut as the index was
        assert taught_words(["看门狗超时"]) == {"看门狗超时"}
