"""The TextIndex contract, run against every implementation on disk (today: the whoosh backend)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from retrieval.index.analysis import cjk_bigrams, query_terms
from retrieval.index.textindex import TextIndex
from retrieval.index.whoosh_index import WhooshIndex
from retrieval.types import Chunk

IMPLEMENTATIONS: dict[str, Callable[[Path], TextIndex]] = {"whoosh": WhooshIndex}


class Opener:
    """Opens (and reopens) one implementation's index in one folder; closes what is left open."""

    def __init__(self, factory: Callable[[Path], TextIndex], path: Path) -> None:
        self.factory, self.path = factory, path
        self.open_indexes: list[TextIndex] = []

    def __call__(self) -> TextIndex:
        index = self.factory(self.path)
        self.open_indexes.append(index)
        return index

    def close(self, index: TextIndex) -> None:
        self.open_indexes.remove(index)
        index.close()


@pytest.fixture(params=sorted(IMPLEMENTATIONS))
def open_index(request, tmp_path):
    opener = Opener(IMPLEMENTATIONS[request.param], tmp_path / "index")
    yield opener
    for index in list(opener.open_indexes):
        opener.close(index)


def chunk(
    chunk_id: str, text: str, title: str = "notes", section: str = "", doc_id: str = ""
) -> Chunk:
    return Chunk(
        chunk_id, doc_id or "d-" + chunk_id, 0, title, section, text, 1, 1, "sha-" + chunk_id
    )


def search(index: TextIndex, text: str, limit: int = 10):
    return index.search([(t, 1.0) for t in query_terms(text)], limit)


def ids(hits) -> list[str]:
    return [h.chunk_id for h in hits]


CORPUS = [
    chunk("c-lora", "LORA-02 的心跳周期为 30 秒，看门狗超时阈值 120 秒。", title="LORA-02"),
    chunk("c-nginx", "proxy_read_timeout is 60s for the report API.", title="nginx"),
    chunk("c-pool", "数据库连接池 maxPoolSize 为 50。", title="连接池"),
]


def test_implements_the_protocol(open_index):
    assert isinstance(open_index(), TextIndex)


def test_added_chunks_are_searchable_after_commit(open_index):
    index = open_index()
    assert index.add_chunks(CORPUS) == 3
    index.commit()
    assert index.doc_count() == 3
    assert ids(search(index, "LORA-02 心跳")) == ["c-lora"]
    assert ids(search(index, "proxy_read_timeout")) == ["c-nginx"]
    assert ids(search(index, "连接池")) == ["c-pool"]
    assert search(index, "zebrafish") == []
    assert index.search([], 10) == []


def test_hits_report_the_terms_they_matched(open_index):
    index = open_index()
    index.add_chunks(CORPUS)
    index.commit()
    [hit] = search(index, "LORA-02 的心跳 zebrafish")
    assert hit.chunk_id == "c-lora"
    assert set(hit.terms) == {"lora-02", "lora", "02", "心跳"}
    assert hit.score > 0


def test_identifier_parts_match_the_whole_identifier(open_index):
    index = open_index()
    index.add_chunks(CORPUS)
    index.commit()
    assert ids(search(index, "read timeout")) == ["c-nginx"]


def test_writes_are_invisible_until_commit_and_rollback_discards_them(open_index):
    index = open_index()
    index.add_chunks(CORPUS[:1])
    assert search(index, "LORA-02") == []
    index.commit()
    index.add_chunks(CORPUS[1:])
    index.rollback()
    index.commit()
    assert index.doc_count() == 1
    assert search(index, "proxy_read_timeout") == []


def test_a_term_in_the_title_ranks_above_the_same_term_in_the_body(open_index):
    index = open_index()
    index.add_chunks(
        [
            chunk(
                "c-body",
                "The gateway restarts when the watchdog fires; it then reconnects to the broker.",
                title="gateway restarts",
            ),
            chunk(
                "c-title",
                "The gateway restarts when the timer fires; it then reconnects to the broker.",
                title="watchdog",
            ),
        ]
    )
    index.commit()
    assert ids(search(index, "watchdog")) == ["c-title", "c-body"]


def test_a_lower_query_weight_ranks_lower(open_index):
    index = open_index()
    index.add_chunks(
        [
            chunk("c-db", "the db is backed up nightly"),
            chunk("c-database", "the database is backed up nightly"),
        ]
    )
    index.commit()
    assert ids(index.search([("databas", 1.0), ("db", 0.6)], 10)) == ["c-database", "c-db"]
    assert ids(index.search([("databas", 0.6), ("db", 1.0)], 10)) == ["c-db", "c-database"]


def test_limit_caps_the_hits_best_first(open_index):
    index = open_index()
    index.add_chunks([chunk(f"c{i}", "timeout " * (i + 1) + "filler words here") for i in range(8)])
    index.commit()
    hits = search(index, "timeout", limit=3)
    assert len(hits) == 3
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)


