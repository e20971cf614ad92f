"""Answers offline (rules judge, extractive answer, "nothing found") and with litellm's `mock_response=`; the pieces: verdict parsing, the citation check, rewrites, `kg ask`, `kg eval --answers`."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest
from click.testing import CliRunner
from conftest import make_settings

from kg.cli import cli
from retrieval.answer import NOT_FOUND, LlmClient, LlmConfig
from retrieval.answer.cite import CheckedStream, check_answer
from retrieval.answer.judge import parse_verdict
from retrieval.answer.record import Citation, detect_language
from retrieval.answer.rewrite import parse_rewrites, rule_rewrites
from retrieval.eval.answers import answer_in, read_answer_questions

ZH = "LORA-02 的心跳间隔是多少？"
EN = "What is proxy_read_timeout for the report API?"
CITATIONS = [
    Citation(1, "c1", "d1", "LORA-02", "docs/lora-02.md", "参数", (5, 7), "心跳间隔为 30 秒，连续 3 次没有心跳即判定离线。"),
    Citation(2, "c2", "d2", "nginx", "docs/nginx.md", "Timeouts", (3, 5), "proxy_read_timeout is 60s for the report API."),
]


# ---------------------------------------------------------------- offline: rules

def test_offline_answer_is_extractive_and_cited(kb):
    answer = kb.ask(ZH)
    assert answer.path == "rules" and answer.found and answer.language == "zh"
    assert answer.path_reason == "no model configured (KG_LLM_MODEL is unset): rules judge and extractive answer"
    assert "心跳间隔为 30 秒，连续 3 次没有心跳即判定离线。" in answer.answer
    for sentence in answer.sentences:
        assert sentence.citations and sentence.support == 1.0 and not sentence.flagged
        cited = answer.citations[sentence.citations[0] - 1]
        assert sentence.text.rstrip("。.") in cited.text
    assert answer.citations[0].source.endswith(".md") and answer.citations[0].lines[0] >= 1


def test_offline_english_answer(kb):
    answer = kb.ask(EN)
    assert answer.language == "en" and answer.found
    assert answer.answer.startswith("proxy_read_timeout is 60s for the report API; [")


@pytest.mark.parametrize(("question", "language", "missing"), [
    ("LORA-07 的电池寿命是多少？", "zh", "no document mentions lora-07"),
    ("How do I rotate the Kafka TLS keys?", "en", "no document mentions kafka, tls"),
])
def test_nothing_found_in_the_questions_language_without_calling_a_model(kb, question, language, missing):
    llm = LlmClient(LlmConfig(model="openai/mock-model"),
                    mock={"rewrite": "电池 寿命", "judge": '{"sufficient": true}', "answer": "made up [1]"})
    answer = kb.ask(question, llm=llm)
    assert answer.found is False and answer.answer == NOT_FOUND[language]
    assert answer.path == "rules"
    assert answer.path_reason == f"nothing relevant in the knowledge base ({missing}); the model was not asked to answer"
    assert answer.sentences == [] and answer.citations == []
    assert "answer" not in llm.tasks  # the model never writes an answer from an irrelevant context


def test_rounds_are_listed_with_their_verdicts(kb):
    answer = kb.ask("LORA-02 的心跳间隔和 nginx 的 proxy_read_timeout 各是多少？")
    assert 1 <= len(answer.rounds) <= 2
    first = answer.rounds[0].to_json()
    assert first["round"] == 1 and first["query"].startswith("LORA-02")
    assert first["verdict"]["by"] == "rules" and "coverage" in first["verdict"]
    assert "LORA-02" in first["entities"]


def test_bad_requests_say_how_to_fix_them(kb):
    from kg.errors import InputError

    with pytest.raises(InputError, match="the question is empty"):
        kb.ask("   ")
    with pytest.raises(InputError, match="k must be between 1 and 20 passages for an answer, got 0"):
        kb.ask(ZH, k=0)


# ---------------------------------------------------------------- litellm's mock_response

def _mock(**replies) -> LlmClient:
    return LlmClient(LlmConfig(model="openai/mock-model"), mock=replies)


def test_mock_model_answer_goes_through_litellm(kb, monkeypatch):
    replies = {"rewrite": "LORA-02 心跳\n心跳间隔 离线", "judge": '```json\n{"sufficient": true}\n```',
               "answer": "LORA-02 每 30 秒发一次心跳[1][9]。"}
    llm = _mock(**replies)
    answer = kb.ask(ZH, llm=llm)
    assert answer.path == "llm" and llm.tasks == ["answer"]  # the rules found round 1 sufficient: no judge call
    assert answer.rewrites == []  # keyword rewrites by the model only with KG_LLM_REWRITES
    monkeypatch.setattr(kb.settings, "llm_rewrites", True)
    llm = _mock(**replies)
    answer = kb.ask(ZH, llm=llm)
    assert answer.path == "llm" and llm.tasks == ["rewrite", "answer"]
    assert answer.rewrites == ["LORA-02 心跳", "心跳间隔 离线"]
    # the rules' sentences, which hold 心跳间隔 as the model's does not, follow it quoted (`quotes.beside_rules`)
    assert answer.answer.startswith("LORA-02 每 30 秒发一次心跳。[1]原文：「")
    assert answer.sentences[0].citations == [1] and answer.removed_citations == [9]


def test_mock_model_asking_for_more_gets_two_rounds(kb):
    llm = _mock(rewrite="", judge='{"sufficient": "no", "followup_query": "心跳 判定 离线"}', answer="好的[1]。")
    short = "LORA-02 的心跳间隔和固件签名算法是什么？"  # the rules find its passages short: the model judges
    answer = kb.ask(short, llm=llm)
    assert [r.query for r in answer.rounds] == [short, "心跳 判定 离线"]
    assert answer.rounds[0].verdict["by"] == "llm" and answer.rounds[0].verdict["sufficient"] is False
    assert llm.tasks.count("judge") == 1 and len(llm.tasks) <= 3


def test_a_judge_reply_that_copies_the_prompt_searches_the_rules_followup(kb):
    """The 1.5B model's judge wrote its follow-up as the prompt's own words for the field (ops_dev_zh, 2026-12-05): that
    is no query; round two searches the rules' follow-up, as with an empty one."""
    echo = ('{"sufficient": false, "missing": ["what the passages lack"], '
            '"followup_query": "one short search query for what is missing; empty if suffici"}')
    short = "LORA-02 的心跳间隔和固件签名算法是什么？"  # the rules find its passages short: the model judges
    answer = kb.ask(short, llm=_mock(rewrite="", judge=echo, answer="好的[1]。"))
    verdict = answer.rounds[0].verdict
    assert (verdict["by"], verdict["sufficient"], verdict["missing"], verdict["followup"]) == ("llm", False, [], "")
    assert len(answer.rounds) == 2  # an empty follow-up of its own: the rules wrote round two's
    assert answer.rounds[1].query.strip() and "search query" not in answer.rounds[1].query


