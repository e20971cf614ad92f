"""How well a mention fits a question, on the demo knowledge base: the fit cuts a Chinese run of the
text around a mention only when one of the question's Chinese words is in it, and must give what
cutting every window would (the words of a run it skips cannot be among the question's), also in a
warm process, where a context asked about again keeps all its words."""

from __future__ import annotations

from pathlib import Path

from conftest import build_demo_kb, run_in_own_process

from retrieval.graph.seeds import MENTION_WINDOW, _prefix, relation_word_prefixes
from retrieval.index.analysis import cjk_terms, query_terms, split_runs

QUESTIONS = [
    "订单服务依赖哪些组件？",
    "what breaks if redis-cluster goes down?",
    "mysql-core 主从切换期间，哪些应用会写入失败？",
    "LORA-02 网关离线后，哪些下游系统会丢数据？",
    "支付服务的幂等键过期时间是多少？",
    "Which team owns the payment-service and who is on call?",
    "kafka-cluster 的 device.telemetry topic 保留多久？",
]


def _fit_by_cutting_every_window(kb, question: str, iri: str) -> dict[str, float]:
    """The definition: the question's word prefixes found among all the words around each first mention."""
    q = {_prefix(t) for t in query_terms(question)}
    q |= relation_word_prefixes(q)
    entities = kb.graph.view.entities
    own = {_prefix(t) for t in query_terms(entities[iri].label)}
    mentions = kb.store.mentions_about(iri)
    texts = {cid: c.text for cid, c in kb.store.chunks(list({m[1] for m in mentions})).items()}
    raw, seen = {}, set()
    for entity, chunk_id, start, end in mentions:
        if entity in seen or entity == iri:
            continue
        seen.add(entity)
        text = texts[chunk_id]
        window = text[max(0, start - MENTION_WINDOW) : start] + " " + text[end : end + MENTION_WINDOW]
        words = {_prefix(t) for t in query_terms(window)} - own
        raw[entity] = (1.0 + len(words & q)) / (1.0 + 0.1 * len(raw))
    top = max(raw.values(), default=1.0)
    return {e: v / top for e, v in raw.items()}


def compare_on_the_demo(data_dir: Path) -> dict:
    """Build the demo knowledge base and compare the fit with the definition, each question twice
    (the second time round, contexts asked about before keep all their words)."""
    kb = build_demo_kb(data_dir)
    try:
        compared, different = 0, []
        for question in QUESTIONS * 2:
            fit = kb.evidence.mention_fit(question)
            for m in kb.linker.link(question):
                expected, got = _fit_by_cutting_every_window(kb, question, m.entity), fit(m.entity)
                if set(got) != set(expected) or any(abs(got[e] - v) > 1e-9 for e, v in expected.items()):
                    different.append([question, m.entity])
                compared += len(expected)
        return {"compared": compared, "different": different}
    finally:
        kb.close()


def test_the_fit_is_what_cutting_every_window_gives(tmp_path):
    report = run_in_own_process("test_mention_fit", "compare_on_the_demo", tmp_path / "kb")
    assert report["different"] == []
    assert report["compared"] > 50  # the demo's documents mention many entities around the ones these questions name


def test_split_runs_and_their_cuts_are_the_query_terms():
    for text in ["订单服务（order-service）依赖 redis-cluster 和 mysql-core，超时 3s。", "Ｒｅｄｉｓ 集群 café 重启", "纯中文句子没有别的"]:
        terms, runs = split_runs(text)
        assert sorted(set(terms + [w for run in runs for w in cjk_terms(run)])) == sorted(query_terms(text))
