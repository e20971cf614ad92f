"""Relation questions worded as people write them, on the bundled demo's relation table: "use" as the relation's
word, a relative clause without its pronoun, and a possessive naming what the inner relation reaches by its class.
Each was answered from passages alone (or from the wrong end of the relation) before the reading it tests."""

from __future__ import annotations

import pytest
from conftest import build_demo_kb


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    kb = build_demo_kb(tmp_path_factory.mktemp("facts-wording") / "kb")
    yield kb
    kb.close()


def _facts(kb, question: str) -> list[tuple[str, str, tuple[str, ...]]]:
    return [(f.entity, f.relation, f.others) for f in kb.ask(question, llm=None).facts]


def test_which_services_use_x_asks_for_what_depends_on_x(demo):
    """relations.csv: user-service dependsOn notification-service; "use" after a plural subject is the label "uses"."""
    facts = _facts(demo, "Which services use notification-service, and who owns it?")
    assert ("notification-service", "requiredBy", ("user-service",)) in facts
    assert ("notification-service", "ownedBy", ("运力调度组",)) in facts


@pytest.mark.parametrize("question", ["Which services are using notification-service?",
                                      "Which teams own the services using notification-service?"])
def test_the_progressive_and_a_participle_of_use_read_as_the_relation(demo, question):
    assert ("notification-service", "requiredBy", ("user-service",)) in _facts(demo, question)


@pytest.mark.parametrize("question", ["What does order-service use?", "Which components does order-service use?"])
def test_what_does_x_use_asks_for_what_x_depends_on(demo, question):
    facts = _facts(demo, question)
    assert facts and facts[0][:2] == ("order-service", "dependsOn") and "mysql-core" in facts[0][2]


def test_a_progressive_with_its_subject_inside_reads_as_the_relation(demo):
    """"What is order-service running on?": relations.csv holds order-service runsOn k8s-prod."""
    assert ("order-service", "runsOn", ("k8s-prod",)) in _facts(demo, "What is order-service running on?")


@pytest.mark.parametrize("question", ["How do I use notification-service?", "Does this service use notification-service?",
                                      "Which port do the services use to reach notification-service?",
                                      "How are services using notification-service?",
                                      "Which port does user-service use to reach notification-service?"])
def test_use_after_no_plural_subject_asks_along_no_relation(demo, question):
    assert not any(relation == "requiredBy" for _, relation, _ in _facts(demo, question))


def test_a_relative_clause_without_its_pronoun_is_chained(demo):
    """"the components order-service depends on" is "the components that order-service depends on": each one's
    owner, not order-service's own."""
    facts = _facts(demo, "Which teams own the components order-service depends on?")
    assert facts[0][:2] == ("order-service", "dependsOn")
    reached = {o for entity, relation, others in facts if entity == "order-service" for o in others}
    owners = [(entity, others) for entity, relation, others in facts if relation == "ownedBy"]
    assert ("mysql-core", ("运维团队",)) in owners and {entity for entity, _ in owners} <= reached


@pytest.mark.parametrize("question", ["交易研发组的服务都依赖哪些组件？", "What do 交易研发组's services depend on?"])
def test_a_possessive_naming_a_class_reaches_that_class_then_goes_on(demo, question):
    """交易研发组 owns services (the class 服务 / service); each one's dependencies, not the team's own edges."""
    facts = _facts(demo, question)
    first, then = facts[0], facts[1:]
    assert first[0] == "交易研发组" and "order-service" in first[2]
    assert then and {entity for entity, _, _ in then} <= set(first[2])
    assert {relation for _, relation, _ in then} <= {"dependsOn", "runtimeDependsOn"}  # and its sub-property
    assert "mysql-core" in {o for _, _, others in then for o in others}


def test_a_possessive_without_a_second_relation_word_is_not_chained(demo):
    """"交易研发组的服务有哪些？" asks along one relation (or none): no chain to a second step."""
    facts = _facts(demo, "交易研发组的服务有哪些？")
    assert not any(relation == "dependsOn" for _, relation, _ in facts)


def test_an_entity_that_is_the_verbs_subject_gets_no_inverse_edges_for_facts(demo):
    """mysql-core depends on nothing in relations.csv: "What does mysql-core depend on?" must not be answered with what
    depends on it (a confident answer to another question); its own edges answer when it has some."""
    assert not any(relation == "requiredBy" for _, relation, _ in _facts(demo, "What does mysql-core depend on?"))
    assert _facts(demo, "What does order-service depend on?")[0][:2] == ("order-service", "dependsOn")
    # a noun after the entity is no verb: "the nginx edge hosts" still reaches nginx's hosts
    assert ("nginx", "runsOn", ("edge-01", "edge-02")) in _facts(
        demo, "How do I renew the wildcard TLS certificate on the nginx edge hosts?")


@pytest.mark.parametrize("question", ["redis-cluster 挂了会影响谁？", "redis-cluster 挂掉会影响什么？",
                                      "redis-cluster 宕机会影响谁？", "redis-cluster 故障会影响谁？",
                                      "redis-cluster 不可用会影响谁？"])
def test_what_x_going_down_affects_is_what_depends_on_x(demo, question):
    """"X 挂了会影响谁" asks what breaks when X goes down (its dependants), as "what breaks if X goes down" does; read as
    影响 (affects) alone, X's inverse edge answered the opposite: the incident that affected redis-cluster."""
    facts = _facts(demo, question)
    assert facts and facts[0][:2] == ("redis-cluster", "requiredBy") and "order-service" in facts[0][2]
    assert not any(relation == "affectedBy" for _, relation, _ in facts)


@pytest.mark.parametrize("question", ["INC-20240527 会影响哪些服务？", "INC-20240527 Redis 节点宕机会影响哪些服务？"])
def test_an_incident_still_affects_what_it_affected(demo, question):
    """The incident's own `affects` edges answer "INC-… 会影响哪些服务", also when its name, which ends in 宕机, is
    written out before 会影响: a name holds no relation word (else 宕机会影响 would ask for what depends on it)."""
    facts = _facts(demo, question)
    assert facts and facts[0][1] == "affects" and "redis-cluster" in facts[0][2]


@pytest.mark.parametrize("question", ["谁在用 kafka-cluster？", "谁用了 kafka-cluster？"])
def test_who_is_using_x_asks_for_what_depends_on_x(demo, question):
    """谁在用 / 谁用了 are phrases of `requiredBy` (在用 alone would fire inside 在用户)."""
    facts = _facts(demo, question)
    assert facts and facts[0][:2] == ("kafka-cluster", "requiredBy") and "order-service" in facts[0][2]


@pytest.mark.parametrize("question", ["k8s-prod 上跑着哪些服务？", "k8s-prod 上运行着哪些服务？"])
def test_what_runs_on_a_host_is_asked_by_its_verb_phrase(demo, question):
    """relations.csv: order-service runsOn k8s-prod; "X 上跑着哪些服务" asks for its `hosts` edges (哪些服务 alone
    would ask for what depends on it, and k8s-prod has none)."""
    facts = _facts(demo, question)
    assert facts and facts[0][:2] == ("k8s-prod", "hosts") and "order-service" in facts[0][2]