def test_delete_removes_chunks_from_search_and_counts(open_index):
    index = open_index()
    index.add_chunks(CORPUS)
    index.commit()
    assert index.delete_chunks(["c-lora", "c-missing"]) == 1
    index.commit()
    assert index.doc_count() == 2
    assert search(index, "LORA-02") == []
    assert ids(search(index, "proxy_read_timeout")) == ["c-nginx"]


def test_adding_a_chunk_id_again_replaces_it(open_index):
    index = open_index()
    index.add_chunks(CORPUS)
    index.commit()
    index.add_chunks([chunk("c-nginx", "client_max_body_size is 20m.", title="nginx")])
    index.commit()
    assert index.doc_count() == 3
    assert search(index, "proxy_read_timeout") == []
    assert ids(search(index, "client_max_body_size")) == ["c-nginx"]


def test_reopened_from_disk_the_index_has_the_same_content(open_index):
    index = open_index()
    index.add_chunks(CORPUS)
    index.commit()
    index.delete_chunks(["c-pool"])
    index.commit()
    before = [
        (h.chunk_id, round(h.score, 6), h.terms)
        for h in search(index, "LORA-02 proxy_read_timeout 连接池")
    ]
    open_index.close(index)

    reopened = open_index()
    assert reopened.doc_count() == 2
    after = [
        (h.chunk_id, round(h.score, 6), h.terms)
        for h in search(reopened, "LORA-02 proxy_read_timeout 连接池")
    ]
    assert after == before
    assert sorted(ids(search(reopened, "LORA-02 proxy_read_timeout 连接池"))) == [
        "c-lora",
        "c-nginx",
    ]


def test_an_empty_index_searches_and_counts_to_nothing(open_index):
    index = open_index()
    assert index.doc_count() == 0
    assert search(index, "anything") == []
    index.commit()  # committing without writes is harmless
    assert index.doc_count() == 0


def test_closing_twice_is_harmless(open_index):
    # KnowledgeBase.close() (and so `with KnowledgeBase(...)` followed by close()) relies on it.
    index = open_index()
    index.add_chunks(CORPUS)
    index.commit()
    open_index.close(index)
    index.close()


def test_chinese_character_pairs_rescue_a_word_that_jieba_cut_differently(open_index):
    # jieba keeps 门票价格 whole in the question but the passage writes 门票 价格: by words alone
    # the chunk that repeats 冬奥会 wins; its character pairs 门票/价格 bring the right one first.
    index = open_index()
    index.add_chunks([
        chunk("c-volunteers", "冬奥会 冬奥会 志愿者 招募", title="新闻"),
        chunk("c-tickets", "冬奥会 门票 价格 公布 了", title="新闻"),
    ])
    index.commit()
    question = "冬奥会门票价格"
    words = [(t, 1.0) for t in query_terms(question)]
    assert "门票价格" in dict(words)
    assert ids(index.search(words, 10))[0] == "c-volunteers"
    with_pairs = index.search(words, 10, grams=[(g, 0.5) for g in cjk_bigrams(question)])
    assert ids(with_pairs) == ["c-tickets", "c-volunteers"]


def _rare_and_common_corpus() -> list[Chunk]:
    """80 chunks: 'alpha' (in 8, rare) chooses the candidates; 'beta' (in 40, common) only re-scores
    them, and weighs most where alpha weighs least."""
    out = [chunk(f"a{i}", "alpha " * (8 - i) + "beta " * (2 * i) + f"filler{i}", doc_id=f"d{i % 4}")
           for i in range(8)]
    out += [chunk(f"b{i:02d}", f"beta filler{i} other words" if i < 32 else f"filler{i} other words",
                  doc_id=f"d{i % 4}") for i in range(72)]
    return out


def _ranked(hits) -> list[tuple[str, float]]:
    return [(h.chunk_id, round(h.score, 9)) for h in hits]


def test_reading_beyond_the_limit_adds_hits_after_it_and_never_reorders_them(open_index):
    from retrieval.index.scoped import ScopedIndex

    index = open_index()
    index.add_chunks(_rare_and_common_corpus())
    index.commit()
    terms = [("alpha", 1.0), ("gamma", 1.0), ("beta", 1.0)]  # gamma is in no chunk
    for searcher in (index, ScopedIndex(index, frozenset({"d0", "d1", "d2", "d3"}))):
        head = searcher.search(terms, 3)
        deeper = searcher.search(terms, 3, beyond=20)
        assert _ranked(deeper[:3]) == _ranked(head)
        tail = deeper[3:]
        assert 0 < len(tail) <= 20 and not {h.chunk_id for h in tail} & {h.chunk_id for h in head}
        assert [h.score for h in tail] == sorted((h.score for h in tail), reverse=True)
        assert all("beta" in h.terms for h in tail)  # the common word is read for them too
        # The case the rule is for: re-scored with the common word, a deeper candidate outscores
        # one of the first five, yet stays after them.
        assert max(h.score for h in tail) > min(h.score for h in head)
