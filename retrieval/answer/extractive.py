"""A question and numbered passages in -> an answer made of the passages' own best sentences, each cited [n], out (the no-LLM answer).

A sentence scores by the question's key words it holds (weighted as the judge weighs them, see
`retrieval.answer.terms`; a Chinese word by the share of its character pairs present), by its
share of the question's character pairs / words, and a little by its passage's rank. A question
that asks for a quantity (多少, 几, how many, which port) prefers sentences with a number; a
sentence that only points elsewhere ("详见《…》", "see the runbook") is worth less. A sentence too
short to carry an answer on its own (a heading, "步骤：") is taken with the one after it. The best
sentence is kept, then further ones while they add a key word not yet covered or score close to
the best, up to a length budget. A question that asks for steps (怎么, 如何, how do I) gets a
whole list, in order, when a list item scores at least half as well as the best sentence; a
passage whose heading holds the question's words counts more.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from retrieval.answer.record import Citation
from retrieval.answer.terms import KeyTerm, Units, has_term, key_terms, split_sentences, units
from retrieval.index.analysis import cjk_bigrams

__all__ = ["extract_answer"]

MAX_SENTENCES = 5
MAX_CHARS = 600
MAX_STEPS = 8
SHORT_SENTENCE = 16  # characters: a heading or a lead-in, joined with what follows
CLOSE_TO_BEST = 0.7
CONTEXT_AFTER = 2  # sentences after the best one kept with it
STEPS_SHARE = 0.5  # a question asking for steps takes a list whose best item scores this close to the best sentence
_DIGIT = re.compile(r"\d")
_LIST_ITEM = re.compile(r"^\s*(?:\d+[.)、]|[-*+•])\s+")
_QUANTITY = re.compile(r"多少|几|多久|多长|多大|多高|上限|阈值|端口|how (?:many|much|long|often|big)|which port|what (?:is|are) the .*(?:setting|limit|size|port|value|timeout)", re.IGNORECASE)
_STEPS = re.compile(r"怎么|如何|步骤|流程|排查|处理|切换|how (?:do|to|should|can)|steps?\b|procedure|what should", re.IGNORECASE)
_POINTER = re.compile(r"^(?:参数)?(?:详细说明|详见|参见|见《|具体见)|(?:详见|参见|见)《[^》]+》[。.]?$|^see (?:the )?[\"“]?\w", re.IGNORECASE)


@dataclass
class _Candidate:
    n: int
    position: int
    text: str
    score: float
    terms: frozenset[str]
    block: int | None  # which list of the passage it is an item of


def _pieces(text: str) -> list[tuple[str, int | None]]:
    """Sentences of a passage with the list each belongs to (consecutive list items form one list)."""
    out: list[tuple[str, int | None]] = []
    block, in_list = -1, False
    for line in text.splitlines():
        item = bool(_LIST_ITEM.match(line))
        if item and not in_list:
            block += 1
        in_list = item or (in_list and line.startswith("   "))  # an indented continuation stays in the list
        for sentence in split_sentences(line):
            out.append((sentence, block if in_list else None))
    return out


def _term_credit(term: KeyTerm, u: Units) -> float:
    if has_term(term.text, u):
        return 1.0
    pairs = cjk_bigrams(term.text)
    if len(pairs) > 1:
        return 0.5 * sum(p in u.grams for p in pairs) / len(pairs)
    return 0.0


def _candidates(terms: Sequence[KeyTerm], q_units: Units, citation: Citation, rank: int,
                wants_number: bool) -> list[_Candidate]:
    pieces = _pieces(citation.text)
    joined: list[tuple[str, int | None]] = []
    i = 0
    while i < len(pieces):
        piece, block = pieces[i]
        if len(piece) < SHORT_SENTENCE and i + 1 < len(pieces) and block is None:
            piece = f"{piece.rstrip('。！？!?；;.')} {pieces[i + 1][0]}"
            block = pieces[i + 1][1]
            i += 1
        joined.append((piece, block))
        i += 1
    total = sum(t.weight for t in terms) or 1.0
    # A passage under a heading that says what the question asks ("处理步骤：主节点宕机") is worth more.
    heading = units(citation.section)
    heading_share = sum(t.weight * _term_credit(t, heading) for t in terms) / total if citation.section else 0.0
    out = []
    for position, (sentence, block) in enumerate(joined):
        u = units(sentence)
        credits = {t.text: _term_credit(t, u) for t in terms}
        term_score = sum(t.weight * credits[t.text] for t in terms) / total
        overlap = len(u.grams & q_units.grams) / (len(q_units.grams) or 1)
        score = (term_score + 0.5 * overlap) * (1.0 + 0.5 * heading_share) / (1.0 + 0.15 * rank)
        if _DIGIT.search(sentence):
            score *= 1.3 if wants_number else 1.05
        if _POINTER.search(sentence):
            score *= 0.5
        held = frozenset(name for name, credit in credits.items() if credit >= 1.0)
        out.append(_Candidate(citation.n, position, sentence, score, held, block))
    return out


def extract_answer(question: str, citations: Sequence[Citation], language: str) -> str:
    """The chosen sentences, one a line, each ending with its passage's number; '' when nothing shares a word with the question."""
    terms = key_terms(question)
    q_units = units(question)
    wants_number = bool(_QUANTITY.search(question))
    pools = [_candidates(terms, q_units, cit, rank, wants_number) for rank, cit in enumerate(citations)]
    pool = sorted((c for p in pools for c in p if c.score > 0), key=lambda c: (-c.score, c.n, c.position))
    if not pool:
        return ""
    best = pool[0]
    listed = next((c for c in pool if c.block is not None), None)
    if _STEPS.search(question) and listed is not None and listed.score >= STEPS_SHARE * best.score:
        chosen = _steps(listed, pools[[c.n for c in citations].index(listed.n)])
    else:
        chosen = _greedy(best, pool)
        chosen = _with_context(chosen, pools[[c.n for c in citations].index(best.n)])
    parts = []
    for c in chosen:
        text = c.text.rstrip()
        if text[-1] not in "。！？!?；;.":
            text += "。" if language == "zh" else "."
        parts.append(f"{text}[{c.n}]")
    return "\n".join(parts)  # one a line: the citation check splits there whatever the script


