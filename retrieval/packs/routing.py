"""A question + the registry rows, the pack cards, the packs of its linked entities and a probe of the index in -> a `Routing`: at most two packs, each with a score and a reason, or "all packs", or "out of scope".

Index first: the registry says which kinds of questions go to which pack, a card says what its
pack covers and does not cover, and the question's own words and entities say where its answer
can be. Each signal gives every pack a share in [0, 1]; their weighted sum ranks the packs:

- `registry`: how much of the question a registry row's intent and example questions share;
- `card`: the same for the card's title, covers and key terms;
- `entities`: the linked entities' chunks, by pack; `X documentedIn pack:Y` in the graph decides (unless only a
  pack's own table says so), and so does a pack's own table for an entity no document names;
- `index`: where the best BM25 passages of the whole knowledge base are (rank-discounted).

The best pack is searched; the second joins when its score is close enough. When the best pack
is not convincing the question is searched in all packs (the fallback). A question that matches
what a card says it does *not* cover and nothing else, or whose most specific words no pack holds
(and no other signal names a pack), is out of scope: it is answered with "没有依据 / no basis in the knowledge base" and no hits.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache

from retrieval.index.analysis import (
    cjk_bigrams,
    dictionary_words,
    idf_weights,
    query_terms,
    vocabulary_version,
)
from retrieval.packs.card import PackCard
from retrieval.packs.registry import RegistryRow

__all__ = ["DOCUMENTED", "MAX_PACKS", "NO_BASIS", "TABLED", "PackChoice", "Routing", "RoutingRules", "next_pack", "route"]

MAX_PACKS = 2  # packs searched in one round
MAX_ROUNDS = 2
DOCUMENTED = -1.0  # entity evidence for a pack named by `X documentedIn pack:ID` (not a count of chunks)
TABLED = -2.0  # ... for a pack whose own relation table states an entity no document of any pack mentions
NO_BASIS = "没有依据 / no basis in the knowledge base"


@dataclass(frozen=True)
class RoutingRules:
    """Weights and thresholds of the rule-based router (see `kg.settings`: `route_*`)."""

    weights: Mapping[str, float] = field(default_factory=lambda: {"registry": 0.2, "card": 0.2, "entities": 0.15,
                                                                  "index": 0.45, "example": 0.5,
                                                                  "documented": 0.5})
    example_share: float = 0.6  # a registry row sharing this much of the question is an example of it: it decides
    second_share: float = 0.5  # the second pack joins when its score is at least this share of the first's
    min_confidence: float = 0.3  # below this the best pack is not convincing: search all packs
    min_known: float = 0.6  # the words the knowledge base holds must carry this share of the question's weight ...
    min_coverage: float = 0.45  # ... or one of the best passages must hold this share of it
    probe_depth: int = 30  # BM25 passages looked at by the index signal


@dataclass(frozen=True)
class PackChoice:
    id: str
    score: float
    why: str

    def to_json(self) -> dict:
        return {"id": self.id, "why": self.why}


@dataclass
class Routing:
    """What routing decided for one round. `chosen` is what is searched (all packs on a fallback)."""

    chosen: list[PackChoice]
    scores: dict[str, float] = field(default_factory=dict)  # every pack's rule score
    path: str = "rules"  # rules | llm | forced
    fallback: bool = False
    out_of_scope: str | None = None  # the plain answer when nothing in the knowledge base supports the question
    round: int = 1
    note: str = ""  # e.g. why the LLM's choice was not used as given
    outside: bool = False  # no pack has a basis for it: the documents outside packs were searched (`note` says why)

    def pack_ids(self) -> list[str]:
        return [c.id for c in self.chosen]

    def packs_used(self) -> list[dict]:
        return [c.to_json() for c in self.chosen]

    def to_json(self) -> dict:
        return {"packs_used": self.packs_used(), "path": self.path, "fallback": self.fallback,
                "out_of_scope": self.out_of_scope, "round": self.round, "scores": self.scores, "note": self.note,
                "outside": self.outside}


@dataclass(frozen=True)
class Evidence:
    """What the router knows about a question, gathered by the pipeline before it searches."""

    question: str
    entity_packs: Mapping[str, Mapping[str, float]] = field(default_factory=dict)  # entity label -> {pack: weight}
    probe: Sequence[tuple[str | None, Sequence[str]]] = ()  # best-first BM25 hits: (pack, matched terms)
    doc_frequency: Callable[..., int] | None = None  # (word, field="body") -> chunks of the knowledge base that hold it
    chunks: int = 0  # chunks in the knowledge base
    titles: Mapping[str, Sequence[str]] = field(default_factory=dict)  # pack -> the titles of its documents


def units(text: str) -> set[str]:
    """The comparable pieces of a text: analyzed words (stemmed English, jieba words) and Chinese character pairs."""
    return set(query_terms(text)) | set(cjk_bigrams(text))


def share(question: set[str], profile: set[str]) -> float:
    """How much of the question the profile holds; Chinese pairs count half, as they are cheaper matches."""
    if not question:
        return 0.0
    weight = lambda u: 0.5 if len(u) == 2 and not u.isascii() else 1.0  # noqa: E731
    total = sum(weight(u) for u in question)
    return sum(weight(u) for u in question & profile) / total


def _item_units(item: str) -> tuple[frozenset[str], frozenset[str], frozenset[str]]:
    """(words, ASCII words, Chinese character pairs) of a card item or a document title, cut once."""
    return _cut_item(item, vocabulary_version())


@lru_cache(maxsize=100_000)
def _cut_item(item: str, _vocabulary: int) -> tuple[frozenset[str], frozenset[str], frozenset[str]]:
    """`_item_units` as jieba cuts it with the words it knows now: cut again once it learned or forgot some."""
    words = frozenset(query_terms(item))
    return words, frozenset(w for w in words if w.isascii()), frozenset(cjk_bigrams(item))


def matched_item(question_units: set[str], items: Sequence[str]) -> str | None:
    """The first item the question says: all of its ASCII words, and all of its Chinese words or ≥ 80% of
    their character pairs (jieba may cut the question differently from the item)."""
    for item in items:
        words, ascii_words, grams = _item_units(item)
        if not words or not ascii_words <= question_units:
            continue
        if words <= question_units or (grams and len(grams & question_units) >= 0.8 * len(grams)):
            return item
    return None


def route(
    evidence: Evidence,
    cards: Mapping[str, PackCard],
    rows: Sequence[RegistryRow],
    rules: RoutingRules | None = None,
) -> Routing:
    """The rule-based routing of one question over the packs in `cards`."""
    rules = rules or RoutingRules()
    packs = list(cards)
    if not packs:
        return Routing(chosen=[])
    q = units(evidence.question)
    signals: dict[str, dict[str, float]] = {p: {} for p in packs}
    reasons: dict[str, list[str]] = {p: [] for p in packs}

    for row in rows:
        if row.pack in signals:
            s = max([share(q, units(row.intent))] + [share(q, units(e)) for e in row.examples])
            if s > signals[row.pack].get("registry", 0.0):
                signals[row.pack]["registry"] = s
                signals[row.pack]["example"] = 1.0 if s >= rules.example_share else 0.0
                if s > 0.2:
                    reasons[row.pack] = [r for r in reasons[row.pack] if not r.startswith("registry")]
                    reasons[row.pack].append(f"registry row (line {row.line}) '{_short(row.intent)}' shares {s:.0%} of the question")
    for pack, card in cards.items():
        s = share(q, units(" ".join((card.title, *card.covers, *card.key_terms))))
        signals[pack]["card"] = s
        hit = matched_item(q, card.key_terms) or matched_item(q, card.covers)
        if hit:
            reasons[pack].append(f"card covers '{_short(hit)}'")

    # A question that says a document's title is about that document: not out of scope for lack of known
    # words (below). It adds no score: where the title's words are, the index signal already points (a weight here would push a second
    # pack that a relation table names out of the round).
    titled = _named_titles(q, evidence.titles, packs)
    for pack, title in titled.items():
        reasons[pack].append(f"names its document '{_short(title)}'")

    for label, by_pack in evidence.entity_packs.items():
        if DOCUMENTED in by_pack.values() or TABLED in by_pack.values():
            # `label documentedIn pack:ID`, or a pack's own table the one place that names it: a person said so, it
            # decides like an example
            for pack, how in by_pack.items():
                if pack in signals:
                    signals[pack]["documented"] = 1.0
                    reasons[pack].append(f"{label} documentedIn pack:{pack}" if how == DOCUMENTED
                                         else f"its own table names {label}")
            continue
        total = sum(by_pack.values())
        for pack, n in by_pack.items():
            if pack in signals and total:
                signals[pack]["entities"] = signals[pack].get("entities", 0.0) + n / total / len(evidence.entity_packs)
        best = max(by_pack, key=by_pack.get) if by_pack else None
        if best in reasons:
            reasons[best].append(f"entity {label} is documented here")

    index = _index_shares(evidence.probe, packs, rules.probe_depth)
    for pack, s in index.items():
        signals[pack]["index"] = s
        if s >= 0.2:
            reasons[pack].append(f"{s:.0%} of the best passages are here")

    scores = {p: round(sum(rules.weights.get(name, 0.0) * v for name, v in signals[p].items()), 4) for p in packs}
    ranked = sorted(packs, key=lambda p: (-scores[p], p))
    top = ranked[0]

    # Out of scope: a "does not cover" item matches and nothing more specific says otherwise (a key
    # term inside that very item, e.g. GitLab in "the GitLab API", does not count), or no signal
    # names a pack, the words the knowledge base holds carry little of the question's weight and no
    # passage holds much of it either.
    excluded = [(p, item) for p, card in cards.items() if (item := matched_item(q, card.does_not_cover))]
    named = [(p, item) for p, card in cards.items() for item in (card.key_terms + card.covers) if matched_item(q, [item])]
    registry_hit = any(signals[p].get("example") for p in packs)
    if excluded:
        outside = units(excluded[0][1])
        specific = [item for _, item in named if not units(item) <= outside]
        if not specific and not registry_hit and not evidence.entity_packs:
            pack, item = excluded[0]
            return Routing(chosen=[], scores=scores, out_of_scope=f"{NO_BASIS}: pack '{pack}' does not cover '{item}'")
    known = _known_share(evidence)
    # A document's title is weaker than the card's own words: it does not overrule a "does not cover" item
    # above (a pack with a document titled 备份 still does not cover 'Oracle 数据库'), but a question that
    # says it has a basis in that pack.
    if not named and not titled and not registry_hit and not evidence.entity_packs and known < rules.min_known:
        coverage = _coverage(evidence)
        if coverage < rules.min_coverage:
            why = "no word of it is in any pack" if known == 0 else \
                f"the words any pack holds carry only {known:.0%} of the question's weight, the best passage {coverage:.0%}"
            return Routing(chosen=[], scores=scores, out_of_scope=f"{NO_BASIS}: {why}")

    if scores[top] < rules.min_confidence:
        chosen = [PackChoice(p, scores[p], f"not sure where to look (best pack scores {scores[top]:.2f}): searched every pack")
                  for p in ranked]
        return Routing(chosen=chosen, scores=scores, fallback=True)
    chosen = [PackChoice(top, scores[top], "; ".join(dict.fromkeys(reasons[top])) or "best score")]
    if len(ranked) > 1 and scores[ranked[1]] >= rules.second_share * scores[top] and scores[ranked[1]] > 0:
        second = ranked[1]
        chosen.append(PackChoice(second, scores[second], "; ".join(dict.fromkeys(reasons[second])) or "close second"))
    return Routing(chosen=chosen, scores=scores)


def next_pack(routing: Routing, question: str | None = None) -> Routing | None:
    """Round two: the best pack of round one and one pack it did not open (by rule score), or None
    when there is none, round two was already run, or round one searched every pack."""
    if routing.round >= MAX_ROUNDS or routing.fallback or routing.out_of_scope or not routing.chosen:
        return None
    opened = set(routing.pack_ids())
    others = sorted((p for p in routing.scores if p not in opened), key=lambda p: (-routing.scores[p], p))
    if not others:
        return None
    best, new = routing.chosen[0], others[0]
    why = "round two: round one was not enough" + (f" for '{_short(question)}'" if question else "")
    chosen = [best, PackChoice(new, routing.scores[new], why)]
    return Routing(chosen=chosen[:MAX_PACKS], scores=routing.scores, path=routing.path, round=routing.round + 1)


def _named_titles(q: set[str], titles: Mapping[str, Sequence[str]], packs: Sequence[str]) -> dict[str, str]:
    """pack -> the longest title of its documents the question says (as `matched_item` reads a card's items).
    A title documents of two packs share names neither; a one-character title names nothing."""
    holders: dict[str, set[str]] = {}
    for pack in packs:
        for title in titles.get(pack, ()):
            holders.setdefault(" ".join(title.split()).casefold(), set()).add(pack)
    out: dict[str, str] = {}
    for pack in packs:
        for title in sorted(titles.get(pack, ()), key=len, reverse=True):
            if len(title.strip()) < 2 or len(holders[" ".join(title.split()).casefold()]) > 1:
                continue
            words, _, grams = _item_units(title)
            if (words & q or grams & q) and matched_item(q, [title]):
                out[pack] = title
                break
    return out


def _index_shares(probe: Sequence[tuple[str | None, Sequence[str]]], packs: Sequence[str], depth: int) -> dict[str, float]:
    """Rank-discounted share of the best BM25 passages that each pack holds."""
    mass = {p: 0.0 for p in packs}
    total = 0.0
    for rank, (pack, _) in enumerate(probe[:depth]):
        w = 1.0 / math.log2(rank + 2)
        total += w
        if pack in mass:
            mass[pack] += w
    return {p: (m / total if total else 0.0) for p, m in mass.items()}


def _held(evidence: Evidence) -> dict[str, int]:
    """The question's words as the packs hold them, each with the chunks that hold it in their text or their
    document's title (a document titled 红烧肉 holds 红烧肉 even where its text never repeats it). A Chinese word
    no chunk holds that jieba's HMM made up for the question (`要炖`) counts as its dictionary words (`炖`),
    cut the way the documents around them were."""
    frequency = evidence.doc_frequency
    df: dict[str, int] = {}
    for word in query_terms(evidence.question):
        count = max(frequency(word), frequency(word, "title"))
        if count == 0 and not word.isascii() and len(word) > 1:
            pieces = [p for p in dictionary_words(word) if p != word]
            if pieces:
                for piece in pieces:
                    df.setdefault(piece, max(frequency(piece), frequency(piece, "title")))
                continue
        df.setdefault(word, count)
    return df


def _known_share(evidence: Evidence) -> float:
    """The share of the question's word weight (idf) carried by words the knowledge base holds: a
    question whose most specific words no document ever uses has no basis here."""
    if evidence.doc_frequency is None or not query_terms(evidence.question):
        return 1.0
    df = _held(evidence)
    idf = idf_weights(df, max(evidence.chunks, 1))
    return sum(v for w, v in idf.items() if df[w] > 0) / sum(idf.values())


def _coverage(evidence: Evidence, top: int = 3) -> float:
    """The largest share of the question's word weight (idf) that one of the best passages matched."""
    if not query_terms(evidence.question) or not evidence.probe:
        return 0.0
    n = max(evidence.chunks, 1)
    df = _held(evidence) if evidence.doc_frequency else dict.fromkeys(query_terms(evidence.question), 0)
    words = set(df)
    idf = idf_weights(df, n)
    total = sum(idf.values())
    return max(sum(idf[w] for w in words & set(terms)) / total for _, terms in evidence.probe[:top])


def _short(text: str, n: int = 60) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= n else text[: n - 1] + "…"
