"""Text -> index terms: ASCII identifiers kept whole (plus their parts), jieba on Chinese runs, sequential positions.

The same `analyze` runs at index time (through `KgAnalyzer`, the whoosh analyzer) and at query time,
so both sides always agree. Why not jieba's `ChineseAnalyzer`: it stores character offsets as
positions, emits overlapping search-mode tokens and splits `LORA-02` into `lora` and `02`.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Iterable, Iterator, Mapping
from functools import lru_cache

from whoosh.analysis import Token, Tokenizer

# porter2: whoosh's porter module mis-stems doubled consonants (running -> runn, logging -> logg).
from whoosh.lang.porter2 import stem as _porter_stem

from retrieval.index.vocabulary import (
    PROCESS,
    Vocabulary,
    compounds_of,
    is_taught,
    reset_user_words,
    teach,
    vocabulary_version,
)
from retrieval.index.vocabulary import tokenizer as _jieba

__all__ = ["GramAnalyzer", "KgAnalyzer", "Term", "cjk_bigrams", "add_user_words", "analyze", "cjk_terms", "compound_terms", "fold_accents", "fold_traditional", "idf_weights", "normalize_text", "query_terms", "reset_user_words", "split_runs", "taught_words", "traditional_characters",
           "user_word_candidates", "vocabulary_version"]

CJK = r"\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
# ASCII identifiers; Chinese runs; words of other scripts (Cyrillic, Greek, ...) whole.
_WORD_RUN = r"[A-Za-z0-9](?:[A-Za-z0-9_.\-/+#]*[A-Za-z0-9+#])?"  # identifiers, words, numbers
_LETTER_RUN = rf"[^\W\d_A-Za-z{CJK}]+"  # letters of other scripts
_RUN = re.compile(rf"{_WORD_RUN}|[{CJK}]+|{_LETTER_RUN}")
_SEP = re.compile(r"[_.\-/]+")
_CJK_ONLY = re.compile(rf"^[{CJK}]+$")
# `_RUN`'s runs that are not Chinese, found without walking the Chinese ones in Python (a chunk is mostly Chinese)
_OTHER_RUN = re.compile(rf"{_WORD_RUN}|{_LETTER_RUN}")
_WORDLIKE = re.compile(rf"^[{CJK}]+$")  # what jieba's dictionary can usefully hold

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

# Words kgrag teaches jieba (entity labels and aliases, synonyms; `retrieval.index.vocabulary` keeps who
# taught which, and forgets them). Only word-sized labels: a page title or a sentence used as a label is not
# a word, and making it one hides its words from BM25.
# At index time such a word also yields its in-dictionary sub-words (心跳间隔 -> 心跳, 间隔) so a
# question that says only 心跳 still finds it; questions are not split (splitting both sides,
# as jieba's search mode does, cost 5 points of R@5 on domainrag_zh, see bench/RESULTS.md).
MAX_USER_WORD = 8
INDEX_SUBWORDS = False


def user_word_candidates(words: Iterable[str]) -> list[str]:
    """The words, normalized, that `add_user_words` would consider (it skips every other one without
    teaching it): kept with a graph's entity linker, so that a new process passes these few instead of
    looking at every label again. Taught in the same order, they leave jieba in the same state."""
    out = []
    for word in words:
        word = normalize_text(word).strip()
        if 2 <= len(word) <= MAX_USER_WORD and _WORDLIKE.match(word):
            out.append(word)
    return out


def add_user_words(words: Iterable[str], vocabulary: Vocabulary = PROCESS) -> int:
    """Teach jieba the entity labels/aliases and synonyms so they come out as single words; how many it
    did not know. They stay until `vocabulary` forgets them (a knowledge base's own, when it closes) or
    `reset_user_words`; jieba's dictionary cannot hold spaces, and ASCII-only words are kept whole anyway."""
    return teach(user_word_candidates(words), vocabulary)


def taught_words(words: Iterable[str]) -> set[str]:
    """The ones among `words` that jieba knows only because `add_user_words` taught them: text
    containing them is cut differently than before they were taught."""
    return {w for w in (normalize_text(w).strip() for w in words) if is_taught(w)}


def normalize_text(text: str) -> str:
    """NFKC (full-width letters/digits/punctuation to half-width), no case change, and traditional Chinese characters
    as their simplified ones (`fold_traditional`)."""
    return fold_traditional(unicodedata.normalize("NFKC", text))


def fold_traditional(text: str) -> str:
    """結算 -> 结算, 後臺 -> 后台: one character for one (offsets do not move), from OpenCC's traditional-to-simplified
    character table, so that a note written in traditional characters (Taiwan, Hong Kong) and a question in simplified
    ones (or the other way round, or a relation table in either) meet on the same words, and jieba, whose dictionary
    is simplified, cuts them as words. Characters of several meanings fold to one (乾 and 干 both to 干) on both sides
    alike: a few more matches, none lost. Applied wherever text is matched (`normalize_text`), never to what is shown."""
    table, pattern = _traditional()
    return text.translate(table) if pattern is not None and pattern.search(text) else text


def traditional_characters() -> re.Pattern | None:
    """A pattern of the characters `fold_traditional` changes (None when it changes none)."""
    return _traditional()[1]


@lru_cache(maxsize=1)
def _traditional() -> tuple[dict[int, int], re.Pattern | None]:
    """(str.translate table, a pattern of its characters) from the `opencc` package's TSCharacters.txt (OpenCC's
    dictionary, Apache-2.0; `opencc-python-reimplemented`, a dependency). A character whose first simplified form is
    outside the Chinese runs the analyzer reads (an astral one) stays; chains (薴 -> 苧 -> 苎) are followed."""
    from importlib.resources import files

    try:
        lines = (files("opencc") / "dictionary" / "TSCharacters.txt").read_text(encoding="utf-8").splitlines()
    except (ModuleNotFoundError, OSError):  # another `opencc` package (OpenCC's own binding) in its place
        import logging

        logging.getLogger("kgrag").warning("traditional Chinese characters are not folded to simplified: the "
                                           "opencc-python-reimplemented package's table is not installed")
        return {}, None
    pairs: dict[str, str] = {}
    for line in lines:
        key, _, values = line.partition("\t")
        first = next(iter(values.split()), "")
        if len(key) == 1 and len(first) == 1 and key != first and _IN_RUNS.match(first):
            pairs[key] = first
    for key, value in pairs.items():
        seen = {key}
        while value in pairs and value not in seen:
            seen.add(value)
            value = pairs[value]
        pairs[key] = value
    if not pairs:
        return {}, None
    return {ord(k): ord(v) for k, v in pairs.items()}, re.compile(f"[{''.join(sorted(pairs))}]")


_IN_RUNS = re.compile(f"[{CJK}]")


class _AccentFolding(dict):
    """str.translate table, filled on first sight of a character: a Latin letter with diacritics
    becomes its base letter (ö -> o, ū -> u), one character for one, so offsets do not move."""

    def __missing__(self, code: int):
        char = chr(code)
        base = "".join(c for c in unicodedata.normalize("NFKD", char) if not unicodedata.combining(c))
        value = base if len(base) == 1 and base.isascii() and base.isalpha() else None
        self[code] = value if value is not None else code
        return self[code]


_ACCENTS = _AccentFolding()


def fold_accents(text: str) -> str:
    """Aschenbrödel -> Aschenbrodel; same length, CJK and ASCII untouched."""
    return text if text.isascii() else text.translate(_ACCENTS)


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


def _cjk_words(run: str, for_index: bool) -> tuple[tuple[str, ...], ...]:
    """jieba's accurate-mode words of a Chinese run (stop words dropped), each with the words that stand at the same
    position: for the index, the sub-words of a user word; in a run written in traditional characters, the mainland
    words of a Taiwan one (`_regional_words`). The run is folded to simplified characters here (`fold_traditional`).
    Kept for the runs met last (`RUN_CACHE`), as long as jieba's words stay the same (`vocabulary_version`): a
    document's title and headings come with each of its chunks, and prose repeats its short runs between
    punctuation (a fifth to two thirds of the Chinese characters of the shared sets' corpora)."""
    return _cut_run(run, for_index and INDEX_SUBWORDS, vocabulary_version())


RUN_CACHE = 16_384  # runs: ~13 MB at most (~800 bytes a run and its words)


@lru_cache(maxsize=RUN_CACHE)
def _cut_run(run: str, subwords: bool, _vocabulary: int) -> tuple[tuple[str, ...], ...]:
    return tuple(tuple(group) for group in _cut_words(run, subwords))


def _cut_words(run: str, subwords: bool) -> Iterator[list[str]]:
    dt = _jieba()
    folded = fold_traditional(run)
    regional = _regional_words(folded) if folded != run else []  # only a run written in traditional characters
    run = folded
    end = 0
    for word in dt.cut(run, HMM=True):
        start, end = end, end + len(word)
        also = [term for at, _, terms in regional if start <= at < end for term in terms]
        if word in CHINESE_STOPWORDS and not also:
            continue
        group = [word] if word not in CHINESE_STOPWORDS else []
        if subwords and is_taught(word):
            n = len(word)
            for size in (2, 3):
                for i in range(n - size + 1):
                    sub = word[i : i + size]
                    if sub != word and dt.FREQ.get(sub) and sub not in CHINESE_STOPWORDS and sub not in group:
                        group.append(sub)
        group += [term for term in also if term not in group]
        yield group


def _regional_words(folded: str) -> list[tuple[int, int, list[str]]]:
    """(start, end, the mainland words' terms) of each Taiwan word (OpenCC's TWPhrasesRev: 記憶體 -> 内存, 伺服器 -> 服务器,
    資料庫 -> 数据库, 執行緒 -> 线程) in a run written in traditional characters (`folded`: the run after
    `fold_traditional`), so that a note from Taiwan and a question from the mainland meet on them too (and back). The
    caller asks only of such runs: simplified text is read as before."""
    table, pattern = _regional()
    if pattern is None:
        return []
    version = vocabulary_version()
    return [(m.start(), m.end(), [t for alt in table[m.group()] for t in _mainland_terms(alt, version)])
            for m in pattern.finditer(folded)]


@lru_cache(maxsize=4096)
def _mainland_terms(word: str, _vocabulary: int) -> tuple[str, ...]:
    """A mainland word's terms as jieba cuts it with the words it knows now (`vocabulary_version`)."""
    return tuple(t for t in _jieba().cut(word, HMM=False) if t not in CHINESE_STOPWORDS)


@lru_cache(maxsize=1)
def _regional() -> tuple[dict[str, tuple[str, ...]], re.Pattern | None]:
    """Taiwan word -> the mainland words, both folded to simplified characters, from the `opencc` package's
    TWPhrasesRev.txt (words of two characters or more, Chinese characters only), and a pattern of the Taiwan words
    (longest first)."""
    from importlib.resources import files

    try:
        lines = (files("opencc") / "dictionary" / "TWPhrasesRev.txt").read_text(encoding="utf-8").splitlines()
    except (ModuleNotFoundError, OSError):
        return {}, None
    table: dict[str, tuple[str, ...]] = {}
    for line in lines:
        key, _, values = line.partition("\t")
        key = fold_traditional(key.strip())
        alternatives = tuple(dict.fromkeys(fold_traditional(v) for v in values.split() if _ALL_CJK.match(v)))
        alternatives = tuple(v for v in alternatives if v != key)
        if len(key) >= 2 and _ALL_CJK.match(key) and alternatives:
            table[key] = alternatives
    if not table:
        return {}, None
    return table, re.compile("|".join(sorted(table, key=len, reverse=True)))


_ALL_CJK = re.compile(f"^[{CJK}]+$")


def _runs(text: str) -> Iterator[tuple[str, bool]]:
    """The runs `analyze` reads (NFKC, accents folded; a Chinese run in its own characters, which `_cjk_words` folds),
    each with whether it is a run of Chinese characters."""
    for m in _RUN.finditer(fold_accents(unicodedata.normalize("NFKC", text))):
        run = m.group()
        yield run, bool(_CJK_ONLY.match(run))


def analyze(text: str, for_index: bool = False) -> list[Term]:
    """Terms of `text` with sequential positions (alternatives share a position).

    `for_index` adds the sub-words of user-dictionary words (see `add_user_words`)."""
    out: list[Term] = []
    pos = 0
    for run, chinese in _runs(text):
        if chinese:
            for group in _cjk_words(run, for_index):
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


def surface_words(terms: Iterable[str], *texts: str) -> list[str]:
    """Each term as a word of the first text that holds it, in that text's own spelling: the stem `redi` as
    `Redis`, `cach` as `cache`, `capit` as `capital` (what a person reads in a "why"). Chinese terms are words
    already, in the text's own characters (traditional or simplified); a term no text spells is kept as it is.

    The texts are read only until every term that a text can spell has its spelling (a hit's "why" used to
    stem every word of its chunk, and of the question, for each hit)."""
    terms = list(terms)
    missing = {term for term in terms if not _CJK_ONLY.match(term)}  # a Chinese run is never spelled otherwise
    spelled: dict[str, str] = {}
    for text in texts:
        if not missing:
            break
        # Each distinct run once, in order of first appearance: a run seen again spells nothing new.
        for run in dict.fromkeys(_OTHER_RUN.findall(fold_accents(normalize_text(text)))):
            lowered = run.lower()
            parts = [run] + ([p for p in _SEP.split(run) if p] if not lowered.isalpha() else [])
            for part in parts:
                low = part.lower()
                for term in ([_stem(low)] if low.isalpha() else [low]):
                    if term in missing:
                        spelled[term] = part
                        missing.discard(term)
            if not missing:
                break
    _spell_chinese(terms, texts, spelled)
    return [spelled.get(term, term) for term in terms]


def _spell_chinese(terms: list[str], texts: tuple[str, ...], spelled: dict[str, str]) -> None:
    """A Chinese term (simplified: `fold_traditional`) as the first text that holds it writes it: 结算 as 結算 in a
    note written in traditional characters, and a mainland word as the Taiwan word it stands beside (服务器 as 伺服器,
    `_regional_words`). The folding is one character for one, so the place it has in the folded text is its place in
    the text."""
    chinese = [term for term in terms if _CJK_ONLY.match(term) and term not in spelled]
    for text in texts:
        if not chinese:
            return
        folded = fold_traditional(text)
        if folded == text:  # no traditional character: the terms are spelled as it writes them
            continue
        for term in list(chinese):
            at = folded.find(term)
            if at >= 0:
                spelled[term] = text[at : at + len(term)]
                chinese.remove(term)
        for start, end, mainland in _regional_words(folded) if chinese else ():  # a mainland word held as Taiwan's
            for term in mainland:
                if term in chinese:
                    spelled[term] = text[start:end]
                    chinese.remove(term)


def dictionary_words(word: str) -> list[str]:
    """A Chinese word cut by jieba's dictionary alone, stop words dropped: the question's `要炖`, which jieba's
    HMM made up from two characters it had not seen together, is `炖` as the documents around it were cut."""
    return [w for w in _jieba().cut(word, HMM=False) if w not in CHINESE_STOPWORDS and w.strip()]


def split_runs(text: str) -> tuple[list[str], list[str]]:
    """(the terms of `text`'s non-Chinese runs, its Chinese runs uncut). Together with `cjk_terms` of
    each run these are `query_terms(text)`'s terms: a caller that only asks whether some words are
    among them can leave jieba's cut (the costly part) to the runs that contain one of those words."""
    terms: list[str] = []
    runs: list[str] = []
    for run, chinese in _runs(text):
        if chinese:
            runs.append(run)
        else:
            terms.extend(_ascii_terms(run))
    return terms, runs


def cjk_terms(run: str) -> list[str]:
    """The terms `analyze` gives a run of Chinese characters (a `split_runs` run)."""
    return [term for group in _cjk_words(run, False) for term in group]


def query_terms(text: str) -> list[str]:
    """Distinct terms of a query, in order of first appearance."""
    seen: dict[str, None] = {}
    for term, _ in analyze(text):
        seen.setdefault(term, None)
    return list(seen)


def idf_weights(df: Mapping[str, int], n: int) -> dict[str, float]:
    """Word -> how much of a question it carries: its idf over `n` chunks, log(1 + n / (df + 1))."""
    return {w: math.log(1 + n / (d + 1)) for w, d in df.items()}


def compound_terms(terms: list[str], limit: int = 2) -> list[str]:
    """User-dictionary words that contain a query word: 心跳 -> 心跳间隔 (jieba keeps the compound
    whole in the text, so the query word alone would not match it)."""
    out: list[str] = []
    for term in terms:
        for word in sorted(compounds_of(term))[:limit]:
            if word not in terms and word not in out:
                out.append(word)
    return out


_CJK_RUN = re.compile(rf"[{CJK}]+")


def cjk_bigrams(text: str) -> list[str]:
    """Overlapping character pairs of every Chinese run (a lone character stands for itself).

    A second view of Chinese text that does not depend on where jieba cuts: a name that jieba
    splits one way in the question and another way in the passage still shares its pairs."""
    grams: list[str] = []
    for run in _CJK_RUN.findall(normalize_text(text)):
        if len(run) == 1:
            grams.append(run)
        else:
            grams.extend(run[i : i + 2] for i in range(len(run) - 1))
    return grams


class KgAnalyzer(Tokenizer):
    """whoosh analyzer around `analyze`. Lives in an importable module because whoosh pickles it."""

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self)

    def __hash__(self) -> int:
        return hash(type(self).__name__)

    def terms(self, value: str) -> list[Term]:
        return analyze(value, for_index=True)

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
        for term, pos in self.terms(value):
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


class GramAnalyzer(KgAnalyzer):
    """whoosh analyzer for the `grams` field: `cjk_bigrams`, positions in order."""

    def terms(self, value: str) -> list[Term]:
        return [(gram, pos) for pos, gram in enumerate(cjk_bigrams(value))]
