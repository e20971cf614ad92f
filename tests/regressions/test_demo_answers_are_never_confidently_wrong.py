"""Five questions a new user asked of the demo with no model (the default path of the CLI, the web page, MCP and
/v1) got confidently wrong answers: the README's heartbeat question without its 15 s; "redis-cluster 宕机会影响哪些
服务？" answered with an incident's improvement items although the relation table lists the five services that
depend on it; "Who owns payment-service?" never naming 资金结算组 (an `ownedBy` edge); an English question
answered in Chinese without a word about it; "公司的年假有几天？" answered with an unrelated TH-20 sentence. Now the
relation table's facts are evidence [R1], the chosen sentences must hold most of the question's key words or the
answer is "nothing found", and an answer quoting sources in another language says so. The demo's unanswerable
questions all get the no-hit answer."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import build_demo_kb, run_in_own_process

CASES = ["LORA-02 的心跳间隔是几秒？", "redis-cluster 宕机会影响哪些服务？", "Who owns payment-service?",
         "what breaks if redis-cluster goes down?", "公司的年假有几天？"]
UNANSWERABLE = Path(__file__).parents[2] / "kg" / "demo" / "unanswerable.jsonl"
# English questions naming, in lower case with a hyphen, something the demo does not hold: the name must stop an
# answer as LORA-05 does. (Treating such words as plain English, to answer "the command-line tool from ImageMagick"
# although no passage says "command-line", answered the first one with an audit-platform sentence: not kept.)
NAMES_NOT_HELD = ["How long is the retention of audit-log data?", "Who owns shipping-service?",
                  "What port does shipping-service listen on?"]
# Nothing to look for but a lone digit (a citation marker pasted as the question): sentences holding a "1" were quoted.
# A digit beside words still counts ("重试 3 次"), and so does a number of its own ("502").
NO_WORDS = ["[1]", "[1][2]", "3?"]
WITH_NUMBERS = ["重试 3 次后怎么办？", "502"]
# Along two relations, of what one reaches: each service's owner, not redis-cluster's (that was answered, cited [R2]).
CHAINED = "Which teams own the services that depend on redis-cluster?"
# Not a chain: 连接 (connectsTo) is written inside the name 数据库连接池, and no relation word stands there.
NOT_CHAINED = "数据库连接池和线程池的配置之间有什么关系？"


def ask_on_the_demo(data_dir: Path) -> dict:
    questions = CASES + NAMES_NOT_HELD + NO_WORDS + WITH_NUMBERS + [CHAINED, NOT_CHAINED] + [json.loads(line)["question"] for line in UNANSWERABLE.read_text(encoding="utf-8").splitlines()]
    with build_demo_kb(data_dir) as kb:
        return {q: kb.ask(q, llm=None).to_json() for q in questions}


def test_the_five_cases_and_the_unanswerable_set(tmp_path):
    answers = run_in_own_process("regressions.test_demo_answers_are_never_confidently_wrong", "ask_on_the_demo",
                                 tmp_path / "kb")
    heartbeat = answers[CASES[0]]
    assert heartbeat["found"] and "15s" in heartbeat["answer"]

    for question, wording in ((CASES[1], "被以下对象依赖"), (CASES[3], "is required by")):
        answer = answers[question]
        [fact] = [f for f in answer["facts"] if f["relation"] == "requiredBy"]
        assert sorted(fact["others"]) == ["inventory-service", "notification-service", "order-service",
                                          "payment-service", "user-service"]
        assert all("redis-cluster" in t for t in fact["triples"])
        first = answer["sentences"][0]
        assert wording in first["text"] and first["facts"] == [fact["key"]] and not first["flagged"]
        assert answer["answer"].count("service") >= 5  # every related entity is named in the answer itself

    owner = answers[CASES[2]]
    assert owner["sentences"][0]["text"].startswith("payment-service is owned by 资金结算组")
    assert owner["facts"][0]["triples"] == ["payment-service ownedBy 资金结算组"]
    assert owner["answer"].startswith("(The sources are in Chinese")  # the Chinese sentences quoted after it are announced

    leave = answers[CASES[4]]
    assert not leave["found"] and leave["answer"].startswith("知识库中暂无相关信息")
    assert all(s["flagged"] for s in leave["sentences"])

    assert [q for q in NAMES_NOT_HELD if answers[q]["found"]] == []

    assert [q for q in NO_WORDS if answers[q]["found"] or "no word to look for" not in answers[q]["path_reason"]] == []
    assert all(answers[q]["found"] for q in WITH_NUMBERS)
    assert "死信" in answers[WITH_NUMBERS[0]]["answer"] and "502" in answers[WITH_NUMBERS[1]]["answer"]

    owners = {(f["entity"], f["relation"]): f["others"] for f in answers[CHAINED]["facts"]}
    assert ("redis-cluster", "ownedBy") not in owners and owners[("payment-service", "ownedBy")] == ["资金结算组"]
    assert len([k for k in owners if k[1] == "ownedBy"]) == 5 and "仓储研发组" in answers[CHAINED]["answer"]

    assert {(f["entity"], f["relation"]) for f in answers[NOT_CHAINED]["facts"]} == {
        ("数据库连接池", "configures"), ("线程池", "configures")}

    unanswerable = [q for q in answers if q not in CASES + NAMES_NOT_HELD + NO_WORDS + WITH_NUMBERS + [CHAINED, NOT_CHAINED]]
    assert len(unanswerable) == 10
    assert [q for q in unanswerable if answers[q]["found"]] == []
