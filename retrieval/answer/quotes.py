"""A model's checked answer sentences + the numbered passages in -> the source line of each value the answer states out.

A small model states a value and drops what names it ("阈值是 30s" where the document says "`wdt_timeout` | 30s |
硬件看门狗超时"). Under a model's answer, each value it states (a number of two or more digits, with its unit if it
has one) whose passage line names something the answer leaves out (a setting, a host, a key) gets that line, quoted
as written and cited: "原文：「`wdt_timeout` | 30s | …」[2]". The passages the sentence cites are searched first, then the
others in rank order, where the line must also share a word with the sentence (the same number in another passage
is as likely another quantity: "keepalive 60 seconds" is not a pool table's bare "60"); a value no passage holds and
a number the question itself gives are skipped; a line that names nothing the answer lacks adds nothing and is not
quoted. At most `limit` lines.

A small model also copies a passage's lead-in and stops there ("在 edge-01 / edge-02 上按 upstream 聚合最近 10 分钟
的错误：" and not the command the runbook writes next). A sentence of the answer that ends as a lead-in ends ("：", ":")
and is that passage's lead-in (`INTRODUCED_SUPPORT` of its words there) gets what the lead-in introduces, the code
block or the list right after it, quoted and cited the same way (`introduced_blocks`), unless the answer already
says it. At most `limit` of these too.

And a small model answers another question than the one asked ("what to do in the first 15 minutes of a P1" answered
with when the post-mortem is due), or the right one without its subject or its steps. When the rules' own extractive
answer over the same passages holds more of the question's key words than the model's answer does (each with the
headings of the passages it cites), and enough to pass the rules' guard (more than ANSWER_COVERAGE), its sentences
follow the model's, quoted and cited (`beside_rules`): the reader sees both, and what the passages say is not lost
to a model's reading of them. Sentences the answer already says, and lines sharing no word with the question (a
table's header row), are left out. The condition was chosen against "only when the model's answer holds no more
than ANSWER_COVERAGE" on the odd question ids of the demo and ops_dev_zh, with the model's replies replayed
(bench/llm_replay.py), and confirmed on the even ids (bench/RESULTS-answers.md).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from retrieval.answer.cite import check_answer, quote_brackets
from retrieval.answer.record import AnswerSentence, Citation, fenced
from retrieval.answer.rules import (
    ANSWER_COVERAGE,
    answer_held,
    guard_terms,
    held_share,
    rules_answer,
)
from retrieval.answer.structure import ends_lead, passage_pieces
from retrieval.answer.terms import (
    content_words,
    find_value,
    identifiers,
    stated_values,
    support,
    units,
)
from retrieval.index.analysis import normalize_text

__all__ = ["MAX_SOURCE_LINES", "beside_rules", "introduced_blocks", "source_lines"]

MAX_SOURCE_LINES = 2
MAX_LINE_CHARS = 160
_UNIT_CUT = re.compile(r"(?<=[。！？；;])|(?<=\.)\s+|\n+")
_LEAD = {"zh": "原文：「{line}」[{n}]", "en": 'Source: "{line}" [{n}]'}
_QUANTITY = re.compile(r"^\d+(?:\.\d+)?[a-z%]{0,3}$")  # 30s, 128mb: a value with its unit, not a name
_TRIM = " \t|-*>#：:，,。；;"
INTRODUCED_SUPPORT = 0.8  # of a lead-in sentence's words found in the passage's lead-in: the model copied it
ALREADY_SAID = 0.6  # of the introduced block's words already in the answer: nothing to add
MAX_BLOCK_CHARS = 2 * MAX_LINE_CHARS


def _quotable(text: str) -> str:
    """Document text to put inside 「…」: its own corner brackets become quotation marks, its bracketed numbers
    full-width (`cite.quote_brackets`), so neither the quote nor the citation check is cut short."""
    return quote_brackets(text.replace("「", "“").replace("」", "”"))


def _quote(block: str, n: int, language: str, code: str | None = None) -> str:
    """A passage's words quoted under a model's answer and cited; a code block (`code`: its language) fenced on lines
    of its own (the check reads it whole), not put on one line inside 「…」."""
    if code is not None:
        return f"{fenced(block, code)}[{n}]"
    return _LEAD["zh" if language == "zh" else "en"].format(line=_quotable(block), n=n)


def _line_with(text: str, value: str) -> str:
    """The shortest line (or sentence of a long line) of `text` that holds `value`, shortened around it."""
    units = [" ".join(u.split()) for u in _UNIT_CUT.split(text) if u and u.strip()]  # as written: a quote
    found = sorted((u for u in units if find_value(normalize_text(u), value) and not u.startswith("```")), key=len)
    if not found:
        return ""
    line = found[0].strip(_TRIM)
    if len(line) > MAX_LINE_CHARS:
        hit = find_value(line, value)
        at = hit.start() if hit else 0
        start = max(0, at - MAX_LINE_CHARS // 2)
        line = ("…" if start else "") + line[start:start + MAX_LINE_CHARS].strip() + "…"
    return line.replace("「", "“").replace("」", "”").replace("[", "(").replace("]", ")")


def _names_left_out(line: str, answer: str) -> bool:
    """The line names something (a setting, a host, a key) the answer does not: only then is it worth quoting."""
    names = [n for n in identifiers(line) if not _QUANTITY.match(n)]
    return any(n not in answer for n in names)


def source_lines(question: str, sentences: Sequence[AnswerSentence], citations: Sequence[Citation], language: str,
                 limit: int = MAX_SOURCE_LINES) -> list[str]:
    """One quoted, cited line a value the answer states ("" values skipped), in the answer's order."""
    if limit <= 0 or not citations:
        return []
    asked = set(stated_values(question))
    lowered = normalize_text(" ".join(s.text for s in sentences)).lower()
    by_n = {c.n: c for c in citations}
    out: list[str] = []
    seen: set[str] = set()
    for sentence in sentences:
        cited = [by_n[n] for n in sentence.citations if n in by_n]
        others = [c for c in citations if c.n not in sentence.citations]
        words = content_words(sentence.text)
        for value in stated_values(sentence.text):
            if value in asked:
                continue
            for cit in cited + others:
                line = _line_with(cit.text, value)
                if not line or line in seen or not _names_left_out(line, lowered):
                    continue
                # Elsewhere than what it cites, the same number is as likely another quantity ("keepalive 60
                # seconds" is not a table's bare "60"): there the line must also share a word with the sentence.
                if cit in cited or words & content_words(line):
                    seen.add(line)
                    out.append(_LEAD["zh" if language == "zh" else "en"].format(line=line, n=cit.n))
                    break
            if len(out) >= limit:
                return out
    return out


