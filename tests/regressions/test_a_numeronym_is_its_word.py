"""A question writes K8s where the documents write Kubernetes (i18n, a11y, o11y alike: a word's first letter, how
many letters stand between, its last letter). The rules path's guard treats a name the question gives and no passage
holds as a sign the passages are about something else, so "K8s 里 etcd 数据坏了…" over documents saying Kubernetes was
"nothing found" although the passage that answers it was the first one found (4 of ops_dev_zh's 80 questions)."""

from __future__ import annotations

from pathlib import Path

from conftest import make_settings

from retrieval.answer.rules import guard_terms, held_share
from retrieval.answer.terms import has_term, units

QUESTION = "K8s 里 etcd 数据坏了，怎么用 NFS 上的快照恢复？"
RUNBOOK = """# etcd 快照恢复

在 Kubernetes 中，etcd 的数据损坏后，用 NFS 上保存的快照恢复：先停止 etcd 的 Pod，再执行
`etcdctl snapshot restore /mnt/nfs/etcd/snapshot.db --data-dir /var/lib/etcd-restored`，最后把 Pod 的数据目录指向新目录。
"""


def test_a_numeronym_is_held_by_the_word_it_abbreviates():
    assert has_term("k8s", units("部署到 Kubernetes 集群"))
    assert has_term("i18n", units("Internationalization is configured per site."))
    assert has_term("a11y", units("accessibility checks"))
    # Only the whole word, and only a real numeronym's count: e2e is a name, not four letters like edge.
    assert not has_term("k8s", units("kubernetesx"))
    assert not has_term("e2e", units("at the edge"))
    share, missing = held_share(guard_terms(QUESTION), "在 Kubernetes 中用 NFS 上的 etcd 快照恢复数据。")
    assert missing == [] and share == 1.0


def test_the_rules_answer_a_k8s_question_from_a_kubernetes_runbook(tmp_path: Path):
    from retrieval.pipeline import KnowledgeBase

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "etcd-restore.md").write_text(RUNBOOK, encoding="utf-8")
    (docs / "mqtt.md").write_text("# MQTT 接入\n\n网关通过 MQTT 连接平台，keepalive 为 60 秒。\n", encoding="utf-8")
    with KnowledgeBase(make_settings(tmp_path / "kb"), create=True) as kb:
        kb.ingest_paths([docs])
        answer = kb.ask(QUESTION, llm=None)
        unrelated = kb.ask("K8s 的节点池怎么划分？", llm=None)
    assert answer.found, answer.path_reason
    assert "etcdctl snapshot restore" in answer.answer and answer.citations[0].title == "etcd 快照恢复"
    assert not unrelated.found  # Kubernetes is held, but nothing says how its node pools are split
