"""The knowledge graph on disk: `graph.ttl` (the base ontology + the user's entities and relations) <-> rdflib.

The file is the single source of truth and is what Protégé opens; kgrag writes it atomically
(temporary file, fsync, rename) so a failed write never leaves half a graph. Edits made on disk (in
Protégé) are noticed by modification time and picked up on the next read.

Parsing a large graph.ttl takes long (a 78 MB file: about 100 s), and reading commands need only
the derived `Vocabulary` and `GraphView`: those are kept in `graph.cache`, keyed by the sha256 of
graph.ttl's content, so opening an unchanged graph costs one hash and one unpickle; rdflib parses
the file only when a write needs the triples (`rdf`) or the content changed.
"""

from __future__ import annotations

import hashlib
import logging
import os
import pickle
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from rdflib import OWL, RDF, RDFS, SKOS, Graph, Literal, URIRef

from kg.collector import collector_paused
from kg.errors import InputError, OntologyFormatError
from kg.files import file_stamp, replace_file
from kg.graph import GraphView
from kg.triples import TripleTable
from kg.turtle import serialize_turtle
from ontology import BASE_ONTOLOGY_PATH, KG, Vocabulary, entity_iri, load_rdf

if TYPE_CHECKING:
    from kg.relations.overlay import Overlay

__all__ = ["CACHE_FILE", "GRAPH_FILE", "KnowledgeGraph", "add_entities"]

GRAPH_FILE = "graph.ttl"
CACHE_FILE = "graph.cache"
_CACHE_FORMAT = 4  # bump when Vocabulary or GraphView change shape (4: the view as columns, kg.graph_packed)
_TEMP_PREFIX = ".graph-"


