"""Text -> [Mention]: the spaCy pipeline with the Aho-Corasick entity matcher."""

from __future__ import annotations

import unicodedata

import pytest

from retrieval.graph.linking import EntityLinker, EntityMatcher

ENTITIES = {
    "e:lora02": ("LORA-02", ["LoRa 网关"]),
    "e:lora021": ("LORA-021", []),
    "e:redis": ("redis", []),
    "e:redis-cluster": ("redis-cluster", ["Redis 集群"]),
    "e:heartbeat": ("心跳间隔", []),
    "e:mysql": ("mysql-core", ["主库"]),
    "e:pg": ("pg-main", ["主库"]),  # the same alias on two entities: ambiguous
    "e:nginx": ("nginx", []),
    "e:proxy": ("proxy_read_timeout", []),
    "e:heaven": ("In Heaven", []),  # a title made of plain words
    "e:the": ("the", []),  # a stop word: never linked
    "e:x": ("x", []),  # one character: never linked
}
SURFACES = [(label, iri) for iri, (label, _) in ENTITIES.items()] + [
    (alias, iri) for iri, (_, aliases) in ENTITIES.items() for alias in aliases
]
LABELS = {iri: label for iri, (label, _) in ENTITIES.items()}


@pytest.fixture(scope="module")
def linker() -> EntityLinker:
    return EntityLinker(SURFACES, LABELS)


def linked(linker: EntityLinker, text: str) -> list[tuple[str, str]]:
    return [(m.entity, m.surface) for m in linker.link(text)]


def test_ascii_surfaces_match_case_insensitively(linker):
    assert linked(linker, "lora-02 离线了，NGINX 也报错") == [
        ("e:lora02", "lora-02"),
        ("e:nginx", "NGINX"),
    ]


def test_offsets_point_at_the_surface(linker):
    text = "设置 Redis 集群 和 proxy_read_timeout"
    mentions = linker.link(text)
    assert [(m.entity, m.label) for m in mentions] == [
        ("e:redis-cluster", "redis-cluster"),
        ("e:proxy", "proxy_read_timeout"),
    ]
    for m in mentions:
        assert text[m.start : m.end] == m.surface


def test_offsets_and_surface_refer_to_the_text_as_written(linker):
    # Width folding is for matching only: a caller highlights mentions in the text it passed in.
    text = "№1 网关 ＬＯＲＡ－０２ 离线"
    [mention] = linker.link(text)
    assert mention.entity == "e:lora02"
    assert (mention.surface, text[mention.start : mention.end]) == (
        "ＬＯＲＡ－０２",
        "ＬＯＲＡ－０２",
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("LORA-021 离线", [("e:lora021", "LORA-021")]),  # not LORA-02 inside LORA-021
        ("LORA-02x 与 xLORA-02", []),
        ("LORA-02，离线", [("e:lora02", "LORA-02")]),  # Chinese punctuation is a boundary
        ("LORA-02离线", [("e:lora02", "LORA-02")]),  # so is a Chinese character
        ("the mysql-core-w primary", [("e:mysql", "mysql-core")]),  # '-' ends a word
        ("redisson client", []),
        ("nginx_conf 和 my_nginx", []),  # '_' joins words: these are other identifiers
    ],
)
def test_ascii_surfaces_match_only_on_word_boundaries(linker, text, expected):
    assert linked(linker, text) == expected


def test_leftmost_longest_match_wins(linker):
    # "redis" is inside "redis-cluster": the longer surface starting at the same place wins.
    assert linked(linker, "redis-cluster 宕机") == [("e:redis-cluster", "redis-cluster")]
    assert linked(linker, "redis 单机和 redis-cluster") == [
        ("e:redis", "redis"),
        ("e:redis-cluster", "redis-cluster"),
    ]


def test_chinese_alias_inside_a_sentence_whatever_jieba_says(linker):
    # jieba cuts 设置心跳间隔时间 into 设置 / 心跳 / 间隔时间: matching is on characters, not words.
    mentions = linker.link("设置心跳间隔时间")
    assert [(m.entity, m.surface, m.start, m.end) for m in mentions] == [
        ("e:heartbeat", "心跳间隔", 2, 6)
    ]


def test_alias_with_a_space_links_to_its_entity(linker):
    assert linked(linker, "冷库里的 lora 网关掉线") == [("e:lora02", "lora 网关")]


def test_an_ambiguous_alias_links_to_every_entity_that_has_it(linker):
    mentions = linker.link("主库切换后要重启")
    assert sorted((m.entity, m.label, m.surface, m.start, m.end) for m in mentions) == [
        ("e:mysql", "mysql-core", "主库", 0, 2),
        ("e:pg", "pg-main", "主库", 0, 2),
    ]


