"""The whole flow, in order: ingest -> index -> link -> expand -> fuse. `KnowledgeBase` is the one entry point.

Read `query()` top to bottom for the query path and `ingest_documents()` for the write path; each
step is a call into its own stage module.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from kg.errors import InputError, NotFoundError
from kg.settings import Settings
from kg.store import GRAPH_FILE, KnowledgeGraph
from retrieval.catalog.docstore import DocStore
from retrieval.graph.expand import (
    ExpansionSettings,
    chunks_for_entities,
    expand_neighbours,
    relation_cues,
)
from retrieval.graph.seeds import GraphEvidence, fold_label
from retrieval.index.analysis import (
    add_user_words,
    cjk_bigrams,
    compound_terms,
    normalize_text,
    query_terms,
    taught_words,
    vocabulary_version,
)
from retrieval.index.synonyms import SynonymTable
from retrieval.index.whoosh_index import WhooshIndex
from retrieval.ingest.chunking import chunk_document, find_source_files, read_source_file
from retrieval.packs import PackShelf
from retrieval.packs.scope import route_query
from retrieval.rank.explain import build_hits, entities_json
from retrieval.rank.followup import (
    BRIDGE_WEIGHT,
    FollowUp,
    bridge_names,
    merge_rounds,
    named_subject,
    needs_followup,
)
from retrieval.rank.fusion import cap_per_document, fuse_hits
from retrieval.types import Chunk, QueryResult, SourceDocument

__all__ = ["IngestReport", "KnowledgeBase", "MODES"]

MODES = ("full", "bm25", "graph")
MARKER = "kgrag.json"
SYNONYMS_FILE = "synonyms.txt"
Progress = Callable[[int], None]
COMPOUND_WEIGHT = 0.3  # 心跳间隔 for a question that says 心跳
FOLLOWUP_TOP = 5  # round one is judged on this many hits


@dataclass
class IngestReport:
    added: int = 0
    updated: int = 0
    unchanged: int = 0
    chunks_indexed: int = 0
    chunks_removed: int = 0
    seconds: float = 0.0
    doc_ids: list[str] = field(default_factory=list)

    def summary(self) -> str:
        if not (self.added or self.updated):
            return f"nothing changed: {self.unchanged} document(s) already up to date"
        return (
            f"{self.added} new, {self.updated} updated, {self.unchanged} unchanged document(s); "
            f"{self.chunks_indexed} chunks indexed in {self.seconds:.1f} s"
        )


class KnowledgeBase:
    def __init__(self, settings: Settings, *, create: bool = False) -> None:
        self.settings = settings
        self.root = Path(settings.data_dir)
        if not (self.root / MARKER).exists():
            if not create:
                raise NotFoundError(
                    f"no knowledge base in '{self.root}': run `kg init` (or `kg ingest PATH`) first, "
                    "or point --data-dir / KG_DATA_DIR at an existing one"
                )
            self.root.mkdir(parents=True, exist_ok=True)
            (self.root / MARKER).write_text(json.dumps({"format": 1, "created": time.time()}) + "\n")
        self.lock = threading.RLock()
        self.graph = KnowledgeGraph(self.root)
        if not (self.root / GRAPH_FILE).exists():
            self.graph.save()
        self.store = DocStore(self.root / "kb.sqlite")
        self.index = WhooshIndex(self.root / "index", {"title": settings.title_boost, "section": 0.5, "body": 1.0},
                                 max_df_ratio=settings.max_df_ratio)
        self.synonyms = SynonymTable.read(self.root / SYNONYMS_FILE)
        self.expansion = ExpansionSettings(max_hops=settings.expansion_hops, hub_cap=settings.hub_cap,
                                           decay=settings.expansion_decay, mention_weight=settings.mention_weight,
                                           min_score=settings.min_graph_score)
        self._linker = None
        self._about_index: dict[str, list[str]] | None = None
        self.evidence = GraphEvidence(self.store, self.graph)
        self._relations = None
        self._index_words_synced: tuple | None = None  # (jieba vocabulary, graph) state of the last sync
        self._packs: PackShelf | None = None

    def close(self) -> None:
        self.index.close()
        self.store.close()

    def __enter__(self) -> KnowledgeBase:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- derived state, rebuilt when the graph changes ---------------------------------------------
    @property
    def linker(self):
        if self._linker is None:
            from retrieval.graph.linking import EntityLinker

            view = self.graph.view
            add_user_words([s for s, _ in view.surfaces()] + self.synonyms.words())
            self._linker = EntityLinker(view.link_surfaces(), view.labels())
        return self._linker

    def _relation_matcher(self):
        """Matches the labels and cue words (skos:altLabel) of the ontology's properties in a question."""
        if self._relations is None:
            from retrieval.graph.linking import EntityMatcher

            surfaces = [(label, p.name) for p in self.graph.vocab.properties.values() for label in p.labels]
            self._relations = _NameMatcher(EntityMatcher(surfaces))
        return self._relations

    def _graph_changed(self) -> None:
        self.graph.invalidate()
        self._linker = self._about_index = self._relations = None
        self.evidence.invalidate()

    def _refresh_graph(self, progress: Progress | None = None) -> None:
        """Pick up edits made to graph.ttl outside kgrag (Protégé): re-link, and re-index only the chunks
        that contain a new Chinese label (see `_sync_index_words`)."""
        if self.graph.refresh_if_changed():
            self._graph_changed()
            self.relink(progress)
            self._sync_index_words()

    def _about(self) -> dict[str, list[str]]:
        """Folded label/alias -> entities, to decide which entity a document title is about."""
        if self._about_index is None:
            index: dict[str, list[str]] = {}
            for surface, iri in self.graph.view.surfaces():
                index.setdefault(fold_label(surface), []).append(iri)
            self._about_index = index
        return self._about_index

    # -- write path: ingest -> index -> link ---------------------------------------------------
    def ingest_paths(self, paths: Sequence[Path], progress: Progress | None = None) -> IngestReport:
        files = find_source_files(paths)
        if not files:
            raise InputError("no Markdown or text files found in " + ", ".join(str(p) for p in paths))
        return self.ingest_documents((read_source_file(f, str(f.resolve())) for f in files), progress)

    def ingest_documents(self, sources: Iterable[SourceDocument], progress: Progress | None = None) -> IngestReport:
        report = IngestReport()
        started = time.perf_counter()
        with self.lock:
            linker = self.linker
            self._sync_index_words()  # older chunks first, so that every chunk is cut the same way
            about = self._about()
            try:
                # The same source twice in one batch: the last one wins (whoosh cannot delete what
                # the open writer added, so the earlier copy must never reach it).
                batch = list({src.source: src for src in sources}.values())
                with self.store.transaction():
                    for src in batch:
                        self._ingest_one(src, linker, about, report)
                        if progress:
                            progress(1)
                    self.index.commit(optimize=report.chunks_indexed > 1000)
            except BaseException:
                self.index.rollback()
                raise
            self.evidence.invalidate()
        report.seconds = time.perf_counter() - started
        return report

    def _ingest_one(self, src: SourceDocument, linker, about, report: IngestReport) -> None:
        doc, chunks = chunk_document(src)
        existing = self.store.document_by_source(src.source)
        if existing is not None and existing.sha256 == doc.sha256:
            report.unchanged += 1
            report.doc_ids.append(existing.doc_id)
            return
        if existing is not None:
            removed = self.store.delete_document(existing.doc_id)
            report.chunks_removed += self.index.delete_chunks(removed)
            doc = type(doc)(**{**doc.__dict__, "version": existing.version + 1})
            report.updated += 1
        else:
            report.added += 1
        self.store.put_document(doc, chunks)
        report.chunks_indexed += self.index.add_chunks(chunks)
        self._link_document(doc.doc_id, doc.title, chunks, linker, about)
        report.doc_ids.append(doc.doc_id)

    def _link_document(self, doc_id: str, title: str, chunks: Sequence[Chunk], linker, about) -> None:
        for chunk, mentions in zip(chunks, linker.link_many(c.text for c in chunks), strict=True):
            self.store.put_mentions(chunk.chunk_id, mentions)
        self.store.put_about(doc_id, about.get(fold_label(title), ()))

    def relink(self, progress: Progress | None = None) -> int:
        """Recompute every chunk's entity mentions (after the graph gained or lost labels)."""
        with self.lock:
            linker, about = self.linker, self._about()
            by_doc: dict[str, list[Chunk]] = {}
            for chunk in self.store.iter_chunks():
                by_doc.setdefault(chunk.doc_id, []).append(chunk)
            with self.store.transaction():
                self.store.clear_links()
                for doc_id, chunks in by_doc.items():
                    self._link_document(doc_id, chunks[0].title, chunks, linker, about)
                    if progress:
                        progress(len(chunks))
            self.evidence.invalidate()
            return sum(len(c) for c in by_doc.values())

    def _sync_index_words(self) -> int:
        """Re-index the chunks that contain a word jieba was taught after they were indexed.

        A label added after its documents were ingested (`kg import relations.csv` after `kg
        ingest`) cuts the question's 熔断降级 whole while the index holds 熔断 + 降级, so BM25 never
        matched it. Chunks are found with one Aho-Corasick pass; nothing else is re-indexed.
        """
        view = self.graph.view
        self.linker  # noqa: B018 - teaches jieba this knowledge base's labels and synonyms
        # The view itself, not its id: a rebuilt view may reuse a freed one's address.
        state = (vocabulary_version(), view, len(self.synonyms))
        last = self._index_words_synced
        if last is not None and last[1] is view and last[::2] == state[::2]:
            return 0  # nothing taught and no graph change since the last sync: skip the work per ingest
        current = taught_words([s for s, _ in view.surfaces()] + self.synonyms.words())
        new = current - self.store.index_words()
        self._index_words_synced = state
        if not new:
            return 0
        import ahocorasick

        automaton = ahocorasick.Automaton()
        for word in new:
            automaton.add_word(word, word)
        automaton.make_automaton()
        stale = [c for c in self.store.iter_chunks()
                 if next(automaton.iter(normalize_text(f"{c.title}\n{c.section}\n{c.text}")), None) is not None]
        if stale:
            self.index.add_chunks(stale)
            self.index.commit()
        self.store.add_index_words(new)
        return len(stale)

    def import_file(self, path: Path, progress: Progress | None = None, **options) -> dict:
        """A relation table (.csv), an RDF/OWL file (.ttl .owl .rdf .nt) or a synonym table (.txt)."""
        path = Path(path)
        if not path.is_file():
            raise InputError(f"{path}: no such file")
        suffix = path.suffix.lower()
        with self.lock:
            if suffix == ".csv":
                report = self.graph.import_relations(path, progress=progress, **options)
                result = {"kind": "relations", "summary": report.summary(), "report": _report_json(report)}
            elif suffix in (".ttl", ".owl", ".rdf", ".xml", ".nt", ".jsonld", ".ofn", ".omn", ".owx"):
                # .ofn/.omn/.owx reach the loader only for it to refuse them with Protégé's save-as hint.
                added = self.graph.merge_rdf(path)
                result = {"kind": "rdf", "summary": f"{added} new triples", "triples_added": added}
            elif suffix == ".txt":
                table = SynonymTable.read(path)  # validates before anything is written
                target = self.root / SYNONYMS_FILE
                existing = target.read_text(encoding="utf-8") if target.exists() else ""
                new_lines = [", ".join(g) for g in table.groups if ", ".join(g) not in existing.splitlines()]
                if new_lines:
                    target.write_text(existing + "".join(line + "\n" for line in new_lines), encoding="utf-8")
                self.synonyms = SynonymTable.read(target)
                add_user_words(self.synonyms.words())
                return {"kind": "synonyms", "summary": f"{len(new_lines)} new synonym groups", "groups_added": len(new_lines),
                        "chunks_reindexed": self._sync_index_words()}
            else:
                raise InputError(
                    f"{path.name}: cannot import '{suffix}' files: give a relation table (.csv), an ontology "
                    "(.ttl, .owl, .rdf) or a synonym table (.txt)"
                )
            if not options.get("dry_run"):
                self._graph_changed()
                result["chunks_relinked"] = self.relink()
                result["chunks_reindexed"] = self._sync_index_words()
            return result

    def add_entities(self, labels: Iterable[str], type_name: str = "Topic") -> int:
        with self.lock:
            added = self.graph.add_entities(labels, type_name)
            if added:
                self._graph_changed()
            return added

    # -- read path: link -> search -> expand -> fuse ----------------------------------------------
    def query(self, text: str, k: int | None = None, mode: str = "full", types: Sequence[str] | None = None, *,
              packs: Sequence[str] | None = None) -> QueryResult:
        """Ranked chunks for a question. `types` (class names or labels) keeps graph expansion to
        entities of those classes or their subclasses (rdfs:subClassOf), e.g. ["Service"]. With
        knowledge packs, routing picks at most two packs first (`packs` forces them)."""
        if mode not in MODES:
            raise InputError(f"unknown mode '{mode}' (use one of: {', '.join(MODES)})")
        text = (text or "").strip()
        if not text:
            raise InputError("the query is empty: ask a question or give a few words")
        if k is None:
            k = self.settings.default_k
        if k < 1 or k > 1000:
            raise InputError(f"k must be between 1 and 1000, got {k}")
        timings: dict[str, float] = {}
        with self.lock:
            self._refresh_graph()
            wanted = self._resolve_types(types) if types else []
            t0 = time.perf_counter()
            linker = self.linker  # also teaches jieba the entity labels, which the index was cut with
            mentions = linker.link(text) if mode != "bm25" else []
            t1 = time.perf_counter()
            words = query_terms(text)
            terms = self.synonyms.expand(words)
            terms += [(w, COMPOUND_WEIGHT) for w in compound_terms(words) if w not in dict(terms)]
            grams = [(g, self.settings.gram_weight) for g in dict.fromkeys(cjk_bigrams(text))] if self.settings.gram_weight else []
            routing, scope = route_query(self, text, mentions, terms, grams, packs)  # the whole knowledge base without packs
            if routing is not None and routing.out_of_scope:
                return QueryResult(query=text, entities=entities_json(mentions, []), hits=[], mode=mode,
                                   out_of_scope=routing.out_of_scope, routing=routing.to_json())
            text_hits = [] if mode == "graph" else scope.text_hits if scope.text_hits is not None else \
                self.index.search(terms, self.settings.bm25_candidates, grams=grams, doc_ids=scope.doc_ids)
            t2 = time.perf_counter()
            graph_hits, entity_hits = [], []
            if mentions:
                seeds = scope.evidence.seed_weights(mentions)
                cues = relation_cues(self.graph.vocab, self._relation_matcher().find_names(text))
                entity_hits = expand_neighbours(self.graph.view, seeds, self.expansion, relation_boosts=cues,
                                                text_neighbours=scope.evidence.mention_fit(text))
                if wanted:
                    entity_hits = self._of_types(entity_hits, wanted, seeds)
                text_scores = {}
                if text_hits:
                    top = text_hits[0].score or 1.0
                    text_scores = {h.chunk_id: h.score / top for h in text_hits}
                # A question that asks along a relation ("哪些应用会受波及", "who owns ...") wants the
                # entities at the other end more than the one it names.
                focus = {iri: self.settings.cued_seed_weight for iri in seeds} if cues else None
                graph_hits = chunks_for_entities(scope.store, entity_hits, self.expansion, entity_weights=focus,
                                                 text_scores=text_scores, text_agreement=self.settings.text_agreement)
                graph_hits = graph_hits[: self.settings.graph_candidates]
            t3 = time.perf_counter()
            fused = fuse_hits(
                text_hits, graph_hits, method=self.settings.fusion, graph_weight=self.settings.graph_weight,
                graph_confidence=self.settings.graph_confidence, decay=self.expansion.decay, rrf_k=self.settings.rrf_k,
            )
            doc_of = self.store.chunk_documents(list({h.chunk_id for h in text_hits} | {h.chunk_id for h in graph_hits}))
            fused = cap_per_document(fused, doc_of, self.settings.chunks_per_document)
            t4 = time.perf_counter()
            followup, second_hits = None, []
            if mode == "full" and self.settings.followup:
                followup, fused, second_hits = self._follow_up(text, words, fused, graph_hits, grams, scope.doc_ids)
            hits = build_hits(self.store, self.graph.view.entities, fused[:k], text_hits, graph_hits, second_hits)
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
            packs_used=routing.packs_used() if routing else [],
            routing=routing.to_json() if routing else None,
        )

    @property
    def packs(self) -> PackShelf:
        """The knowledge packs (`kg pack ...`): add, list, update, remove, and routing."""
        if self._packs is None:
            self._packs = PackShelf(self)
        return self._packs

    def _follow_up(self, text: str, words: list[str], fused: list, graph_hits: list, grams: list, scope=None):
        """Round two (`retrieval.rank.followup`), when round one's best hit is a first hop and not the end:
        the question names that hit's subject (its whole title), no top hit came through a relation, and
        the hit's lead names something the question does not. The second search drops the first
        hop's name, adds those names, and is merged below the hit."""
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
        second = self.index.search(terms, self.settings.bm25_candidates, grams=grams, doc_ids=scope)
        doc_of = self.store.chunk_documents([f.id for f in fused] + [h.chunk_id for h in second])
        merged = merge_rounds(fused, [h.chunk_id for h in second], doc_of, weight=self.settings.followup_weight,
                              k=self.settings.rrf_k)
        merged = cap_per_document(merged, doc_of, self.settings.chunks_per_document)
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

    def _of_types(self, entity_hits, wanted: list[str], seeds) -> list:
        vocab, entities = self.graph.vocab, self.graph.view.entities
        return [
            h for h in entity_hits
            if h.entity in seeds or any(vocab.is_subclass(t, w) for t in entities[h.entity].types for w in wanted)
        ]

    # -- inspection -------------------------------------------------------------------------------
    def entity(self, key: str) -> dict:
        with self.lock:
            self._refresh_graph()
            view = self.graph.view
            entity = view.resolve(key)
            if entity is None:
                raise NotFoundError(f"no entity '{key}' (give its IRI or its exact label; `kg stats` counts entities)")
            neighbours: dict[str, list[dict]] = {}
            for edge in view.neighbours(entity.iri):
                neighbours.setdefault(edge.relation, []).append(
                    {"id": edge.target, "label": view.entities[edge.target].label, "asserted": edge.forward}
                )
            mentioned = self.store.chunks_mentioning(entity.iri, limit=20)
            chunks = self.store.chunks([cid for cid, _ in mentioned])
            about = self.store.chunks_about(entity.iri)
            return {
                **entity.to_json(),
                "neighbours": neighbours,
                "documents_about": _docs(self.store, about),
                "mentioned_in": [
                    {"chunk_id": cid, "doc_id": chunks[cid].doc_id, "title": chunks[cid].title, "mentions": n}
                    for cid, n in mentioned if cid in chunks
                ],
            }

    def stats(self) -> dict:
        with self.lock:
            self._refresh_graph()
            return {"data_dir": str(self.root), **self.store.stats(), **self.graph.view.stats(),
                    "indexed_chunks": self.index.doc_count(), "synonym_groups": len(self.synonyms)}


class _NameMatcher:
    def __init__(self, matcher) -> None:
        self.matcher = matcher

    def find_names(self, text: str) -> set[str]:
        return {name for m in self.matcher.find(normalize_text(text)) for name in m.entities}


def _docs(store: DocStore, chunk_ids: list[str]) -> list[dict]:
    seen: dict[str, dict] = {}
    for chunk in store.chunks(chunk_ids).values():
        if chunk.doc_id not in seen:
            doc = store.document(chunk.doc_id)
            seen[chunk.doc_id] = {"doc_id": chunk.doc_id, "title": chunk.title, "source": doc.source if doc else ""}
    return list(seen.values())


def _report_json(report) -> dict:
    return {
        "rows": report.rows, "new_entities": report.new_entities, "new_edges": report.new_edges,
        "unchanged_edges": report.unchanged_edges, "rejected": [str(p) for p in report.rejected],
        "dry_run": report.dry_run, "encoding": report.encoding,
    }