# ---------------------------------------------------------------- the pieces

@pytest.mark.parametrize(("reply", "expected"), [
    ('{"sufficient": true, "missing": "", "followup_query": ""}', (True, [], "")),
    ('Verdict:\n```json\n{"sufficient": false, "missing": ["端口"], "followup_query": "emqx 端口"}\n```', (False, ["端口"], "emqx 端口")),
    ("{'sufficient': False, 'followup_query': 'more'}", (False, [], "more")),
    ('{"Sufficient": "yes"}', (True, [], "")),
    ('sufficient: false (need more)', (False, [], "")),
    # a small model copying the prompt's words for a field: no query, nothing missing
    ('{"sufficient": false, "missing": ["what the passages lack; empty if nothing"], '
     '"followup_query": "one short search query for what is missing; empty if suffici"}', (False, [], "")),
    ('{"sufficient": false, "missing": ["TLS 端口"], "followup_query": "search query for the TLS port"}',
     (False, ["TLS 端口"], "search query for the TLS port")),
])
def test_verdicts_are_parsed_robustly(reply, expected):
    verdict = parse_verdict(reply)
    assert (verdict.sufficient, verdict.missing, verdict.followup) == expected and verdict.by == "llm"


@pytest.mark.parametrize("reply", ["", "I cannot tell.", '{"missing": "x"}', '{"sufficient": "perhaps"}', "[1, 2]"])
def test_replies_without_a_verdict_are_none(reply):
    assert parse_verdict(reply) is None


def test_followup_query_is_capped():
    verdict = parse_verdict(json.dumps({"sufficient": False, "followup_query": "x " * 500}))
    assert len(verdict.followup) == 200


def test_citation_check_removes_flags_and_keeps():
    text = "心跳间隔为 30 秒。[1] 根据材料 7，proxy_read_timeout is 60s [2][7]. 月亮是奶酪做的[1]。这点没有依据[未知]。"
    rendered, sentences = check_answer(text, CITATIONS, 0.35, "zh")
    assert [s.citations for s in sentences] == [[1], [2], [1], []]
    assert [s.removed for s in sentences] == [[], [7], [], []]
    assert [s.flagged for s in sentences] == [False, False, True, True]
    assert sentences[1].text == "根据材料，proxy_read_timeout is 60s."
    assert sentences[3].unknown
    assert rendered == "心跳间隔为 30 秒。[1]根据材料，proxy_read_timeout is 60s.[2]月亮是奶酪做的。[1]这点没有依据。[未知]"


