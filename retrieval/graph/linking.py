"""Text -> [Mention]: a spaCy pipeline whose matcher component links entity labels/aliases to entity IRIs.

spaCy is the pipeline and the container of document chunks (`Doc`, spans with `kb_id_`); a question
is matched by the same matcher without a `Doc` (see `EntityLinker`). The matching itself is an
Aho-Corasick automaton over characters (pyahocorasick), because jieba may segment an alias
differently from the surrounding text and spaCy's Chinese tokenizers either split per character
(ASCII included) or need a model download. ASCII surfaces are matched case-insensitively and only
on word boundaries (`LORA-02` never matches inside `LORA-021`); overlapping matches are resolved
leftmost-longest.
"""

from __future__ import annotations

import os
import pickle
import re
import tempfile
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import ahocorasick

from retrieval.index.analysis import (
    CJK,
    ENGLISH_STOPWORDS,
    fold_accents,
    fold_traditional,
    normalize_text,
    user_word_candidates,
)
from retrieval.types import Mention

__all__ = ["LINKER_CACHE", "EntityLinker", "EntityMatcher", "MatchedSurface", "cached_linker"]

LINKER_CACHE = "linker.cache"
_LINKER_FORMAT = 3  # bump when EntityLinker/EntityMatcher change what they hold or how surfaces are keyed

_WORDCHAR = re.compile(r"[A-Za-z0-9_]")
# Surfaces made only of letters (words, not identifiers such as LORA-02 or max_threads) are
# the ones whose case carries meaning in running text.
_PLAIN_WORDS = re.compile(r"^[a-z]+(?:[ '.][a-z]+)*$")
_TOKEN = re.compile(rf"[A-Za-z0-9_]+|[{CJK}]|\S")


def _fold(text: str) -> str:
    """Lower-case, accents off (Akinoshū = akinoshu), traditional Chinese characters as simplified (看門狗 = 看门狗),
    without changing the length, so offsets in the folded text are offsets in `text`."""
    text = fold_traditional(fold_accents(text))
    lowered = text.lower()
    if len(lowered) == len(text):
        return lowered
    return "".join(c.lower() if len(c.lower()) == 1 else c for c in text)


@dataclass(frozen=True)
class MatchedSurface:
    start: int
    end: int
    surface: str
    entities: tuple[str, ...]  # every entity with this surface (an ambiguous alias has several)


class EntityMatcher:
    """Aho-Corasick over the folded surfaces of every entity label and alias."""

    def __init__(self, surfaces: Iterable[tuple[str, str]]) -> None:
        table: dict[str, dict[str, bool]] = {}
        for surface, entity in surfaces:
            surface = normalize_text(surface).strip()
            key = _fold(surface)
            if len(key) < 2 or key in ENGLISH_STOPWORDS:
                continue  # one-character or stop-word surfaces would link everywhere
            bucket = table.setdefault(key, {})
            # Remember whether any surface of this entity under this key is written all lower case.
            bucket[entity] = bucket.get(entity, False) or surface == key
        self.automaton = ahocorasick.Automaton()
        for key, entities in table.items():
            self.automaton.add_word(key, (key, tuple(entities), tuple(e for e, lower in entities.items() if lower)))
        self.size = len(table)
        if self.size:
            self.automaton.make_automaton()

    def find(self, text: str, strict_case: bool = False) -> list[MatchedSurface]:
        """Surfaces in `text`, leftmost-longest.

        With `strict_case` (used on documents, not on questions people type in lower case), an
        all-lower-case occurrence only links entities that have an all-lower-case surface: the
        title "In Heaven" is not linked in "...rest in heaven...", the identifier "nginx" is.
        """
        if not self.size or not text:
            return []
        folded = _fold(text)
        candidates = []
        for end_index, (key, entities, lower_entities) in self.automaton.iter(folded):
            start, end = end_index - len(key) + 1, end_index + 1
            if _WORDCHAR.match(key[0]) and start > 0 and _WORDCHAR.match(folded[start - 1]):
                continue
            if _WORDCHAR.match(key[-1]) and end < len(folded) and _WORDCHAR.match(folded[end]):
                continue
            if strict_case and _PLAIN_WORDS.match(key) and text[start:end] == key:
                entities = lower_entities
                if not entities:
                    continue
            candidates.append((start, end, entities))
        candidates.sort(key=lambda c: (c[0], -(c[1] - c[0])))
        chosen: list[MatchedSurface] = []
        last_end = -1
        for start, end, entities in candidates:
            if start >= last_end:
                chosen.append(MatchedSurface(start, end, text[start:end], entities))
                last_end = end
        return chosen


