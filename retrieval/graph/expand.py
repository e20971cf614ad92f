"""Query entities -> EntityHits (related entities, score, path) -> GraphHits (the chunks about or mentioning them).

Expansion is a best-first walk over the GraphView's typed edges: a neighbour's score is the
product of the edge weights along its best path times `decay` per hop. Hubs (entities with more
than `hub_cap` edges) are reached but not walked through, except for a seed, whose strongest
`hub_cap` edges are walked. Transitive properties (`owl:TransitiveProperty`, e.g. partOf) are
followed up to `transitive_depth` steps counted as one hop, which is the bounded closure.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass

from kg.graph import Edge, GraphView
from retrieval.catalog.anchors import anchors_about, document_sections
from retrieval.catalog.docstore import DocStore
from retrieval.graph.anchors import MENTION_REASON
from retrieval.types import EntityHit, GraphHit, PathStep

__all__ = ["ExpansionSettings", "chunks_for_entities", "expand_neighbours", "relation_cues"]


@dataclass(frozen=True)
class ExpansionSettings:
    max_hops: int = 2
    decay: float = 0.5
    hub_cap: int = 50
    transitive_depth: int = 4
    max_entities: int = 200
    about_weight: float = 1.0  # a chunk of a document whose title is the entity
    mention_weight: float = 0.5  # a chunk that mentions the entity
    mention_limit: int = 30  # chunks taken per entity through mentions
    min_score: float = 0.0  # graph hits below this are too unspecific to rank
    anchor_weight: float = 1.0  # a section anchored to the entity (0 = section anchors off)
    anchor_limit: int = 40  # anchored sections taken per entity, strongest first

    @classmethod
    def of(cls, settings) -> ExpansionSettings:
        """From a knowledge base's `Settings` (KG_EXPANSION_HOPS, KG_HUB_CAP, …)."""
        return cls(max_hops=settings.expansion_hops, hub_cap=settings.hub_cap, decay=settings.expansion_decay,
                   mention_weight=settings.mention_weight, min_score=settings.min_graph_score,
                   anchor_weight=settings.anchor_weight if settings.section_anchors else 0.0)


