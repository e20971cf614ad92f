"""Ranked hits -> numbered `Citation`s; an answer's text + those citations -> checked `AnswerSentence`s and the cleaned answer text.

After generation every sentence is checked against the passages it cites: a number that names
no passage is removed (and reported), the sentence's support is the share of its units (Chinese
character pairs, English words, identifiers) found in the passages it cites, and a sentence
below the threshold, citing nothing, or marked [未知] / [unknown] is flagged, never dropped. A fenced
code block is one sentence, its lines kept, cited by the numbers after its closing fence (a bracket inside it is
code, not a citation).
With `attribute` (a model's answer), a sentence the model left without a number gets the passage that
supports it best, if that passage supports it as much as a cited sentence must be (the same threshold),
unless it cited a number that names no passage (then it stays flagged),
and says so (`attributed`). One that too few words tie to any passage (an English sentence over Chinese
passages) but that gives a dotted or underscored name (`information_schema.processlist`) held by one passage
more than by any other gets that passage, and stays flagged; a sentence nothing ties to a passage stays uncited and flagged.
"""

from __future__ import annotations

import bisect
import re
import textwrap
from collections.abc import Sequence

from retrieval.answer.markup import FENCE
from retrieval.answer.record import AnswerSentence, Citation
from retrieval.answer.terms import content_words, find_value, stated_values, support, units
from retrieval.index.analysis import normalize_text

__all__ = ["check_answer", "check_units", "number_hits", "open_fence", "quote_brackets", "render"]

_NUMS = r"\d{1,3}(?:\s*[,，、]\s*\d{1,3})*"
_MARK = re.compile(rf"\[\s*({_NUMS})\s*\]|【\s*({_NUMS})\s*】|\[\s*(未知|unknown)\s*\]|【\s*(未知|unknown)\s*】|"
                   r"\[\s*(R\d{1,3})\s*\]|【\s*(R\d{1,3})\s*】", re.IGNORECASE)
# A marker the length limit cut off ("…、[R13"): nothing a reader could use.
_CUT_MARK = re.compile(r"[\[【]\s*R?\d{0,3}\s*$", re.IGNORECASE)
# A document's own bracketed number ("[0, 10]", "[R1]") quoted in an answer would read as a citation marker.
_DOC_BRACKETS = re.compile(r"\[(\s*R?\d[\d\s,，、]*)\]")
# A name written with dots or underscores (a setting, a table, a metric): a passage holding it is where it comes from.
MIN_NAME = 6
_NAME = re.compile(r"(?<![\w.])[A-Za-z][A-Za-z0-9]*(?:[_.][A-Za-z0-9]+)+(?![\w])")
# "根据材料 2" / "see passage 2": a number named in words is a citation too.
_NAMED = re.compile(r"(材料|段落|passage|source)\s*(\d{1,3})", re.IGNORECASE)
_END = "。！？!?；;"
# A small model that writes its citation numbers as the words ("the main layers are [1], [2], and [3].", "分为[1]、[2]和[3]
# 三层"): a list of markers where the sentence's object should be. Without them the sentence says nothing.
_NUMBER = r"(?:\[\s*\d{1,3}\s*\]|【\s*\d{1,3}\s*】)"
_HOLLOW = re.compile(rf"(?:\b(?:are|is|was|were|include|includes|including|namely|see)|such as|refer to|[:：]|是|为|包括|分为|即|"
                     rf"见|参见|详见|参考)\s*{_NUMBER}(?:(?:\s*(?:[,，、]|\band\b|\bor\b|和|及|与|或)\s*)+{_NUMBER})+"
                     rf"(?=\s*(?:[\u3400-\u9fff]{{0,4}}|[A-Za-z]+(?:\s+[A-Za-z]+)?)\s*[。.!?！？;；]?\s*$)", re.IGNORECASE)