def _normalize_with_offsets(text: str) -> tuple[str, list[int] | None]:
    """`text` NFKC-normalized a character at a time and, when a character became more or fewer than one, the
    original index of every normalized character (None: the same index)."""
    if unicodedata.is_normalized("NFKC", text):
        return text, None
    normalized = text.translate(_NFKC)  # in C, a dict look-up a character (Chinese text: its full-width commas)
    resized = _NFKC.resized.intersection(text)
    if not resized:
        return normalized, None
    origin: list[int] = []
    done = 0
    for i in sorted(_positions(text, resized)):
        origin.extend(range(done, i))
        origin.extend([i] * len(_NFKC[ord(text[i])]))
        done = i + 1
    origin.extend(range(done, len(text)))
    return normalized, origin


def _positions(text: str, chars: set[str]) -> list[int]:
    """Where each of `chars` stands in `text` (`str.find`, in C)."""
    out = []
    for char in chars:
        at = text.find(char)
        while at >= 0:
            out.append(at)
            at = text.find(char, at + 1)
    return out


class _NfkcTable(dict):
    """Code point -> its character NFKC-normalized, for `str.translate`, filled as characters come."""

    def __init__(self) -> None:
        super().__init__()
        self.resized: set[str] = set()  # characters normalized to more or fewer than one character

    def __missing__(self, code: int) -> str:
        folded = self[code] = unicodedata.normalize("NFKC", chr(code))
        if len(folded) != 1:
            self.resized.add(chr(code))
        return folded


_NFKC = _NfkcTable()


def _make_tokenizer(vocab):
    from spacy.tokens import Doc

    def tokenize(text: str) -> Doc:
        # The Doc must spell `text` exactly (words + one trailing space each), or character offsets
        # drift after every run of whitespace ("\n\n", "  |  "): runs become whitespace tokens.
        words: list[str] = []
        spaces: list[bool] = []
        position = 0
        for m in _TOKEN.finditer(text):
            gap = text[position : m.start()]
            if gap:
                if words and gap[0] == " " and not spaces[-1]:
                    spaces[-1], gap = True, gap[1:]
                if gap:
                    words.append(gap)
                    spaces.append(False)
            words.append(m.group())
            spaces.append(False)
            position = m.end()
        tail = text[position:]
        if tail:
            if words and tail[0] == " ":
                spaces[-1], tail = True, tail[1:]
            if tail:
                words.append(tail)
                spaces.append(False)
        return Doc(vocab, words=words, spaces=spaces)

    return tokenize


def _register_component() -> None:
    from spacy.language import Language

    if Language.has_factory("kg_entity_linker"):
        return

    @Language.factory("kg_entity_linker")
    def _create(nlp, name):  # noqa: ANN001 - spaCy's factory signature
        return _LinkerComponent()


class _LinkerComponent:
    """spaCy component: puts one span per (surface, entity) in `doc.spans["kg_mentions"]`, best one in `doc.ents`."""

    matcher: EntityMatcher | None = None

    def __call__(self, doc):
        spans, ents = [], []
        if self.matcher is not None:
            for match in self.matcher.find(doc.text, strict_case=doc.user_data.get("strict_case", False)):
                for i, entity in enumerate(match.entities):
                    span = doc.char_span(match.start, match.end, label="ENTITY", kb_id=entity, alignment_mode="expand")
                    if span is None:
                        continue
                    spans.append(span)
                    if i == 0:
                        ents.append(span)
        doc.spans["kg_mentions"] = spans
        try:
            doc.ents = ents
        except ValueError:  # 'expand' alignment made two spans overlap: keep the span group only
            pass
        return doc


