"""The whole flow, in order: ingest -> index -> link -> expand -> fuse. `KnowledgeBase` is the one entry point.

Read `ingest_documents()` (retrieval/write_path.py) top to bottom for the write path and `query()`
(retrieval/query_path.py, mixed in) for the query path; each step is a call into its own stage module,
and every write is one journaled commit (retrieval/writing.py).
"""

from __future__ import annotations

import datetime as dt
import json
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from kg.errors import ConfigError, NotFoundError
from kg.files import unwritable
from kg.lock import SharedLock
from kg.settings import Settings
from kg.store import GRAPH_FILE, KnowledgeGraph
from retrieval.catalog.docstore import DocStore
from retrieval.catalog.postgres_catalog import open_catalog, refuse_unmoved
from retrieval.catalog.versions import VersionCatalog
from retrieval.graph.expand import ExpansionSettings
from retrieval.graph.seeds import GraphEvidence, fold_label
from retrieval.graph.walk import GraphWalk
from retrieval.index.analysis import add_user_words
from retrieval.index.backends import open_text_index
from retrieval.index.synonyms import SYNONYMS_FILE, SynonymTable
from retrieval.index.vocabulary import PROCESS, Vocabulary
from retrieval.ingest.chunking import ChunkSizes
from retrieval.ingest.removal import resolve_documents
from retrieval.ingest.report import IngestReport
from retrieval.packs import PackShelf
from retrieval.query_path import MODES, QueryPath
from retrieval.types import SourceDocument
from retrieval.writing import Commits, Follower, writes

__all__ = ["IngestReport", "KnowledgeBase", "MODES"]

MARKER = "kgrag.json"
Progress = Callable[[int], None]


def open_data_dir(settings: Settings, create: bool) -> Path:
    """The knowledge base's folder, made when `create` and missing; what would stop it from working there, said."""
    root = Path(settings.data_dir)
    if settings.graph_walk == "store" and not settings.graph_store.startswith("sparql+"):
        raise ConfigError("KG_GRAPH_WALK=store walks the graph of the SPARQL store that KG_GRAPH_STORE names: set "
                          "KG_GRAPH_STORE=sparql+http://HOST:PORT, or leave KG_GRAPH_WALK unset (graph.ttl's graph)")
    if not (root / MARKER).exists():
        if not create:
            raise NotFoundError(
                f"no knowledge base in '{root}': run `kg init` (or `kg ingest PATH`) first, "
                "or point --data-dir / KG_DATA_DIR at an existing one"
            )
        try:
            root.mkdir(parents=True, exist_ok=True)
            (root / MARKER).write_text(json.dumps({"format": 1, "created": time.time()}) + "\n")
        except OSError as exc:  # a file where a folder of the path should be, a folder this user may not write
            raise ConfigError(f"cannot make a knowledge base in '{root}': {exc.strerror or exc}") from exc
    refused = unwritable(root, "kb.sqlite")
    if refused:
        owner = "run it as the folder's owner" if "user" in refused else "mount it writable"
        raise ConfigError(
            f"'{root}' is {refused}: kgrag writes there even to answer (the catalog's SQLite journal, the "
            f"write lock), so {owner}, or copy the knowledge base somewhere writable")
    return root