# ^ the list ends the sentence, but for a word or two ("分为[1]、[2]和[3]三层"): "为[1]、[2]中的 30 秒" still says something
# Numbers written as a list ("[1], [2] and [3]", "[1]、[2]") are one run of markers: the commas and "and" between them
# would stay behind in the sentence ("The port is 8883,.").
_BETWEEN_NUMBERS = re.compile(rf"(?<=[\]】])\s*(?:[,，、]\s*(?:and\b|or\b|和|及|与|或)?|\band\b|\bor\b|和|及|与|或)\s*(?={_NUMBER})",
                              re.IGNORECASE)
# Markers written after the sentence's full stop ("…30 秒。[1]") belong to that sentence.
_AFTER_STOP = re.compile(rf"([{_END}]|\.(?=\s|\[|【|$))((?:\s*(?:\[[^\]\n]{{1,12}}\]|【[^】\n]{{1,12}}】))+)")
# Cut where `retrieval.answer.terms.split_sentences` cuts (an initial such as "G." is not a sentence end).
_SPLIT = re.compile(rf"(?<=[{_END}])|(?<=\.)(?<!(?<![A-Za-z])[A-Z]\.)(?=\s)|\n+")


def check_units(text: str) -> list[str]:
    """`text` cut where the check cuts sentences: an extractive answer cites each of these pieces, so none is left uncited."""
    return [p for p in _SPLIT.split(text) if p and p.strip()]


def number_hits(hits: Sequence) -> list[Citation]:
    return [Citation.from_hit(i, hit) for i, hit in enumerate(hits, 1)]


def _numbers(group: str) -> list[int]:
    return [int(n) for n in re.split(r"\s*[,，、]\s*", group.strip()) if n]


def _marked(text: str, by_n: dict, by_r: dict) -> tuple[list[int], list[int], list[str], bool]:
    """The citation markers in `text`: passages cited, numbers that name none (removed), facts cited, and whether it
    is marked unknown."""
    cited: list[int] = []
    removed: list[int] = []
    cited_facts: list[str] = []
    unknown = False
    for m in _MARK.finditer(text):
        if m.group(3) or m.group(4):
            unknown = True
            continue
        if m.group(5) or m.group(6):
            key = (m.group(5) or m.group(6)).upper()
            if key in by_r:
                cited_facts.append(key)
            else:  # an invented fact number is dropped like an invented passage number
                removed.append(int(key[1:]))
            continue
        for n in _numbers(m.group(1) or m.group(2)):
            (cited if n in by_n else removed).append(n)
    return cited, removed, cited_facts, unknown


# A fence opening a block at a line's end ("执行：```bash"), and a line of citation markers alone.
_TRAILING_FENCE = re.compile(r"^(.*\S)\s*((?:`{3,}|~{3,})[\w+#.-]*)\s*$")
_MARKS_ONLY = re.compile(r"^\s*(?:(?:\[[^\]\n]{1,12}\]|【[^】\n]{1,12}】)\s*)+$")


def _blocks(text: str) -> list[tuple[str, str | None, str]]:
    return _scan(text)[0]


def open_fence(text: str) -> bool:
    """Whether `text` ends inside a fenced code block (as `_blocks` reads it)."""
    return _scan(text)[1]