def _introduced(pieces: Sequence, sentence: str) -> tuple[str, str | None]:
    """What the passage's lead-in matching `sentence` introduces, and the language when it is code: the code block
    right after it (up to CODE_CHARS), or the list, on one line (cut at MAX_BLOCK_CHARS); ("", None) when the sentence
    is no lead-in of this passage (`pieces`)."""
    for i, piece in enumerate(pieces[:-1]):
        if not piece.lead or support(sentence, units(piece.text)) < INTRODUCED_SUPPORT:
            continue
        after = pieces[i + 1]
        if after.kind == "code":  # its lines as written (the text is already cut at CODE_CHARS)
            return after.text, after.lang
        if after.kind == "item" and after.block is not None:
            # One quote, one sentence for the citation check: the items' own end marks would cut it into several.
            block = " / ".join(p.text.strip().rstrip("；;。.") for p in pieces[i + 1:] if p.block == after.block)
        else:
            return "", None
        if len(block) > MAX_BLOCK_CHARS:
            block = block[:MAX_BLOCK_CHARS].rstrip() + "…"
        return block, None
    return "", None


def introduced_blocks(sentences: Sequence[AnswerSentence], citations: Sequence[Citation], language: str,
                      limit: int = MAX_SOURCE_LINES) -> list[str]:
    """For each sentence of the answer that is a passage's lead-in, the block it introduces, quoted and cited."""
    if limit <= 0 or not citations:
        return []
    answer = units(" ".join(s.text for s in sentences))
    by_n = {c.n: c for c in citations}
    pieces: dict[int, list] = {}  # a passage's pieces, cut once however many lead-ins are looked up in it
    out: list[str] = []
    for sentence in sentences:
        if not ends_lead(sentence.text):
            continue
        cited = [by_n[n] for n in sentence.citations if n in by_n]
        for cit in cited + [c for c in citations if c.n not in sentence.citations]:
            if cit.n not in pieces:
                pieces[cit.n] = passage_pieces(cit.text)
            block, code = _introduced(pieces[cit.n], sentence.text)
            if block:
                if support(block, answer) < ALREADY_SAID:
                    out.append(_quote(block, cit.n, language, code))
                break
        if len(out) >= limit:
            break
    return out


def beside_rules(question: str, sentences: Sequence[AnswerSentence], quoted: Sequence[str], citations: Sequence[Citation],
                 language: str, synonym_groups: Sequence[Sequence[str]] = (), own_words: str = "",
                 limit: int = MAX_SOURCE_LINES) -> list[str]:
    """The rules' answer sentences, quoted and cited, when they hold more of the question's key words than the
    model's answer (`sentences`, and the source lines `quoted` under them) and pass the rules' guard; [] otherwise.
    With `limit` 0 (no source lines under a model's answer, KG_ANSWER_SOURCE_LINES), none of these either."""
    if limit <= 0 or not citations or not sentences:
        return []
    by_n = {c.n: c for c in citations}
    said = "\n".join([s.text + "".join(f"[{n}]" for n in s.citations) for s in sentences] + list(quoted))
    share = held_share(guard_terms(question), answer_held(said, by_n), synonym_groups)[0]
    if share >= 1.0:  # nothing the rules' sentences could hold more of
        return []
    ruled = rules_answer(question, citations, language, synonym_groups, own_words=own_words)
    if ruled.coverage <= max(share, ANSWER_COVERAGE):  # they must answer by the rules' guard, and hold more than the model's
        return []
    answer, asked = units(said), units(question)
    out = []
    for sentence in check_answer(ruled.text, citations, 0.0, language)[1]:
        # Said already, or sharing no word with the question (a table's header row, which the rules quote for context).
        if not sentence.citations or support(sentence.text, answer) >= ALREADY_SAID or not support(sentence.text, asked):
            continue
        text = sentence.text if sentence.code is not None else sentence.text.rstrip("。！？!?；;.")
        out.append(_quote(text, sentence.citations[0], language, sentence.code))
    return out
