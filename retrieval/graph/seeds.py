"""Question mentions -> seed weights, and an entity's documents -> which entity they mention the question is after.

The two judgements graph expansion needs from the text. How much each entity the question names
counts: its specificity (an IDF over mentions), less for a short form ("Henry King" for "Henry
King (director)") or a lower-case common phrase ("place of birth"). And among the entities the
documents about an entity mention, which the question asks about: the words around each mention
("directed by Y" for "the director of X"), with relation words that name the same relation from
either end (`data/relation_words.txt`: husband/wife/married, director/directed, ...).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from kg.store import KnowledgeGraph
from retrieval.catalog.docstore import DocStore
from retrieval.index.analysis import (
    cjk_terms,
    normalize_text,
    query_terms,
    split_runs,
    vocabulary_version,
)
from retrieval.types import Mention

__all__ = ["GraphEvidence", "fold_label", "relation_word_prefixes"]

MENTION_WINDOW = 60  # characters each side of a mention that tell what the mention is about
COMMON_PHRASE_WEIGHT = 0.5  # a common phrase that is the only entity of a question
SHORT_FORM_WEIGHT = 0.6  # a seed linked through "Henry King" rather than "Henry King (director)"


def fold_label(text: str) -> str:
    """A label as compared with a title or a typed surface: NFKC, case-folded, single spaces."""
    return " ".join(normalize_text(text).casefold().split())


class GraphEvidence:
    """Per knowledge base, with caches that `invalidate()` clears after every write."""

    def __init__(self, store: DocStore, graph: KnowledgeGraph) -> None:
        self.store = store
        self.graph = graph
        self._weights: dict[str, float] | None = None
        self._contexts: dict[str, list[_Context]] = {}
        self.invalidate()

    def invalidate(self) -> None:
        self._weights = None
        self._contexts = {}
        # a Chinese run -> its words; a write may teach jieba new words (entity labels), which changes the cuts
        self._runs: dict[str, frozenset[str]] = {}
        self._anchors: dict[tuple[str, int], list[tuple[str, float, str]]] = {}
        self._mention_counts: dict[str, int] | None = None
        self._about: dict[str, list[tuple[str, str, int]]] = {}
        self._mentioning: dict[tuple[str, int], list[tuple[str, int]]] = {}
        self._plans: dict[tuple, object] = {}

    def _cached(self, table: dict, key, compute):
        """`table[key]`, computed on first use; each table holds at most 50,000 keys until the next write."""
        found = table.get(key)
        if found is None:
            if len(table) > 50_000:
                table.clear()
            found = table[key] = compute()
        return found

    def about_chunks(self, iri: str) -> list[tuple[str, str, int]]:
        """`DocStore.about_chunks`, cached until the next write (a question reaches ~50 entities,
        and the same hubs recur from question to question)."""
        return self._cached(self._about, iri, lambda: self.store.about_chunks(iri))

    def chunks_mentioning(self, iri: str, limit: int) -> list[tuple[str, int]]:
        """`DocStore.chunks_mentioning`, cached until the next write."""
        return self._cached(self._mentioning, (iri, limit), lambda: self.store.chunks_mentioning(iri, limit))

    def anchors(self, iri: str, limit: int) -> list[tuple[str, float, str]]:
        """The sections anchored to an entity, strongest first (cached until the next write)."""
        from retrieval.catalog.anchors import anchors_about

        return self._cached(self._anchors, (iri, limit), lambda: anchors_about(self.store.db, iri, limit))

    def cached_plan(self, iri: str, settings, plan: Callable):
        """`plan(store, iri, settings, self)`: what a reached entity brings to graph expansion (`EntityChunks`),
        judged once per entity and expansion settings until the next write."""
        return self._cached(self._plans, (iri, settings), lambda: plan(self.store, iri, settings, self))

    def prefetch(self, iris: list[str], anchor_limit: int, mention_limit: int) -> None:
        """Read what `about_chunks`, `chunks_mentioning` and `anchors` (0 = not wanted) will be asked about
        these entities in one statement per table, for those not cached yet: a question's expansion reaches
        ~50 entities, which were three look-ups each."""
        from retrieval.catalog.anchors import anchors_about_many

        wanted = list(dict.fromkeys(iris))
        self._fill(self._about, {iri: iri for iri in wanted}, self.store.about_chunks_of)
        self._fill(self._mentioning, {(iri, mention_limit): iri for iri in wanted},
                   lambda missing: self.store.chunks_mentioning_of(missing, mention_limit))
        if anchor_limit > 0:
            self._fill(self._anchors, {(iri, anchor_limit): iri for iri in wanted},
                       lambda missing: anchors_about_many(self.store.db, missing, anchor_limit))

    @staticmethod
    def _fill(table: dict, keys: dict, read_many) -> None:
        """The keys (cache key -> entity) not in `table` read with one `read_many(entities)` -> {entity: rows}."""
        missing = {key: iri for key, iri in keys.items() if key not in table}
        if not missing:
            return
        if len(table) + len(missing) > 50_000:
            table.clear()
        found = read_many(list(missing.values()))
        for key, iri in missing.items():
            table[key] = found[iri]

    def mention_count(self, iri: str) -> int:
        """How many chunks mention the entity (cached until the next write)."""
        if self._mention_counts is None:
            self._mention_counts = self.store.mention_counts()
        return self._mention_counts.get(iri, 0)

    def entity_weight(self, iri: str) -> float:
        """Specificity of an entity: rarely mentioned entities say more about a query (an IDF)."""
        if self._weights is None:
            counts = self.store.mention_counts()
            n = max(1, self.store.stats()["chunks"])
            self._weights = {e: math.log(1 + n / (1 + c)) / math.log(1 + n) for e, c in counts.items()}
        return self._weights.get(iri, 1.0)

    def seed_weights(self, mentions: list[Mention]) -> dict[str, float]:
        """Seed weight = the entity's specificity, less when the question named it only by a short
        form; a lower-case common phrase ("place of birth") is no seed when the question also names
        something else."""
        entities = self.graph.view.entities

        def is_exact(m: Mention) -> bool:
            entity = entities.get(m.entity)
            return entity is not None and fold_label(m.surface) in {fold_label(s) for s in (entity.label, *entity.aliases)}

        # Where a surface is some entity's exact label, its short-form readings are dropped:
        # "Wolfgang Fischer" is Wolfgang Fischer, not also Wolfgang Fischer (athlete).
        exact_spans = {(m.start, m.end) for m in mentions if is_exact(m)}
        seeds: dict[str, float] = {}
        phrases: dict[str, float] = {}
        for m in mentions:
            entity = entities.get(m.entity)
            exact = is_exact(m)
            if not exact and (m.start, m.end) in exact_spans:
                continue
            weight = self.entity_weight(m.entity) * (1.0 if exact else SHORT_FORM_WEIGHT)
            target = phrases if entity is not None and _common_phrase(m.surface, entity.label) else seeds
            target[m.entity] = max(target.get(m.entity, 0.0), weight)
        if not seeds:
            return {iri: w * COMMON_PHRASE_WEIGHT for iri, w in phrases.items()}
        return seeds

    def mention_fit(self, question: str) -> Callable[[str], dict[str, float]]:
        """For expansion: entity -> {entity its documents mention: how well that mention fits the question}.

        Fit = the question's words found around the mention (within MENTION_WINDOW characters,
        compared on 5-character prefixes so "director" meets "directed"), with a mild preference
        for entities mentioned early, then scaled so the best-fitting mention scores 1.
        """
        qprefixes = {_prefix(t) for t in query_terms(question)}
        qprefixes |= relation_word_prefixes(qprefixes)
        chinese = [p for p in qprefixes if not p.isascii()]

        def fit(iri: str) -> dict[str, float]:
            raw = {
                context.entity: (1.0 + context.found(qprefixes, chinese, self._run_words)) / (1.0 + 0.1 * position)
                for position, context in enumerate(self._mention_contexts(iri))
            }
            top = max(raw.values(), default=1.0)
            return {e: v / top for e, v in raw.items()}

        return fit

    def _mention_contexts(self, iri: str) -> list[_Context]:
        """The words around the first mention of each entity the documents about `iri` mention, in text
        order (without the words of `iri`'s own label). Independent of the question, so cached until the
        next write; the Chinese runs are kept uncut (`_run_words` cuts one when a question needs it)."""
        cached = self._contexts.get(iri)
        if cached is not None:
            return cached
        entities = self.graph.view.entities
        mentions = self.store.mentions_about(iri)
        own = frozenset(_prefix(t) for t in query_terms(entities[iri].label)) if iri in entities else frozenset()
        texts = {cid: c.text for cid, c in self.store.chunks(list({m[1] for m in mentions})).items()} if mentions else {}
        seen: set[str] = set()
        out = []
        for entity, chunk_id, start, end in mentions:
            if entity in seen or entity == iri:
                continue
            seen.add(entity)
            text = texts.get(chunk_id, "")
            window = text[max(0, start - MENTION_WINDOW) : start] + " " + text[end : end + MENTION_WINDOW]
            terms, runs = split_runs(window)
            out.append(_Context(entity, frozenset(_prefix(t) for t in terms), tuple(runs), own))
        if len(self._contexts) > 50_000:
            self._contexts.clear()
        self._contexts[iri] = out
        return out

    def _run_words(self, run: str) -> frozenset[str]:
        words = self._runs.get(run)
        if words is None:
            if len(self._runs) > 200_000:
                self._runs.clear()
            words = self._runs[run] = frozenset(_prefix(t) for t in cjk_terms(run))
        return words


@dataclass
class _Context:
    """What surrounds one mention: its non-Chinese words' prefixes, its Chinese runs, and the words of
    the entity the documents are about (which never count); all its words once it is asked about twice."""

    entity: str
    ascii: frozenset[str]
    runs: tuple[str, ...]
    own: frozenset[str]
    asked: bool = False
    words: frozenset[str] | None = None

    def found(self, question: set[str], chinese: list[str], run_words: Callable[[str], frozenset[str]]) -> int:
        """How many of the question's prefixes are among the words here. The first time, a Chinese run
        is cut only when one of the question's Chinese words (`chinese`) is in it (else no word of it
        can match); asked about again (a warm process), the context keeps all its words."""
        if self.words is None and self.asked:
            self.words = (self.ascii | frozenset().union(*map(run_words, self.runs))) - self.own
        if self.words is not None:
            return len(self.words & question)
        self.asked = True
        hits = self.ascii & question
        for run in self.runs:
            if any(p in run for p in chinese):
                hits = hits | (run_words(run) & question)
        return len(hits - self.own)


def _common_phrase(surface: str, label: str) -> bool:
    """"place of birth" typed in lower case where the label is capitalised ("Place of birth"):
    a phrase of the question, not a name. Identifiers (digits, '-', '_') are never phrases."""
    return (
        " " in surface.strip()
        and surface == surface.lower()
        and label != label.lower()
        and all(part.isalpha() for part in surface.split())
    )


def _prefix(term: str) -> str:
    return term[:5] if term.isascii() else term


@lru_cache(maxsize=1)
def _relation_word_groups(_vocabulary: int) -> list[frozenset[str]]:
    """The groups as jieba cuts them with the words it knows now (`vocabulary_version`)."""
    path = Path(__file__).with_name("data") / "relation_words.txt"
    groups = []
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            groups.append(frozenset(_prefix(t) for word in line.split(",") for t in query_terms(word)))
    return groups


def relation_word_prefixes(prefixes: set[str]) -> set[str]:
    """The other words of each relation-word group a question uses (husband -> wife, married ...)."""
    out: set[str] = set()
    for group in _relation_word_groups(vocabulary_version()):
        if group & prefixes:
            out |= group
    return out
