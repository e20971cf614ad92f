"""A question and numbered passages in -> an answer made of the passages' own best sentences, each cited [n], out (the no-LLM answer).

A sentence scores by the question's key words it holds (weighted as the judge weighs them, see
`retrieval.answer.terms`), by its share of the question's character pairs / words, and a little
by its passage's rank. A sentence too short to carry an answer on its own (a heading, "步骤：")
is taken with the one after it. The best sentence is kept, then further ones while they add a
key word not yet covered or score close to the best, up to a length budget.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from retrieval.answer.record import Citation
from retrieval.answer.terms import KeyTerm, has_term, key_terms, split_sentences, units

__all__ = ["extract_answer"]

MAX_SENTENCES = 4
MAX_CHARS = 480
SHORT_SENTENCE = 16  # characters: a heading or a lead-in, joined with what follows
CLOSE_TO_BEST = 0.7
_DIGIT = re.compile(r"\d")


@dataclass
class _Candidate:
    n: int
    position: int
    text: str
    score: float
    terms: frozenset[str]


def _candidates(question_terms: Sequence[KeyTerm], question_units, citation: Citation, rank: int) -> list[_Candidate]:
    pieces = split_sentences(citation.text)
    joined: list[str] = []
    i = 0
    while i < len(pieces):
        piece = pieces[i]
        if len(piece) < SHORT_SENTENCE and i + 1 < len(pieces):
            piece = f"{piece.rstrip('。！？!?；;.')} {pieces[i + 1]}"
            i += 1
        joined.append(piece)
        i += 1
    total = sum(t.weight for t in question_terms) or 1.0
    out = []
    for position, sentence in enumerate(joined):
        u = units(sentence)
        held = frozenset(t.text for t in question_terms if has_term(t.text, u))
        term_score = sum(t.weight for t in question_terms if t.text in held) / total
        overlap = len(u.grams & question_units.grams) / (len(question_units.grams) or 1)
        score = (term_score + 0.5 * overlap) / (1.0 + 0.15 * rank)
        if _DIGIT.search(sentence):
            score *= 1.05  # settings, limits and versions are what such questions usually ask for
        out.append(_Candidate(citation.n, position, sentence, score, held))
    return out


def extract_answer(question: str, citations: Sequence[Citation], language: str) -> str:
    """The chosen sentences, each ending with its passage's number; '' when no sentence shares anything with the question."""
    terms = key_terms(question)
    q_units = units(question)
    pool = [c for rank, cit in enumerate(citations) for c in _candidates(terms, q_units, cit, rank)]
    pool = [c for c in pool if c.score > 0]
    if not pool:
        return ""
    pool.sort(key=lambda c: (-c.score, c.n, c.position))
    best = pool[0]
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
    parts = []
    for c in chosen:
        text = c.text.rstrip()
        if text[-1] not in "。！？!?；;.":
            text += "。" if language == "zh" else "."
        parts.append(f"{text}[{c.n}]")
    return "\n".join(parts)  # one a line: the citation check splits there whatever the script