def test_an_uncited_sentence_naming_a_setting_cites_the_one_passage_that_holds_it():
    # An English sentence over Chinese passages shares too few words to be attributed by support, but the name it
    # gives is written in one passage only: that passage is its source (and it stays flagged, support being low).
    citations = [
        Citation(1, "c1", "d1", "数据库连接池", "docs/pool.md", "调整规则", (1, 2), "先看 `hikaricp_connections_pending` 是否持续 > 0。"),
        Citation(2, "c2", "d2", "慢查询排查手册", "docs/slow.md", "现场定位", (3, 4),
                 "在主库查看长查询：SELECT id, time FROM information_schema.processlist WHERE time > 2;"),
    ]
    text = ("Use `information_schema.processlist` to see the statements that run now. "
            "Watch hikaricp_connections_pending and information_schema.processlist together. "
            "Check the pool via e.g first.")
    _, [named, tie, plain] = check_answer(text, citations, 0.35, "en", attribute=True)
    assert named.citations == [2] and named.attributed and named.flagged
    assert tie.citations == [] and not tie.attributed  # one name in each passage: no single source
    assert plain.citations == [] and plain.flagged  # "e.g" is no name
    assert check_answer(text, citations, 0.35, "en")[1][0].citations == []  # only a model's answer is attributed


def test_a_value_no_cited_passage_holds_cites_the_one_passage_that_does():
    # The model cites the keepalive's section for a sentence whose port only the page's overview holds.
    citations = [
        Citation(1, "c1", "d1", "emqx-broker", "docs/emqx.md", "接入规范", (7, 10),
                 "- MQTT keepalive 60 秒，服务端在 1.5 倍 keepalive（90 秒）无报文时断开连接。"),
        Citation(2, "c2", "d1", "emqx-broker", "docs/emqx.md", "概述", (4, 4),
                 "`emqx-broker` 是 MQTT 代理。设备侧地址 `mqtt.xinghe56.com:8883`（TLS），内网 1883 端口。"),
        Citation(3, "c3", "d2", "iot-gateway-service", "docs/iot.md", "概述", (4, 4), "服务端口 `8090`，2 个副本，60 秒上报一次。"),
        Citation(4, "c4", "d3", "nginx", "docs/nginx.md", "超时", (2, 3), "keepalive_timeout 8090。"),
    ]
    text = ("The gateways use port 8883 and MQTT keepalive 60 seconds to connect to the MQTT broker.[1] "
            "Gateways reach the broker on 8090.[1] Nothing else uses 4242.[1]")
    _, [port, twice, none] = check_answer(text, citations, 0.35, "en", attribute=True)
    assert port.citations == [1, 2] and port.attributed  # 60 is in [1] (and in [3]: not needed); 8883 only in [2]
    assert twice.citations == [1] and not twice.attributed  # 8090 is in [3] and [4]: no single source
    assert none.citations == [1] and not none.attributed  # no passage holds 4242
    assert check_answer(text, citations, 0.35, "en")[1][0].citations == [1]  # the rules' own sentences are as cited


def test_a_sentence_copied_from_another_passage_than_the_one_cited_cites_that_passage_too():
    # A small model copies passage 2's step and cites 1: the step gets [1][2] (and is no longer flagged); a sentence no
    # passage supports keeps the model's number and its flag; the rules' own sentences are never attributed.
    sections = {"适用场景": "`k8s-prod` 中节点 `NotReady`、出现 `DiskPressure` 状况，或 Pod 被大量驱逐。",
                "2. DiskPressure": "1. 登录节点执行 `df -h /var/lib/containerd /var/log`，找出占用最大的目录。\n"
                                   "2. 清理到使用率 < 80% 后，节点状况会恢复。"}
    citations = [Citation(n, f"c{n}", "d1", "k8s 节点异常处理手册", "docs/k8s.md", section, (n, n), text)
                 for n, (section, text) in enumerate(sections.items(), start=1)]
    text = "登录节点执行 `df -h /var/lib/containerd /var/log`，找出占用最大的目录。[1]月亮是奶酪做的。[1]"
    _, [step, moon] = check_answer(text, citations, 0.35, "zh", attribute=True)
    assert step.citations == [1, 2] and step.attributed and not step.flagged
    assert moon.citations == [1] and moon.flagged and not moon.attributed
    _, [as_ruled, _moon] = check_answer(text, citations, 0.35, "zh")
    assert as_ruled.citations == [1] and as_ruled.flagged


