"""Graph facts as evidence: a question along a relation gets the relation table's edges as [R1].., on the rules
path as the answer's first sentences and on the model path in the prompt; a model's invented [R9] is removed."""

from __future__ import annotations

import pytest
from conftest import CROSS_DOC_QUERY, build_kb, make_settings
from fake_llm import FakeLLM, task_of

from retrieval.answer.cite import check_answer
from retrieval.answer.facts import Fact


@pytest.fixture(scope="module")
def shared(tmp_path_factory):
    root = tmp_path_factory.mktemp("answers-facts")
    build_kb(root).close()
    return root / "kb"


def _kb(data_dir, **overrides):
    from retrieval.pipeline import KnowledgeBase

    return KnowledgeBase(make_settings(data_dir, **overrides))


def test_a_relation_question_is_answered_from_the_table_with_its_source(shared):
    with _kb(shared) as kb:
        answer = kb.ask(CROSS_DOC_QUERY, llm=None)  # 订单服务依赖哪些组件？
    [fact] = [f for f in answer.facts if f.relation == "dependsOn"]
    assert fact.entity == "order-service" and "mysql-core" in fact.others
    assert all(t.startswith("order-service dependsOn ") for t in fact.triples)
    first = answer.sentences[0]
    assert first.facts == [fact.key] and first.text.startswith("order-service 依赖：") and not first.flagged
    # the source names the table that states each row (by file name, not the importing machine's path) and its line
    rows = (shared.parent / "relations.csv").read_text(encoding="utf-8").splitlines()
    line = next(n for n, row in enumerate(rows, 1) if row.startswith("order-service,dependsOn,mysql-core,"))
    assert f"[{fact.key}] relations.csv:{line}: order-service dependsOn mysql-core" in answer.sources_text()
    for triple, origin in zip(fact.triples, fact.origins, strict=True):
        source, _, target = triple.split()
        number = int(origin.removeprefix("relations.csv:"))
        assert rows[number - 1].startswith(f"{source},dependsOn,{target},")
    assert answer.to_json()["facts"][0]["key"] == fact.key


def test_a_facts_source_names_each_triples_table_and_the_graph_for_an_edge_no_table_states():
    fact = Fact("R1", "redis-cluster", "requiredBy", ("a", "b", "c"),
                ("a dependsOn redis-cluster", "b dependsOn redis-cluster", "c dependsOn redis-cluster"),
                origins=("relations.csv", "pack ops's relations.csv", ""))
    assert fact.source == ("relations.csv: a dependsOn redis-cluster; pack ops's relations.csv: b dependsOn "
                           "redis-cluster; graph.ttl: c dependsOn redis-cluster")
    assert Fact("R1", "x", "dependsOn", ("y",), ("x dependsOn y",)).source == "relation table: x dependsOn y"


def test_a_question_along_no_relation_has_no_facts(shared):
    with _kb(shared) as kb:
        assert kb.ask("LORA-02 的心跳间隔是多少？", llm=None).facts == []


def test_the_model_gets_the_facts_first_and_an_invented_fact_number_is_removed(shared):
    with FakeLLM() as fake:
        fake.replies["answer"] = "order-service 依赖 mysql-core[R1][R9]。"
        with _kb(shared, llm_model="openai/test-model", llm_base_url=fake.base_url) as kb:
            answer = kb.ask(CROSS_DOC_QUERY)
        prompt = next(b for b in fake.requests if task_of(b) == "answer")["messages"][1]["content"]
    assert prompt.index('<fact n="R1"') < prompt.index("<passage")
    assert answer.path == "llm" and answer.sentences[0].facts == ["R1"] and answer.removed_citations == [9]
    assert "[R9]" not in answer.answer and "[R1]" in answer.answer


def test_a_sentence_citing_a_fact_is_checked_against_it():
    fact = Fact("R1", "redis-cluster", "requiredBy", ("order-service", "user-service"),
                ("order-service dependsOn redis-cluster", "user-service dependsOn redis-cluster"))
    _, [good, bad] = check_answer("redis-cluster 被 order-service 和 user-service 依赖[R1]。天气很好[R1]。", [], 0.35, "zh", [fact])
    assert good.facts == ["R1"] and not good.flagged
    assert bad.flagged


def test_a_small_models_run_of_commas_and_invented_fact_numbers_is_no_sentence():
    """The 1.5B model, after restating 8 facts, wrote "、、、…[R100]、[R101]、…[R130" to its length limit: the three-digit
    numbers were not read as markers and the cut one kept the line, shown (flagged) to the user."""
    fact = Fact("R1", "redis-cluster", "requiredBy", ("order-service",), ("order-service dependsOn redis-cluster",))
    tail = "、" * 40 + "、".join(f"[R{n}]" for n in range(100, 131)) + "、[R13"
    rendered, sentences = check_answer("redis-cluster 被 order-service 依赖[R1]。" + tail, [], 0.35, "zh", [fact], attribute=True)
    assert [s.text for s in sentences] == ["redis-cluster 被 order-service 依赖。"] and sentences[0].facts == ["R1"]
    assert "R1" in rendered and "R100" not in rendered and "、、" not in rendered