def expand_neighbours(
    view: GraphView,
    seeds: Mapping[str, float],
    settings: ExpansionSettings = ExpansionSettings(),
    relations: Collection[str] | None = None,
    relation_boosts: Mapping[str, float] | None = None,
    text_neighbours: Callable[[str], dict[str, float]] | None = None,
) -> list[EntityHit]:
    """Best-first expansion from the seed entities; `relations` limits the asserted properties walked.

    `relations` should already include sub-properties (see `Vocabulary.sub_properties`).
    `relation_boosts` multiplies the weight of edges whose asserted property is a key: the
    relations the question asks about ("谁负责" -> ownedBy), see `relation_cues`.
    """
    labels = view.entities
    best: dict[str, EntityHit] = {}
    # heap of (-score, tie, entity, hops, transitive run, relation of last step, path)
    heap: list = []
    tie = 0
    for iri, score in seeds.items():
        if iri in labels:
            heapq.heappush(heap, (-score, tie, iri, 0, 0, "", ()))
            tie += 1
    view.prefetch([iri for iri in seeds if iri in labels])  # a store's view asks for all the seeds at once
    vocab = view.vocab
    # An entity keeps the score and path of the first (best-scoring) time it is reached, but is
    # walked again when reached in fewer hops, so a strong long path does not hide a short one.
    # The walk state includes a running transitive chain, since reaching an entity partway along
    # a partOf chain is not the same as reaching it after a plain relation.
    walked: dict[tuple[str, str, int], int] = {}

    def state(iri: str, run: int, last_rel: str) -> tuple[str, str, int]:
        info = vocab.properties.get(last_rel.lstrip("^")) if last_rel else None
        return (iri, last_rel, run) if info is not None and info.transitive else (iri, "", 0)

    while heap and len(best) < settings.max_entities:
        neg, _, iri, hops, run, last_rel, path = heapq.heappop(heap)
        key = state(iri, run, last_rel)
        if hops >= walked.get(key, settings.max_hops + 1):
            continue
        walked[key] = hops
        if iri not in best:
            best[iri] = EntityHit(iri, labels[iri].label, -neg, path)
        edges = view.neighbours(iri)
        if text_neighbours is not None and hops < settings.max_hops and (relations is None or TEXT_RELATION in relations):
            edges = _with_text_edges(view, iri, edges, text_neighbours(iri))
        if not edges:
            continue
        is_seed = hops == 0
        if len(edges) > settings.hub_cap:
            if not is_seed:
                continue  # a hub: reached, not walked through
            edges = sorted(edges, key=lambda e: -e.weight)[: settings.hub_cap]
        for edge in edges:
            if relations is not None and edge.asserted not in relations:
                continue
            info = vocab.properties.get(edge.relation.lstrip("^"))
            chained = bool(info and info.transitive and edge.relation == last_rel and run < settings.transitive_depth)
            next_hops = hops if chained else hops + 1
            next_run = run + 1 if chained else 1
            if next_hops > settings.max_hops or next_hops >= walked.get(
                state(edge.target, next_run, edge.relation), settings.max_hops + 1
            ):
                continue
            weight = edge.weight * (relation_boosts.get(edge.asserted, 1.0) if relation_boosts else 1.0)
            score = -neg * min(1.0, weight) * (1.0 if chained else settings.decay)
            if score <= 0:
                continue
            step = PathStep(labels[iri].label, edge.relation, labels[edge.target].label)
            heapq.heappush(
                heap,
                (-score, tie, edge.target, next_hops, next_run, edge.relation, path + (step,)),
            )
            tie += 1
    return sorted(best.values(), key=lambda h: -h.score)


TEXT_RELATION = "mentions"


def _with_text_edges(view: GraphView, iri: str, edges: list[Edge], fit: dict[str, float]) -> list[Edge]:
    """Relation edges plus `mentions` edges from the text; mention edges weighted by their context fit."""
    if not fit:
        return edges
    info = view.vocab.properties.get(TEXT_RELATION)
    weight = info.weight if info else 0.8
    out = []
    for edge in edges:
        if edge.asserted == TEXT_RELATION and edge.forward and edge.target in fit:
            edge = Edge(edge.source, edge.relation, edge.target, edge.weight * _fit_factor(fit[edge.target]),
                        edge.asserted, edge.forward, edge.edge_weight)
        out.append(edge)
    known = {e.target for e in edges}
    out += [
        Edge(iri, TEXT_RELATION, target, weight * _fit_factor(score), TEXT_RELATION, True)
        for target, score in fit.items()
        if target not in known and target in view.entities
    ]
    return out


def _fit_factor(score: float) -> float:
    return 0.5 + 0.5 * score


def relation_cues(vocab, matcher_hits: Collection[str], boost: float = 2.0) -> dict[str, float]:
    """Asserted properties to favour, from the properties a question names by a label or cue word.

    A cue favours the whole family: the property, its inverse and their sub-properties, because
    "what runs on k8s-node-05" walks `runsOn` edges backwards (as `hosts`).
    """
    boosts: dict[str, float] = {}
    for name in matcher_hits:
        info = vocab.properties.get(name)
        if info is None:
            continue
        family = set(vocab.sub_properties(name))
        if info.inverse:
            family |= vocab.sub_properties(info.inverse)
        for member in family:
            boosts[member] = boost
    return boosts


