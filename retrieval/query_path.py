"""The query path of `KnowledgeBase`: question -> link -> search -> expand -> fuse -> second round -> `QueryResult`, and entity inspection.

`KnowledgeBase` (retrieval/pipeline.py) inherits these methods; they read its stores, index,
graph and settings and never write. Read `query()` top to bottom: each step is a call into its
stage module (the meaning channel's steps: retrieval/query_meaning.py).
"""

from __future__ import annotations

import datetime as dt
import re
import time
from collections.abc import Sequence

from kg.errors import InputError, NotFoundError
from kg.settings import MAX_K
from retrieval.catalog.anchors import anchors_about, chunk_parents
from retrieval.catalog.docstore import DocStore
from retrieval.catalog.timewords import as_of_day
from retrieval.catalog.versions import one_hit_per_text
from retrieval.graph.expand import chunks_for_entities, expand_neighbours, relation_cues
from retrieval.graph.seeds import fold_label
from retrieval.index.analysis import cjk_bigrams, compound_terms, normalize_text, query_terms
from retrieval.packs.scope import route_query
from retrieval.query_meaning import (
    dense_only,
    fuse_meaning,
    meaning_candidates,
    near_labels,
    question_meaning,
    reorder_by_meaning,
)
from retrieval.rank.diversity import DIVERSITY_WINDOW
from retrieval.rank.explain import build_hits, entities_json
from retrieval.rank.followup import (
    BRIDGE_WEIGHT,
    FollowUp,
    bridge_names,
    merge_rounds,
    named_subject,
    needs_followup,
)
from retrieval.rank.fusion import cap_per_document, fuse_hits, keep_text_lead
from retrieval.rank.pooling import named_share, named_terms, pool_by_parent, question_fit
from retrieval.rank.sections import named_section
from retrieval.types import QueryResult

__all__ = ["MODES", "QueryPath"]

MODES = ("full", "bm25", "graph", "dense")
COMPOUND_WEIGHT = 0.3  # 心跳间隔 for a question that says 心跳
FOLLOWUP_TOP = 5  # round one is judged on this many hits


