"""Fused ranking + the BM25 and graph hits behind it -> `Hit`s that say why each chunk is there."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from retrieval.catalog.docstore import DocStore
from retrieval.index.analysis import surface_words
from retrieval.rank.fusion import Fused
from retrieval.types import EntityHit, GraphHit, Hit, Mention, PathStep, TextHit

__all__ = ["build_hits", "entities_json", "path_text"]


def build_hits(
    store: DocStore,
    entities: Mapping,
    fused: Sequence[Fused],
    text_hits: Sequence[TextHit],
    graph_hits: Sequence[GraphHit],
    followup_hits: Sequence[TextHit] = (),
    question: str = "",
    dense_sims: Mapping[str, float] | None = None,
) -> list[Hit]:
    chunks = store.chunks([f.id for f in fused])
    sources = store.doc_sources([c.doc_id for c in chunks.values()])
    by_text = {h.chunk_id: h for h in text_hits}
    by_graph = {h.chunk_id: h for h in graph_hits}
    by_followup = {h.chunk_id: h for h in followup_hits}
    hits = []
    for rank, f in enumerate(fused, start=1):
        chunk = chunks.get(f.id)
        if chunk is None:
            continue
        why: dict = {}
        if f.id in by_text and "bm25" in f.ranks:
            t = by_text[f.id]
            why["bm25"] = {"rank": f.ranks["bm25"], "score": round(t.score, 3), "terms": list(t.terms),
                           "words": _words(t.terms, chunk, question)}
            if f.kept:
                why["bm25"]["kept"] = f.kept
        if f.id in by_graph and "graph" in f.ranks:
            g = by_graph[f.id]
            label = entities[g.entity].label if g.entity in entities else g.entity
            why["graph"] = {
                "rank": f.ranks["graph"],
                "score": round(g.score, 4),
                "entity": label,
                "via": g.via,
                "path": path_text(label, g.path, g.via),
            }
            if g.about:
                why["graph"]["about"] = g.about
        if f.id in by_followup and "followup" in f.ranks:
            t = by_followup[f.id]
            why["followup"] = {"rank": f.ranks["followup"], "score": round(t.score, 3), "terms": list(t.terms),
                               "words": _words(t.terms, chunk, question)}
        if dense_sims and "dense" in f.ranks:
            why["dense"] = {"rank": f.ranks["dense"], "similarity": round(dense_sims.get(f.id, 0.0), 4)}
        if f.diversity:  # moved up by the diversity re-ordering (`retrieval.rank.diversity`)
            why["diversity"] = dict(f.diversity)
        if f.hop:  # found by the second search in meaning, from the question and the best hit (`meaning_hop`)
            why["hop"] = dict(f.hop)
        if f.named:  # the section whose heading the best hit names (`retrieval.rank.sections`)
            why["named"] = dict(f.named)
        hits.append(
            Hit(rank, chunk.doc_id, chunk.title, chunk.chunk_id, chunk.text, round(f.score, 5),
                sources.get(chunk.doc_id, ""), chunk.section, (chunk.line_start, chunk.line_end), why)
        )
    return hits


def _words(terms, chunk, question: str) -> list[str]:
    """The matched index terms as the passage (else the question) spells them: stems are for the index."""
    return list(dict.fromkeys(surface_words(terms, chunk.text, chunk.title, chunk.section or "", question)))


def path_text(label: str, path: Sequence[PathStep], via: str) -> str:
    """`query: 订单服务 → dependsOn → redis-cluster → mentioned in chunk`."""
    end = {"about": "document about it", "section": "section about it"}.get(via, "mentioned in chunk")
    if not path:
        return f"query: {label} → {end}"
    parts = [path[0].source] + [f"{step.relation} → {step.target}" for step in path]
    return "query: " + " → ".join(parts) + f" → {end}"


def entities_json(mentions: Sequence[Mention], entity_hits: Sequence[EntityHit] = ()) -> list[dict]:
    """The entities the question names, once each, in order of appearance."""
    out, seen = [], set()
    for m in mentions:
        if m.entity in seen:
            continue
        seen.add(m.entity)
        out.append({"id": m.entity, "label": m.label, "surface": m.surface, "start": m.start, "end": m.end})
    return out
