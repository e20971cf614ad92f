"""The whole flow, in order: ingest -> index -> link -> expand -> fuse. `KnowledgeBase` is the one entry point.

Read `query()` top to bottom for the query path and `ingest_documents()` for the write path; each
step is a call into its own stage module.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from kg.errors import InputError, NotFoundError
from kg.lock import SharedLock
from kg.settings import Settings
from kg.store import GRAPH_FILE, KnowledgeGraph
from retrieval import write_path
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
)
from retrieval.index.synonyms import SynonymTable
from retrieval.index.whoosh_index import WhooshIndex
from retrieval.ingest.chunking import find_source_files, read_source_file
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
from retrieval.types import QueryResult, SourceDocument
from retrieval.write_path import SYNONYMS_FILE, IngestReport
from retrieval.writing import Commits, Follower, writes

__all__ = ["IngestReport", "KnowledgeBase", "MODES"]

MODES = ("full", "bm25", "graph")
MARKER = "kgrag.json"
Progress = Callable[[int], None]
COMPOUND_WEIGHT = 0.3  # 心跳间隔 for a question that says 心跳
FOLLOWUP_TOP = 5  # round one is judged on this many hits


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
        self.lock = threading.RLock()  # one writer at a time in this process (kb.writing() adds the flock)
        self.readers = SharedLock()  # queries share it; a commit takes it alone for an instant
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
        self.commits = Commits(self)
        self.commits.catch_up()  # finish a commit a killed process left; relink after an outside edit

    def close(self) -> None:
        if self.commits.follower is not None:
            self.commits.follower.stop()
        self.index.close()
        self.store.close()

    # -- the commit protocol (retrieval.writing) -------------------------------------------------
    def writing(self, op: str = "write"):
        """The write lock, the journal and the generation around one write; `@writes` uses it."""
        return self.commits.writing(op)

    @contextmanager
    def reading(self) -> Iterator[None]:
        """Around each query: the latest commit (see `Commits.before_read`), then the shared side."""
        self.commits.before_read()
        with self.readers.shared():
            yield

    def follow(self) -> Follower:
        """Keep this (long-running) process on other processes' commits with a background thread."""
        if self.commits.follower is None:
            self.commits.follower = Follower(self.commits, self.settings.follow_interval).start()
        return self.commits.follower

    def check(self, repair: bool = False):
        """Verify catalog <-> text index <-> graph <-> mentions (`kg check`); repair re-derives what disagrees."""
        from retrieval.consistency import check

        if not repair:
            with self.reading():
                return check(self)
        with self.writing("check"):
            return check(self, repair_problems=True)

    def __enter__(self) -> KnowledgeBase:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- derived state, rebuilt when the graph changes ---------------------------------------------
    @property
    def linker(self):
        if self._linker is None:
            self._linker = self.build_linker(self.graph.view, self.synonyms)
        return self._linker

    @staticmethod
    def build_linker(view, synonyms: SynonymTable):
        from retrieval.graph.linking import EntityLinker

        add_user_words([s for s, _ in view.surfaces()] + synonyms.words())
        return EntityLinker(view.link_surfaces(), view.labels())

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

    def _about(self) -> dict[str, list[str]]:
        """Folded label/alias -> entities, to decide which entity a document title is about."""
        if self._about_index is None:
            index: dict[str, list[str]] = {}
            for surface, iri in self.graph.view.surfaces():
                index.setdefault(fold_label(surface), []).append(iri)
            self._about_index = index
        return self._about_index

    # -- write path: ingest -> index -> link (retrieval.write_path), each a journaled commit ------
    @writes
    def ingest_paths(self, paths: Sequence[Path], progress: Progress | None = None) -> IngestReport:
        files = find_source_files(paths)
        if not files:
            raise InputError("no Markdown or text files found in " + ", ".join(str(p) for p in paths))
        return self.ingest_documents((read_source_file(f, str(f.resolve())) for f in files), progress)

    @writes
    def ingest_documents(self, sources: Iterable[SourceDocument], progress: Progress | None = None) -> IngestReport:
        return write_path.ingest_documents(self, sources, progress)

    @writes
    def relink(self, progress: Progress | None = None) -> int:
        """Recompute every chunk's entity mentions (after the graph gained or lost labels)."""
        return write_path.relink(self, progress)

    @writes
    def import_file(self, path: Path, progress: Progress | None = None, **options) -> dict:
        """A relation table (.csv), an RDF/OWL file (.ttl .owl .rdf .nt) or a synonym table (.txt)."""
        return write_path.import_file(self, path, progress, **options)

    @writes
    def add_entities(self, labels: Iterable[str], type_name: str = "Topic") -> int:
        return write_path.add_entities(self, labels, type_name)

    # -- read path: link -> search -> expand -> fuse ----------------------------------------------
    def query(self, text: str, k: int | None = None, mode: str = "full", types: Sequence[str] | None = None) -> QueryResult:
        """Ranked chunks for a question. `types` (class names or labels) keeps graph expansion to
        entities of those classes or their subclasses (rdfs:subClassOf), e.g. ["Service"]."""
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
        with self.reading():
            wanted = self._resolve_types(types) if types else []
            t0 = time.perf_counter()
            linker = self.linker  # also teaches jieba the entity labels, which the index was cut with
            mentions = linker.link(text) if mode != "bm25" else []
            t1 = time.perf_counter()
            words = query_terms(text)
            terms = self.synonyms.expand(words)
            terms += [(w, COMPOUND_WEIGHT) for w in compound_terms(words) if w not in dict(terms)]
            grams = [(g, self.settings.gram_weight) for g in dict.fromkeys(cjk_bigrams(text))] if self.settings.gram_weight else []
            text_hits = self.index.search(terms, self.settings.bm25_candidates, grams=grams) if mode != "graph" else []
            t2 = time.perf_counter()
            graph_hits, entity_hits = [], []
            if mentions:
                seeds = self.evidence.seed_weights(mentions)
                cues = relation_cues(self.graph.vocab, self._relation_matcher().find_names(text))
                entity_hits = expand_neighbours(self.graph.view, seeds, self.expansion, relation_boosts=cues,
                                                text_neighbours=self.evidence.mention_fit(text))
                if wanted:
                    entity_hits = self._of_types(entity_hits, wanted, seeds)
                text_scores = {}
                if text_hits:
                    top = text_hits[0].score or 1.0
                    text_scores = {h.chunk_id: h.score / top for h in text_hits}
                # A question that asks along a relation ("哪些应用会受波及", "who owns ...") wants the
                # entities at the other end more than the one it names.
                focus = {iri: self.settings.cued_seed_weight for iri in seeds} if cues else None
                graph_hits = chunks_for_entities(self.store, entity_hits, self.expansion, entity_weights=focus,
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
                followup, fused, second_hits = self._follow_up(text, words, fused, graph_hits, grams)
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
        )

    def _follow_up(self, text: str, words: list[str], fused: list, graph_hits: list, grams: list):
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
        second = self.index.search(terms, self.settings.bm25_candidates, grams=grams)
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
        with self.reading():
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
        with self.reading():
            return {"data_dir": str(self.root), **self.store.stats(), **self.graph.view_stats(),
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