def chunks_for_entities(
    store: DocStore,
    entity_hits: list[EntityHit],
    settings: ExpansionSettings = ExpansionSettings(),
    entity_weights: Mapping[str, float] | None = None,
    text_scores: Mapping[str, float] | None = None,
    text_agreement: float = 0.0,
    min_fit: float = 0.0,
    evidence=None,
    along_relation: bool = False,
) -> list[GraphHit]:
    """The chunks that the reached entities bring in, best first (`evidence`: a `GraphEvidence` whose
    caches answer the per-entity look-ups, else the store is asked).

    A chunk reached through several entities adds their contributions (a passage that is about one
    query entity and mentions another is the typical multi-hop evidence); its `why` keeps the best.
    """
    if evidence is not None:  # every entity's look-ups in one batch, not three statements each
        evidence.prefetch([hit.entity for hit in entity_hits], settings.anchor_limit if settings.anchor_weight > 0 else 0,
                          settings.mention_limit)
    scores: dict[str, float] = {}
    section_best: dict[str, float] = {}
    exempt: set[str] = set()
    best: dict[str, tuple[float, EntityHit, str, str]] = {}  # chunk -> (score, entity hit, via, about) of its best contribution
    for hit in entity_hits:
        factor = hit.score * (entity_weights.get(hit.entity, 1.0) if entity_weights else 1.0)
        plan = evidence.cached_plan(hit.entity, settings, _plan_entity) if evidence else _plan_entity(store, hit.entity, settings)
        if hit.path and along_relation:
            # When the question asks along a relation ("依赖哪些组件"), the opening of a document about
            # an entity at the other end may share no word with it (that is what the relation is
            # for): it is not held to the fit.
            exempt.update(plan.openings)
        if not hit.path:
            # The sections that define or are headed by an entity the question names answer "X 默认是
            # 多少" / "what is X" even when the rest of the question's words are generic (默认, 意思,
            # default): the fit to those words does not hold them back.
            exempt.update(cid for cid, _, _ in plan.sections)
        # Each score is the path's `factor` times what the plan holds, in the order of operations it always had
        # (weight * factor * share / spread), so the floats are the same.
        weighted = settings.about_weight * factor
        for cid, share in plan.about:
            score = weighted * share / plan.about_spread
            scores[cid] = scores.get(cid, 0.0) + score
            top = best.get(cid)
            if top is None or top[0] < score:  # a GraphHit only for the chunks that are returned, at the end
                best[cid] = (score, hit, "about", "")
        weighted = settings.anchor_weight * factor
        for cid, strength, reason in plan.sections:
            score = weighted * strength / plan.section_spread
            # Sibling keys anchored in one table all reach it: count the best of them once.
            previous = section_best.get(cid, 0.0)
            section_best[cid] = max(previous, score)
            score = max(0.0, score - previous)
            scores[cid] = scores.get(cid, 0.0) + score
            top = best.get(cid)
            if top is None or top[0] < score:
                best[cid] = (score, hit, "section", reason)
        weighted = settings.mention_weight * factor
        for cid, share in plan.mentions:
            score = weighted * share / plan.mention_spread
            scores[cid] = scores.get(cid, 0.0) + score
            top = best.get(cid)
            if top is None or top[0] < score:
                best[cid] = (score, hit, "mentions", "")
    graph_only = {cid: score for cid, score in scores.items() if score >= settings.min_score}
    if text_scores and min_fit > 0:
        # One section of a document of many that matches little of the question's other words is
        # only the entity's name again: in a rank fusion even the graph's weakest list would reorder
        # the text's top. A document of one section (a Wikipedia page) is all about its entity.
        section_counts = document_sections(store.db, list(graph_only))
        graph_only = {cid: score for cid, score in graph_only.items()
                      if cid in exempt or section_counts.get(cid, 1) == 1 or text_scores.get(cid, 0.0) >= min_fit}
    ranked = dict(graph_only)
    if text_scores and text_agreement:
        # Among the chunks the graph brings, prefer those that also match the question's words:
        # of a seed's five neighbours, the one whose passage says "buried" answers "place of burial".
        for cid in ranked:
            ranked[cid] *= 1.0 + text_agreement * text_scores.get(cid, 0.0)
    out = []
    for cid, total in sorted(ranked.items(), key=lambda kv: (-kv[1], kv[0])):
        _, top, via, about = best[cid]
        out.append(GraphHit(cid, total, top.entity, via, top.path, evidence=graph_only[cid], about=about))
    return out


