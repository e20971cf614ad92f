"""A question, numbered passages and graph facts in -> the rules path's answer text out: the facts first, then the passages' own sentences, never confidently wrong.

An extractive answer can only quote; what it must not do is quote confidently past the question. So
the chosen sentences (with their passages' titles and headings, which often carry the subject)
must hold most (more than half, by weight) of the question's key words: "公司的年假有几天？" answered by
"全公司在用约 1200 个 TH-20" holds 公司 but not 年假, and is no answer. Below half the answer is "nothing
found", followed by the closest sentences when they hold at least `CLOSEST_COVERAGE` (so a reader still
sees them, flagged, never as the answer); below that, nothing is quoted. Both were checked on the demo's
odd question ids, then its even ids and ops_dev_zh (bench/RESULTS-answers.md). When the sentences are in
another language than the question, the answer says so before quoting them.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from retrieval.answer.extractive import extract_answer
from retrieval.answer.phrasing import alternatives
from retrieval.answer.record import Citation
from retrieval.answer.terms import QUESTION_WORDS, KeyTerm, has_term, key_terms, units
from retrieval.index.analysis import analyze, normalize_text

__all__ = ["ANSWER_COVERAGE", "CLOSEST", "CLOSEST_COVERAGE", "facts_text", "RulesAnswer", "answer_held", "guard_terms", "held_share", "language_note", "rules_answer"]

ANSWER_COVERAGE = 0.5  # the quoted sentences (and their headings) must hold more than this share of the question's key words
CLOSEST_COVERAGE = 0.3  # below ANSWER_COVERAGE, the sentences are still shown as the closest (not the answer) from this share
_CJK = re.compile(r"[\u3400-\u9fff]")
_MARKS = re.compile(r"\[(?:\d{1,3}|R\d{1,2})\]")
_HOW_MANY = re.compile(r"^[几多][\u3400-\u9fff]{1,2}$")  # 几天, 几秒, 多少钱: the kind of answer, not its subject
CLOSEST = {"zh": "；最接近的内容如下，但并未直接回答：", "en": "; the closest passages say the following, which does not answer it:"}
NOTES = {"zh": "（以下资料为英文原文）", "en": "(The sources are in Chinese; quoted as written.)"}


@dataclass
class RulesAnswer:
    text: str  # sentences with their markers, one a line; "" = nothing worth saying
    coverage: float  # of the question's key words, by the quoted sentences and their headings
    missing: list[str]


def guard_terms(question: str) -> list[KeyTerm]:
    """The question's key words the answer must hold: `key_terms` without "几天"-like words, plus the Chinese words
    the analyzer cut into single characters (年假 -> 年 / 假) and that stand together in the question, which `key_terms` drops."""
    terms = [t for t in key_terms(question) if not _HOW_MANY.match(t.text)]
    have = {t.text for t in terms}
    written = normalize_text(question)
    run: list[str] = []
    for term, _pos in [*analyze(question), ("", -1)]:
        if len(term) == 1 and re.match(r"[\u3400-\u9fff]", term) and term not in QUESTION_WORDS:
            run.append(term)
            continue
        word = "".join(run)
        # Only characters written side by side: the analyzer drops stop words (了, 怎么) between two single
        # characters, and 坏 + 用 of "数据坏了，怎么用" is no word any passage could hold.
        if len(run) >= 2 and word not in have and word in written:
            terms.append(KeyTerm(word, 1.0, False))
        run = []
    return terms


def held_share(terms: Sequence[KeyTerm], text: str, synonym_groups: Sequence[Sequence[str]] = ()) -> tuple[float, list[str]]:
    """The weighted share of `terms` that `text` holds, a term written another way (synonyms) counting; and those it lacks."""
    if not terms:
        return 1.0, []
    u = units(text)
    alts = alternatives([t.text for t in terms], synonym_groups)
    missing = [t for t in terms if not has_term(t.text, u) and not any(has_term(a, u) for a in alts.get(t.text, ()))]
    return 1.0 - sum(t.weight for t in missing) / sum(t.weight for t in terms), [t.text for t in missing]


def answer_held(text: str, by_n: dict) -> str:
    """What an answer holds, for `held_share`: its sentences without their markers, and the titles and headings of
    the passages they cite (which often carry the subject the sentence leaves out)."""
    headings = "\n".join(f"{by_n[n].title}\n{by_n[n].section}" for n in sorted(_cited(text)) if n in by_n)
    return f"{_MARKS.sub('', text)}\n{headings}"


def _cited(text: str) -> set[int]:
    return {int(m[1:-1]) for m in _MARKS.findall(text) if not m.startswith("[R")}


def _fact_line(fact, language: str) -> str:
    return f"{fact.sentence(language)}。[{fact.key}]" if language == "zh" else f"{fact.sentence(language)}. [{fact.key}]"


def facts_text(facts: Sequence, language: str) -> str:
    """The graph facts as the answer's first sentences, each citing its [Rn]: a curated table row is stated as
    written on either path (a model asked to cite [R1] often names the entities and cites nothing)."""
    return "\n".join(_fact_line(f, language) for f in facts)


def rules_answer(question: str, citations: Sequence[Citation], language: str,
                 synonym_groups: Sequence[Sequence[str]] = (), facts: Sequence = (), own_words: str = "") -> RulesAnswer:
    """`own_words`: a follow-up's own words, when its subject was carried from the conversation ("部署了多少台？" of
    "LORA-02 部署了多少台？"); they must be held as the whole question's are, or the subject alone, which every
    passage found holds, would pass an answer to another question ("公司的年假有几天？" after a LORA-02 question)."""
    extracted = extract_answer(question, citations, language, synonym_groups)
    by_n = {c.n: c for c in citations}
    if facts:
        # The facts first, then what the passages say: a relation word in a question that asks for something else
        # ("the max-threads setting", "on the edge hosts") brings facts that do not replace the passages' answer.
        return RulesAnswer("\n".join([_fact_line(f, language) for f in facts] + ([extracted] if extracted else [])), 1.0, [])
    terms = guard_terms(question)
    if not extracted:
        return RulesAnswer("", 0.0, [t.text for t in terms])
    held = answer_held(extracted, by_n)
    share, missing = held_share(terms, held, synonym_groups)
    if own_words:
        own, lacking = held_share(guard_terms(own_words), held, synonym_groups)
        share, missing = min(share, own), missing + [w for w in lacking if w not in missing]
    # A name the question gives (JVM, LORA-05) that neither the answer nor any passage holds: the passages are about
    # something else, however many of its other words they share.
    names = [t for t in terms if t.identifier and t.text in missing]
    if names:
        everything = "\n".join(f"{c.title}\n{c.section}\n{c.text}" for c in citations)
        if held_share(names, everything, synonym_groups)[0] < 1.0:
            share = min(share, ANSWER_COVERAGE)
    return RulesAnswer(extracted, share, missing)


def language_note(text: str, language: str) -> str:
    """A note for an answer whose sentences are mostly in the other language, else ""."""
    plain = _MARKS.sub("", text)
    letters = [ch for ch in plain if ch.isalpha()]
    if not letters:
        return ""
    cjk = sum(1 for ch in letters if _CJK.match(ch)) / len(letters)
    if language == "en" and cjk > 0.3:
        return NOTES["en"]
    if language == "zh" and cjk < 0.05:
        return NOTES["zh"]
    return ""
