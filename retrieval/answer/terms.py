"""Text -> what the answer stage compares: a question's key terms, a text's support units (Chinese character pairs, English words), coverage and support scores.

The same analyzer as the index (`retrieval.index.analysis.analyze`) cuts the words, so a key term
means the same thing here as it did to BM25. Chinese words are also compared by their character
pairs, because jieba may cut a word one way in the question and another in the passage. A numeronym
(k8s, i18n, a11y) is held by the word it abbreviates.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from retrieval.index.analysis import (
    CHINESE_STOPWORDS,
    ENGLISH_STOPWORDS,
    analyze,
    cjk_bigrams,
    normalize_text,
)

__all__ = ["KeyTerm", "Units", "contains_name", "content_words", "coverage", "find_value", "identifiers", "key_terms",
           "split_sentences", "stated_values", "support", "units"]

# A value an answer states: a number of two or more digits, or a decimal (a port, a timeout, a size).
_VALUE = re.compile(r"(?<![\w.\-])(\d{2,}(?:\.\d+)?|\d+\.\d+)(?![\d])")


def stated_values(text: str) -> list[str]:
    """The values `text` states, in order, once each."""
    return list(dict.fromkeys(m.group(1) for m in _VALUE.finditer(normalize_text(text))))


def find_value(line: str, value: str) -> re.Match | None:
    """`value` in `line` as a whole number (30 is not in 300 or 3.30)."""
    return re.search(rf"(?<![\d.]){re.escape(value)}(?![\d])", line)

# Words that say what kind of answer is wanted, not what it is about.
QUESTION_WORDS = frozenset(
    """多少 什么 怎么 怎么办 怎样 如何 哪些 哪个 哪 哪里 哪儿 哪种 哪条 哪次 哪台 为什么 为何 是否 吗 呢 几 几秒 几次 几个
    多久 多长 多大 谁 是 有 会 能 要 应该 需要 可以 现在 以前 分别 区别 关系 之间 设置 设为 配置 配 步骤 流程 作用 意思
    是不是 能不能 会不会 可不可以 要不要 有没有 对不对 行不行 怎么回事 是什么 为啥
    what which who whom whose how why when where does do is are was were can could should would will
    many much long often setting set use used mean means happen happens need needs""".split()
) | CHINESE_STOPWORDS | ENGLISH_STOPWORDS
_IDENTIFIER = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.\-/:+#]*[A-Za-z0-9]|\d")
_ASCII_WORD = re.compile(r"[a-z0-9]+(?:[._\-/:][a-z0-9]+)*")
_CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")
# A numeronym: a word's first letter, how many letters stand between, its last letter (k8s, l10n, a11y, i18n). Five or
# more between: "e2e" and "s3a" are names, not abbreviations, and a short pattern would match common words (edge, soda).
_NUMERONYM = re.compile(r"([a-z])([5-9]|[1-9]\d)([a-z])")
# Sentence ends in Chinese and English; a line break ends a list item, a table row or a heading.
# An initial ("S. S. Vasan", "Paul G. Allen") is not a sentence end.
_SENTENCE_END = re.compile(r"(?<=[。！？!?；;])|(?<=\.)(?<!(?<![A-Za-z])[A-Z]\.)(?=\s)|\n+")


@dataclass(frozen=True)
class KeyTerm:
    text: str
    weight: float  # identifiers and long words weigh more than short common ones
    identifier: bool  # an ASCII name with a digit, a dash, a dot or an underscore (LORA-02, max_connections)


def identifiers(text: str) -> list[str]:
    """The names a question asks about, lower-cased: ASCII identifiers (a digit or a separator: LORA-02,
    max_connections; or capitals: TLS, P1), every ASCII word of a Chinese question (there it is a name:
    MongoDB 集群), and capitalised words inside an English sentence (Elasticsearch, Tomcat)."""
    norm = normalize_text(text)
    chinese = bool(_CJK.search(norm))
    out: list[str] = []
    for i, m in enumerate(_IDENTIFIER.finditer(norm)):
        token = m.group()
        lowered = token.lower()
        if lowered in ENGLISH_STOPWORDS or lowered in QUESTION_WORDS or not re.search(r"[a-z]", lowered):
            continue  # a bare number is a quantity (15 minutes, 100 万行), not the name of a thing
        marked = any(c.isdigit() for c in token) or any(c in "_-.:/" for c in token) or (token.isupper() and len(token) > 1)
        sentence_start = i == 0 or norm[: m.start()].rstrip()[-1:] in ".?!:;"
        capitalised = token[0].isupper() and not sentence_start and len(token) > 1
        if (marked or (chinese and len(token) > 1) or capitalised) and lowered not in out:
            out.append(lowered)
    return out


def contains_name(lowered: str, name: str) -> bool:
    """A lower-cased name in a lower-cased text, not inside a longer name (lora-02 is not in lora-021);
    a compound name of words (ak/sk, max-threads) also counts when each of its parts stands there on its own."""
    if re.search(rf"(?<![0-9a-z]){re.escape(name)}(?![0-9a-z])", lowered):
        return True
    parts = [p for p in re.split(r"[_.\-/:+#]+", name) if p]
    if any(p.isdigit() for p in parts):
        return False  # a model number (TH-30, LORA-05) is its number: th and 30 apart are not it
    return len(parts) > 1 and all(re.search(rf"(?<![0-9a-z]){re.escape(p)}(?![0-9a-z])", lowered) for p in parts)


def _name_terms(text: str) -> set[str]:
    """The analyzer's term for each name (its whole-token form: `jenkins` -> `jenkin`)."""
    out = set()
    for name in identifiers(text):
        terms = analyze(name)
        if terms:
            out.add(terms[0][0])
    return out