PEER_SHARE = 0.8  # anchors this close to the strongest share the entity's evidence


@dataclass(frozen=True, slots=True)
class EntityChunks:
    """What a reached entity brings, whatever the path that reached it (a chunk's score is the path's score times
    a share here): read and judged once per entity and settings until the next write (`GraphEvidence.cached_plan`)."""

    about: list[tuple[str, float]]  # chunks of the documents about it: (chunk, share)
    about_spread: float
    openings: list[str]  # the first chunk of each of those documents
    sections: list[tuple[str, float, str]]  # the sections anchored to it: (chunk, strength, reason)
    section_spread: float
    mentions: list[tuple[str, float]]  # other chunks that mention it: (chunk, share)
    mention_spread: float


def _plan_entity(store, entity: str, settings: ExpansionSettings, evidence=None) -> EntityChunks:
    read = evidence or store
    # Every chunk of a document about the entity is evidence, its opening chunk (the summary a
    # title introduces) the most; the rest decay so one long document does not flood the list.
    # An entity that many documents are about (a page title shared by 50 passages) says less
    # about any one of them: the evidence is spread by the square root of their number.
    about = read.about_chunks(entity)
    spread = math.sqrt(len({doc for _, doc, _ in about})) if about else 1.0
    # A long document about the entity (a page of twenty sections) should not flood the list:
    # its later chunks share the weight a short document's would have.
    length: dict[str, int] = {}
    for _, doc, _ in about:
        length[doc] = length.get(doc, 0) + 1
    shares = [(cid, 1.0 if ordinal == 0 else 0.6 / math.sqrt(length[doc])) for cid, doc, ordinal in about]
    about_ids = {cid for cid, _ in shares}
    sections, section_spread = _anchored_sections(store, entity, settings, about_ids, evidence)
    about_ids |= {cid for cid, _, _ in sections}
    mentioning = read.chunks_mentioning(entity, settings.mention_limit)
    # Likewise a mention: one of 70 chunks naming the entity is weak evidence for each.
    mention_spread = math.sqrt(read.mention_count(entity)) if mentioning else 1.0
    return EntityChunks(shares, spread, [cid for cid, _, ordinal in about if ordinal == 0], sections, section_spread,
                        [(cid, min(1.0, 0.6 + 0.2 * n)) for cid, n in mentioning if cid not in about_ids], mention_spread)


def _anchored_sections(store: DocStore, entity: str, settings: ExpansionSettings, skip: set[str],
                       evidence=None) -> tuple[list[tuple[str, float, str]], float]:
    """(chunk id, strength, reason) of the sections anchored to a reached entity, and their spread.

    A section's score is the entity's path score x the anchor's strength / the spread: the square root of
    the number of anchors about as strong as the best one, so a key with one `###` section gives it
    everything, a component that fifty pages name in their title gives each a little. Prominent-mention
    anchors of an entity mentioned all over the corpus are not counted (a passing mention of a hub says nothing).
    """
    if settings.anchor_weight <= 0:
        return [], 1.0
    found = evidence.anchors(entity, settings.anchor_limit) if evidence else anchors_about(store.db, entity, settings.anchor_limit)
    rows = [r for r in found if r[0] not in skip]
    if not rows:
        return [], 1.0
    mentions = evidence.mention_count(entity) if evidence else store.mention_count(entity)
    if mentions > settings.mention_limit * 3:
        rows = [r for r in rows if not r[2].startswith(MENTION_REASON)]
        if not rows:
            return [], 1.0
    top = rows[0][1]
    peers = sum(1 for _, strength, _ in rows if strength >= PEER_SHARE * top)
    return [(cid, strength, reason) for cid, strength, reason in rows], math.sqrt(peers)
