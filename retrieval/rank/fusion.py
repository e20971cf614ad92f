"""Ranked lists of ids (BM25, graph, meaning) -> one fused ranking with each id's rank in every input list."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

__all__ = ["Fused", "bring_to", "cap_per_document", "fuse_dense", "fuse_hits", "keep_text_lead", "reciprocal_rank_fusion",
           "weighted_score_fusion"]


@dataclass
class Fused:
    id: str
    score: float
    ranks: dict[str, int] = field(default_factory=dict)  # input name -> 1-based rank
    kept: str = ""  # why it stands higher than fusion put it (`keep_text_lead`), else ""
    diversity: dict | None = None  # {"from": rank, "similarity_above"}: moved up for diversity (`rank.diversity`)
    hop: dict | None = None  # {"rank", "similarity", "from"}: found by the second search in meaning (`query_meaning.meaning_hop`)
    named: dict | None = None  # {"heading", "from"}: the section whose heading the best hit names (`rank.sections`)


def reciprocal_rank_fusion(
    rankings: Mapping[str, Sequence[str]],
    weights: Mapping[str, float] | None = None,
    k: float = 60.0,
) -> list[Fused]:
    """Weighted reciprocal-rank fusion (Cormack et al. 2009): score(d) = sum_i w_i / (k + rank_i(d)).

    Ties are broken by the best single rank, then by id, so the output is deterministic and a
    permutation of the union of the inputs.
    """
    fused: dict[str, Fused] = {}
    for name, ids in rankings.items():
        w = 1.0 if weights is None else weights.get(name, 1.0)
        for rank, item in enumerate(ids, start=1):
            entry = fused.get(item)
            if entry is None:
                entry = fused[item] = Fused(item, 0.0)
            if name in entry.ranks:
                continue  # a duplicate within one list counts once, at its best rank
            entry.ranks[name] = rank
            entry.score += w / (k + rank)
    return sorted(fused.values(), key=lambda f: (-f.score, min(f.ranks.values()), f.id))


def weighted_score_fusion(
    scored: Mapping[str, Sequence[tuple[str, float]]],
    weights: Mapping[str, float] | None = None,
) -> list[Fused]:
    """CombSUM of max-normalised scores: score(d) = sum_i w_i * s_i(d) / max_j s_i(j).

    Unlike RRF it keeps how far apart the scores are: a graph neighbour that is the only relative
    of the question's entity outranks a long tail of weak word matches.
    """
    fused: dict[str, Fused] = {}
    for name, items in scored.items():
        if not items:
            continue
        top = max(score for _, score in items) or 1.0
        w = 1.0 if weights is None else weights.get(name, 1.0)
        for rank, (item, score) in enumerate(items, start=1):
            entry = fused.get(item)
            if entry is None:
                entry = fused[item] = Fused(item, 0.0)
            if name in entry.ranks:
                continue
            entry.ranks[name] = rank
            entry.score += w * score / top
    return sorted(fused.values(), key=lambda f: (-f.score, min(f.ranks.values()), f.id))


def fuse_hits(
    text_hits: Sequence,
    graph_hits: Sequence,
    *,
    method: str = "rrf",
    graph_weight: float = 1.0,
    graph_confidence: float = 0.0,
    decay: float = 0.5,
    rrf_k: float = 60.0,
    dense: Sequence[tuple[str, float]] = (),
    dense_weight: float = 0.0,
) -> list[Fused]:
    """BM25 hits and graph hits (each with `chunk_id` and `score`) -> one ranking.

    Graph evidence counts only when it is specific: a question naming an entity that one
    document is about gets the graph; one naming a page title shared by fifty passages (so
    every graph score is spread thin) is left to BM25. A partial weight would not do: in RRF
    even a small second list reorders the flat top of the first. Specificity is judged per hop
    (`evidence / decay ** hops`): a neighbour two relations away is not less specific for being
    decayed.
    """
    top = max((h.evidence / decay ** len(h.path) for h in graph_hits), default=0.0)
    weights = {"bm25": 1.0, "graph": graph_weight if top >= graph_confidence else 0.0}
    # `dense` (chunk id, similarity), best first: the meaning channel as a third input beside the words, under the
    # graph's weight (early fusion: KG_DENSE_FUSION=early); empty = the two lists as before.
    extra = {"dense": list(dense)} if dense and dense_weight > 0 else {}
    weights.update({"dense": dense_weight} if extra else {})
    if method == "rrf":
        return reciprocal_rank_fusion(
            {"bm25": [h.chunk_id for h in text_hits], "graph": [h.chunk_id for h in graph_hits],
             **{name: [cid for cid, _ in items] for name, items in extra.items()}}, weights, k=rrf_k
        )
    return weighted_score_fusion(
        {"bm25": [(h.chunk_id, h.score) for h in text_hits], "graph": [(h.chunk_id, h.score) for h in graph_hits],
         **extra},
        weights,
    )


def keep_text_lead(fused: Sequence[Fused], lead_id: str | None, within: int, reason: str = "") -> list[Fused]:
    """The fused ranking with the text's best hit (`lead_id`) at rank `within` or better (0 = as fused).

    In RRF a graph list weighted 2.5 puts its 30th hit above the text's first when the text's first
    has no graph evidence: a question naming payment-service and asking who owns it lost
    payment-service's own overview from the top 10 to owners, incidents and dependencies. The graph
    is there to add what the words miss, not to evict what they found best; the moved hit takes
    the score of the one it lands above, so scores stay in order (`fused` itself is not changed).
    `reason` says why it was kept at `within` (shown in `why.bm25.kept`).
    """
    out = list(fused)
    if within < 1 or lead_id is None or not out:
        return out
    lead = next((i for i, f in enumerate(out) if f.id == lead_id), None)
    slot = min(within, len(out)) - 1
    if lead is None or lead <= slot:
        return out
    moved = replace(out.pop(lead), score=out[slot].score,
                    kept=f"the text search's best hit: kept in the top {within} (fusion put it at {lead + 1})"
                         + (f"; {reason}" if reason else ""))
    out.insert(slot, moved)
    return out


def bring_to(fused: Sequence[Fused], chunk_id: str, place: int, ranks: Mapping[str, int] | None = None,
             **why: dict) -> list[Fused]:
    """`fused` with `chunk_id` at index `place` (or last, in a shorter list), moved up from where fusion had it or
    brought in; the others move down one. It takes the score of the hit it lands above, so scores stay in order, keeps
    its ranks with `ranks` added, and says why: each `why` (`hop=`, `named=`) gets "from", its rank before (None: not
    in the ranking). `fused` itself is not changed."""
    at = next((i for i, f in enumerate(fused) if f.id == chunk_id), None)
    rest = list(fused) if at is None else [*fused[:at], *fused[at + 1:]]
    place = min(place, len(rest))
    marks = {name: {**mark, "from": None if at is None else at + 1} for name, mark in why.items()}
    moved = Fused(chunk_id, rest[min(place, len(rest) - 1)].score,
                  {**(fused[at].ranks if at is not None else {}), **(ranks or {})}, **marks)
    return [*rest[:place], moved, *rest[place:]]


def cap_per_document(fused: Sequence[Fused], doc_of: Mapping[str, str], cap: int) -> list[Fused]:
    """At most `cap` chunks of one document: a long document should not push every other one out."""
    seen: dict[str, int] = {}
    out = []
    for item in fused:
        doc = doc_of.get(item.id, item.id)
        seen[doc] = seen.get(doc, 0) + 1
        if seen[doc] <= cap:
            out.append(item)
    return out


def fuse_dense(fused: Sequence[Fused], dense_ids: Sequence[str], weight: float = 1.0, k: float = 60.0) -> list[Fused]:
    """The words-and-graph ranking and the meaning channel's -> one ranking, by reciprocal-rank fusion of the two
    lists (late fusion: the graph's and the text's own rules have already ordered `fused`).

    Measured on ops_dev_zh before it was built: RRF of the full pipeline's final list and dense retrieval
    beat each alone by 7-11 points of R@5; folding the dense list in as a third input of the first fusion
    would let the text-lead and per-section rules act on it too. Each output keeps the input's ranks
    (`bm25`, `graph`, ...) and adds `dense`; `kept` is kept. A permutation of the union of the inputs.
    """
    if weight <= 0 or not dense_ids:
        return list(fused)
    out: dict[str, Fused] = {}
    for rank, item in enumerate(fused, start=1):
        out[item.id] = replace(item, score=1.0 / (k + rank), ranks=dict(item.ranks))
    for rank, cid in enumerate(dense_ids, start=1):
        entry = out.get(cid)
        if entry is None:
            entry = out[cid] = Fused(cid, 0.0)
        if "dense" in entry.ranks:
            continue
        entry.ranks["dense"] = rank
        entry.score += weight / (k + rank)
    return sorted(out.values(), key=lambda f: (-f.score, min(f.ranks.values()), f.id))