def key_terms(question: str) -> list[KeyTerm]:
    """The question's content words (the index's analyzer, one term a position: `lora-02`, not also `lora`),
    without question words."""
    seen: dict[str, KeyTerm] = {}
    ids = _name_terms(question)
    last_pos = -1
    for term, pos in analyze(question):
        if pos == last_pos:
            continue  # the parts of an identifier stand at the identifier's position
        last_pos = pos
        if term in QUESTION_WORDS or term in seen or (len(term) == 1 and not term.isdigit()):
            continue
        is_id = term in ids
        weight = 2.0 if is_id else (1.5 if len(term) >= 3 else 1.0)
        seen[term] = KeyTerm(term, weight, is_id)
    if all(len(t) == 1 for t in seen):  # "[1]", "2?": a lone digit counts beside words ("重试 3 次"), alone it asks nothing
        return []
    return list(seen.values())


@dataclass(frozen=True)
class Units:
    """What a text offers for comparison: its analyzed terms, its lower-cased text, its Chinese pairs and English words."""

    terms: frozenset[str]
    lowered: str
    grams: frozenset[str]


def units(text: str) -> Units:
    norm = normalize_text(text)
    lowered = norm.lower()
    words = {w for w in _ASCII_WORD.findall(lowered) if w not in ENGLISH_STOPWORDS}
    return Units(frozenset(t for t, _ in analyze(norm)), lowered, frozenset(cjk_bigrams(norm)) | frozenset(words))


def has_term(term: str, text: Units) -> bool:
    if term in text.terms or term in text.lowered:
        return True
    numeronym = _NUMERONYM.fullmatch(term)
    if numeronym:  # k8s is how a question writes kubernetes, i18n internationalization, o11y observability
        first, n, last = numeronym.groups()
        return re.search(rf"(?<![a-z]){first}[a-z]{{{n}}}{last}(?![a-z])", text.lowered) is not None
    if _CJK.search(term) and len(term) >= 3:
        pairs = cjk_bigrams(term)
        return bool(pairs) and sum(p in text.grams for p in pairs) >= len(pairs) - (1 if len(pairs) > 2 else 0)
    return False


def coverage(terms: Iterable[KeyTerm], text: Units) -> tuple[float, list[KeyTerm]]:
    """The weighted share of `terms` the text contains, and the terms it lacks."""
    terms = list(terms)
    if not terms:
        return 1.0, []
    missing = [t for t in terms if not has_term(t.text, text)]
    total = sum(t.weight for t in terms)
    return 1.0 - sum(t.weight for t in missing) / total, missing


def support(sentence: str, passage: Units) -> float:
    """Share of the sentence's units (Chinese character pairs, English words and identifiers) found in the passage."""
    mine = units(sentence).grams
    if not mine:
        return 0.0
    return len(mine & passage.grams) / len(mine)


def split_sentences(text: str) -> list[str]:
    """Sentences of running text, list items, table rows and headings; Markdown bullets, pipes and heading marks trimmed
    (a bullet is followed by a space: "**Note:**" keeps its bold)."""
    out = []
    for piece in _SENTENCE_END.split(text or ""):
        piece = piece.strip().strip("|").strip()
        piece = re.sub(r"^(?:[#>]+|[*+\-•](?=\s)|\d+[.)、])\s*", "", piece).strip()  # not the "**" of "**Note:**"
        if piece and re.search(r"[\w\u3400-\u9fff]", piece) and not re.fullmatch(r"[\s|:\-]+", piece):
            out.append(piece)
    return out


def content_words(text: str) -> set[str]:
    """Chinese character pairs and English words of `text`, without numbers: what a value's sentence and its source share."""
    return {g for g in units(text).grams if not any(ch.isdigit() for ch in g)}