def test_a_model_writing_its_numbers_as_the_words_says_nothing_and_the_rules_answer():
    # The 1.5B model on the demo (2026-12-06): "The main layers of the Xinghe platform architecture are [1], [2], and
    # [3]." became "… are,, and. [1][2][3]". Numbers in place of what the sentence should say are no sentence; numbers
    # written as a list after a statement are its citations, without the commas between them.
    citations = [Citation(n, f"c{n}", "d1", "架构", "docs/arch.md", layer, (n, n), f"{layer}：端口 8883。")
                 for n, layer in enumerate(("接入层", "业务层", "数据层"), start=1)]
    text = ("The main layers of the platform are [1], [2], and [3]. 平台分为[1]、[2]和[3]三层。详见[1]和[3]。"
            "The port is 8883 [1], [2]. 数据层的端口是 8883[2] 和 [3]。端口为[1]、[3]中的 8883。")
    rendered, sentences = check_answer(text, citations, 0.35, "en", attribute=True)
    assert [(s.text, s.citations) for s in sentences] == [
        ("The port is 8883.", [1, 2]), ("数据层的端口是 8883。", [2, 3]), ("端口为中的 8883。", [1, 3])]  # more follows the list
    assert rendered.startswith("The port is 8883. [1][2] 数据层的端口是 8883。 [2][3]")


def test_a_model_answer_of_numbers_alone_gives_the_rules_answer(kb):
    llm = _mock(rewrite="", judge='{"sufficient": true}', answer="LORA-02 的心跳间隔是[1]、[2]。")
    answer = kb.ask(ZH, llm=llm)
    assert answer.path == "rules" and "心跳间隔为 30 秒" in answer.answer  # the rules' own sentences, with the value
    assert all("[1]、" not in s.text for s in answer.sentences)


def test_streamed_check_matches_the_whole_check():
    text = "proxy_read_timeout is 60s [2][3]. Exports that take longer fail [2].\nNothing else [unknown]."
    stream = CheckedStream(CITATIONS, 0.35, "en")
    pieces = [stream.feed(text[i : i + 5]) for i in range(0, len(text), 5)] + [stream.flush()]
    assert "".join(pieces) == check_answer(text, CITATIONS, 0.35, "en")[0]
    assert "[3]" not in "".join(pieces)


def test_rewrites_are_parsed_and_short_queries_expanded():
    reply = "Here are queries:\n1. 上传失败 413\n- \"文件大小限制\"\n3) client_max_body_size\n上传失败 413\n" + "x" * 100
    assert parse_rewrites(reply, "文件传不上服务器怎么办") == ["上传失败 413", "文件大小限制", "client_max_body_size"]
    assert parse_rewrites('["a b", "c"]', "q") == ["a b", "c"]
    groups = [["熔断", "断路器", "circuit breaker"]]
    assert rule_rewrites("熔断", groups, ["熔断降级", "Sentinel"]) == ["熔断 断路器 circuit breaker 熔断降级"]
    assert rule_rewrites("熔断降级怎么配", groups, ["熔断降级"]) == []


def test_language_of_a_question():
    assert detect_language("nginx 504 怎么查") == "zh" and detect_language("nginx 504?") == "en"


@pytest.mark.parametrize(("reference", "text", "expected"), [
    ("默认 127.0.0.1:3002（bind_addr）", "metasrv 绑定 127.0.0.1:3002", True),
    ("现在 40，以前 20", "maxPoolSize 400 和 200", False),  # 40 is not in 400
    ("Cork", "He was buried in cork, Ireland.", True),
    ("Sleep, My Love", "the film The More the Merrier", False),
    ("yes", "anything", None),
    ("缓存击穿是热点键过期瞬间大量请求打到数据库", "热点键过期的瞬间，大量并发请求一起打到数据库", True),
])
def test_answer_in(reference, text, expected):
    assert answer_in(reference, text) is expected


# ---------------------------------------------------------------- the CLI

