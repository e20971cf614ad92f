"""The knowledge graph on disk: `graph.ttl` (the base ontology + the user's entities and relations) <-> rdflib.

The file is the single source of truth and is what Protégé opens; kgrag writes it atomically
(temporary file + rename) so a failed write never leaves half a graph. Edits made on disk (in
Protégé) are noticed by modification time and picked up on the next read.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path

from rdflib import OWL, RDF, RDFS, SKOS, Graph, Literal, URIRef

from kg.errors import InputError
from kg.graph import GraphView
from ontology import BASE_ONTOLOGY_PATH, KG, Vocabulary, entity_iri, load_rdf

__all__ = ["GRAPH_FILE", "KnowledgeGraph"]

GRAPH_FILE = "graph.ttl"


class KnowledgeGraph:
    def __init__(self, data_dir: Path) -> None:
        self.path = Path(data_dir) / GRAPH_FILE
        self._stamp: tuple[int, int] | None = None
        self._view: GraphView | None = None
        self._vocab: Vocabulary | None = None
        self.rdf = Graph()
        self.reload()

    # -- file <-> memory ---------------------------------------------------------------------
    def _disk_stamp(self) -> tuple[int, int] | None:
        try:
            st = self.path.stat()
        except FileNotFoundError:
            return None
        return (st.st_mtime_ns, st.st_size)

    def reload(self) -> None:
        if self.path.exists():
            self.rdf = load_rdf(self.path)
        else:
            self.rdf = load_rdf(BASE_ONTOLOGY_PATH)
        _bind_prefixes(self.rdf)
        self._stamp = self._disk_stamp()
        self._view = self._vocab = None

    def changed_on_disk(self) -> bool:
        return self._disk_stamp() != self._stamp

    def refresh_if_changed(self) -> bool:
        if self.changed_on_disk():
            self.reload()
            return True
        return False

    def save(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".graph-", suffix=".ttl", dir=self.path.parent)
        try:
            with os.fdopen(fd, "wb") as fh:
                self.rdf.serialize(destination=fh, format="turtle")
            # mkstemp makes the file private (0600); graph.ttl is meant to be opened in Protégé.
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(tmp, 0o666 & ~umask)
            os.replace(tmp, self.path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        self._stamp = self._disk_stamp()

    def invalidate(self) -> None:
        self._view = self._vocab = None

    # -- derived -----------------------------------------------------------------------------
    @property
    def vocab(self) -> Vocabulary:
        if self._vocab is None:
            self._vocab = Vocabulary.from_graph(self.rdf)
        return self._vocab

    @property
    def view(self) -> GraphView:
        if self._view is None:
            self._view = GraphView.from_rdf(self.rdf, self.vocab)
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
    ):
        from kg.relations import import_relation_table

        report = import_relation_table(
            self.rdf, Path(path), self.vocab, skip_invalid=skip_invalid, dry_run=dry_run,
            rejects_path=rejects_path, progress=progress,
        )
        if not dry_run and (report.added_triples or report.removed_triples):
            self.save()
            self.invalidate()
        return report

    def merge_rdf(self, path: Path) -> int:
        """Add every triple of an RDF file (an ontology saved from Protégé); returns how many were new."""
        incoming = load_rdf(path)
        before = len(self.rdf)
        for prefix, ns in incoming.namespaces():
            if prefix and prefix not in dict(self.rdf.namespaces()):
                self.rdf.bind(prefix, ns)
        self.rdf += incoming
        added = len(self.rdf) - before
        if added:
            self.save()
            self.invalidate()
        return added

    def add_entities(self, labels: Iterable[str], type_name: str = "Topic") -> int:
        """Entities named only by a label (e.g. benchmark passage titles); existing labels are kept."""
        cls = self.vocab.resolve_class(type_name)
        if cls is None:
            raise InputError(f"unknown entity type '{type_name}' (known: {', '.join(sorted(self.vocab.classes))})")
        known = {str(o) for o in self.rdf.objects(None, RDFS.label)}
        known |= {str(o) for o in self.rdf.objects(None, SKOS.altLabel)}
        added = 0
        for label in labels:
            label = label.strip()
            if not label or label in known:
                continue
            iri = entity_iri(label)
            self.rdf.add((iri, RDF.type, OWL.NamedIndividual))
            self.rdf.add((iri, RDF.type, URIRef(cls.iri)))
            self.rdf.add((iri, RDFS.label, Literal(label)))
            known.add(label)
            added += 1
        if added:
            self.save()
            self.invalidate()
        return added


def _bind_prefixes(g: Graph) -> None:
    g.bind("kg", KG, override=False)
    g.bind("ent", "https://kgrag.dev/entity/", override=False)
    g.bind("owl", OWL, override=False)
    g.bind("skos", SKOS, override=False)
