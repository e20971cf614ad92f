"""The rules path's guard (the answer must hold most of the question's key words, or it is "nothing found") also
counts Chinese words the analyzer cut into single characters (年假 -> 年 / 假). It joined every run of single
characters left after the analyzer's stop words were dropped, so "K8s 里 etcd 数据坏了，怎么用 NFS 上的快照恢复？"
asked for 坏用, a word written nowhere (了 and 怎么 stood between), and ops_dev_zh questions an answer held got
"nothing found" for lacking words like 坏用 and 导想. Only characters written side by side are joined now."""

from __future__ import annotations

from retrieval.answer.rules import guard_terms, held_share


def test_only_characters_written_together_make_a_guard_word():
    words = [t.text for t in guard_terms("K8s 里 etcd 数据坏了，怎么用 NFS 上的快照恢复？")]
    assert "坏用" not in words
    assert {"etcd", "nfs", "快照", "恢复"} <= set(words)
    assert "导想" not in [t.text for t in guard_terms("import-v2 导到一半中断了，怎么接着导？想从头重来又该怎么办？")]


def test_a_word_cut_into_characters_still_guards():
    terms = guard_terms("公司的年假有几天？")
    assert "年假" in [t.text for t in terms]
    share, missing = held_share(terms, "全公司在用约 1200 个 TH-20 温湿度传感器。")
    assert missing == ["年假"] and share <= 0.5  # the unrelated TH-20 sentence is still no answer


def test_an_answer_holding_the_questions_words_is_not_held_back_by_a_non_word():
    terms = guard_terms("K8s 里 etcd 数据坏了，怎么用 NFS 上的快照恢复？")
    share, missing = held_share(terms, "在 K8s 中用 NFS 上的 etcd 快照恢复数据：etcdctl snapshot restore。")
    assert missing == [] and share == 1.0