@pytest.mark.parametrize(("question", "relation", "entity"), [
    ("mysql-core 被哪些服务依赖？", "requiredBy", "mysql-core"),  # 依赖 in the passive: the inverse
    ("What does order-service depend on?", "dependsOn", "order-service"),  # the labels say "depends on"
])
def test_passive_and_base_verb_questions_read_the_relation_the_right_way(shared, question, relation, entity):
    with _kb(shared) as kb:
        answer = kb.ask(question, llm=None)
    assert [(f.relation, f.entity) for f in answer.facts][:1] == [(relation, entity)]


def test_on_the_model_path_the_facts_lead_even_when_the_model_cites_none(shared):
    with FakeLLM() as fake:
        fake.replies["answer"] = "订单服务依赖 mysql-core 等组件。月亮是奶酪做的。"
        with _kb(shared, llm_model="openai/test-model", llm_base_url=fake.base_url) as kb:
            events = list(kb.ask(CROSS_DOC_QUERY, stream=True))
    answer = events[-1][1]
    assert answer.path == "llm"
    first, model, moon = answer.sentences[0], answer.sentences[-2], answer.sentences[-1]
    assert first.facts == ["R1"] and not first.flagged and "mysql-core" in first.text
    # The model's own sentences cite nothing: the one the evidence supports gets its best source, marked
    # attributed; the one nothing supports is kept, uncited and flagged.
    assert model.attributed and (model.facts or model.citations) and not model.flagged
    assert moon.flagged and not (moon.facts or moon.citations) and not moon.attributed
    assert "".join(v for k, v in events if k == "delta") == answer.answer


def test_answer_metrics_count_the_facts_as_evidence_and_a_sentence_citing_one_as_cited(shared):
    from retrieval.eval.answers import AnswerQuestion, evaluate_answers

    with _kb(shared) as kb:
        [fact] = [f for f in kb.ask(CROSS_DOC_QUERY, llm=None).facts if f.relation == "dependsOn"]
        reference = "、".join(fact.others)  # what the relation table says, and only it says whole
        summary = evaluate_answers(kb, [AnswerQuestion("r1", CROSS_DOC_QUERY, "relation", reference)])
    [row] = summary["rows"]
    assert (row["in_top5"], row["in_cited"]) == (True, True), row
    assert summary["kept_of_top5_pct"] == 100.0


def _spans(text: str, words: dict[str, str]) -> list[tuple[str, int, int]]:
    return [(name, text.index(word), text.index(word) + len(word)) for word, name in words.items()]


@pytest.mark.parametrize(("text", "entity", "words", "chain"), [
    # along one relation about what another reaches from the entity
    ("Which teams owns the services that depends on redis-cluster?", "redis-cluster",
     {"owns": "owns", "depends on": "dependsOn"}, ("dependsOn", "owns", False)),
    ("依赖 redis-cluster 的服务分别由哪个团队负责？", "redis-cluster", {"依赖": "dependsOn", "负责": "owns"},
     ("dependsOn", "owns", False)),
    ("payment-service 依赖的组件运行于哪些主机？", "payment-service", {"依赖": "dependsOn", "运行于": "runsOn"},
     ("dependsOn", "runsOn", True)),
    ("redis-cluster 被哪些服务依赖？它们的负责团队是谁？", "redis-cluster", {"依赖": "requiredBy", "负责团队": "ownedBy"},
     ("requiredBy", "ownedBy", True)),
    ("Which services depends on redis-cluster, and who owns them?", "redis-cluster",
     {"depends on": "dependsOn", "owns": "owns"}, ("dependsOn", "owns", False)),
    ("What does the team that owns payment-service depends on?", "payment-service",
     {"owns": "owns", "depends on": "dependsOn"}, ("owns", "dependsOn", False)),
    ("Which hosts do the components that order-service depends on runs on?", "order-service",
     {"depends on": "dependsOn", "runs on": "runsOn"}, ("dependsOn", "runsOn", True)),
    ("哪些团队负责依赖 redis-cluster 的服务？", "redis-cluster", {"负责": "owns", "依赖": "dependsOn"},
     ("dependsOn", "owns", False)),  # the outer relation's word before the clause
    # along each relation about the entity itself
    ("Who owns redis-cluster and what depends on it?", "redis-cluster", {"owns": "owns", "depends on": "dependsOn"}, None),
    ("Which services depends on redis-cluster and who owns it?", "redis-cluster",
     {"depends on": "dependsOn", "owns": "owns"}, None),
    ("redis-cluster 的负责团队是谁？哪些服务依赖它？", "redis-cluster", {"负责团队": "ownedBy", "依赖": "dependsOn"}, None),
    ("redis-cluster 依赖什么，由谁负责？", "redis-cluster", {"依赖": "dependsOn", "负责": "owns"}, None),
    ("redis-cluster 宕机会影响哪些服务？", "redis-cluster", {"影响": "affects"}, None),
])
def test_a_question_along_two_relations_chains_them_only_when_built_so(text, entity, words, chain):
    from retrieval.answer.facts import _chains

    start = text.index(entity)
    assert next(_chains(text, _spans(text, words), start, start + len(entity)), None) == chain


