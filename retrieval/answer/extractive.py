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
CONTEXT_CHARS = 300  # what the context may add to the length budget
STEPS_SHARE = 0.5  # a question asking for steps takes a list whose three best items score this close to the best sentence
_DIGIT = re.compile(r"\d")
_BRACKETED = re.compile(r"\[(\s*\d[\d\s,，、]*)\]")
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
    code: list[str] | None = None
    for line in text.splitlines():
        if line.strip().startswith("```"):
            if code is None:
                code = []
            else:  # a code block is one piece: a command or a config snippet is not cut into lines
                if code:
                    out.append((" ".join(code), None))
                code = None
            continue
        if code is not None:
            if line.strip():
                code.append(line.strip())
            continue
        item = bool(_LIST_ITEM.match(line))
        if item and not in_list:
            block += 1
        in_list = item or (in_list and line.startswith("   "))  # an indented continuation stays in the list
        for sentence in split_sentences(line):
            out.append((sentence, block if in_list else None))
    if code:
        out.append((" ".join(code), None))
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
    listed = _best_list(pools) if _STEPS.search(question) else None
    if listed is not None and listed[0] >= STEPS_SHARE * best.score:
        chosen = _steps(listed[1], pools[[c.n for c in citations].index(listed[1].n)])
    else:
        chosen = _greedy(best, pool)
        chosen = _with_context(chosen, pools, [c.n for c in citations])
    parts = []
    for c in chosen:
        # Bracketed numbers of the document ("[0, 10]") must not read as citations: full-width brackets.
        text = _BRACKETED.sub(r"［\1］", c.text.rstrip())
        if text[-1] not in "。！？!?；;.":
            text += "。" if language == "zh" else "."
        parts.append(f"{text}[{c.n}]")
    return "\n".join(parts)  # one a line: the citation check splits there whatever the script


def _best_list(pools: Sequence[Sequence[_Candidate]]) -> tuple[float, _Candidate] | None:
    """The list whose three best items score highest together (steps are many modest matches, not one strong one), with its best item."""
    best = None
    for passage in pools:
        blocks: dict[int, list[_Candidate]] = {}
        for c in passage:
            if c.block is not None:
                blocks.setdefault(c.block, []).append(c)
        for items in blocks.values():
            ranked = sorted(items, key=lambda c: -c.score)
            score = sum(c.score for c in ranked[:3])
            if best is None or score > best[0]:
                best = (score, ranked[0])
    return best


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


def _with_context(chosen: list[_Candidate], pools: Sequence[Sequence[_Candidate]], order: Sequence[int]) -> list[_Candidate]:
    """Each chosen sentence followed by the ones right after it in its passage (a table's next row, the
    value after a comment, the command after "run:"): two after the best, one after the others, within the budget."""
    size = sum(len(c.text) for c in chosen)
    taken = {(c.n, c.position) for c in chosen}
    out = []
    for i, cand in enumerate(chosen):
        out.append(cand)
        after = CONTEXT_AFTER if i == 0 else 1
        for c in pools[order.index(cand.n)]:
            if cand.position < c.position <= cand.position + after and (c.n, c.position) not in taken:
                if size + len(c.text) > MAX_CHARS + CONTEXT_CHARS:
                    break
                out.append(c)
                taken.add((c.n, c.position))
                size += len(c.text)
    return out


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