def test_stop_word_and_one_character_surfaces_are_never_linked(linker):
    assert linked(linker, "the x factor") == []


def test_spacy_doc_carries_spans_with_kb_id(linker):
    doc = linker.nlp("主库和LORA-02")
    spans = [
        (s.text, s.kb_id_, s.label_, s.start_char, s.end_char) for s in doc.spans["kg_mentions"]
    ]
    assert spans == [
        ("主库", "e:mysql", "ENTITY", 0, 2),
        ("主库", "e:pg", "ENTITY", 0, 2),
        ("LORA-02", "e:lora02", "ENTITY", 3, 10),
    ]
    # doc.ents holds one entity per surface (the first), since ents cannot overlap.
    assert [(e.text, e.kb_id_) for e in doc.ents] == [("主库", "e:mysql"), ("LORA-02", "e:lora02")]


def test_strict_case_keeps_plain_word_titles_out_of_lower_case_prose(linker):
    # Documents are linked case-strictly, questions (typed in lower case) are not.
    assert linked(linker, "rest in heaven") == [("e:heaven", "in heaven")]
    assert linker.link("they rest in heaven", strict_case=True) == []
    assert [m.entity for m in linker.link("the song In Heaven", strict_case=True)] == ["e:heaven"]
    assert [m.entity for m in linker.link("restart nginx now", strict_case=True)] == ["e:nginx"]


def test_link_many_links_each_text_like_link(linker):
    texts = ["LORA-02 心跳间隔", "nothing here", "主库", "rest in heaven"]
    assert list(linker.link_many(texts, strict_case=True)) == [
        linker.link(t, strict_case=True) for t in texts
    ]
    assert list(linker.link_many(texts, strict_case=False)) == [linker.link(t) for t in texts]


def test_an_empty_matcher_finds_nothing():
    assert EntityMatcher([]).find("LORA-02") == []
    assert EntityLinker([], {}).link("LORA-02") == []


def test_a_label_with_accents_links_a_question_typed_without_them():
    from retrieval.graph.linking import EntityLinker

    linker = EntityLinker([("Akinoshū Kenji", "e:kenji")], {"e:kenji": "Akinoshū Kenji"})
    [mention] = linker.link("Where was Akinoshu Kenji born?")
    assert (mention.entity, mention.surface, mention.start) == ("e:kenji", "Akinoshu Kenji", 10)


def test_a_question_is_linked_without_spacy_exactly_as_the_pipeline_links_it(linker):
    # `link` (questions) matches without building a spaCy Doc; `link_many` (documents) goes through
    # the pipeline. They must agree on every text, including full-width forms, accents, runs of
    # blank lines, ambiguous aliases and table markup, and on the bundled demo documents.
    from pathlib import Path

    import kg

    texts = [
        "ＬＯＲＡ－０２ 的心跳间隔\n\n\n  |  主库  | redis-cluster |",
        "LORA-021 不是 LORA-02；Redis 集群 和 redis",
        "Akinoshū and In Heaven, nginx\tproxy_read_timeout=30",
        "",
    ]
    demo = Path(kg.__file__).parent / "demo" / "docs"
    texts += [p.read_text(encoding="utf-8") for p in sorted(demo.rglob("*.md"))]
    for strict_case in (True, False):
        assert list(linker.link_many(texts, strict_case=strict_case)) == [
            linker.link(t, strict_case=strict_case) for t in texts
        ]
    assert sum(len(linker.link(t)) for t in texts) > 10  # the texts do hold mentions


@pytest.mark.parametrize("text", [
    "ＬＯＲＡ－０２ 的心跳间隔",  # full-width: one character each, normalized
    "见上文……LORA-02 的心跳间隔",  # an ellipsis normalizes to three characters
    "ﬁle ㎏ ½ … ＬＯＲＡ－０２ …… LORA-02",  # ligatures and units: two or more
    "LORA-02",
])
def test_a_mention_in_text_that_normalizes_longer_keeps_the_original_offsets(text):
    from retrieval.graph.linking import _normalize_with_offsets

    linker = EntityLinker([("LORA-02", "e:lora")], {"e:lora": "LORA-02"})
    mentions = linker.link(text)
    assert mentions and all(m.entity == "e:lora" for m in mentions)
    for m in mentions:  # each mention's offsets hold, in the text as written, what was linked
        assert unicodedata.normalize("NFKC", text[m.start:m.end]) == "LORA-02"
    # one character at a time, as the offsets are kept
    normalized, origin = _normalize_with_offsets(text)
    assert normalized == "".join(unicodedata.normalize("NFKC", ch) for ch in text)
    expected = [i for i, ch in enumerate(text) for _ in unicodedata.normalize("NFKC", ch)]
    assert (origin or list(range(len(normalized)))) == expected
