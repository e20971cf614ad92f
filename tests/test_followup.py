"""The rule-based second round: when it fires, what it asks, how its hits are merged, and when it stays out."""

from __future__ import annotations

from pathlib import Path

import pytest

from retrieval.index.analysis import query_terms
from retrieval.rank.followup import bridge_names, merge_rounds, named_subject, needs_followup
from retrieval.rank.fusion import Fused
from retrieval.types import SourceDocument
from tests.conftest import CROSS_DOC_QUERY, make_settings

# A two-hop question whose second hop (Victoria Falls) shares only "waterfall" with it; the river's
# own page names the country that bridges them. No relation table: the graph cannot make the hop.
QUESTION = "What is the name of the waterfall in the country where the Bubye River is found?"
PASSAGES = {
    "Bubye River": "The Bubye River is a river in southern Zimbabwe. It is a tributary of the Limpopo "
    "River and flows south-east through the lowveld.",
    "Victoria Falls": "Victoria Falls is a waterfall on the Zambezi, on the border between Zambia and "
    "Zimbabwe. It is one of the largest waterfalls in the world.",
    "Tat Sae Waterfalls": "Tat Sae is a waterfall in Laos, in a country of rivers and forests.",
    "Cascade Falls": "Cascade Falls is a waterfall on the Kettle River, found in a state park near Osceola.",
    "Roaring River": "The Roaring River is a river in North Carolina. A small waterfall is found near its source.",
    "Abshir Ata Waterfall": "Abshir Ata is a waterfall in Kyrgyzstan, high in the Alay mountains.",
    "Harare": "Harare is the capital and largest city of Zimbabwe.",
    "Lake Kariba": "Lake Kariba is a reservoir on the Zambezi between Zambia and Zimbabwe.",
    "Orange River": "The Orange River rises in Lesotho and flows west to the Atlantic Ocean.",
}


def _river_kb(tmp_path: Path, **overrides):
    from retrieval.pipeline import KnowledgeBase

    kb = KnowledgeBase(make_settings(tmp_path / "kb", **overrides), create=True)
    kb.add_entities(PASSAGES)
    kb.ingest_documents(
        [SourceDocument(source=f"wiki:{t}", text=text, format="txt", title=t) for t, text in PASSAGES.items()]
    )
    return kb


def _titles(result) -> list[str]:
    return list(dict.fromkeys(h.title for h in result.hits))


def test_bridge_names_come_from_the_lead_and_skip_what_the_question_has():
    text = PASSAGES["Bubye River"]
    assert bridge_names(QUESTION, "Bubye River", text) == ["Zimbabwe", "Limpopo River"]
    assert bridge_names(QUESTION, "Bubye River", text, limit=1) == ["Zimbabwe"]
    assert bridge_names(QUESTION, "Bubye River", text, lead=30) == []  # "Zimbabwe" is past the lead
    assert bridge_names("Where did he study?", "Harris W. Fawell", "He earned an LL.B. at North Central College.") == [
        "North Central College"
    ]
    assert bridge_names("订单服务依赖哪些组件？", "订单服务", "订单服务依赖库存服务和支付网关。") == []
    # A Chinese question: Latin capitals in the page are codes, not names to follow.
    assert bridge_names("中法学院TFS4的平均分是多少？", "招生问答", "考试分 TFS4 和 TFS8，由 Campus France 组织。") == []
    assert bridge_names("What is the TFS4 average?", "FAQ", "The TFS4 test is run by Campus France.") == ["Campus France"]


def test_the_question_must_name_the_best_hits_subject_whole():
    words = query_terms(QUESTION)
    assert named_subject(words, "Bubye River") == {"buby", "river"}
    assert named_subject(query_terms("Where is Monster Trucks set?"), "Monster Trucks (film)") == {"monster", "truck"}
    assert named_subject(words, "Roaring River") == set()  # "river" alone names nothing
    assert named_subject(query_terms("Which product principle favours small changes?"), "product/product-principles.md") == set()


