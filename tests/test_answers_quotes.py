"""Under a model's answer, the source line of each value it states whose name it leaves out
(`retrieval.answer.quotes`): the function on real `Citation`s, then the whole loop against an OpenAI-compatible
endpoint on 127.0.0.1 (tests/fake_llm.py) through litellm, streamed and not, and switched off."""

from __future__ import annotations

import pytest
from conftest import make_settings
from conftest import open_llm_kb as open_kb
from fake_llm import cite_passage_with

from retrieval.answer.quotes import source_lines
from retrieval.answer.record import AnswerSentence, Citation

TABLE = ("## 参数\n\n| 参数 | 当前值 | 说明 |\n|---|---|---|\n| `wdt_timeout` | 45s | 硬件看门狗超时，主循环每 5s 喂狗 |\n"
         "| `heartbeat_interval` | 15s | 心跳上报间隔 |\n")


def cite(n: int, text: str) -> Citation:
    return Citation(n, f"c{n}", "d", "LORA-09 网关", "lora-09.md", "参数", (1, 9), text)


def said(text: str, *cited: int) -> AnswerSentence:
    return AnswerSentence(text, list(cited), 0.9, False)


def test_a_value_without_its_name_gets_the_line_that_names_it():
    citations = [cite(1, "LORA-09 部署在冷库，共 12 台。"), cite(2, TABLE)]
    lines = source_lines("LORA-09 的看门狗超时是多少？", [said("LORA-09 的看门狗超时阈值是 45s。", 2)], citations, "zh")
    assert lines == ["原文：「`wdt_timeout` | 45s | 硬件看门狗超时，主循环每 5s 喂狗」[2]"]  # as written, cited


def test_nothing_is_quoted_when_the_answer_names_it_or_the_question_gave_the_number():
    citations = [cite(1, TABLE)]
    assert source_lines("看门狗超时是多少？", [said("wdt_timeout 为 45s。", 1)], citations, "zh") == []
    assert source_lines("45s 是哪个参数？", [said("是看门狗超时 45s。", 1)], citations, "zh") == []
    assert source_lines("看门狗超时是多少？", [said("看门狗超时是 99s。", 1)], citations, "zh") == []  # no passage holds it


def test_the_cited_passages_come_first_and_elsewhere_a_line_must_share_a_word():
    other = cite(1, "连接池 `pool_idle` | 45s。连接池 `pool_wait` | 15s。")
    lines = source_lines("超时和心跳各是多少？", [said("看门狗超时 45s，心跳 15s。", 2)], [other, cite(2, TABLE)], "zh")
    assert lines == ["原文：「`wdt_timeout` | 45s | 硬件看门狗超时，主循环每 5s 喂狗」[2]",
                     "原文：「`heartbeat_interval` | 15s | 心跳上报间隔」[2]"]
    # The same numbers in a passage it does not cite, on lines sharing no word with it, are other quantities.
    assert source_lines("超时和心跳各是多少？", [said("看门狗超时 45s，心跳 15s。", 2)], [other, cite(2, "无关内容")], "zh") == []
    # A sentence that cites nothing (or the wrong passage) gets the line where the value and its words are.
    assert source_lines("超时是多少？", [said("看门狗超时 45s。")], [other, cite(2, TABLE)], "zh") == [
        "原文：「`wdt_timeout` | 45s | 硬件看门狗超时，主循环每 5s 喂狗」[2]"]
    assert len(source_lines("超时和心跳各是多少？", [said("看门狗超时 45s，心跳 15s。", 2)], [cite(2, TABLE)], "zh",
                            limit=1)) == 1
    english = source_lines("What is the port?", [said("It is 8883.", 1)],
                           [cite(1, "Gateways connect to mqtt.example.com:8883 over TLS. Keepalive is 60 s.")], "en")
    assert english == ['Source: "Gateways connect to mqtt.example.com:8883 over TLS." [1]']


def kb_of(tmp_path_factory, name: str, text: str):
    """A knowledge base of one Markdown document `name` holding `text`."""
    from retrieval.pipeline import KnowledgeBase

    root = tmp_path_factory.mktemp("quotes")
    (root / "docs").mkdir()
    (root / "docs" / name).write_text(text, encoding="utf-8")
    with KnowledgeBase(make_settings(root / "kb"), create=True) as kb:
        kb.ingest_paths([root / "docs"])
    return root / "kb"


@pytest.fixture(scope="module")
def table_kb(tmp_path_factory):
    return kb_of(tmp_path_factory, "lora-09.md", "# LORA-09 网关\n\nLORA-09 是冷库用的网关。\n\n" + TABLE)


QUESTION = "LORA-09 的看门狗超时阈值是多少？"
TERSE = cite_passage_with("wdt_timeout", "LORA-09 的看门狗超时阈值是 45s[{n}]。")