def _scan(text: str, spans: list[tuple[int, int | None]] | None = None) -> tuple[list[tuple[str, str | None, str]], bool]:
    """`text` as prose and fenced code blocks, in order: (prose, None, "") or (code, its language or "", the citation
    markers written right after its closing fence, on that line or alone on the next). A block left open runs to the
    end. A command's `arr[1]` inside a block is code, not a citation. A small model's sloppy fences count too: one
    opened at the end of a sentence ("执行：```bash"), one closed with the next sentence on its line. And whether the
    last block was left open. `spans` gets each block's opening and closing line (None: left open), as line indexes."""
    out: list[tuple[str, str | None, str]] = []
    still_open = False
    prose: list[str] = []
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        opened = FENCE.match(lines[i])
        trailing = None if opened else _TRAILING_FENCE.match(lines[i])
        if trailing and lines[i].count(trailing.group(2)[:3]) == 1:  # "执行：```bash": the sentence, then the block
            prose.append(trailing.group(1))
            opened = FENCE.match(lines[i][trailing.start(2):])
        if not opened:
            prose.append(lines[i])
            i += 1
            continue
        if prose:
            out.append(("\n".join(prose), None, ""))
            prose = []
        fence, body, marks = opened.group(1), [], ""
        first = i
        i += 1
        still_open = True
        while i < len(lines):
            line = lines[i].strip()
            i += 1
            if not line.startswith(fence):
                body.append(lines[i - 1].rstrip())
                continue
            rest, still_open = line.lstrip(fence[0]), False
            if spans is not None:
                spans.append((first, i - 1))
            if not rest or _MARKS_ONLY.match(rest):
                marks = rest
                if not marks and i < len(lines) and _MARKS_ONLY.match(lines[i]):
                    marks, i = lines[i], i + 1
            else:  # "```每个 Region 的…": the block ends, the prose goes on
                prose.append(rest)
            break
        if still_open and spans is not None:
            spans.append((first, None))
        out.append((textwrap.dedent("\n".join(body)).strip("\n"), opened.group(2), marks))
    if prose:
        out.append(("\n".join(prose), None, ""))
    return out, still_open


def _named(m: re.Match, by_n: dict, cited: list[int], removed: list[int]) -> str:
    """"材料 7" when there is no passage 7 loses its number (and the number is reported as removed)."""
    n = int(m.group(2))
    if n in by_n:
        cited.append(n)
        return m.group(0)
    removed.append(n)
    return m.group(1)


def check_answer(text: str, citations: Sequence[Citation], threshold: float, language: str,
                 facts: Sequence = (), attribute: bool = False) -> tuple[str, list[AnswerSentence]]:
    """`facts` (`retrieval.answer.facts.Fact`) are the graph's evidence [R1].., checked like passages."""
    by_n = {c.n: c for c in citations}
    by_r = {f.key.upper(): f for f in facts}
    passage_units = {c.n: units(f"{c.title}\n{c.section}\n{c.text}") for c in citations}
    fact_units = {k: units(f.text()) for k, f in by_r.items()}
    sentences: list[AnswerSentence] = []

    def checked(clean: str, marks: str, code: str | None = None) -> AnswerSentence:
        cited, removed, cited_facts, unknown = _marked(marks, by_n, by_r)
        if code is None:
            clean = _NAMED.sub(lambda m, c=cited, r=removed: _named(m, by_n, c, r), clean)
            clean = re.sub(r"\s+([。！？!?；;，,.])", r"\1", " ".join(clean.split())).strip()
            clean = re.sub(r"^(?:[-•]|\*(?!\*))\s*", "", clean)  # a bullet, not the "**" of a bold start
        cited = list(dict.fromkeys(cited))
        cited_facts = list(dict.fromkeys(cited_facts))
        score = 0.0
        attributed = False
        if attribute and not (cited or cited_facts or unknown or removed):  # an invented number: stays flagged
            scored = [(support(clean, u), 1, -n, n) for n, u in passage_units.items()] + \
                     [(support(clean, u), 0, 0, k) for k, u in fact_units.items()]
            best = max(scored, default=None)
            if best is not None and best[0] >= threshold:
                attributed = True
                (cited if best[1] else cited_facts).append(best[3])
            elif (named := _holder(clean, citations)) is not None:
                # Too few words in common (an English sentence over Chinese passages), but it names a setting, table
                # or path that one passage alone holds: that passage is its source. It stays flagged (support is low).
                attributed = True
                cited.append(named)
        elif attribute and cited and not removed:
            # A value the sentence states that none of its passages holds comes from the one other passage holding it;
            # a sentence or code block its passages do not support, from the passage that supports it best (a small
            # model copies a sentence or a command from passage 3 and cites 2).
            added = [n for n in _value_sources(clean, cited, citations) if n not in cited]
            if max(support(clean, passage_units[n]) for n in cited) < threshold:
                best = max(((support(clean, u), -n, n) for n, u in passage_units.items() if n not in cited), default=None)
                added += [best[2]] if best is not None and best[0] >= threshold else []
            if added:
                attributed = True
                cited += list(dict.fromkeys(added))
        if cited or cited_facts:
            joined = units("\n".join([f"{by_n[n].title}\n{by_n[n].section}\n{by_n[n].text}" for n in cited]
                                     + [by_r[k].text() for k in cited_facts]))
            score = max([support(clean, passage_units[n]) for n in cited] + [support(clean, fact_units[k]) for k in cited_facts]
                        + [support(clean, joined)])
        return AnswerSentence(clean, cited, score, unknown or not (cited or cited_facts) or score < threshold,
                              list(dict.fromkeys(removed)), unknown, cited_facts, attributed, code)

    for prose, code, marks in _blocks(text or ""):
        if code is not None:  # a fenced code block, cited by the markers after its closing fence
            if re.search(r"[\w\u3400-\u9fff]", prose):
                sentences.append(checked(prose, marks, code))
            continue
        for piece in _SPLIT.split(_AFTER_STOP.sub(lambda m: m.group(2) + m.group(1), prose)):
            if piece and re.search(r"[\w\u3400-\u9fff]", _MARK.sub("", _CUT_MARK.sub("", piece))):  # not bare markers or punctuation
                if attribute and _HOLLOW.search(piece):
                    continue  # a model's numbers in place of what it should have said: no sentence at all
                piece = _BETWEEN_NUMBERS.sub("", piece)
                sentences.append(checked(_MARK.sub("", piece), piece))
    return render(sentences, language), sentences


