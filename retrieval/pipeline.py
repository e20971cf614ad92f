"""The whole flow, in order: ingest -> index -> link -> expand -> fuse. `KnowledgeBase` is the one entry point.

Read `ingest_documents()` top to bottom for the write path and `query()` (retrieval/query_path.py,
mixed in) for the query path; each step is a call into its own stage module.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from kg.errors import InputError, NotFoundError
from kg.relations.aliases import import_alias_table, is_alias_table
from kg.settings import Settings
from kg.store import GRAPH_FILE, KnowledgeGraph
from retrieval.catalog.docstore import DocStore
from retrieval.graph.anchors import anchor_document
from retrieval.graph.expand import ExpansionSettings
from retrieval.graph.seeds import GraphEvidence, fold_label
from retrieval.index.analysis import (
    add_user_words,
    normalize_text,
    taught_words,
    vocabulary_version,
)
from retrieval.index.synonyms import SynonymTable
from retrieval.index.whoosh_index import WhooshIndex
from retrieval.ingest.chunking import chunk_document, find_source_files, read_source_file
from retrieval.query_path import MODES, QueryPath
from retrieval.types import Chunk, SourceDocument

__all__ = ["IngestReport", "KnowledgeBase", "MODES"]

MARKER = "kgrag.json"
SYNONYMS_FILE = "synonyms.txt"
Progress = Callable[[int], None]


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


class KnowledgeBase(QueryPath):
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
        self.index = WhooshIndex(self.root / "index", {"title": settings.title_boost, "section": settings.section_boost, "body": 1.0},
                                 max_df_ratio=settings.max_df_ratio)
        self.synonyms = SynonymTable.read(self.root / SYNONYMS_FILE)
        self.expansion = ExpansionSettings(max_hops=settings.expansion_hops, hub_cap=settings.hub_cap,
                                           decay=settings.expansion_decay, mention_weight=settings.mention_weight,
                                           min_score=settings.min_graph_score,
                                           anchor_weight=settings.anchor_weight if settings.section_anchors else 0.0)
        self._linker = None
        self._about_index: dict[str, list[str]] | None = None
        self.evidence = GraphEvidence(self.store, self.graph)
        self._relations = None
        self._index_words_synced: tuple | None = None  # (jieba vocabulary, graph) state of the last sync

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
        found = list(linker.link_many(c.text for c in chunks))
        for chunk, mentions in zip(chunks, found, strict=True):
            self.store.put_mentions(chunk.chunk_id, mentions)
        self.store.put_about(doc_id, about.get(fold_label(title), ()))
        anchor_document(self.store.db, title, chunks, found, linker.link_many)

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
            if suffix == ".csv" and is_alias_table(path):
                result = self._import_aliases(path, **options)
            elif suffix == ".csv":
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

    def _import_aliases(self, path: Path, skip_invalid: bool = False, dry_run: bool = False, **_) -> dict:
        """An `entity,alias` table: other names of entities the graph already has (skos:altLabel)."""
        from kg.graph import entity_subjects

        graph = self.graph
        report = import_alias_table(graph.rdf, path, entity_subjects(graph.rdf, graph.vocab),
                                    skip_invalid=skip_invalid, dry_run=dry_run)
        if report.new_aliases and not dry_run:
            graph.save()
        return {"kind": "aliases", "summary": report.summary(), "report": {
            "rows": report.rows, "new_aliases": report.new_aliases, "unchanged": report.unchanged,
            "rejected": report.rejected, "dry_run": report.dry_run, "encoding": report.encoding}}

    def add_entities(self, labels: Iterable[str], type_name: str = "Topic") -> int:
        with self.lock:
            added = self.graph.add_entities(labels, type_name)
            if added:
                self._graph_changed()
            return added

    def ask(self, question: str, k: int | None = None, mode: str = "full", *, as_of=None, packs=None,
            llm="settings", stream: bool = False):
        """A cited answer (`retrieval.answer`: the two-round sufficiency loop); `stream=True` yields its events."""
        from retrieval.answer.session import ask

        return ask(self, question, k=k, mode=mode, as_of=as_of, packs=packs, llm=llm, stream=stream)

    def stats(self) -> dict:
        with self.lock:
            self._refresh_graph()
            return {"data_dir": str(self.root), **self.store.stats(), **self.graph.view.stats(),
                    "indexed_chunks": self.index.doc_count(), "synonym_groups": len(self.synonyms)}


def _report_json(report) -> dict:
    return {
        "rows": report.rows, "new_entities": report.new_entities, "new_edges": report.new_edges,
        "unchanged_edges": report.unchanged_edges, "rejected": [str(p) for p in report.rejected],
        "dry_run": report.dry_run, "encoding": report.encoding,
    }