class QueryPath:
    """Mixed into `KnowledgeBase`: the read-only methods (query, entity) and their helpers."""

    def _relation_matcher(self):
        """Matches the labels and cue words (skos:altLabel) of the ontology's properties in a question."""
        if self._relations is None:
            from retrieval.graph.linking import EntityMatcher

            surfaces = [(label, p.name) for p in self.graph.vocab.properties.values() for label in p.labels]
            self._relations = _NameMatcher(EntityMatcher(surfaces))
        return self._relations

    # -- read path: link -> search -> expand -> fuse ----------------------------------------------
    def query(self, text: str, k: int | None = None, mode: str = "full", types: Sequence[str] | None = None, *,
              as_of: dt.date | str | None = None, packs: Sequence[str] | None = None) -> QueryResult:
        """Ranked chunks for a question. `types` (class names or labels) keeps graph expansion to
        entities of those classes or their subclasses (rdfs:subClassOf), e.g. ["Service"].
        `as_of` (a date or YYYY-MM-DD): search the versions in force then; else a date the question
        names (去年12月, in March 2024), else today's versions. With knowledge packs, routing picks at
        most two packs first (`packs` forces them); without packs nothing changes."""
        if mode not in MODES:
            raise InputError(f"unknown mode '{mode}' (use one of: {', '.join(MODES)})")
        text = (text or "").strip()
        if not text:
            raise InputError("the query is empty: ask a question or give a few words")
        if k is None:
            k = self.settings.default_k
        if k < 1 or k > MAX_K:
            raise InputError(f"k must be between 1 and {MAX_K} (the most hits a query returns), got {k}")
        timings: dict[str, float] = {}
        day, as_of_from = as_of_day(text, as_of, self.today(), self.settings.time_words)
        with self.reading():
            # Children of versions not in force that day; a date from the question's words never hides a
            # document that did not exist yet (the words may be about its content).
            hidden = self.history.hidden_chunks(day, keep_unborn=as_of_from == "question")
            wanted = self._resolve_types(types) if types else []
            t0 = time.perf_counter()
            linker = self.linker  # also teaches jieba the entity labels, which the index was cut with
            mentions = linker.link(text) if mode not in ("bm25", "dense") else []
            t1 = time.perf_counter()
            words = query_terms(text)
            terms = self.synonyms.expand(words)
            dense = question_meaning(self, text, mode, hidden)  # None without vectors: words and graph as before
            if dense is not None and dense.labels and mode == "full":
                mentions, terms = near_labels(self, dense, mentions, terms)
            terms += [(w, COMPOUND_WEIGHT) for w in compound_terms(words) if w not in dict(terms)]
            grams = [(g, self.settings.gram_weight) for g in dict.fromkeys(cjk_bigrams(text))] if self.settings.gram_weight else []
            # With entities to expand, the search reads deeper than the hits it fuses: how well a graph
            # hit agrees with the question's other words should not depend on whether the words alone
            # ranked it among their best (the composer's page for "the nationality of the composer of X").
            depth = max(self.settings.bm25_candidates, self.settings.fit_candidates if mentions else 0)
            routing, scope = route_query(self, text, mentions, terms, grams, packs, depth)  # the whole knowledge base without packs
            if routing is not None and routing.out_of_scope:
                return QueryResult(query=text, entities=entities_json(mentions, []), hits=[], mode=mode,
                                   as_of=day.isoformat() if as_of_from else None, as_of_from=as_of_from,
                                   out_of_scope=routing.out_of_scope, routing=routing.to_json())
            if mode == "dense":
                return dense_only(self, text, k, dense, scope, day, as_of_from, routing)
            found = [] if mode == "graph" else scope.text_hits if scope.text_hits is not None else \
                scope.index.search(terms, self.settings.bm25_candidates, grams=grams,
                                   beyond=depth - self.settings.bm25_candidates)
            found = [h for h in found if h.chunk_id not in hidden] if hidden else found
            text_hits = found[: self.settings.bm25_candidates]  # what is fused; `found` weighs the graph's hits
            parent_of = chunk_parents(self.store.db, [h.chunk_id for h in text_hits])
            text_hits = pool_by_parent(text_hits, parent_of, self.settings.parent_pooling,
                                       lambda docnums: scope.index.term_scores(terms, docnums))
            t2 = time.perf_counter()
            graph_hits, entity_hits = [], []
            named = named_terms(mentions) if mentions else None  # the words of the entities it names
            walked = self.walk.view()  # graph.ttl's graph, or the SPARQL store's as it is now (KG_GRAPH_WALK)
            if mentions:
                seeds = scope.evidence.seed_weights(mentions)
                cues = relation_cues(self.graph.vocab, self._relation_matcher().find_names(text))
                entity_hits = expand_neighbours(walked, seeds, self.expansion, relation_boosts=cues,
                                                text_neighbours=scope.evidence.mention_fit(text))
                if wanted:
                    entity_hits = self._of_types(entity_hits, wanted, seeds, walked.entities)
                text_scores = question_fit(found, words, named) if self.settings.fit_beyond_names else {}
                if found and not text_scores:
                    top = found[0].score or 1.0
                    text_scores = {h.chunk_id: h.score / top for h in found}
                if dense is not None and self.settings.semantic_fit > 0:
                    # A hop is chosen by what the section means as well as by the words it shares with the question.
                    weight = self.settings.semantic_fit
                    for cid, fit in dense.fit(self.settings.dense_candidates).items():
                        text_scores[cid] = max(text_scores.get(cid, 0.0), weight * fit)
                # A question that asks along a relation ("哪些应用会受波及", "who owns ...") wants the
                # entities at the other end more than the one it names.
                focus = {iri: self.settings.cued_seed_weight for iri in seeds} if cues else None
                graph_hits = chunks_for_entities(scope.store, entity_hits, self.expansion, entity_weights=focus,
                                                 text_scores=text_scores, text_agreement=self.settings.text_agreement,
                                                 min_fit=self.settings.min_graph_fit, evidence=scope.evidence,
                                                 along_relation=bool(cues))
                graph_hits = [h for h in graph_hits if h.chunk_id not in hidden]
                if scope.doc_ids is not None:  # section anchors are read from the whole catalog: keep the routed packs'
                    in_doc = self.store.chunk_documents([h.chunk_id for h in graph_hits])
                    graph_hits = [h for h in graph_hits if in_doc.get(h.chunk_id) in scope.doc_ids]
                graph_hits = graph_hits[: self.settings.graph_candidates]
            t3 = time.perf_counter()
            early = dense is not None and mode == "full" and self.settings.dense_fusion == "early"
            fused = fuse_hits(
                text_hits, graph_hits, method=self.settings.fusion, graph_weight=self.settings.graph_weight,
                graph_confidence=self.settings.graph_confidence, decay=self.expansion.decay, rrf_k=self.settings.rrf_k,
                dense=meaning_candidates(self, dense, scope) if early else (), dense_weight=self.settings.dense_weight,
            )
            lead = text_hits[0].chunk_id if text_hits else None
            if fused and fused[0].id != lead:  # else nothing to keep: spare the share's look-ups
                fused = keep_text_lead(fused, lead, *self._lead_rank(words, named, scope.index))
            # The cap is per section (parent), not per document: a configuration reference is one
            # document of many sections, each about a different key.
            parent_of.update(chunk_parents(self.store.db, [h.chunk_id for h in graph_hits if h.chunk_id not in parent_of]))
            fused = cap_per_document(fused, parent_of, self.settings.chunks_per_document)
            t4 = time.perf_counter()
            followup, second_hits = None, []
            if mode == "full" and self.settings.followup:
                followup, fused, second_hits = self._follow_up(text, words, fused, graph_hits, grams, hidden,
                                                               scope.index)
            if dense is not None and mode == "full" and self.settings.dense_weight > 0 and not early:
                fused = fuse_meaning(self, fused, dense, scope, parent_of)
            diverse = dense is not None and mode == "full" and self.settings.diversity > 0 and dense.vectors_of is not None
            copies: dict[str, list[str]] = {}
            if self.settings.one_hit_per_parent:
                seen = max(k, DIVERSITY_WINDOW) if diverse else k  # the re-ordered head is one hit per parent too
                fused, copies = one_hit_per_text(fused, self.history.parent_text_keys([f.id for f in fused[: seen * 4]]))
            if dense is not None and mode == "full":  # diversity, the second search in meaning (each when set)
                fused = reorder_by_meaning(self, text, fused, dense, hidden, scope, parent_of)
            if mode == "full" and self.settings.named_sections:  # the section the best hit names by its heading
                fused = named_section(self.store, fused, hidden, parent_of)
            hits = build_hits(self.store, self.graph.view.entities, fused[:k], text_hits, graph_hits, second_hits,
                              question=text, dense_sims=dense.chunk_sims if dense is not None else None)
            self.history.annotate(hits, day)  # the version that answered, its lines and page, the parent
            note_copies(self.store, hits, copies)
            t5 = time.perf_counter()
        timings.update(link=(t1 - t0) * 1e3, bm25=(t2 - t1) * 1e3, graph=(t3 - t2) * 1e3, fuse=(t4 - t3) * 1e3,
                       followup=(t5 - t4) * 1e3)
        return QueryResult(
            query=text,
            entities=entities_json(mentions, entity_hits),
            hits=hits,
            mode=mode,
            timings_ms={k_: round(v, 2) for k_, v in timings.items()},
            followup=followup.to_json() if followup else None,
            as_of=day.isoformat() if as_of_from else None,
            as_of_from=as_of_from,
            packs_used=routing.packs_used() if routing else [],
            routing=routing.to_json() if routing else None,
            meaning=dense.to_json() if dense is not None else None,
            graph=walked.note() if walked is not self.graph.view else None,
        )

    def _lead_rank(self, words: list[str], named: set[str] | None, index) -> tuple[int, str]:
        """Where the text's best hit is kept, and why: first when the names the question links carry
        little of its words' weight (an entity named in passing: what the words found best is what
        the question is about), else within `text_lead_rank`."""
        limit = self.settings.text_lead_share
        if limit > 0 and named is not None:
            share = named_share(words, named, index.doc_frequency, index.doc_count())
            if share < limit:
                return 1, f"the names the question links carry {share:.0%} of its words' weight"
        return self.settings.text_lead_rank, ""

    def _follow_up(self, text: str, words: list[str], fused: list, graph_hits: list, grams: list,
                   hidden: set[str] = frozenset(), index=None):
        """Round two (`retrieval.rank.followup`), when round one's best hit is a first hop and not the end:
        the question names that hit's subject (its whole title), no top hit came through a relation, and
        the hit's lead names something the question does not. The second search drops the first
        hop's name, adds those names, searches `index` (inside the routed packs: their scoped index), and is merged below the hit."""
        related = {h.chunk_id for h in graph_hits if h.path}
        if not needs_followup([f.id for f in fused[:FOLLOWUP_TOP]], related):
            return None, fused, []
        top = self.store.chunks([fused[0].id]).get(fused[0].id)
        subject = set(query_terms(top.title)) if top else set()
        hop = named_subject(words, top.title) if top else set()
        bridge = bridge_names(text, top.title, top.text) if hop else []
        if not bridge:
            return None, fused, []
        asked = self.synonyms.expand([t for t in words if t not in hop])
        added = [t for t in query_terms(" ".join(bridge)) if t not in subject and t not in dict(asked)]
        terms = asked + [(t, BRIDGE_WEIGHT) for t in added]
        second = [h for h in (index or self.index).search(terms, self.settings.bm25_candidates, grams=grams)
                  if h.chunk_id not in hidden]
        doc_of = self.store.chunk_documents([f.id for f in fused] + [h.chunk_id for h in second])
        merged = merge_rounds(fused, [h.chunk_id for h in second], doc_of, weight=self.settings.followup_weight,
                              k=self.settings.rrf_k)
        merged = cap_per_document(merged, chunk_parents(self.store.db, [f.id for f in merged]),
                                  self.settings.chunks_per_document)
        followup = FollowUp(f"{text} {' '.join(bridge)}", bridge, top.chunk_id, [t for t in words if t in hop])
        return followup, merged, second

    def _resolve_types(self, types: Sequence[str]) -> list[str]:
        vocab = self.graph.vocab
        wanted = []
        for name in types:
            cls = vocab.resolve_class(name)
            if cls is None:
                hint = vocab.suggest_classes(name)
                raise InputError(f"unknown type '{name}'" + (f" (did you mean {', '.join(hint)}?)" if hint else ""))
            wanted.append(cls.name)
        return wanted

    def _of_types(self, entity_hits, wanted: list[str], seeds, entities) -> list:
        vocab = self.graph.vocab
        return [
            h for h in entity_hits
            if h.entity in seeds or any(vocab.is_subclass(t, w) for t in entities[h.entity].types for w in wanted)
        ]

    # -- inspection -------------------------------------------------------------------------------
    def entity(self, key: str, sources: bool = False) -> dict:
        """`sources`: each neighbour with where its edge is stated (`origin`: "relations.csv:3"; one pass of each table)."""
        with self.reading():
            view = self.graph.view
            entity = view.resolve(key)
            if entity is None:  # an alias names one entity just as well
                named = {iri for surface, iri in view.surfaces() if fold_label(surface) == fold_label(key)}
                entity = view.entities[named.pop()] if len(named) == 1 else None
            walked = self.walk.view()  # its edges as the queries walk them (KG_GRAPH_WALK)
            if entity is None and walked is not view:  # one only the store holds, added there by another tool
                entity = walked.named(key)
            if entity is None:
                raise NotFoundError(f"no entity '{key}' (give its IRI, its exact label or an alias; `kg stats` counts entities)")
            edges = list(walked.neighbours(entity.iri))
            origins: list[str | None] = [None] * len(edges)
            if sources:
                from retrieval.provenance import edge_origins

                origins = list(edge_origins(self.root, walked, self.graph.vocab)([e.triple() for e in edges]))
            neighbours: dict[str, list[dict]] = {}
            for edge, origin in zip(edges, origins, strict=True):
                neighbours.setdefault(edge.relation, []).append(
                    {"id": edge.target, "label": walked.entities[edge.target].label, "asserted": edge.forward,
                     **({"origin": origin or "graph.ttl"} if sources else {})}
                )
            # Today's versions only: a superseded version's chunks stay for --as-of, not for this list.
            hidden = self.history.hidden_chunks(self.today())
            mentioned = [(c, n) for c, n in self.store.chunks_mentioning(entity.iri, limit=20) if c not in hidden]
            chunks = self.store.chunks([cid for cid, _ in mentioned])
            about = self.store.chunks_about(entity.iri)
            anchored = [a for a in anchors_about(self.store.db, entity.iri, limit=20) if a[0] not in hidden]
            anchored_chunks = self.store.chunks([cid for cid, _, _ in anchored])
            return {
                **entity.to_json(),
                "neighbours": neighbours,
                "documents_about": _docs(self.store, about),
                "sections_about": [
                    {"chunk_id": cid, "doc_id": anchored_chunks[cid].doc_id, "title": anchored_chunks[cid].title,
                     "section": anchored_chunks[cid].section, "strength": strength, "reason": reason}
                    for cid, strength, reason in anchored if cid in anchored_chunks
                ],
                "mentioned_in": [
                    {"chunk_id": cid, "doc_id": chunks[cid].doc_id, "title": chunks[cid].title, "mentions": n}
                    for cid, n in mentioned if cid in chunks
                ],
                **({"graph": walked.note()} if walked is not view else {}),
            }