class KnowledgeGraph:
    def __init__(self, data_dir: Path) -> None:
        self.path = Path(data_dir) / GRAPH_FILE
        self.cache_path = Path(data_dir) / CACHE_FILE
        self._stamp: tuple[int, int] | None = None
        self._unread: tuple[int, int] | None | bool = False  # the stamp of a version of the file not to be read again
        self.unread = ""  # why the file as it stands is not this graph (a server says so at /health)
        self._view: GraphView | None = None
        self._vocab: Vocabulary | None = None
        self._rdf: Graph | None = None
        # An import's triples: in graph.ttl and graph.cache, added to `_rdf` when something reads it.
        self._pending: Overlay | None = None
        self.digest = ""  # sha256 of the graph.ttl content the triples in memory came from
        self.reload()

    # -- file <-> memory ---------------------------------------------------------------------
    def _disk_stamp(self) -> tuple[int, int] | None:
        return file_stamp(self.path)

    @property
    def rdf(self) -> Graph:
        if self._rdf is None:
            self._rdf = load_rdf(self.path) if self.path.exists() else load_rdf(BASE_ONTOLOGY_PATH)
            _bind_prefixes(self._rdf)
        if self._pending is not None:
            pending, self._pending = self._pending, None
            pending.commit()
        return self._rdf

    @rdf.setter
    def rdf(self, graph: Graph) -> None:
        self._rdf, self._pending = graph, None

    def reload(self) -> None:
        # Nothing is parsed or unpickled here: `vocab`, `view` and `view_stats()` load on first use.
        self._stamp = self._disk_stamp()
        self._rdf = self._pending = self._view = self._vocab = None
        self.digest = _digest(self.path)

    def changed_on_disk(self) -> bool:
        stamp = self._disk_stamp()
        return stamp != self._stamp and stamp != self._unread

    def held_back(self) -> bool:
        """The file as it stands is one `read_again` could not read: a write now would save this graph over it."""
        return self._unread is not False and self._disk_stamp() == self._unread

    def read_again(self) -> KnowledgeGraph:
        """The graph as the file stands now, or `self` when that is not to be had: a file caught mid-save (an
        editor that saves in place truncates first: for an instant graph.ttl is empty or half written; a server's
        follower that read it then served a graph without the ontology, every relation a 404) or one that cannot
        be read (a typo saved by hand: said once, as a warning, not a traceback every round). Either is read
        again when the file changes."""
        fresh = KnowledgeGraph(self.path.parent)
        try:
            fresh.vocab  # noqa: B018 - read now, before the check
            fresh.view  # noqa: B018
            stamp = fresh._disk_stamp()
            if stamp == fresh._stamp and (stamp is None or stamp[1] > 0):
                return fresh
            if stamp == fresh._stamp:
                self.unread = f"{self.path.name} is empty"
        except OntologyFormatError as exc:
            self.unread = str(exc)
            logging.getLogger("kgrag").warning("%s. Queries go on with the graph read before; the file is read "
                                               "again when it changes.", exc)
        self._unread = fresh._stamp  # moved while read: the file's stamp is already another, read at the next round
        return self

    def refresh_if_changed(self) -> bool:
        if self.changed_on_disk():
            self.reload()
            return True
        return False

    def save(self) -> None:
        self._publish(serialize_turtle(self.rdf))  # rdflib's bytes, without its per-occurrence prefix look-ups

    def _publish(self, data: bytes) -> None:
        """`data` becomes graph.ttl, whole or not at all."""
        replace_file(self.path, data, _TEMP_PREFIX, ".ttl")
        self._stamp = self._disk_stamp()
        self.digest = hashlib.sha256(data).hexdigest()

    def _read_cache(self, header_only: bool = False):
        """(vocab, view) from graph.cache when it was made from this graph.ttl content (or its stats
        alone, with `header_only`: a `kg stats` then never unpickles the graph)."""
        if not self.digest:
            return None
        import gc

        try:
            with self.cache_path.open("rb") as fh:
                # The cache is this data dir's own file, written by kgrag (see _write_cache).
                fmt, digest, stats = pickle.load(fh)  # noqa: S301
                if fmt != _CACHE_FORMAT or digest != self.digest:
                    return None
                if header_only:
                    return stats
                gc.disable()  # millions of small objects: the collector would rescan them all, repeatedly
                try:
                    return pickle.load(fh)  # noqa: S301
                finally:
                    gc.enable()
        except Exception:  # missing, cut short or from another version: parse instead
            return None

    def _load_derived(self) -> bool:
        # Triples changed in memory and not saved would make graph.cache stale; an import's pending
        # triples are saved (graph.ttl and graph.cache are both written from them).
        cached = self._read_cache() if self._rdf is None or self._pending is not None else None
        if cached is None:
            return False
        self._vocab, self._view = cached
        return True

    def view_stats(self) -> dict:
        """The view's counts, without loading the view when the cache has them."""
        if self._view is None and self._rdf is None:
            stats = self._read_cache(header_only=True)
            if stats is not None:
                return dict(stats)
        return self.view.stats()

    def _write_cache(self) -> bool:
        if not self.digest or self._view is None or self._vocab is None:
            return False
        try:
            fd, tmp = tempfile.mkstemp(prefix=".cache-", dir=self.cache_path.parent)
            with os.fdopen(fd, "wb") as fh:
                pickle.dump((_CACHE_FORMAT, self.digest, self._view.stats()), fh, protocol=pickle.HIGHEST_PROTOCOL)
                pickle.dump((self._vocab, self._view), fh, protocol=pickle.HIGHEST_PROTOCOL)
            os.chmod(tmp, 0o644)
            os.replace(tmp, self.cache_path)
        except (OSError, pickle.PicklingError, RecursionError):
            Path(tmp).unlink(missing_ok=True)  # a cache that cannot be written only costs speed
            return False
        return True

    def invalidate(self) -> None:
        self._view = self._vocab = None

    # -- derived -----------------------------------------------------------------------------
    @property
    def vocab(self) -> Vocabulary:
        if self._vocab is None and not self._load_derived():
            self._vocab = Vocabulary.from_graph(self.rdf)
        return self._vocab

    @property
    def view(self) -> GraphView:
        if self._view is None and not self._load_derived():
            self._view = GraphView.from_rdf(self.rdf, self.vocab)
            if self._write_cache():
                # Read back what was written: the view as columns (kg.graph_packed), as the next process
                # reads it, instead of ~67k entities and ~200k edges as objects (120 MB at 100k rows,
                # the peak of `kg import`). The same view (tests/test_graph_cache_packed.py).
                cached = self._read_cache()
                if cached is not None:
                    self._vocab, self._view = cached
        return self._view

    # -- writes ------------------------------------------------------------------------------
    def import_relations(
        self,
        path: Path,
        *,
        skip_invalid: bool = False,
        dry_run: bool = False,
        rejects_path: Path | None = None,
        progress: Callable[[int], None] | None = None,
        table: str | None = None,
    ):
        """`table`: the name the relation-table record knows the table by (default: its file's path; an upload: its
        file name), so that its next import removes the edges of the rows deleted since."""
        from kg.relations import import_relation_table
        from kg.relations.ledger import TableLedger

        planned: list[Overlay] = []
        keys: list = []
        # What the table asserted at its last import: the rows deleted since take their edges with them.
        ledger = TableLedger(self.path.parent)
        table = table or ledger.key(path)
        with collector_paused():
            report = import_relation_table(
                self.rdf, Path(path), self.vocab, skip_invalid=skip_invalid, dry_run=dry_run,
                rejects_path=rejects_path, progress=progress, apply=planned.append,
                forget=ledger.only_in(table), asserted=keys.append,
            )
            if keys:
                changed = planned and (report.added_triples or report.removed_triples)
                ledger.around(table, keys[0], (lambda: self._save_import(planned[0])) if changed else None,
                              keep_old=bool(report.kept_edges))
        return report

    def _save_import(self, overlay: Overlay) -> None:
        """graph.ttl and graph.cache written from the graph and an import's planned triples, which reach
        rdflib's store only if something reads `rdf` later (the same bytes and view as `save` and `view`
        after adding them: tests/test_turtle.py, tests/test_import_write.py)."""
        table = TripleTable(self.rdf, overlay.added, overlay.removed)
        self._publish(serialize_turtle(table))
        self._pending = overlay
        vocab = Vocabulary.from_graph(table)
        self._vocab, self._view = vocab, GraphView.from_rdf(table, vocab)
        del table
        self._write_cache()
        # The next read takes the view as columns from graph.cache, as the next process does (see `view`).
        self.invalidate()

    def merge_rdf(self, path: Path, incoming: Graph | None = None, table: str | None = None) -> tuple[int, int]:
        """Add the triples of an RDF file (an ontology saved from Protégé; `incoming` when already read) that the
        graph does not hold, its blank-node structures compared by content (kg/rdf_merge.py: a file imported
        again adds nothing), and remove those the file held at its last import and holds no more, unless another
        imported table or file holds them (`table`: the name the record knows the file by; default its path).
        Returns (added, removed) triple counts."""
        from kg.rdf_merge import file_trees, new_triples, rdf_keys, remove_keys
        from kg.relations.ledger import TableLedger

        incoming = load_rdf(path) if incoming is None else incoming
        ledger = TableLedger(self.path.parent)
        table = table or ledger.key(path)
        trees = file_trees(incoming)
        keys = rdf_keys(incoming, trees)
        held = set(keys)
        gone = [k for k in ledger.only_in(table) if k not in held]
        graph = self.rdf
        before = len(graph)
        for prefix, ns in incoming.namespaces():
            if prefix and prefix not in dict(graph.namespaces()):
                graph.bind(prefix, ns)
        removed = remove_keys(graph, gone) if gone else 0
        graph.addN((s, p, o, graph) for s, p, o in new_triples(graph, incoming, trees))
        added = len(graph) - before + removed

        def publish() -> None:
            self.save()
            self.invalidate()

        ledger.around(table, keys, publish if added or removed else None)
        return added, removed


