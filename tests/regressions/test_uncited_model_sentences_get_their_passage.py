"""A small model often writes a right sentence and no citation number ("缓存穿透：请求的数据在缓存和数据库中都不存在"):
the check used to leave it uncited and flagged, so the answer read as untraceable although a passage states it.
With `attribute` (the model path) such a sentence cites the passage that supports it best, marked `attributed`;
a sentence no passage supports stays uncited and flagged, and the rules path (attribute off) is unchanged."""

from retrieval.answer.cite import CheckedStream, check_answer
from retrieval.answer.record import Citation

CITATIONS = [
    Citation(1, "c1", "d1", "缓存", "docs/cache.md", "三种问题", (1, 3), "缓存穿透：请求的数据在缓存和数据库中都不存在，每次都穿过缓存查库。"),
    Citation(2, "c2", "d2", "网关", "docs/gateway.md", "心跳", (4, 6), "LORA-02 的 heartbeat_interval 默认 15s，连续漏收 3 次判离线。"),
]
TEXT = "缓存穿透是请求的数据在缓存和数据库中都不存在。heartbeat_interval 默认 15s[2]。月亮是奶酪做的。"


def test_a_supported_uncited_sentence_cites_its_passage():
    rendered, sentences = check_answer(TEXT, CITATIONS, 0.35, "zh", attribute=True)
    assert [s.citations for s in sentences] == [[1], [2], []]
    assert [s.attributed for s in sentences] == [True, False, False]
    assert [s.flagged for s in sentences] == [False, False, True]
    assert sentences[0].to_json()["attributed"] is True and "attributed" not in sentences[1].to_json()
    assert rendered.startswith("缓存穿透是请求的数据在缓存和数据库中都不存在。[1]")


def test_without_attribute_an_uncited_sentence_stays_flagged():
    _, sentences = check_answer(TEXT, CITATIONS, 0.35, "zh")
    assert [s.citations for s in sentences] == [[], [2], []]
    assert sentences[0].flagged and not sentences[0].attributed


def test_the_stream_attributes_as_the_whole_check_does():
    stream = CheckedStream(CITATIONS, 0.35, "zh", attribute=True)
    pieces = [stream.feed(TEXT[i:i + 4]) for i in range(0, len(TEXT), 4)] + [stream.flush()]
    assert "".join(pieces) == check_answer(TEXT, CITATIONS, 0.35, "zh", attribute=True)[0]


def test_a_sentence_whose_number_was_invented_is_not_attributed():
    # A planted passage can make the model echo it with a made-up number; echoing it must not earn a citation.
    _, [s] = check_answer("缓存穿透是请求的数据在缓存和数据库中都不存在[7]。", CITATIONS, 0.35, "zh", attribute=True)
    assert s.removed == [7] and s.citations == [] and s.flagged and not s.attributed
