"""Words taught to jieba -> jieba's one dictionary per process, with who taught each word, so it can forget them.

kgrag teaches jieba each knowledge base's entity labels, aliases and synonyms (`analysis.add_user_words`)
so that they come out as single words. jieba has one tokenizer per process (`jieba.dt`, ~100 MB once its
dictionary is loaded), so the words are process-wide: a second knowledge base open in the same process
cuts its text with the first one's words too. One `Vocabulary` per knowledge base records the words it
asked for; when it closes they leave again, unless another open one asked for them too. That makes
knowledge bases opened one after another (`kg eval` over several sets, the test suite) each cut as in a
process of its own; two open at the same time still share their words, and what one of them indexed
while the other's words were taught stays cut that way.

Forgetting undoes jieba's `add_word` key by key (each key's value before the first teaching is kept)
instead of reading jieba's dictionary again (0.5-3 s): `reset_user_words` brings the whole dictionary back
to jieba's own in ~0.2 ms after ten words taught, ~15 ms after a thousand (teaching them took ~10x that).
An open knowledge base teaches its words again on its next use (`Vocabulary.refresh`), so a reset never
leaves it cutting questions unlike its index.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from functools import lru_cache

__all__ = ["PROCESS", "Vocabulary", "compounds_of", "is_taught", "reset_user_words", "taught", "teach", "tokenizer",
           "vocabulary_version"]

_lock = threading.Lock()


@lru_cache(maxsize=1)
def tokenizer():
    """jieba's tokenizer, its dictionary read lazily from disk (`retrieval.index.jieba_dict`)."""
    from retrieval.index.jieba_dict import load_tokenizer

    return load_tokenizer()


class Vocabulary:
    """The words one owner (a knowledge base) asked jieba to learn: they leave when it `forget`s them."""

    def __init__(self, name: str = "") -> None:
        self.name = name
        self.words: dict[str, None] = {}  # every word it asked for that jieba did not know, in order
        self._resets_seen = _state.resets

    def __repr__(self) -> str:
        return f"Vocabulary({self.name!r}, {len(self.words)} words)"

    def refresh(self) -> int:
        """After a `reset_user_words`: teach jieba this owner's words again (an integer compare otherwise)."""
        resets = _state.resets
        if self._resets_seen == resets:
            return 0
        added = teach(list(self.words), self)
        self._resets_seen = resets  # after: another thread's query does not go on before the words are back
        return added

    def forget(self) -> int:
        """The words only this owner asked for leave jieba's dictionary; how many left."""
        with _lock:
            gone = {w for w in self.words if _state.drop_owner(w, self)}
            self.words.clear()
            _state.remove(gone)
        return len(gone)


def _subwords(word: str) -> list[str]:
    """The two- and three-character parts of `word` (not itself), in order."""
    return [word[i : i + size] for size in (2, 3) for i in range(len(word) - size + 1) if size < len(word)]


class _Taught:
    """What the teachings changed in jieba's dictionary, to undo it exactly."""

    def __init__(self) -> None:
        self.freq: dict[str, int] = {}  # taught word -> the frequency it was given, in teaching order
        self.owners: dict[str, set[Vocabulary]] = {}
        self.compounds: dict[str, set[str]] = {}  # dictionary sub-word -> taught words containing it
        self.pristine: dict[str, int | None] = {}  # dictionary key a teaching changed -> jieba's own value (None: absent)
        self.total: int | None = None  # jieba's own total, read at the first teaching
        self.version = 0
        self.resets = 0

    def drop_owner(self, word: str, owner: Vocabulary) -> bool:
        """Whether `word` is left without an owner once `owner` lets it go."""
        owners = self.owners.get(word)
        if owners is None:
            return False
        owners.discard(owner)
        return not owners

    def add(self, word: str, owner: Vocabulary, dt) -> None:
        freq = dt.FREQ
        for end in range(1, len(word) + 1):
            key = word[:end]
            if key not in self.pristine:
                value = freq.get(key)
                if value is None or key == word:  # what `add_word` writes: the word, and prefixes jieba lacks
                    self.pristine[key] = value
        if self.total is None:
            self.total = dt.total
        for sub in _subwords(word):
            if freq.get(sub):
                self.compounds.setdefault(sub, set()).add(word)
        n = max(dt.suggest_freq(word, tune=False), 5)
        dt.add_word(word, freq=n)
        self.freq[word] = n
        self.owners[word] = {owner}

    def remove(self, gone: set[str]) -> None:
        """Undo the teaching of `gone`; the other taught words keep the frequencies they were taught with."""
        if not gone:
            return
        dt = tokenizer()
        for word in gone:
            del self.freq[word], self.owners[word]
        kept_prefixes = {word[:end] for word in self.freq for end in range(1, len(word))}
        for word in gone:
            for end in range(1, len(word) + 1):
                key = word[:end]
                if key not in self.pristine or key in self.freq:
                    continue
                value = self.pristine[key]
                if key in kept_prefixes:  # jieba finds a longer word only through its prefixes
                    dt.FREQ[key] = 0 if value is None else value
                    continue
                if value is None:
                    del dt.FREQ[key]
                else:
                    dt.FREQ[key] = value
                del self.pristine[key]
        assert self.total is not None
        dt.total = self.total + sum(self.freq.values())
        for word in gone:
            self.compounds.pop(word, None)  # a dictionary word no more: nothing is found through it
            for sub in _subwords(word):
                holders = self.compounds.get(sub)
                if holders is not None:
                    holders.discard(word)
                    if not holders:
                        del self.compounds[sub]
        self.version += 1


_state = _Taught()
PROCESS = Vocabulary("process")  # words taught outside any knowledge base: only `reset_user_words` forgets them


def teach(words: Iterable[str], owner: Vocabulary = PROCESS) -> int:
    """Teach jieba `words` (normalized, word-sized) for `owner`; how many it did not know before."""
    dt = tokenizer()
    added = 0
    with _lock:
        for word in words:
            owners = _state.owners.get(word)
            if owners is not None:
                owners.add(owner)
                owner.words[word] = None
            elif not dt.FREQ.get(word):
                _state.add(word, owner, dt)
                owner.words[word] = None
                added += 1
        if added:
            _state.version += 1
    return added


def reset_user_words() -> None:
    """jieba's dictionary as jieba ships it: every word kgrag taught forgotten, whoever asked for it (an open
    knowledge base teaches its own again on its next use)."""
    with _lock:
        _state.remove(set(_state.freq))
        _state.resets += 1
        PROCESS.words.clear()  # nobody teaches these again
        PROCESS._resets_seen = _state.resets


def taught() -> dict[str, int]:
    """Taught word -> the frequency jieba was given for it, in teaching order (a copy)."""
    with _lock:
        return dict(_state.freq)


def is_taught(word: str) -> bool:
    return word in _state.freq


def compounds_of(sub: str) -> set[str]:
    """The taught words that contain the dictionary word `sub` (心跳 -> 心跳间隔)."""
    return _state.compounds.get(sub, set())


def vocabulary_version() -> int:
    """Changes whenever jieba learns or forgets a word: text analyzed before may now cut differently."""
    return _state.version