def test_kg_ask_json_and_text(kb_dir):
    runner = CliRunner()
    result = runner.invoke(cli, ["ask", ZH, "--data-dir", str(kb_dir), "--json"])
    assert result.exit_code == 0, result.output
    record = json.loads(result.stdout)
    assert record["found"] and record["path"] == "rules" and record["citations"]
    result = runner.invoke(cli, ["ask", "LORA-07 的电池寿命是多少？", "--data-dir", str(kb_dir)])
    assert result.exit_code == 0
    assert result.stdout.startswith("知识库中暂无相关信息\n")
    text = runner.invoke(cli, ["ask", ZH, "--data-dir", str(kb_dir)]).stdout
    assert "\nsources:\n[1] " in text and "rules path: no model configured" in text


def test_kg_ask_help_does_not_import_litellm():
    script = textwrap.dedent("""
        import json, sys
        from kg.cli import main
        sys.argv = ["kg", "ask", "--help"]
        try:
            main()
        except SystemExit as exit:
            assert exit.code == 0
        print(json.dumps(sorted(m for m in sys.modules if m.split(".")[0] in {"litellm", "spacy"})))
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.strip().splitlines()[-1]) == []


def test_kg_eval_answers_on_a_knowledge_base(kb_dir, tmp_path):
    questions = tmp_path / "q.jsonl"
    questions.write_text(
        json.dumps({"id": "a", "question": ZH, "answer": "30 秒"}, ensure_ascii=False) + "\n"
        + json.dumps({"id": "b", "question": EN, "answer": "60s"}) + "\n"
        + json.dumps({"id": "u", "question": "LORA-07 的电池寿命是多少？", "type": "unanswerable"}, ensure_ascii=False) + "\n",
        encoding="utf-8")
    out = tmp_path / "out.json"
    result = CliRunner().invoke(cli, ["eval", "--answers", "--kb", str(kb_dir), str(questions), "--json", str(out), "-q"])
    assert result.exit_code == 0, result.output
    summary = json.loads(out.read_text())
    assert (summary["answer_in_top5_pct"], summary["answer_in_cited_pct"], summary["kept_of_top5_pct"]) == (100.0, 100.0, 100.0)
    assert (summary["nofound_on_unanswerable"], summary["nofound_on_answerable"]) == (1, 0)
    assert summary["citations_to_missing_numbers"] == 0
    # The answers' length: over the two answered questions, the median at most the 95th percentile, each an answer-sized text.
    assert 0 < summary["answer_chars"]["p50"] <= summary["answer_chars"]["p95"] <= 1000
    assert [q.unanswerable for q in read_answer_questions(questions)] == [False, False, True]


def test_settings_have_help_text(tmp_path):
    settings = make_settings(tmp_path)
    for name in ("llm_base_url", "llm_timeout", "citation_support", "answer_passages"):
        assert type(settings).model_fields[name].description


def test_a_no_hit_answer_whose_closest_passages_held_the_answer_is_counted(tmp_path, monkeypatch):
    """`kept` counts a no-hit answer as 'not in top-5', so a wrong "nothing found" hid from it; the no-hit fallback
    still quotes the closest passages, and `nofound_but_top5_held` counts the answers where one of them held it.
    The guard is made strict here (no quote answers), so a question the passages do answer gets "nothing found" and
    its closest passage."""
    import retrieval.answer.loop as loop
    from retrieval.eval.answers import AnswerQuestion, evaluate_answers
    from retrieval.pipeline import KnowledgeBase
    from retrieval.types import SourceDocument

    monkeypatch.setattr(loop, "ANSWER_COVERAGE", 1.01)
    with KnowledgeBase(make_settings(tmp_path / "kb"), create=True) as kb:
        kb.ingest_documents([SourceDocument("redis.md", "# Redis memory\n\nThe maxmemory limit of the cache defaults to "
                                                        "4 GB on every node; raise it in redis.conf."),
                             SourceDocument("nginx.md", "# nginx\n\nclient_max_body_size is 20m.")])
        questions = [AnswerQuestion("held", "What does the maxmemory limit of the cache default to?", "entity", "4 GB"),
                     AnswerQuestion("other", "What does the maxmemory limit of the cache default to?", "entity", "8 GB"),
                     AnswerQuestion("none", "What is the heartbeat interval of Zorblax?", "entity", "15 s")]
        summary = evaluate_answers(kb, questions)
    rows = {r["id"]: r for r in summary["rows"]}
    assert not rows["held"]["found"] and rows["held"]["nofound_held"] and not rows["held"]["in_top5"]
    assert not rows["other"]["found"] and not rows["other"]["nofound_held"]  # the passage does not hold 8 GB
    assert not rows["none"]["found"] and not rows["none"]["nofound_held"]
    assert summary["nofound_on_answerable"] == 3 and summary["nofound_but_top5_held"] == 1