class KnowledgeBase(QueryPath):
    def __init__(self, settings: Settings, *, create: bool = False) -> None:
        self.settings = settings
        self.root = open_data_dir(settings, create)
        self.lock = threading.RLock()  # one writer at a time in this process (kb.writing() adds the flock)
        self.readers = SharedLock()  # queries share it; a commit takes it alone for an instant
        self.graph = KnowledgeGraph(self.root)
        graph_missing = not (self.root / GRAPH_FILE).exists()
        if graph_missing:
            self.graph.save()
        self.store = DocStore(self.root / "kb.sqlite", open_catalog(settings))  # KG_CATALOG: tables in PostgreSQL
        refuse_unmoved(self.root, self.store, settings.postgres_schema if settings.catalog == settings.postgres_dsn else None)
        self.history = VersionCatalog(self.store)
        self.chunk_sizes = ChunkSizes(settings.chunk_child_size, settings.chunk_parent_size, settings.chunk_overlap)
        self.index = open_text_index(settings, self.root, self.store)  # whoosh in the data dir unless KG_TEXT_BACKEND says otherwise
        self.synonyms = SynonymTable.read(self.root / SYNONYMS_FILE)
        self.expansion = ExpansionSettings.of(settings)
        self._linker = None
        # The words this knowledge base teaches jieba, which is one per process: they leave when it closes.
        self.vocabulary = Vocabulary(str(self.root))
        self._about_index: dict[str, list[str]] | None = None
        self.evidence = GraphEvidence(self.store, self.graph)
        self._relations = None
        self._index_words_synced: tuple | None = None  # (jieba vocabulary, graph) state of the last sync
        self._packs: PackShelf | None = None
        self._vectors = None
        self._store_follower = None
        self.walk = GraphWalk(self)  # graph.ttl's graph, or the SPARQL store's (KG_GRAPH_WALK=store)
        self._background_embedder = None
        self.commits = Commits(self)
        if graph_missing and self.commits.shared is not None:
            # Shared (KG_TEXT_BACKEND=postgres): a data dir without graph.ttl (new, or emptied) starts from the
            # published one, never publishes an empty graph to every server (and the SPARQL store).
            self.commits.reload(restore=True)
        self.commits.catch_up()  # finish a commit a killed process left; relink after an outside edit

    def close(self) -> None:
        for thread in (self._background_embedder, self._store_follower, self.commits.follower):
            if thread is not None:
                thread.stop()
        self.index.close()
        self.commits.close()
        self.store.close()
        if self._vectors is not None:
            self._vectors.close()
        self.vocabulary.forget()  # a knowledge base opened next in this process cuts as in a process of its own

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
        """Keep this (long-running) process on other processes' commits with a background thread (and, with
        KG_STORE_FOLLOW, on the edits made in the SPARQL store with another; with KG_EMBED_MODEL, the chunks the
        commits add get their vectors with a third)."""
        if self.commits.follower is None:
            self.commits.follower = Follower(self.commits, self.settings.follow_interval).start()
        if self._store_follower is None and self.settings.store_follow > 0 and self.settings.graph_store != "file":
            from retrieval.store_sync import StoreFollower

            self._store_follower = StoreFollower(self, self.settings.store_follow).start()
        if self._background_embedder is None and self.settings.embed_model and self.settings.embed_background:
            from retrieval.vectors.background import BackgroundEmbedder

            self._background_embedder = BackgroundEmbedder(self, max(self.settings.follow_interval, 1.0)).start()
        return self.commits.follower

    def check(self, repair: bool = False, progress=None):
        """Verify catalog <-> text index <-> graph <-> mentions (`kg check`); repair re-derives what disagrees
        (`progress(n)`: n more chunks indexed again, when the text index is written anew)."""
        from retrieval.consistency import check

        if not repair:
            with self.reading():
                return check(self)
        with self.writing("check"):
            return check(self, repair_problems=True, progress=progress)

    def optimize(self) -> int:
        """Merge the text index's segments into one (ingest merges by size tier only); the count before."""
        from retrieval.indexing import optimize_index

        with self.writing("optimize"):
            return optimize_index(self)

    def __enter__(self) -> KnowledgeBase:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- derived state, rebuilt when the graph changes ---------------------------------------------
    @property
    def linker(self):
        """The entity linker; building it teaches jieba the labels and synonyms that the index was cut with (so
        every read and write asks for it before it cuts text), again after a `reset_user_words`."""
        self.vocabulary.refresh()
        if self._linker is None:
            self._linker = self.build_linker(self.graph.view, self.synonyms, self.graph, self.vocabulary)
        return self._linker

    @staticmethod
    def build_linker(view, synonyms: SynonymTable, graph=None, vocabulary: Vocabulary | None = None):
        """The entity linker of `view`; with its `graph` (a KnowledgeGraph), kept in linker.cache beside
        graph.cache for the next process (keyed by graph.ttl's content hash). Its words are taught to jieba
        for `vocabulary` (the knowledge base's; without one, for the whole process)."""
        from retrieval.graph.linking import cached_linker

        linker = cached_linker(view) if graph is None else cached_linker(view, graph.digest, graph.cache_path.parent)
        words = linker.user_words + synonyms.words()  # the labels jieba can hold, then the synonyms
        add_user_words(words, vocabulary or PROCESS)
        return linker

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
    # (imported by the first write, so that a process that only queries does not load it)
    def today(self) -> dt.date:
        return self.settings.today or dt.date.today()

    @writes
    def ingest_paths(self, paths: Sequence[Path], progress: Progress | None = None, *, strict: bool = False,
                     doc_id: str | None = None, effective: str | None = None, workers: int = 0,
                     ignore: bool = True) -> IngestReport:
        """Files and folders. A file that cannot be read is skipped and reported (`strict`: an error).
        `workers`: processes that analyse and index the new chunks beside this one (whoosh only).
        `ignore`: obey the folders' .kgignore / .gitignore (`retrieval.ingest.ignore`)."""
        from retrieval import write_path
        return write_path.ingest_paths(self, paths, progress, strict=strict, doc_id=doc_id, effective=effective,
                                       workers=workers, ignore=ignore)

    @writes
    def ingest_documents(self, sources: Iterable[SourceDocument], progress: Progress | None = None, *,
                         strict: bool = True, skipped: list | None = None, workers: int = 0) -> IngestReport:
        from retrieval import write_path
        return write_path.ingest_documents(self, sources, progress, strict=strict, skipped=skipped, workers=workers)

    @writes
    def delete_documents(self, doc_ids: Sequence[str]) -> list[dict]:
        """Remove documents (by id, front matter `id:` or source path) with every version, chunk, mention
        and index entry. Unknown names are an error before anything is removed."""
        from retrieval import write_path
        return write_path.delete_documents(self, doc_ids)

    @writes
    def sync(self, paths: Sequence[Path], ignore: bool = True) -> IngestReport:
        """Remove the versions (and documents) whose source files under the folders `paths` are gone (or, with
        `ignore`, left out by the folders' .kgignore / .gitignore)."""
        from retrieval import write_path
        return write_path.sync(self, paths, ignore)

    @writes
    def relink(self, progress: Progress | None = None) -> int:
        """Recompute every chunk's entity mentions (after the graph gained or lost labels)."""
        from retrieval import write_path
        return write_path.relink(self, progress)

    @writes
    def import_file(self, path: Path, progress: Progress | None = None, **options) -> dict:
        """A relation or alias table (.csv, .xlsx), an RDF/OWL file (.ttl .owl .rdf .nt) or a synonym table (.txt)."""
        from retrieval import write_path
        return write_path.import_file(self, path, progress, **options)

    @writes
    def add_entities(self, labels: Iterable[str], type_name: str = "Topic") -> int:
        from retrieval import write_path
        return write_path.add_entities(self, labels, type_name)

    @writes
    def add_pack(self, pack_id: str, origin: str, progress: Progress | None = None):
        """A knowledge pack from a folder or git repository (`kg pack add`; `retrieval.packs.shelf`)."""
        return self.packs._add(pack_id, origin, progress)

    @writes
    def update_pack(self, pack_id: str, progress: Progress | None = None):
        """Fetch a pack's origin again and re-ingest it (`kg pack update`)."""
        return self.packs._update(pack_id, progress)

    @writes
    def remove_pack(self, pack_id: str):
        """A pack's documents, registry rows, entity and files (`kg pack remove`)."""
        return self.packs._remove(pack_id)

    # -- read path: link -> search -> expand -> fuse ----------------------------------------------
    def ask(self, question: str, k: int | None = None, mode: str = "full", *, as_of=None, packs=None, history=None,
            llm="settings", stream: bool = False):
        """A cited answer (`retrieval.answer`: the two-round sufficiency loop); `stream=True` yields its events.
        `history`: the conversation before a follow-up, [{"role": "user"|"assistant", "content"}, ...]."""
        from retrieval.answer.session import ask

        return ask(self, question, k=k, mode=mode, as_of=as_of, packs=packs, history=history, llm=llm, stream=stream)

    @property
    def vectors(self):
        """The meaning channel (`retrieval.vectors`): `kg embed`, the dense search, the vectors' check."""
        if self._vectors is None:
            from retrieval.vectors.channel import Vectors

            self._vectors = Vectors(self)
        return self._vectors

    @property
    def packs(self) -> PackShelf:
        """The knowledge packs (`kg pack ...`): add, list, update, remove, and routing."""
        if self._packs is None:
            self._packs = PackShelf(self)
        return self._packs

    def documents(self) -> list[dict]:
        """Every document with the version in force today and how many versions it has."""
        with self.reading():
            return self.history.documents(self.today())

    def document(self, key: str) -> dict:
        """One document (by doc_id, front matter `id:` or source path) with all its versions."""
        with self.reading():
            doc_id = self._resolve_document(key)
            [doc] = self.history.documents(self.today(), doc_id)
            return {**doc, "version_history": self.history.versions(doc_id, self.today())}

    def versions(self, key: str) -> list[dict]:
        """The versions of a document, oldest first, each with its effective range and whether it is in force."""
        with self.reading():
            return self.history.versions(self._resolve_document(key), self.today())

    def _resolve_document(self, key: str) -> str:
        return resolve_documents(self.history, [key])[0]

    def stats(self) -> dict:
        with self.reading():
            return {"data_dir": str(self.root), **self.store.stats(), **self.history.stats(self.today()), **self.graph.view_stats(),
                    "indexed_chunks": self.index.doc_count(), "synonym_groups": len(self.synonyms),
                    **({"catalog": f"PostgreSQL schema {self.store.postgres[1]}"} if self.store.postgres else {}),
                    **({"graph_unread": self.graph.unread} if self.graph.unread else {}),
                    **({"synonyms_unread": unread} if (unread := self.commits.synonyms_file.unread) else {})}
