"""Routing's out-of-scope measure (`retrieval.packs.routing._known_share` through `route`): which of a question's
words the knowledge base holds, from the knowledge base's own counts (given as the index would give them)."""

from __future__ import annotations

from retrieval.index.analysis import cjk_bigrams, query_terms
from retrieval.packs import NO_BASIS, parse_card
from retrieval.packs.routing import Evidence, _known_share, route

CARD = parse_card("---\nid: handbook\ntitle: Company handbook\ncovers: [time off, expenses]\n"
                  "key terms: [PTO, expense report]\n---\n", "handbook")
BIKE = "How do I replace the chain on a road bike?"


def evidence(question: str, df: dict[str, int], chunks: int, probe_terms=(), pairs: dict[str, int] | None = None):
    words = query_terms(question)
    missing = [w for w in words if w not in df]
    assert not missing, f"give a count for {missing}"
    return Evidence(question, probe=[("handbook", tuple(t)) for t in probe_terms], doc_frequency=df.get,
                    chunks=chunks, pair_frequency=(lambda p: pairs.get(p, 0)) if pairs is not None else None)


def test_a_word_one_chunk_in_thousands_holds_is_no_basis():
    df = {"replac": 31, "chain": 13, "road": 1, "bike": 0}
    routing = route(evidence(BIKE, df, 6800, probe_terms=[["replac"]] * 3), {"handbook": CARD}, [])
    assert routing.out_of_scope == (f"{NO_BASIS}: the words any pack holds carry only 41% of the question's weight, "
                                    "the best passage 19%")
    # a knowledge base that does talk about road bikes answers it
    df.update(road=40, bike=25)
    routing = route(evidence(BIKE, df, 6800, probe_terms=[["chain", "road", "bike"]]), {"handbook": CARD}, [])
    assert routing.out_of_scope is None and routing.pack_ids() == ["handbook"]


def test_in_a_small_knowledge_base_one_chunk_is_enough():
    df = {"replac": 3, "chain": 1, "road": 1, "bike": 1}
    assert _known_share(evidence(BIKE, df, 400)) == 1.0
    assert _known_share(evidence(BIKE, df, 6800)) < 0.4


def test_a_chinese_word_cut_otherwise_counts_when_its_character_pairs_are_held():
    question = "为什么 events 表里一时查不到？"
    words = query_terms(question)
    cut_apart = [w for w in words if not w.isascii() and len(w) > 2]
    assert cut_apart, words  # jieba keeps a phrase such as 查不到 as one word
    df = {w: (0 if w in cut_apart else 200) for w in words}
    held = {p: 50 for w in words for p in cjk_bigrams(w)}
    assert _known_share(evidence(question, df, 6800, pairs=held)) == 1.0
    without_pairs = _known_share(evidence(question, df, 6800, pairs={}))
    assert without_pairs < 1.0
    assert _known_share(evidence(question, df, 6800)) == without_pairs  # no pair counts: words only


def test_a_lone_chinese_character_is_not_a_word_of_the_question():
    question = "怎么接着导？"
    words = query_terms(question)
    singles = [w for w in words if not w.isascii() and len(w) == 1]
    assert singles, words
    df = {w: (0 if w in singles else 300) for w in words}
    assert _known_share(evidence(question, df, 6800, pairs={})) == 1.0