def _steps(best: _Candidate, passage: Sequence[_Candidate]) -> list[_Candidate]:
    """The list the best sentence belongs to, from its first item, in order, within the budget."""
    items = [c for c in passage if c.block == best.block]
    chosen, size = [], 0
    for c in items[:MAX_STEPS]:
        if size + len(c.text) > MAX_CHARS and chosen:
            break
        chosen.append(c)
        size += len(c.text)
    return chosen if best in chosen else [best]


def _with_context(chosen: list[_Candidate], passage: Sequence[_Candidate]) -> list[_Candidate]:
    """The sentences right after the best one in its passage (a table's next row, the value after a lead-in), within the budget."""
    best = chosen[0]
    size = sum(len(c.text) for c in chosen)
    taken = {(c.n, c.position) for c in chosen}
    extra = []
    for c in passage:
        if best.position < c.position <= best.position + CONTEXT_AFTER and (c.n, c.position) not in taken:
            if size + len(c.text) > MAX_CHARS:
                break
            extra.append(c)
            size += len(c.text)
    return [best, *extra, *chosen[1:]]


def _greedy(best: _Candidate, pool: Sequence[_Candidate]) -> list[_Candidate]:
    chosen = [best]
    covered = set(best.terms)
    size = len(best.text)
    for cand in pool[1:]:
        if len(chosen) == MAX_SENTENCES or size + len(cand.text) > MAX_CHARS:
            continue
        if any(cand.text == c.text for c in chosen):
            continue
        if cand.terms - covered or cand.score >= CLOSE_TO_BEST * best.score:
            chosen.append(cand)
            covered |= cand.terms
            size += len(cand.text)
    return chosen