def _value_sources(sentence: str, cited: Sequence[int], citations: Sequence[Citation]) -> list[int]:
    """The passages that alone hold a value the sentence states (a number of two or more digits: a port, a timeout, a
    size) which the passages it cites do not, each sharing a word with the sentence besides the number: the same
    number elsewhere is as likely another quantity. A value two other passages hold, or none, adds nothing."""
    values = stated_values(sentence)
    if not values:
        return []
    by_n = {c.n: c for c in citations}
    held = normalize_text("\n".join(by_n[n].text for n in cited if n in by_n))
    words = content_words(sentence)
    out: list[int] = []
    for value in values:
        if find_value(held, value):
            continue
        holders = [c for c in citations if c.n not in cited and find_value(normalize_text(c.text), value)]
        if len(holders) == 1 and words & content_words(f"{holders[0].title}\n{holders[0].section}\n{holders[0].text}"):
            out.append(holders[0].n)
    return out


def _holder(sentence: str, citations: Sequence[Citation]) -> int | None:
    """The one passage holding the most of the sentence's dotted or underscored names (`information_schema.processlist`,
    `max.poll.records`), when one passage holds more of them than any other; else None."""
    names = {m.lower() for m in _NAME.findall(sentence) if len(m) >= MIN_NAME}  # not "e.g", "v1.2"
    if not names:
        return None
    lowered = {c.n: c.text.lower() for c in citations}
    held = sorted(((sum(_contains(lowered[c.n], name) for name in names), c.n) for c in citations), reverse=True)
    if not held or held[0][0] == 0 or (len(held) > 1 and held[1][0] == held[0][0]):
        return None
    return held[0][1]


def _contains(lowered: str, name: str) -> bool:
    return re.search(rf"(?<![\w.]){re.escape(name)}(?![\w])", lowered) is not None


def render(sentences: Sequence[AnswerSentence], language: str) -> str:
    """The answer text with only the citation numbers that exist, each sentence followed by its numbers; a code block
    fenced on lines of its own, its numbers on the line after it (a closing fence takes nothing after it)."""
    out = ""
    for i, s in enumerate(sentences):
        out += _separator(sentences[i - 1] if i else None, s, language) + _rendered(s, language)
    return out