def add_entities(graph: KnowledgeGraph, labels: Iterable[str], type_name: str = "Topic") -> int:
    """Entities named only by a label (e.g. benchmark passage titles) into `graph`, saved; existing labels are kept."""
    cls = graph.vocab.resolve_class(type_name)
    if cls is None:
        raise InputError(f"unknown entity type '{type_name}' (known: {', '.join(sorted(graph.vocab.classes))})")
    rdf = graph.rdf
    known = {str(o) for o in rdf.objects(None, RDFS.label)}
    known |= {str(o) for o in rdf.objects(None, SKOS.altLabel)}
    added = 0
    for label in labels:
        label = label.strip()
        if not label or label in known:
            continue
        iri = entity_iri(label)
        rdf.add((iri, RDF.type, OWL.NamedIndividual))
        rdf.add((iri, RDF.type, URIRef(cls.iri)))
        rdf.add((iri, RDFS.label, Literal(label)))
        known.add(label)
        added += 1
    if added:
        graph.save()
        graph.invalidate()
    return added


def _digest(path: Path) -> str:
    h = hashlib.sha256()
    try:
        with path.open("rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                h.update(block)
    except FileNotFoundError:
        return ""
    return h.hexdigest()


def _bind_prefixes(g: Graph) -> None:
    g.bind("kg", KG, override=False)
    g.bind("ent", "https://kgrag.dev/entity/", override=False)
    g.bind("owl", OWL, override=False)
    g.bind("skos", SKOS, override=False)