# A relation's cue word right after "how" is the verb of a procedure ("怎么配置定时快照", "how to use
# the CLI"), not a question along the relation ("X 依赖哪些组件", "which settings configure X").
_HOW_BEFORE = re.compile(r"(?:怎么|如何|怎样|怎么样|该怎么|how\s+(?:do\s+i|can\s+i|should\s+i|to|do\s+you))\s*$", re.I)


class _NameMatcher:
    def __init__(self, matcher) -> None:
        self.matcher = matcher

    def find_names(self, text: str) -> set[str]:
        return {name for name, _, _ in self.find_spans(text)}

    def find_spans(self, text: str) -> list[tuple[str, int, int]]:
        """(relation name, start, end) of each relation word, in `normalize_text(text)`."""
        text = normalize_text(text)
        return [(name, m.start, m.end) for m in self.matcher.find(text)
                if not _HOW_BEFORE.search(text[max(0, m.start - 16) : m.start]) for name in m.entities]


def note_copies(store: DocStore, hits, copies: dict[str, list[str]]) -> None:
    """`why.copies`: the other documents holding a hit's very text (collapsed into it), so a copy is said, not shown twice."""
    for hit in hits:
        if copies.get(hit.chunk_id):
            hit.why["copies"] = _docs(store, copies[hit.chunk_id])


def _docs(store: DocStore, chunk_ids: list[str]) -> list[dict]:
    seen: dict[str, dict] = {}
    for chunk in store.chunks(chunk_ids).values():
        if chunk.doc_id not in seen:
            doc = store.document(chunk.doc_id)
            seen[chunk.doc_id] = {"doc_id": chunk.doc_id, "title": chunk.title, "source": doc.source if doc else ""}
    return list(seen.values())