def test_the_loop_quotes_the_line_under_the_models_answer_streamed_or_not(table_kb, fake):
    fake.replies["answer"] = TERSE
    with open_kb(table_kb, fake.base_url) as kb:
        answer = kb.ask(QUESTION)
        events = list(kb.ask(QUESTION, stream=True))
    assert answer.path == "llm"
    model, quote = answer.sentences
    assert model.text == "LORA-09 的看门狗超时阈值是 45s。"
    assert quote.text.startswith("原文：「`wdt_timeout` | 45s |") and quote.citations == model.citations
    assert not quote.flagged and quote.support >= 0.8
    assert answer.answer.endswith(f"」[{model.citations[0]}]")
    streamed = events[-1][1]
    assert "".join(v for k, v in events if k == "delta") == streamed.answer == answer.answer


def test_no_line_is_quoted_when_switched_off_or_when_the_model_names_the_setting(table_kb, fake):
    fake.replies["answer"] = TERSE
    with open_kb(table_kb, fake.base_url, answer_source_lines=0) as kb:
        off = kb.ask(QUESTION)
    fake.replies["answer"] = cite_passage_with("wdt_timeout", "看门狗超时 wdt_timeout 为 45s[{n}]。")
    with open_kb(table_kb, fake.base_url) as kb:
        named = kb.ask(QUESTION)
    assert off.path == named.path == "llm"
    assert [s.text for s in off.sentences] == ["LORA-09 的看门狗超时阈值是 45s。"]
    assert [s.text for s in named.sentences] == ["看门狗超时 wdt_timeout 为 45s。"]


def test_the_rules_path_quotes_nothing_extra(table_kb):
    from retrieval.pipeline import KnowledgeBase

    with KnowledgeBase(make_settings(table_kb)) as kb:
        answer = kb.ask(QUESTION)
    assert answer.path == "rules" and not any(s.text.startswith("原文") for s in answer.sentences)


RUNBOOK = ("## 定位上游\n\n在 edge-01 / edge-02 上按 upstream 聚合最近 10 分钟的错误：\n\n```bash\n"
           "tail -n 200000 /var/log/nginx/access.log | jq -r 'select(.status>=502) | [.status,.upstream_addr] | @tsv'"
           " | sort | uniq -c\n```\n\n`upstream_response_time` 接近 60 是读超时。\n")
STEPS = "手工切换前先确认：\n\n1. db-01 为 `DeadMaster`；\n2. db-02 上 `STOP REPLICA`、`RESET REPLICA ALL`；\n3. 关闭 `read_only`。\n"


def test_a_lead_in_the_model_stopped_at_gets_what_it_introduces():
    from retrieval.answer.quotes import introduced_blocks

    citations = [cite(1, "nginx 的 504 表示上游在超时内没有返回。"), cite(2, RUNBOOK), cite(3, STEPS)]
    lead = said("在 edge-01 / edge-02 上按 upstream 聚合最近 10 分钟的错误：", 1)  # it cites the wrong passage, too
    [quote] = introduced_blocks([lead], citations, "zh")
    assert quote.startswith("```bash\ntail -n 200000 /var/log/nginx/access.log | jq -r 'select(.status>=502) | "
                            "[.status,.upstream_addr] | @tsv'") and quote.endswith("\n```[2]")  # fenced, exactly
    [steps] = introduced_blocks([said("手工切换前先确认：", 3)], citations, "zh")
    assert "DeadMaster" in steps and "RESET REPLICA ALL" in steps and steps.endswith("[3]")
    assert "；" not in steps and " / " in steps  # one quote, not cut into uncited pieces by the check

    # Not a lead-in, a lead-in of no passage, a block the answer already gives, or switched off: nothing.
    assert introduced_blocks([said("504 表示上游超时。", 1)], citations, "zh") == []
    assert introduced_blocks([said("看门狗的参数如下：", 1)], citations, "zh") == []
    done = [lead, said("tail -n 200000 /var/log/nginx/access.log | jq -r 'select(.status>=502) | [.status,.upstream_addr]"
                       " | @tsv' | sort | uniq -c", 2)]
    assert introduced_blocks(done, citations, "zh") == []
    assert introduced_blocks([lead], citations, "zh", limit=0) == []


@pytest.fixture(scope="module")
def runbook_kb(tmp_path_factory):
    return kb_of(tmp_path_factory, "nginx-504.md", "# nginx 504 排障\n\n" + RUNBOOK)


