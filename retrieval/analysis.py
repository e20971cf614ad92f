"""Text -> index terms: ASCII identifiers kept whole (plus their parts), jieba on Chinese runs, sequential positions.

The same `analyze` runs at index time (through `KgAnalyzer`, the whoosh analyzer) and at query time,
so both sides always agree. Why not jieba's `ChineseAnalyzer`: it stores character offsets as
positions, emits overlapping search-mode tokens and splits `LORA-02` into `lora` and `02`.
"""

from __future__ import annotations

import re
import threading
import unicodedata
from collections.abc import Iterable, Iterator
from functools import lru_cache

from whoosh.analysis import Token, Tokenizer
# porter2: whoosh's porter module mis-stems doubled consonants (running -> runn, logging -> logg).
from whoosh.lang.porter2 import stem as _porter_stem

__all__ = ["KgAnalyzer", "Term", "add_user_words", "analyze", "normalize_text", "query_terms"]

CJK = r"\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_RUN = re.compile(rf"[A-Za-z0-9](?:[A-Za-z0-9_.\-/+#]*[A-Za-z0-9+#])?|[{CJK}]+")
_SEP = re.compile(r"[_.\-/]+")
_CJK_ONLY = re.compile(rf"^[{CJK}]+$")

ENGLISH_STOPWORDS = frozenset(
    """a an and are as at be been but by can could did do does for from had has have how i if in
    into is it its of on or s she he that the their them then there these they this to was were
    what when where which who whom whose why will with would you your than also about after
    before between both during each other over same such under up out off not no only own so
    very just should all any more most some""".split()
)
CHINESE_STOPWORDS = frozenset(
    """的 了 是 在 和 与 及 或 吗 呢 吧 啊 么 什么 哪些 哪个 哪 如何 怎么 怎样 为什么 多少 几 有 有没有
    会 要 请 这 那 这个 那个 我 我们 你 你们 他 她 它 他们 一个 之 其 被 把 对 从 到 为 以 就 都 也 还 并
    等 该 将 让 给 上 下 中 里 呀 嘛 吗？ 是否 哪里 可以 能 能否 需要""".split()
)

Term = tuple[str, int]  # (term text, position)

_jieba_lock = threading.Lock()


@lru_cache(maxsize=1)
def _jieba():
    import logging

    import jieba

    jieba.setLogLevel(logging.WARNING)
    jieba.initialize()
    return jieba.dt


def add_user_words(words: Iterable[str]) -> int:
    """Teach jieba the entity labels/aliases and synonyms so they come out as single words."""
    dt = _jieba()
    added = 0
    with _jieba_lock:
        for word in words:
            word = normalize_text(word).strip()
            # jieba's dictionary cannot hold spaces; ASCII-only words are kept whole anyway.
            if len(word) < 2 or " " in word or not re.search(f"[{CJK}]", word):
                continue
            if dt.FREQ.get(word):
                continue
            dt.add_word(word, freq=max(dt.suggest_freq(word, tune=False), 5))
            added += 1
    return added


def normalize_text(text: str) -> str:
    """NFKC (full-width letters/digits/punctuation to half-width), no case change."""
    return unicodedata.normalize("NFKC", text)


@lru_cache(maxsize=200_000)
def _stem(word: str) -> str:
    return _porter_stem(word)


def _ascii_terms(token: str) -> list[str]:
    token = token.lower()
    if token in ENGLISH_STOPWORDS:
        return []
    if token.isalpha():
        return [_stem(token)]
    terms = [token]
    parts = [p for p in _SEP.split(token) if p]
    if len(parts) > 1:
        terms += [_stem(p) if p.isalpha() else p for p in parts if p not in ENGLISH_STOPWORDS]
    return terms


def _cjk_words(run: str) -> Iterator[list[str]]:
    """Yield, for each jieba word, the word followed by its in-dictionary 2/3-character sub-words.

    The sub-words (what jieba's search mode adds) let `连接池` match `数据库连接池` on either side.
    """
    dt = _jieba()
    freq = dt.FREQ
    for word in dt.cut(run, HMM=True):
        if word in CHINESE_STOPWORDS:
            continue
        group = [word]
        n = len(word)
        if n > 2:
            for size in (2, 3):
                if n <= size:
                    continue
                for i in range(n - size + 1):
                    sub = word[i : i + size]
                    if freq.get(sub) and sub not in CHINESE_STOPWORDS:
                        group.append(sub)
        yield group


def analyze(text: str) -> list[Term]:
    """Index terms of `text` with sequential positions (alternatives share a position)."""
    out: list[Term] = []
    pos = 0
    for m in _RUN.finditer(normalize_text(text)):
        run = m.group()
        if _CJK_ONLY.match(run):
            for group in _cjk_words(run):
                for term in group:
                    out.append((term, pos))
                pos += 1
        else:
            terms = _ascii_terms(run)
            if terms:
                for term in terms:
                    out.append((term, pos))
                pos += 1
    return out


def query_terms(text: str) -> list[str]:
    """Distinct terms of a query, in order of first appearance."""
    seen: dict[str, None] = {}
    for term, _ in analyze(text):
        seen.setdefault(term, None)
    return list(seen)


class KgAnalyzer(Tokenizer):
    """whoosh analyzer around `analyze`. Lives in an importable module because whoosh pickles it."""

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self)

    def __hash__(self) -> int:
        return hash(type(self).__name__)

    def __call__(  # type: ignore[override]
        self,
        value: str,
        positions: bool = False,
        chars: bool = False,
        keeporiginal: bool = False,
        removestops: bool = True,
        start_pos: int = 0,
        start_char: int = 0,
        tokenize: bool = True,
        mode: str = "",
        **kwargs,
    ) -> Iterator[Token]:
        token = Token(positions, chars, removestops=removestops, mode=mode, **kwargs)
        for term, pos in analyze(value):
            token.text = term
            token.boost = 1.0
            token.stopped = False
            if keeporiginal:
                token.original = term
            if positions:
                token.pos = start_pos + pos
            if chars:
                token.startchar = start_char
                token.endchar = start_char
            yield token