class EntityLinker:
    """Links entities; `labels` maps an entity IRI to its preferred label.

    Documents go through the spaCy pipeline (`link_many`, `nlp`: a `Doc` per chunk with the mentions
    as spans). A question (`link`) is matched by the same `EntityMatcher` without building a `Doc`:
    the spans of our tokenizer always fall on match boundaries, so the mentions are the same, and a
    `kg query` in a new process does not pay for importing spaCy (about 0.7 s of a 1 s budget).
    """

    def __init__(self, surfaces: Iterable[tuple[str, str]], labels: dict[str, str]) -> None:
        self.labels = labels
        self.matcher = EntityMatcher(surfaces)
        self._nlp = None
        self.user_words: list[str] = []  # see `cached_linker`

    def __getstate__(self) -> dict:
        return {**self.__dict__, "_nlp": None}  # the spaCy pipeline is rebuilt on demand, never pickled

    @property
    def nlp(self):
        """The spaCy pipeline (blank multilingual, our tokenizer, the linker component), built on first use."""
        if self._nlp is None:
            import spacy

            _register_component()
            nlp = spacy.blank("xx")
            nlp.tokenizer = _make_tokenizer(nlp.vocab)
            component = nlp.add_pipe("kg_entity_linker")
            component.matcher = self.matcher
            self._nlp = nlp
        return self._nlp

    def _mentions(self, doc) -> list[Mention]:
        return [
            Mention(
                entity=span.kb_id_,
                label=self.labels.get(span.kb_id_, span.text),
                surface=span.text,
                start=span.start_char,
                end=span.end_char,
            )
            for span in doc.spans["kg_mentions"]
        ]

    def link(self, text: str, strict_case: bool = False) -> list[Mention]:
        """Mentions in a question (case-insensitive) or, with `strict_case`, in a document.

        Matching runs on the NFKC form (full-width ＬＯＲＡ－０２ is LORA-02); offsets and surfaces
        are mapped back to `text` as given.
        """
        normalized, origin = _normalize_with_offsets(text)
        mentions = [
            Mention(entity, self.labels.get(entity, match.surface), match.surface, match.start, match.end)
            for match in self.matcher.find(normalized, strict_case=strict_case)
            for entity in match.entities
        ]
        return _map_back(text, mentions, origin)

    def link_many(self, texts: Iterable[str], strict_case: bool = True) -> Iterable[list[Mention]]:
        """Mentions of every text (document chunks; by default case-strict, see `EntityMatcher.find`)."""
        for text in texts:
            yield self.link(text, strict_case=strict_case)

    def link_many_with_spacy(self, texts: Iterable[str], strict_case: bool = True) -> Iterable[list[Mention]]:
        """`link_many` through the spaCy pipeline: the same mentions, as the spans of a `Doc` per text."""
        nlp = self.nlp
        for text in texts:
            normalized, origin = _normalize_with_offsets(text)
            # spaCy refuses a longer text (E088); the readers cut such runs, this is the last guard.
            doc = nlp.make_doc(normalized[: nlp.max_length])
            doc.user_data["strict_case"] = strict_case
            for _, component in nlp.pipeline:
                doc = component(doc)
            yield _map_back(text, self._mentions(doc), origin)


def cached_linker(view, digest: str = "", folder: Path | None = None) -> EntityLinker:
    """The linker of a graph view. With the content hash of the graph.ttl it was derived from (`digest`)
    and the data dir (`folder`), it is unpickled from `linker.cache` when that was built from the same
    content (tens of milliseconds, where building the automaton over ~67k labels took most of a cold
    `kg query`), else built and saved there for the next process. A graph change changes the hash, so a
    stale cache is never read; one that cannot be read or written only costs the build."""
    path = Path(folder) / LINKER_CACHE if digest and folder is not None else None
    if path is not None:
        linker = _read_linker(path, digest)
        if linker is not None:
            return linker
    linker = EntityLinker(view.link_surfaces(), view.labels())
    # The labels worth teaching jieba (Chinese words of 2-8 characters): a few of ~67k on a large graph.
    linker.user_words = user_word_candidates(s for s, _ in view.surfaces())
    if path is not None:
        _write_linker(path, digest, linker)
    return linker


def _read_linker(path: Path, digest: str) -> EntityLinker | None:
    import gc

    try:
        with path.open("rb") as fh:
            # The cache is this data dir's own file, written by kgrag (see _write_linker).
            fmt, cached_digest = pickle.load(fh)  # noqa: S301
            if fmt != _LINKER_FORMAT or cached_digest != digest:
                return None
            gc.disable()  # many small objects: the collector would rescan them while they load
            try:
                linker = pickle.load(fh)  # noqa: S301
            finally:
                gc.enable()
    except Exception:  # missing, cut short, from another version: build instead
        return None
    return linker if isinstance(linker, EntityLinker) else None


def _write_linker(path: Path, digest: str, linker: EntityLinker) -> None:
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(prefix=".linker-", dir=path.parent)
        with os.fdopen(fd, "wb") as fh:
            pickle.dump((_LINKER_FORMAT, digest), fh, protocol=pickle.HIGHEST_PROTOCOL)
            pickle.dump(linker, fh, protocol=pickle.HIGHEST_PROTOCOL)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except (OSError, pickle.PicklingError, RecursionError):
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)


def _map_back(text: str, mentions: list[Mention], origin: list[int] | None) -> list[Mention]:
    """Offsets and surfaces in the NFKC form -> the same in `text` as given."""
    if origin is None:
        return mentions
    out = []
    for m in mentions:
        start, end = origin[m.start], origin[m.end - 1] + 1
        out.append(Mention(m.entity, m.label, text[start:end], start, end))
    return out
