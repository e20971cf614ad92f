"""A question and numbered passages in -> an answer made of the passages' own best sentences, each cited [n], out (the no-LLM answer).

A sentence scores by the question's key words it holds (weighted as the judge weighs them, see
`retrieval.answer.terms`; a Chinese word by the share of its character pairs present; a word written
another way, by the knowledge base's synonyms or `retrieval.answer.phrasing`, a little less), by its
share of the question's character pairs / words, a little by its passage's rank, and more when
its passage's heading holds the question's words. A question that asks for a value (多少, 默认,
哪个, how many, which, default) prefers sentences carrying one (a number, a `code` span, an
identifier, a path); a sentence that only points elsewhere ("详见《…》", "see the runbook") is
worth less. A why-question credits the sentences of a matching passage that give a reason, a yes/no
question those that give a verdict (`retrieval.answer.phrasing`): they rarely repeat its words.

A sentence is never taken alone when documentation says more with it (`retrieval.answer.structure`):
the whole list item it is part of, a table row's header, what a sentence ending in "：" / ":"
or a heading introduces, the code block right after it. Units are then chosen across the top
passages as a greedy cover of the question's key terms: the best unit first, then the one adding
the most uncovered key-term weight, then units scoring close to the best, within the budget
(MAX_UNITS units, MAX_LINES lines, MAX_CHARS characters); each unit brings the sentence or two
written right after it. A question that asks for steps (怎么, 如何, 步骤, how do I) or an
enumeration (哪些, what are the) gets a whole list or table, in order, with its lead-in, when that
list covers the question's key terms better than the best unit, or nearly as well while it is a
procedure (numbered, or under a heading naming one) under a heading sharing the question's words,
followed by the unit holding most of the key terms the list leaves out (a question asking for the
steps and something else).
A "how do I" question also gets the best unit bringing a command or config block when the chosen
text has none; a question asking for a name gets the headings the best unit sits under first (the
name is often the heading, the description under it); when the best unit names another top
passage's title, that passage's best unit follows (a two-hop question's second hop).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace

from retrieval.answer.cite import check_units, quote_brackets
from retrieval.answer.phrasing import (
    alternatives,
    asks_how_it_works,
    asks_now,
    asks_why,
    cue_of,
    tense_of,
)
from retrieval.answer.record import Citation, fenced
from retrieval.answer.structure import CODE_CHARS, Piece, code_excerpt, passage_pieces
from retrieval.answer.terms import KeyTerm, Units, has_term, key_terms, units
from retrieval.index.analysis import cjk_bigrams

__all__ = ["MAX_CHARS", "MAX_LINES", "MAX_UNITS", "extract_answer"]

MAX_UNITS = 4  # sentences with what they bring along (a list item, a table row, a lead-in and its code)
MAX_LINES = 8  # lines of the answer; a procedure's steps are one line each, and so is a code block
MAX_CHARS = 700  # an answer, not the passages: p95 of the rendered answer stays near 700 characters
CONTEXT_AFTER = 2  # sentences right after the best unit kept with it (the value written one sentence later), one after the others
SHORT_SENTENCE = 16  # characters: a heading or a lead-in, taken with what follows
CLOSE_TO_BEST = 0.7
MIN_COVER_SHARE = 0.3  # a unit adding an uncovered key word must still score this share of the best
STEPS_COVER = 0.7  # a procedure under a heading sharing the question's words may cover this share of what the best unit covers
STEPS_SHARE = 0.5  # a list's three best items must score this close to the best unit
_DIGIT = re.compile(r"\d")
_VALUE = re.compile(r"\d|`[^`]+`|[A-Za-z][A-Za-z0-9]*[_.][A-Za-z0-9]|://|(?:^|\s)/[\w.-]+/")
_WANTS_VALUE = re.compile(
    r"多少|几|多久|多长|多大|多高|上限|阈值|端口|默认|哪个|哪种|哪一|哪张|什么值|地址|路径|"
    r"how (?:many|much|long|often|big)|\bwhich\b|\bdefault|what (?:is|are) the .*(?:setting|limit|size|port|value|timeout|path|address)",
    re.IGNORECASE)
_STEPS = re.compile(r"怎么|如何|步骤|流程|排查|处理|切换|how (?:do|to|should|can)|steps?\b|procedure|what should", re.IGNORECASE)
# Questions asking for a name: the name is often the heading above the sentence that matches the description.
_NAMING = re.compile(r"\bname of\b|\bwhat is the term\b|\b(?:is|are) (?:it |they )?called\b|叫什么|什么名字|名称是", re.IGNORECASE)
# Questions whose answer is an enumeration: a list answers them as a whole.
_LISTING = re.compile(r"哪些|有哪几|what are the|which (?:are|steps)|list (?:the|all)", re.IGNORECASE)
# A heading that names a procedure ("切换步骤", "Renewing the certificate", "排查").
_PROCEDURE = re.compile(r"步骤|流程|操作|排查|处理|方法|指南|升级|恢复|切换|配置|steps?\b|procedure|how to|\w+ing\b", re.IGNORECASE)
ORDERED_BONUS = 1.5  # a numbered list, or a list under a heading naming a procedure, is the steps asked for
SYNONYM_CREDIT = 0.8  # a key word written another way (启用 for 打开; the knowledge base's synonyms)
BRIDGE_TITLE = 3  # characters: a shorter passage title is too common to be a name the best sentence mentions
NOW_BONUS = 1.3  # a question asking what holds now: a sentence saying 当前/目前/currently, against one saying 当时/was
REASONS_SHARE = 0.6  # of the budget, for a why-question's list of reasons
CUE_SHARE = 0.5  # a sentence giving a reason (why) or a verdict (yes/no) gets this share of its passage's best score



@dataclass
class _Scored:
    n: int
    piece: Piece
    score: float
    terms: frozenset[str]
    heading_share: float  # the share of the question's key terms its heading (section or Markdown heading) holds
    heading_terms: frozenset[str]


@dataclass
class _Unit:
    n: int
    seed: _Scored
    members: list[_Scored]  # in passage order
    terms: frozenset[str]

    @property
    def size(self) -> int:
        return sum(len(m.piece.text) for m in self.members)

    def rest(self, taken: set[tuple[int, int]]) -> _Unit:
        """The unit without the members already `taken` (its key terms stay those it was chosen for)."""
        return _Unit(self.n, self.seed, [m for m in self.members if (m.n, m.piece.position) not in taken], self.terms)


def _taken(units: Sequence[_Unit]) -> set[tuple[int, int]]:
    """The (passage, position) of every member of `units`."""
    return {(m.n, m.piece.position) for u in units for m in u.members}


def _fresh(unit: _Unit, taken: set[tuple[int, int]]) -> bool:
    """Whether the unit brings a member not yet `taken`."""
    return not all((m.n, m.piece.position) in taken for m in unit.members)


def _term_credit(term: KeyTerm, u: Units, alts: dict[str, tuple[str, ...]]) -> float:
    if has_term(term.text, u):
        return 1.0
    if any(has_term(a, u) for a in alts.get(term.text, ())):
        return SYNONYM_CREDIT
    pairs = cjk_bigrams(term.text)
    if len(pairs) > 1:
        return 0.5 * sum(p in u.grams for p in pairs) / len(pairs)
    return 0.0


def _score_passage(terms: Sequence[KeyTerm], q_units: Units, citation: Citation, rank: int,
                   wants_value: bool, alts: dict[str, tuple[str, ...]], cue: re.Pattern[str] | None,
                   now: bool = False) -> list[_Scored]:
    total = sum(t.weight for t in terms) or 1.0
    headings: dict[str, tuple[float, frozenset[str]]] = {}
    out = []
    for piece in passage_pieces(citation.text):
        # A sentence under a heading that says what the question asks ("计划外切换步骤") is worth more.
        title = f"{citation.section} {piece.heading}".strip()
        if title not in headings:
            h = units(title)
            headings[title] = (sum(t.weight * _term_credit(t, h, alts) for t in terms) / total if title else 0.0,
                               frozenset(t.text for t in terms if title and _term_credit(t, h, alts) >= SYNONYM_CREDIT))
        heading_share, heading_terms = headings[title]
        if piece.kind == "code" and sum(map(len, piece.lines)) > CODE_CHARS:
            # Quoted (and scored) by its lines holding the question's words, each comment with the value after it.
            piece = replace(piece, text=code_excerpt(piece.lines, lambda line: any(has_term(t.text, units(line)) for t in terms)))
        u = units(piece.text)
        credits = {t.text: _term_credit(t, u, alts) for t in terms}
        term_score = sum(t.weight * credits[t.text] for t in terms) / total
        overlap = len(u.grams & q_units.grams) / (len(q_units.grams) or 1)
        score = (term_score + 0.5 * overlap) * (1.0 + 0.5 * heading_share) / (1.0 + 0.15 * rank)
        values = len(_VALUE.findall(piece.text)) if wants_value else 0
        if values:  # the more values a sentence states, the likelier one is the one asked for
            score *= 1.2 + 0.1 * min(values, 3)
        elif _DIGIT.search(piece.text):
            score *= 1.05
        if piece.pointer:
            score *= 0.5
        if now:  # "现在 / currently": the value that holds today, not the one an incident report says held then
            score *= {1: NOW_BONUS, -1: 1.0 / NOW_BONUS}.get(tense_of(piece.text), 1.0)
        held = frozenset(name for name, credit in credits.items() if credit >= SYNONYM_CREDIT)
        out.append(_Scored(citation.n, piece, score, held, heading_share, heading_terms))
    if cue is not None and out:
        # Why / yes-no: the sentence giving the reason or the verdict rarely repeats the question's words;
        # in a passage about the question it is worth a share of that passage's best sentence.
        top = max(s.score for s in out)
        for s in out:
            if s.piece.kind in ("text", "item") and cue.search(s.piece.text) and not s.piece.pointer:
                s.score += CUE_SHARE * top
    return out


def _introduces(s: _Scored) -> bool:
    """A lead-in ("执行：", "Run:") or a heading-like short line: what it introduces is the content."""
    return s.piece.lead or s.piece.kind == "heading" or (s.piece.kind == "text" and len(s.piece.text) < SHORT_SENTENCE)


def _unit(seed: _Scored, passage: Sequence[_Scored]) -> _Unit:
    """The seed with what documentation writes together with it."""
    p = seed.piece
    keep = {p.position}
    if p.item is not None:  # the whole list item (or table row)
        keep |= {s.piece.position for s in passage if s.piece.item == p.item}
    if p.kind == "row":  # a row means nothing without its header
        keep |= {s.piece.position for s in passage if s.piece.block == p.block and s.piece.kind == "header"}
    for _hop in range(2):  # a heading, then its lead-in, then what the lead-in introduces
        last = max(keep)
        nxt = passage[last + 1] if last + 1 < len(passage) else None
        if nxt is None or not (_introduces(passage[last]) or nxt.piece.kind == "code" or passage[last].piece.kind == "header"):
            break
        if nxt.piece.link_only:
            break  # "下面这张图片总结了…：" introduces a picture the answer cannot show
        keep.add(nxt.piece.position)  # the command, value or row it introduces
        if nxt.piece.item is not None and nxt.piece.kind == "item":
            keep |= {s.piece.position for s in passage if s.piece.item == nxt.piece.item}
        after = passage[max(keep) + 1] if max(keep) + 1 < len(passage) else None
        if after is not None and after.piece.kind == "code":
            keep.add(after.piece.position)
    members = [s for s in passage if s.piece.position in keep]
    return _Unit(seed.n, seed, members, frozenset().union(*(m.terms for m in members)))


def extract_answer(question: str, citations: Sequence[Citation], language: str,
                   synonym_groups: Sequence[Sequence[str]] = ()) -> str:
    """The chosen sentences, one a line, each ending with its passage's number; '' when nothing shares a word with the question.
    `synonym_groups` (the knowledge base's synonym table) give the question's words other wordings."""
    terms = key_terms(question)
    weights = {t.text: t.weight for t in terms}
    alts = alternatives(weights, synonym_groups)
    q_units = units(question)
    wants_value = bool(_WANTS_VALUE.search(question))
    cue = cue_of(question)
    how_to = bool(_STEPS.search(question)) and not asks_how_it_works(question)  # a procedure to run, not a mechanism explained
    now = asks_now(question)
    passages = {cit.n: _score_passage(terms, q_units, cit, rank, wants_value, alts, cue, now) for rank, cit in enumerate(citations)}
    seeds = sorted((s for p in passages.values() for s in p if s.score > 0), key=lambda s: (-s.score, s.n, s.piece.position))
    if not seeds:
        return ""
    candidates = [_unit(s, passages[s.n]) for s in seeds]
    if cue is not None and asks_why(question):
        candidates = [_with_reasons(u, passages[u.n], cue) for u in candidates]
    best = candidates[0]
    chosen = None
    if how_to or _LISTING.search(question):
        listed = _best_list(passages, {c.n: c.section for c in citations}, weights, steps=bool(_STEPS.search(question)))
        best_share = _share(best.terms | best.seed.heading_terms, weights)
        # The list must cover the question better than the best unit, or as well under a heading naming the procedure.
        if listed is not None and listed[0] >= STEPS_SHARE * best.seed.score and (
                listed[1] > best_share or (listed[1] >= STEPS_COVER * best_share and listed[3])):
            chosen = [listed[2]]
            if how_to and not _has_code(listed[2]):  # a list describing the steps, and elsewhere the command that does them
                coded = [u for u in candidates if _has_code(u) and u.seed.score >= MIN_COVER_SHARE * best.seed.score
                         and not _taken([u]) & _taken([listed[2]])
                         and _fits(u, len(listed[2].members), listed[2].size)]
                chosen += coded[:1]
            chosen = _and_the_rest(chosen, candidates, weights, MIN_COVER_SHARE * best.seed.score)
    if chosen is None:
        chosen = _with_context(_cover(candidates, weights, want_code=how_to,
                                      titles={c.n: c.title for c in citations}), passages)
    text = _render(chosen, language)
    if _NAMING.search(question):
        return _under_heading(chosen[0], {c.n: c for c in citations}, text, language)
    return text


def _under_heading(first: _Unit, citations: dict[int, Citation], text: str, language: str) -> str:
    """A question asking for a name ("what is the name of the principle that…", "导出文件叫什么"): documentation
    writes the name as the heading and the description under it, so the answer begins with the headings the best
    unit sits under ("How we follow our Principles › Convention over Configuration › Inspiration:"), cited as it is."""
    parts = [part.strip() for part in citations[first.n].section.split(" > ") if part.strip()]
    if first.seed.piece.heading and first.seed.piece.heading not in parts:
        parts.append(first.seed.piece.heading)
    heading = " › ".join(parts)
    if not heading or heading.lower() in text.lower():
        return text
    return (f"{heading}：[{first.n}]" if language == "zh" else f"{heading}: [{first.n}]") + "\n" + text


def _with_reasons(unit: _Unit, passage: Sequence[_Scored], cue: re.Pattern[str]) -> _Unit:
    """A list introduced by a lead-in giving a reason ("…，因为：", "原因如下：", "for these reasons:"), taken
    from the lead-in or any of its items, with the lead-in, up to REASONS_SHARE of the budget: to a why-question the
    reasons are the answer, not only the one that matched best."""
    seed = unit.seed.piece
    if seed.lead and seed.position + 1 < len(passage) and passage[seed.position + 1].piece.kind == "item":
        lead, block = unit.seed, passage[seed.position + 1].piece.block
    elif seed.kind == "item" and seed.block is not None:
        first = min(s.piece.position for s in passage if s.piece.block == seed.block)
        if first == 0 or not passage[first - 1].piece.lead:
            return unit
        lead, block = passage[first - 1], seed.block
    else:
        return unit
    if not cue.search(lead.piece.text):
        return unit
    members, size = [lead], len(lead.piece.text)
    for s in passage[lead.piece.position + 1:]:
        if s.piece.block != block or len(members) >= MAX_LINES - 2 or size + len(s.piece.text) > REASONS_SHARE * MAX_CHARS:
            break
        members.append(s)
        size += len(s.piece.text)
    if unit.seed not in members:
        return unit  # the matched item lies past the half budget: it stays on its own
    return _Unit(unit.n, unit.seed, members, frozenset().union(*(m.terms for m in members)))


def _share(held: frozenset[str], weights: dict[str, float]) -> float:
    return sum(weights.get(t, 0.0) for t in held) / (sum(weights.values()) or 1.0)


def _render(chosen: Sequence[_Unit], language: str) -> str:
    """The chosen units' lines in the order they were chosen, but a lead-in and what it introduces written together
    (`_leads_first`: "启用链路追踪：" was written after its `curl` command); a code block fenced on lines of its own."""
    lines, seen = [], set()
    members = [m for unit in chosen for m in unit.members]
    headers = {(m.n, m.piece.block): m.piece.text for m in members if m.piece.kind == "header"}
    labelled = {(m.n, m.piece.block) for m in members
                if m.piece.kind == "row" and _labelled(headers.get((m.n, m.piece.block)), m.piece.text, language)}
    for m in _leads_first(members):
        if (m.n, m.piece.position) in seen:
            continue
        seen.add((m.n, m.piece.position))
        if m.piece.kind == "header" and LABELLED_ROWS and (m.n, m.piece.block) in labelled:
            continue  # its names are in every row quoted under it
        text = m.piece.text
        if m.piece.kind == "code":  # fenced, on lines of its own: the check reads it whole and cites it by the marker after
            lines.append(f"{fenced(text, m.piece.lang)}[{m.n}]")
            continue
        if m.piece.kind == "row" and LABELLED_ROWS:
            text = _labelled(headers.get((m.n, m.piece.block)), text, language) or text
        # Bracketed numbers of the document ("[0, 10]") must not read as citations: full-width brackets.
        text = quote_brackets(text.rstrip())
        if not text:
            continue
        if (text.rstrip("*_") or text)[-1] not in "。！？!?；;.:：":
            text += "。" if language == "zh" else "."
        # Each piece the check will cut out gets the number, so no part of a line is left uncited.
        lines.append("".join(f"{part.rstrip()}[{m.n}]" if language == "zh" else f"{part.rstrip()} [{m.n}] "
                             for part in check_units(text)).rstrip())
    return "\n".join(lines)  # one a line: the citation check splits there whatever the script


def _leads_first(members: list[_Scored]) -> list[_Scored]:
    """A lead-in and the piece after it in its passage, both chosen, written together: the lead-in goes before the
    piece when it was chosen after it, and a code block chosen later than its lead-in comes up to it (a code block is
    one piece; a list's items are not pulled apart)."""
    out = list(members)
    for m in members:
        if not m.piece.lead:
            continue
        at = out.index(m)
        nxt = next((i for i, x in enumerate(out) if x.n == m.n and x.piece.position == m.piece.position + 1), None)
        if nxt is None or nxt == at + 1:
            continue
        if nxt < at:
            out.insert(nxt, out.pop(at))
        elif out[nxt].piece.kind == "code":
            out.insert(at + 1, out.pop(nxt))
    return out


LABELLED_ROWS = True  # a table row is quoted with its column names ("任务：日终对账，时间：02:00")


def _labelled(header: str | None, row: str, language: str) -> str:
    """A table row as each cell under its column's name, or '' when the header does not fit the row."""
    if header is None:
        return ""
    names, cells = header.split(" | "), row.split(" | ")
    if len(names) != len(cells) or len(cells) < 2:
        return ""
    said, between = ("：", "，") if language == "zh" else (": ", ", ")
    parts = [f"{name}{said}{cell}" if name else cell for name, cell in zip(names, cells, strict=True) if cell]
    if len(check_units(between.join(parts[:-1]) + between)) > 1:
        # The citation check would cut the row inside it (a cell of sentences before the last): the labels and cells
        # after the cut ("，Required：Optional") would stand alone, words the passage never puts side by side.
        return ""
    return between.join(parts)


def _best_list(passages: dict[int, Sequence[_Scored]], titles: dict[int, str], weights: dict[str, float],
               steps: bool) -> tuple[float, float, _Unit, bool] | None:
    """The list or table whose three best items score highest together (steps are many modest matches, not one
    strong one): its score, its share of the question's key terms, the list as one unit (with its lead-in), in order, and
    whether it is a procedure under a heading sharing the question's words."""
    best = None
    for n, passage in passages.items():
        blocks: dict[int, list[_Scored]] = {}
        for s in passage:
            if s.piece.block is not None:
                blocks.setdefault(s.piece.block, []).append(s)
        for items in blocks.values():
            # A procedure sits under a heading that names it ("计划外切换步骤", "Renewing the certificate").
            score = sum(sorted((s.score for s in items), reverse=True)[:3]) * (1.0 + 2.0 * items[0].heading_share)
            if steps and (items[0].piece.ordered or _PROCEDURE.search(f"{items[0].piece.heading} {titles[n]}")):
                score *= ORDERED_BONUS
            if best is not None and score <= best[0]:
                continue
            first = items[0].piece.position
            lead = passage[first - 1] if first > 0 and _introduces(passage[first - 1]) else None
            members, size = ([lead] if lead else []), len(lead.piece.text) if lead else 0
            for s in items:
                if (size + len(s.piece.text) > MAX_CHARS or len(members) >= MAX_LINES) and members:
                    break
                members.append(s)
                size += len(s.piece.text)
            held = frozenset().union(*(m.terms for m in members)) | items[0].heading_terms
            named = steps and bool(items[0].heading_terms) and bool(items[0].piece.ordered or _PROCEDURE.search(
                f"{items[0].piece.heading} {titles[n]}"))
            best = (score, _share(held, weights), _Unit(n, members[0], members, held), named)
    return best


def _with_context(chosen: list[_Unit], passages: dict[int, Sequence[_Scored]]) -> list[_Unit]:
    """Each chosen unit followed by the sentences right after it in its passage (a table's next row, the value
    after a comment, the command after "run:"): two after the best, one after the others, within the budget."""
    taken = _taken(chosen)
    lines, size = sum(len(u.members) for u in chosen), sum(u.size for u in chosen)
    for i, unit in enumerate(chosen):
        passage = passages[unit.n]
        last = max(m.piece.position for m in unit.members)
        for _ in range(CONTEXT_AFTER if i == 0 else 1):
            if last + 1 >= len(passage):
                break
            nxt = passage[last + 1]
            if ((nxt.n, nxt.piece.position) in taken or nxt.piece.kind == "heading" or nxt.piece.link_only
                    or nxt.piece.pointer):
                break
            if nxt.piece.item is not None and nxt.piece.block == passage[last].piece.block and not _introduces(passage[last]):
                break  # the next list item or table row is another entry, not more of this one
            # The next sentence with what it brings along (a lead-in brings the command it introduces).
            add = [m for m in _unit(nxt, passage).members if m.piece.position > last and (m.n, m.piece.position) not in taken]
            if lines + len(add) > MAX_LINES or size + sum(len(m.piece.text) for m in add) > MAX_CHARS:
                break
            unit.members.extend(add)
            taken.update((m.n, m.piece.position) for m in add)
            lines, size = lines + len(add), size + sum(len(m.piece.text) for m in add)
            last = max(m.piece.position for m in unit.members)
    return chosen


def _most_new(candidates: Sequence[_Unit], covered: set[str] | frozenset[str], taken: set[tuple[int, int]], lines: int,
              size: int, floor: float, weights: dict[str, float]) -> _Unit | None:
    """The unit adding the most key-term weight not yet `covered` (scoring at least `floor`, not all `taken`, within
    the budget left, not a pointer elsewhere), or None."""
    options = [u for u in candidates if u.seed.score >= floor and u.terms - covered and not u.seed.piece.pointer
               and _fresh(u, taken) and _fits(u, lines, size)]
    return max(options, key=lambda u: (sum(weights.get(t, 0.0) for t in u.terms - covered), u.seed.score), default=None)


def _and_the_rest(chosen: list[_Unit], candidates: Sequence[_Unit], weights: dict[str, float], floor: float) -> list[_Unit]:
    """A list chosen for the steps, then the unit holding most of the question's key words the list leaves out, when the
    budget allows: "灰度步骤和回滚条件是什么" is a list and a sentence, and "恢复以后对不上，有什么机制处理" the recovery
    steps and the sentence naming the mechanism."""
    if len(chosen) >= MAX_UNITS:
        return chosen
    taken = _taken(chosen)
    more = _most_new(candidates, frozenset().union(*(u.terms for u in chosen)), taken,
                     sum(len(u.members) for u in chosen), sum(u.size for u in chosen), floor, weights)
    if more is None:
        return chosen
    return [*chosen, more.rest(taken)]


def _fits(unit: _Unit, lines: int, size: int) -> bool:
    return lines + len(unit.members) <= MAX_LINES and size + unit.size <= MAX_CHARS


def _has_code(unit: _Unit) -> bool:
    return any(m.piece.kind == "code" for m in unit.members)


def _cover(candidates: Sequence[_Unit], weights: dict[str, float], want_code: bool = False,
           titles: dict[int, str] | None = None) -> list[_Unit]:
    """A greedy cover of the question's key terms: the best unit, then the unit adding the most uncovered weight, then close scorers.
    With `want_code` ("how do I"), the best unit bringing a command or config block comes second when the best has none:
    documentation answers how by the command, the sentences around it only say when and why."""
    best = candidates[0]
    chosen = [best]
    covered = set(best.terms)
    taken = _taken([best])
    lines, size = len(best.members), best.size

    def take(u: _Unit) -> None:
        nonlocal lines, size
        new = u.rest(taken)
        chosen.append(new)
        covered.update(u.terms)
        taken.update(_taken([new]))
        lines += len(new.members)
        size += new.size

    if want_code and not _has_code(best):
        coded = [u for u in candidates[1:] if _has_code(u) and u.seed.score >= MIN_COVER_SHARE * best.seed.score
                 and _fresh(u, taken) and _fits(u, lines, size)]
        if coded:
            take(coded[0])
    if titles:
        # The best unit names another passage's subject ("directed by Max Mack", and passage 3 is "Max Mack"):
        # the answer goes on there, in that passage's sentence sharing most of the question.
        named = " ".join(m.piece.text for m in best.members).lower()
        for n, title in titles.items():
            if n == best.n or len(title) < BRIDGE_TITLE or title.lower() not in named or len(chosen) >= MAX_UNITS:
                continue
            there = [u for u in candidates if u.n == n and _fresh(u, taken) and _fits(u, lines, size)]
            if there:
                take(there[0])
    while len(chosen) < MAX_UNITS:
        more = _most_new(candidates, covered, taken, lines, size, MIN_COVER_SHARE * best.seed.score, weights)
        if more is None:
            break
        take(more)
    for u in candidates[1:]:
        if len(chosen) >= MAX_UNITS or u.seed.score < CLOSE_TO_BEST * best.seed.score:
            break
        if _fresh(u, taken) and _fits(u, lines, size) and not u.seed.piece.pointer:
            take(u)  # a pointer elsewhere adds nothing next to the sentences that answer
    return chosen