@pytest.mark.parametrize("question", ["Which team owns the services that depend on mysql-core?",
                                      "依赖 mysql-core 的服务由哪个团队负责？",
                                      "mysql-core 被哪些服务依赖？它们由哪个团队负责？"])
def test_the_facts_of_a_chained_question_go_one_step_on(shared, question):
    """The services that depend on mysql-core, then each one's owner: order-service ownedBy 交易团队, cited to its row."""
    with _kb(shared) as kb:
        answer = kb.ask(question, llm=None)
    first, then = answer.facts[0], answer.facts[1:]
    assert first.entity == "mysql-core" and first.relation == "requiredBy" and first.others == ("order-service",)
    assert [(f.entity, f.relation, f.others) for f in then] == [("order-service", "ownedBy", ("交易团队",))]
    assert then[0].origins[0].startswith("relations.csv:")
    cited = [s for s in answer.sentences if then[0].key in s.facts]
    assert cited and "交易团队" in cited[0].text and not cited[0].flagged


def test_a_question_along_two_relations_of_the_entity_itself_is_not_chained(shared):
    with _kb(shared) as kb:
        answer = kb.ask("Who owns order-service and what does it depend on?", llm=None)
    assert {f.entity for f in answer.facts} == {"order-service"}
    assert {f.relation for f in answer.facts} >= {"ownedBy", "dependsOn"}


def test_a_chained_question_the_table_cannot_answer_gets_no_fact_about_the_entity_itself(shared):
    """Nothing in the table depends on order-service: its own owner (交易团队) or its own dependencies would be a
    confident wrong answer to "who owns the services that depend on order-service?". No fact then; passages answer."""
    with _kb(shared) as kb:
        assert kb.ask("Which team owns the services that depend on order-service?", llm=None).facts == []
        # the first step found, the second not: the first step's facts alone
        facts = kb.ask("Which hosts do the services that depend on mysql-core run on?", llm=None).facts
    assert [(f.entity, f.relation, f.others) for f in facts] == [("mysql-core", "requiredBy", ("order-service",))]


@pytest.mark.parametrize(("question", "read"), [
    ("What do the services owned by 资金结算组 depend on?", "What do the services that owned by 资金结算组 depend on?"),
    ("Who owns the services running on k8s-node-05?", "Who owns the services that runs on k8s-node-05?"),
    ("Which hosts do services depending on redis-cluster run on?", "Which hosts do services that depends on redis-cluster run on?"),
    ("Who is payment-service owned by?", "Who is payment-service owned by?"),  # a passive, no clause
    ("What is owned by 资金结算组?", "What is owned by 资金结算组?"),
])
def test_a_participle_after_a_plural_noun_is_read_as_a_relative_clause(question, read):
    from retrieval.answer.facts import _as_clauses

    assert _as_clauses(question) == read


@pytest.mark.parametrize("question", ["Which services depend on order-service?", "What relies on order-service?",
                                      "哪些服务依赖 order-service？"])
def test_an_entity_written_after_the_relation_word_is_its_object(tmp_path, question):
    """order-service depends on mysql-core, and api-gateway on order-service: "which services depend on
    order-service?" asks for api-gateway, not for order-service's own dependencies (what the facts gave while the
    entity had any: a confident wrong answer, cited to a table row)."""
    kb = build_kb(tmp_path)
    try:
        extra = tmp_path / "more.csv"
        extra.write_text("source,relation,target\napi-gateway,dependsOn,order-service\n", encoding="utf-8")
        kb.import_file(extra)
        facts = kb.ask(question, llm=None).facts
        assert [(f.entity, f.relation, f.others) for f in facts] == [("order-service", "requiredBy", ("api-gateway",))]
        # the entity before the word is its subject, as before; and a second question about it keeps its own edges
        facts = kb.ask("What does order-service depend on?", llm=None).facts
        assert ("dependsOn", ("mysql-core",)) in [(f.relation, f.others) for f in facts]
        assert "requiredBy" not in {f.relation for f in facts}
        facts = kb.ask("Which services depend on order-service and what does it depend on?", llm=None).facts
        assert {("requiredBy", ("api-gateway",)), ("dependsOn", ("mysql-core",))} <= {(f.relation, f.others) for f in facts}
    finally:
        kb.close()


@pytest.mark.parametrize("question", ["Who are the owners of order-service?", "order-service 归哪个团队？"])
def test_the_base_ontologys_cue_words_name_the_relation_in_both_languages(shared, question):
    """"owner" and 归谁 were cue words of ownedBy, "owners" and 归哪个 were not: the question got passages, no fact."""
    with _kb(shared) as kb:
        facts = kb.ask(question, llm=None).facts
    assert [(f.entity, f.relation, f.others) for f in facts] == [("order-service", "ownedBy", ("交易团队",))]