def _rendered(s: AnswerSentence, language: str) -> str:
    unknown = "[未知]" if language == "zh" else "[unknown]"
    marks = "".join([f"[{k}]" for k in s.facts] + [f"[{n}]" for n in s.citations]) or (unknown if s.unknown else "")
    if s.code is not None:
        return s.written() + (f"\n{marks}" if marks else "")
    return f"{s.text}{marks}" if language == "zh" else f"{s.text} {marks}".rstrip()


def _separator(before: AnswerSentence | None, s: AnswerSentence, language: str) -> str:
    if before is None:
        return ""
    if before.code is not None or s.code is not None:
        return "\n"
    return "" if language == "zh" else " "


class _FenceState:
    """`open_fence(text[:end])` for many cut points of one `text`, from one reading of it: a model streaming a long code
    block had every cut point inside it read the buffer again at each piece (150 lines: ~27 s of CPU)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.spans: list[tuple[int, int | None]] = []
        _scan(text, self.spans)
        self.starts = [0] + [m.end() for m in re.finditer("\n", text)]  # where each line starts
        self.fence_lines = {n for n, line in enumerate(text.split("\n")) if "```" in line or "~~~" in line}

    def __call__(self, end: int) -> bool:
        line = bisect.bisect_right(self.starts, end) - 1
        if end == self.starts[line]:  # the text up to a line's start: open when a block opened above is not closed above
            return any(first < line and (last is None or last >= line) for first, last in self.spans)
        if line in self.fence_lines:  # cut inside a line holding a fence (rare): read that text as it is
            return open_fence(self.text[:end])
        return any(first < line and (last is None or last > line) for first, last in self.spans)


class CheckedStream:
    """Checks a streamed answer sentence by sentence, so that what reaches the user has already lost its
    invented numbers: `feed` returns the rendered sentences completed so far, `flush` the rest."""

    def __init__(self, citations: Sequence[Citation], threshold: float, language: str, facts: Sequence = (),
                 attribute: bool = False) -> None:
        self.citations, self.threshold, self.language, self.facts = citations, threshold, language, facts
        self.attribute = attribute
        self.buffer = ""
        self.sentences: list[AnswerSentence] = []  # every checked sentence sent so far

    @property
    def sent(self) -> int:
        return len(self.sentences)

    def _emit(self, text: str) -> str:
        rendered, sentences = check_answer(text, self.citations, self.threshold, self.language, self.facts, self.attribute)
        if not sentences:
            return ""
        sep = _separator(self.sentences[-1] if self.sentences else None, sentences[0], self.language)
        self.sentences.extend(sentences)
        return sep + rendered

    def feed(self, piece: str) -> str:
        self.buffer = _AFTER_STOP.sub(lambda m: m.group(2) + m.group(1), self.buffer + piece)
        cut = 0
        inside = _FenceState(self.buffer) if "```" in self.buffer or "~~~" in self.buffer else None
        for m in _SPLIT.finditer(self.buffer):
            if inside is not None and inside(m.end()):
                continue  # inside a code block: it is sent whole, with the markers after it
            rest = self.buffer[m.end():].lstrip()
            # Markers may still follow a full stop ("…。" then "[1]"): wait until something else does.
            if rest and rest[0] not in "[【":
                cut = m.end()
        if not cut:
            return ""
        done, self.buffer = self.buffer[:cut], self.buffer[cut:]
        return self._emit(done)

    def flush(self) -> str:
        done, self.buffer = self.buffer, ""
        return self._emit(done) if done.strip() else ""


def quote_brackets(text: str) -> str:
    """`text` quoted from a document, its bracketed numbers written full-width ("［0, 10］") so the check does not
    read them as citations; other brackets (a command's `[.status]`) stay as written."""
    return _DOC_BRACKETS.sub(r"［\1］", text)