def test_needs_followup_only_when_no_top_hit_came_through_a_relation():
    assert needs_followup(["a", "b"], related_ids={"z"})
    assert not needs_followup(["a", "b"], related_ids={"b"})
    assert not needs_followup([], related_ids=set())


def test_merge_keeps_the_first_hop_on_top_and_ranks_documents_not_chunks():
    first = [Fused("a1", 1.0, {"bm25": 1}), Fused("b1", 0.9, {"bm25": 2}), Fused("b2", 0.8, {"bm25": 3}),
             Fused("c1", 0.7, {"bm25": 4})]
    doc_of = {"a1": "A", "b1": "B", "b2": "B", "c1": "C", "d1": "D", "d2": "D"}
    merged = merge_rounds(first, ["d1", "d2", "c1", "a1"], doc_of, k=1.0)
    assert [f.id for f in merged] == ["a1", "c1", "d1", "d2", "b1", "b2"]
    assert merged[0].ranks == {"bm25": 1, "followup": 4}
    assert merged[2].ranks == {"followup": 1}
    # Weight 0: round two adds nothing, round one's order stands.
    assert [f.id for f in merge_rounds(first, ["d1", "c1"], doc_of, weight=0.0)][:4] == ["a1", "b1", "b2", "c1"]


def test_second_round_brings_the_bridged_document_up(tmp_path):
    with _river_kb(tmp_path / "on") as kb:
        on = kb.query(QUESTION, k=10)
    with _river_kb(tmp_path / "off", followup=False) as kb:
        off = kb.query(QUESTION, k=10)
    assert off.followup is None
    assert on.followup is not None and on.followup["bridge"] == ["Zimbabwe", "Limpopo River"]
    assert on.followup["dropped"] == ["buby", "river"]  # the first hop's name leaves the second search
    assert on.followup["query"].startswith(QUESTION)
    assert _titles(on)[0] == _titles(off)[0] == "Bubye River"
    assert _titles(on).index("Victoria Falls") <= 2 < _titles(off).index("Victoria Falls")
    falls = next(h for h in on.hits if h.title == "Victoria Falls")
    assert falls.why["followup"]["rank"] >= 1 and "zimbabw" in falls.why["followup"]["terms"]
    assert on.to_json()["followup"] == on.followup
    assert "followup" in on.timings_ms


def test_no_second_round_when_the_question_does_not_name_the_best_hit(tmp_path):
    # Victoria Falls comes first, but the question never names it: it is no first hop to go on from.
    with _river_kb(tmp_path) as kb:
        result = kb.query("Which waterfall lies on the border of Zambia?", k=5)
    assert result.hits[0].title == "Victoria Falls"
    assert result.followup is None


def test_bm25_mode_never_follows_up(tmp_path):
    with _river_kb(tmp_path) as kb:
        result = kb.query(QUESTION, k=6, mode="bm25")
    assert result.followup is None
    assert all("followup" not in h.why for h in result.hits)


@pytest.mark.parametrize("question", [CROSS_DOC_QUERY, "no word of this is in any document xyzzy"])
def test_no_second_round_when_the_graph_made_the_hop_or_nothing_was_found(kb, question):
    result = kb.query(question, k=5)
    assert result.followup is None
    assert all("followup" not in h.why for h in result.hits)


def test_kg_query_shows_the_second_round(tmp_path):
    from click.testing import CliRunner

    from kg.cli import cli

    _river_kb(tmp_path).close()
    result = CliRunner().invoke(cli, ["query", QUESTION, "--data-dir", str(tmp_path / "kb"), "-k", "5"])
    assert result.exit_code == 0, result.output
    assert "second round: also searched for Zimbabwe, Limpopo River (named by hit 1)" in result.output
    falls = result.output[result.output.index("Victoria Falls") :]
    assert "second round #" in falls.split("\n", 3)[2]  # its "why:" line
