"""Text -> index terms: identifiers, jieba positions, width folding, user words, the whoosh analyzer."""

from __future__ import annotations

import pytest

from retrieval.index.analysis import (
    KgAnalyzer,
    add_user_words,
    analyze,
    cjk_bigrams,
    compound_terms,
    normalize_text,
    query_terms,
)


def terms_at(text: str) -> dict[int, list[str]]:
    by_pos: dict[int, list[str]] = {}
    for term, pos in analyze(text):
        by_pos.setdefault(pos, []).append(term)
    return by_pos


@pytest.mark.parametrize(
    ("identifier", "whole", "parts"),
    [
        ("LORA-02", "lora-02", ["lora", "02"]),
        ("proxy_read_timeout", "proxy_read_timeout", ["proxi", "read", "timeout"]),
        ("mysql-core-w", "mysql-core-w", ["mysql", "core", "w"]),
        ("v1.2.3", "v1.2.3", ["v1", "2", "3"]),
    ],
)
def test_identifier_is_kept_whole_with_its_parts_at_one_position(identifier, whole, parts):
    assert analyze(identifier) == [(whole, 0)] + [(p, 0) for p in parts]


def test_identifier_inside_a_sentence_keeps_its_neighbours_positions():
    assert terms_at("set proxy_read_timeout to 60s") == {
        0: ["set"],
        1: ["proxy_read_timeout", "proxi", "read", "timeout"],
        2: ["60s"],
    }


def test_english_words_are_lower_cased_stemmed_and_stop_words_dropped():
    assert analyze("The Servers are Connected") == [("server", 0), ("connect", 1)]


@pytest.mark.parametrize(
    ("inflected", "base"),
    [
        ("connected", "connect"),
        ("servers", "server"),
        ("running", "run"),
        ("logging", "log"),
        ("stopped", "stop"),
    ],
)
def test_an_inflected_word_finds_its_base_form(inflected, base):
    # A query for "log" must find a passage about "logging": both must reduce to the same term.
    assert query_terms(inflected) == query_terms(base)


def test_chinese_is_cut_by_jieba_with_sequential_positions():
    result = analyze("数据库连接池配置")
    assert terms_at("数据库连接池配置") == {0: ["数据库"], 1: ["连接池"], 2: ["配置"]}
    positions = [pos for _, pos in result]
    assert positions == sorted(positions)
    assert sorted(set(positions)) == list(range(len(set(positions))))


def test_chinese_stop_words_take_no_position():
    assert analyze("订单的状态是什么") == [("订单", 0), ("状态", 1)]


def test_mixed_chinese_and_identifier_positions_run_on():
    assert [(t, p) for t, p in analyze("LORA-02 的心跳") if t in ("lora-02", "心跳")] == [
        ("lora-02", 0),
        ("心跳", 1),
    ]


def test_full_width_letters_digits_and_punctuation_fold_to_half_width():
    assert normalize_text("ＬＯＲＡ－０２，ｐｒｏｘｙ") == "LORA-02,proxy"
    assert analyze("ＬＯＲＡ－０２") == analyze("LORA-02")
    assert query_terms("ｐｒｏｘｙ＿ｒｅａｄ＿ｔｉｍｅｏｕｔ") == query_terms("proxy_read_timeout")


def test_normalize_text_keeps_case():
    assert normalize_text("ＡｂＣ") == "AbC"


def test_add_user_words_makes_a_label_one_token():
    label = "翡翠流水线"  # not in jieba's dictionary: jieba cuts it into 翡翠 / 流水线
    before = analyze(f"部署{label}")
    assert (label, 1) not in before
    assert add_user_words([label]) == 1
    after = analyze(f"部署{label}")
    assert after[0] == ("部署", 0)
    assert (label, 1) in after
    assert {pos for _, pos in after} == {0, 1}  # the label and its sub-words share one position
    assert add_user_words([label]) == 0  # already known


def test_add_user_words_skips_what_jieba_cannot_hold_or_needs_no_help_with():
    assert add_user_words(["redis-cluster", "Redis 集群", "库", ""]) == 0


def test_query_terms_are_distinct_in_order_of_first_appearance():
    assert query_terms("nginx timeout nginx 超时 timeout") == ["nginx", "timeout", "超时"]


@pytest.mark.parametrize(
    "text",
    [
        "LORA-02 的看门狗超时阈值是多少？",
        "nginx proxy_read_timeout 设置为多少",
        "what breaks if redis-cluster goes down?",
        "ＬＯＲＡ－０２ 数据库连接池",
        "",
    ],
)
def test_whoosh_analyzer_yields_the_same_terms_and_positions_as_analyze(text):
    tokens = [(t.text, t.pos) for t in KgAnalyzer()(text, positions=True)]
    assert tokens == analyze(text)
    shifted = [(t.text, t.pos) for t in KgAnalyzer()(text, positions=True, start_pos=10)]
    assert shifted == [(term, pos + 10) for term, pos in analyze(text)]


def test_whoosh_analyzer_compares_equal_so_a_reopened_schema_matches():
    assert KgAnalyzer() == KgAnalyzer()
    assert hash(KgAnalyzer()) == hash(KgAnalyzer())


def test_a_user_word_is_one_term_in_questions_and_gives_its_parts_to_compound_lookup():
    add_user_words(["看门狗超时"])
    assert query_terms("看门狗超时多少") == ["看门狗超时", "多少"] or query_terms("看门狗超时多少")[0] == "看门狗超时"
    # A question that says only a part finds the compound through compound_terms.
    assert "看门狗超时" in compound_terms(["看门狗"])


def test_labels_longer_than_a_word_are_not_taught_to_jieba():
    title = "二零二三年中国人民大学招生热点问答"
    add_user_words([title])
    assert title not in query_terms(title)


def test_accented_and_non_latin_words_stay_whole_and_match_without_accents():
    # Names like Aschenbrödel used to split at the ö; questions often omit the accent.
    assert query_terms("Aschenbrödel") == query_terms("Aschenbrodel") == ["aschenbrodel"]
    assert query_terms("Москва") == ["москва"]


def test_cjk_bigrams_are_the_character_pairs_of_each_chinese_run():
    assert cjk_bigrams("数据库连接 nginx 池") == ["数据", "据库", "库连", "连接", "池"]