def test_the_loop_quotes_the_command_after_the_lead_in_the_model_stopped_at(runbook_kb, fake):
    fake.replies["answer"] = cite_passage_with("jq -r", "在 edge-01 / edge-02 上按 upstream 聚合最近 10 分钟的错误：[{n}]")
    with open_kb(runbook_kb, fake.base_url) as kb:
        answer = kb.ask("nginx 报 504 怎么定位是哪个上游？")
        events = list(kb.ask("nginx 报 504 怎么定位是哪个上游？", stream=True))
    assert answer.path == "llm"
    model, quote = answer.sentences[0], answer.sentences[-1]
    assert model.text.endswith("错误：")
    assert "jq -r 'select(.status>=502) | [.status,.upstream_addr] | @tsv'" in quote.text
    assert quote.citations == model.citations and not quote.flagged
    assert "".join(v for k, v in events if k == "delta") == events[-1][1].answer == answer.answer
    with open_kb(runbook_kb, fake.base_url, answer_source_lines=0) as kb:
        assert [s.text for s in kb.ask("nginx 报 504 怎么定位是哪个上游？").sentences] == [model.text]


ONCALL = ("值班人 5 分钟内确认告警，15 分钟内开始处理。P1 事故须在 15 分钟内电话通知业务组长，并建立事故群发布第一条进展。",
          "每次 P0、P1 事故都要在恢复后 3 个工作日内完成书面复盘。")
FIRST_MINUTES = "值班人在 P1 事故的前 15 分钟要做什么？"


def test_a_model_answer_that_misses_the_question_gets_the_passages_own_sentences_beside_it():
    from retrieval.answer.quotes import beside_rules

    citations = [Citation(1, "c1", "d", "值班与事故响应", "oncall.md", "P1 事故", (1, 9), ONCALL[0]),
                 Citation(2, "c2", "d", "值班与事故响应", "oncall.md", "复盘", (10, 12), ONCALL[1])]
    # The model answered another question (when the post-mortem is due): the rules' sentences follow, quoted, cited.
    lines = beside_rules(FIRST_MINUTES, [said("事故恢复后 3 个工作日内要完成复盘。", 2)], [], citations, "zh")
    assert lines and all(line.startswith("原文：「") and line.endswith("」[1]") for line in lines)
    assert any("电话通知业务组长" in line for line in lines)
    # An answer that holds the question's words stands alone; so does one whose quotes (the source lines under it)
    # say it; and with no source lines under a model's answer (limit 0), nothing.
    assert beside_rules(FIRST_MINUTES, [said("值班人 15 分钟内开始处理，并电话通知业务组长。", 1)], [], citations, "zh") == []
    assert beside_rules(FIRST_MINUTES, [said("要做两件事：", 1)], ["原文：「值班人在 P1 事故 15 分钟内电话通知业务组长」[1]"],
                        citations, "zh") == []
    assert beside_rules(FIRST_MINUTES, [said("事故恢复后 3 个工作日内要完成复盘。", 2)], [], citations, "zh", limit=0) == []
    # Passages that do not answer it either: the rules' guard finds no answer there, so nothing is added.
    unrelated = [Citation(1, "c1", "d", "发布流程", "release.md", "灰度", (1, 3), "灰度按 10%、50%、100% 三步进行。")]
    assert beside_rules(FIRST_MINUTES, [said("灰度分三步。", 1)], [], unrelated, "zh") == []


@pytest.fixture(scope="module")
def oncall_kb(tmp_path_factory):
    return kb_of(tmp_path_factory, "oncall.md", f"# 值班与事故响应\n\n## P1 事故\n\n{ONCALL[0]}\n\n## 复盘\n\n{ONCALL[1]}\n")


def test_the_loop_adds_them_under_the_models_answer_streamed_or_not(oncall_kb, fake):
    fake.replies["answer"] = cite_passage_with("复盘", "事故恢复后 3 个工作日内要完成复盘[{n}]。")
    with open_kb(oncall_kb, fake.base_url) as kb:
        answer = kb.ask(FIRST_MINUTES)
        events = list(kb.ask(FIRST_MINUTES, stream=True))
    assert answer.path == "llm" and answer.sentences[0].text == "事故恢复后 3 个工作日内要完成复盘。"
    added = [s for s in answer.sentences[1:] if s.text.startswith("原文：「")]
    assert any("电话通知业务组长" in s.text for s in added) and all(s.citations and not s.flagged for s in added)
    assert "".join(v for k, v in events if k == "delta") == events[-1][1].answer == answer.answer
    fake.replies["answer"] = cite_passage_with("业务组长", "值班人 15 分钟内开始处理，并电话通知业务组长[{n}]。")
    with open_kb(oncall_kb, fake.base_url) as kb:
        assert [s.text for s in kb.ask(FIRST_MINUTES).sentences] == ["值班人 15 分钟内开始处理，并电话通知业务组长。"]
