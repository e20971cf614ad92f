"""A question (and the knowledge base's synonym groups) in -> how its answer is worded out: the kind of question (why, yes/no), the cue words such an answer sentence carries, and each key word's other wordings.

Documentation rarely repeats a question's words. "怎么打开维护模式" is answered by "启用维护模式";
"为什么查不到" by a sentence saying what happens "异步" (asynchronously) or "因此" (therefore); "是不
是就能挡住…" by one saying what "只" (only) does it or what "真正" (really) does. The extractive
answer (`retrieval.answer.extractive`) scores sentences by these, besides the question's own words.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from retrieval.index.analysis import analyze

__all__ = ["COMMON_EQUIVALENTS", "alternatives", "asks_how_it_works", "asks_now", "asks_why", "asks_yes_no", "cue_of",
           "tense_of"]

# Verbs and nouns that documentation writes one way and questions another, in Chinese and English
# alike: ordinary language, not any knowledge base's vocabulary (that is its synonym table).
COMMON_EQUIVALENTS: tuple[tuple[str, ...], ...] = (
    ("启用", "开启", "打开", "激活", "enable", "turn on"),
    ("禁用", "关闭", "停用", "disable", "turn off"),
    ("删除", "移除", "清除", "删掉", "delete", "remove"),
    ("查看", "查询", "检查", "列出", "显示", "view", "show", "list"),
    ("修改", "更改", "调整", "变更", "改成", "change", "modify"),
    ("升级", "更新", "upgrade", "update"),
    ("重启", "重新启动", "restart", "reboot"),
    ("安装", "部署", "install", "deploy"),
    ("备份", "快照", "backup", "snapshot"),
    ("恢复", "还原", "restore", "recover"),
    ("失败", "出错", "报错", "错误", "fail", "error"),
    ("停止", "暂停", "stop", "pause"),
    ("阻止", "挡住", "禁止", "拦截", "block", "prevent"),
    ("立刻", "立即", "马上", "immediately"),
    ("没有", "没带", "不带", "不含", "without"),
    ("事件", "event"),
    ("日志", "log"),
    ("表", "table"),
    ("节点", "node"),
    ("集群", "cluster"),
)

_WHY = re.compile(r"为什么|为何|怎么会|何以|原因|^why\b|\bwhy (?:is|are|do|does|did|was|were|would|should|can)", re.IGNORECASE)
_YES_NO = re.compile(
    r"是不是|是否|能不能|会不会|可不可以|要不要|有没有|吗[？?]?\s*$|"
    r"^(?:is|are|does|do|did|can|could|will|would|should|has|have)\s", re.IGNORECASE)
# "是怎么执行的", "怎么回事", "how does X work": how something works, explained in prose, not a procedure to run.
_HOW_IT_WORKS = re.compile(r"是怎么.{0,8}的|怎么回事|怎样工作|如何工作|如何实现|怎么实现|\bhow (?:does|do|did|is|are)\b.*\b(?:work|happen|handled?|implemented|executed?)\b",
                           re.IGNORECASE)
# A sentence that gives a reason or a consequence.
_CAUSAL = re.compile(r"因为|由于|原因|所以|因此|因而|导致|造成|以便|为了|从而|否则|异步|延迟|直到|取决于|"
                     r"\bbecause\b|\bsince\b|\bdue to\b|\bso that\b|\btherefore\b|\bhence\b|\botherwise\b|\buntil\b|"
                     r"\bin order to\b|\bcaused? by\b|\basynchronous", re.IGNORECASE)
# A sentence that settles a yes/no question: a negation, a restriction, or what really does it.
_VERDICT = re.compile(r"不能|不会|无法|不可|不是|并非|并不|而是|只是|只有|仅|只能|真正|必须|不需要|"
                      r"\bnot\b|\bonly\b|\bcannot\b|n't\b|\bmust\b|\bnever\b|\brather\b", re.IGNORECASE)


def asks_why(question: str) -> bool:
    return bool(_WHY.search(question.strip()))


def asks_yes_no(question: str) -> bool:
    return bool(_YES_NO.search(question.strip()))


# "现在设为多少" asks for today's value; an incident report states the old one ("当时 ttl=600"), the
# runbook the current one ("当前 86400 秒").
_NOW = re.compile(r"现在|当前|目前|如今|现行|now\b|currently|current\b|these days", re.IGNORECASE)
_THEN = re.compile(r"当时|原来|原先|此前|之前|曾经|改前|\bwas\b|\bwere\b|previously|formerly|at the time|used to", re.IGNORECASE)


def asks_now(question: str) -> bool:
    return bool(_NOW.search(question))


def tense_of(sentence: str) -> int:
    """+1 for a sentence stating what holds now, -1 for one stating what held then (and nothing now), else 0."""
    if _NOW.search(sentence):
        return 1
    return -1 if _THEN.search(sentence) else 0


def asks_how_it_works(question: str) -> bool:
    return bool(_HOW_IT_WORKS.search(question.strip()))


def cue_of(question: str) -> re.Pattern[str] | None:
    """The cue an answer sentence to this question carries: a reason for why, a verdict for yes/no; None for others."""
    if asks_why(question):
        return _CAUSAL
    if asks_yes_no(question):
        return _VERDICT
    return None


def _first_term(text: str) -> str | None:
    terms = analyze(text)
    return terms[0][0] if len(terms) == 1 else None


def alternatives(key_terms: Iterable[str], synonym_groups: Sequence[Sequence[str]] = ()) -> dict[str, tuple[str, ...]]:
    """Each key term -> the other wordings of it (the knowledge base's synonym groups first, then
    COMMON_EQUIVALENTS), as analyzed terms when one word, else lower-cased phrases."""
    wanted = set(key_terms)
    out: dict[str, list[str]] = {}
    for group in [*synonym_groups, *COMMON_EQUIVALENTS]:
        forms = [(_first_term(w) or w.strip().lower()) for w in group if w.strip()]
        for term in wanted.intersection(forms):
            alts = out.setdefault(term, [])
            alts.extend(f for f in forms if f != term and f not in alts)
    return {term: tuple(alts) for term, alts in out.items()}
