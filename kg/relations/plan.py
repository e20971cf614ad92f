"""Planning a relation table's rows into an rdflib Graph: checked `RelationRow`s in (one at a time), an `Overlay` of triples to add and remove and the counts of an `ImportReport` out.

`_Plan` works out every triple the rows add or replace against the graph as it is, without
touching it; only when the whole plan stands is it written (`commit`), so an import is all or
nothing. It keeps no row: only the overlay (the graph being built) and per-entity facts grow.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable

import rdflib
from rdflib import Literal, URIRef

from kg.relations.ledger import key_edge
from kg.relations.model import (
    _ALT_LABEL,
    _ENTITY,
    _INDIVIDUAL,
    _LABEL,
    _PROGRESS_EVERY,
    _TYPE,
    ImportReport,
    RelationRow,
    RowProblem,
)
from kg.relations.overlay import EdgeAnnotations, Overlay, label_index
from ontology import Vocabulary, entity_iri


def table_aliases(rows: Iterable[RelationRow]) -> dict[str, tuple[str, int]]:
    """alias -> (the label it names, first line), from rows already in memory."""
    aliases: dict[str, tuple[str, int]] = {}
    for row in rows:
        for label, names in ((row.source, row.source_aliases), (row.target, row.target_aliases)):
            for alias in names:
                aliases.setdefault(alias, (label.strip(), row.line))
    return aliases


class _Plan:
    """Every triple an import would add or remove, worked out against the graph without changing it.

    The rows come one at a time (`add`, `run`). `aliases` are the table's: the whole table's, or
    those of the rows so far while the table is being checked, in which case a label that a later
    row makes an alias was planned wrongly (`resolved_before_aliased`) and the table is planned
    again. Rows the graph refuses are kept in `rejected_rows`.
    """

    def __init__(
        self,
        graph: rdflib.Graph,
        vocab: Vocabulary,
        *,
        aliases: dict[str, tuple[str, int]],
        file: str,
        progress: Callable[[int], None] | None = None,
    ) -> None:
        self.graph, self.vocab, self.file, self.progress = graph, vocab, file, progress
        self.overlay = Overlay(graph)
        self.rejected: list[RowProblem] = []
        self.rejected_rows: dict[int, RelationRow] = {}
        self.applied = self.new_entities = self.new_edges = self._seen = 0
        self.unchanged_edges = self.updated_edges = self.removed_edges = self.kept_edges = self.removed_aliases = 0
        self.asserted: dict[tuple, None] = {}  # every edge and alias (skos:altLabel) the table's rows assert, in order
        # Everything read from the graph is read here, in a few scans: at 100k rows, one rdflib
        # query per row and entity costs more than the whole import.
        self._by_label, self._by_alias, self._labels_of = label_index(graph)
        self._alias_owner = aliases  # alias -> (the label it is an alias of, its line)
        self._minted: dict[str, URIRef] = {}
        self._mint_label: dict[URIRef, str] = {}
        self._created: set[URIRef] = set()
        self._done: set[tuple] = set()  # (iri, label, class, aliases) already applied
        self._names: dict[URIRef, set[str]] = {}
        self._axioms = EdgeAnnotations(self.overlay)
        self._iris: dict[str, URIRef] = {}

    def _iri(self, text: str) -> URIRef:
        """One URIRef per relation or class: equal terms that are not the same object are compared by
        rdflib's `__eq__` in every dict they key, down to the Turtle writer (~1.6M calls at 100k rows)."""
        iri = self._iris.get(text)
        if iri is None:
            iri = self._iris[text] = URIRef(text)
        return iri

    def run(self, rows: Iterable[RelationRow]) -> None:
        for row in rows:
            self.add(row)
        self.finish()

    def add(self, row: RelationRow) -> None:
        """Plan one row (the aliases of every row up to this one must be in `aliases` by now)."""
        self._apply(row)
        self._seen += 1
        if self.progress is not None and self._seen % _PROGRESS_EVERY == 0:
            self.progress(self._seen)

    def finish(self) -> None:
        if self.progress is not None:
            self.progress(self._seen)

    def resolved_before_aliased(self) -> bool:
        """True if a label got an entity of its own before a later row made it an alias: planned
        with the rows so far, it would land elsewhere than with the whole table's aliases."""
        return any(alias in self._minted for alias in self._alias_owner)

    def commit(self) -> None:
        self.overlay.commit()

    def forget(self, keys: Iterable[str], asserted: set[str], *, keep: bool = False) -> None:
        """Edges and aliases an earlier import of the table asserted (`keys`, kg/relations/ledger.py) and its rows no longer
        do leave the graph, an edge with its weight and note (`keep`: edges only counted; a skipped row may hold one)."""
        for key in keys:
            if key in asserted:
                continue
            triple = key_edge(key)
            if not self.overlay.has(triple):
                continue
            if keep:
                self.kept_edges += triple[1] != _ALT_LABEL
            elif triple[1] == _ALT_LABEL:
                self.overlay.remove(triple)
                self.removed_aliases += 1
            else:
                self.overlay.remove(triple)
                self._axioms.drop(triple)
                self.removed_edges += 1

    def report(self, *, dry_run: bool, encoding: str) -> ImportReport:
        return ImportReport(
            rows=self.applied, new_entities=self.new_entities, new_edges=self.new_edges,
            unchanged_edges=self.unchanged_edges, rejected=list(self.rejected), dry_run=dry_run, encoding=encoding,
            updated_edges=self.updated_edges, removed_edges=self.removed_edges, removed_aliases=self.removed_aliases,
            kept_edges=self.kept_edges, added_triples=len(self.overlay.added), removed_triples=len(self.overlay.removed),
        )

    # -- one row

    def _apply(self, row: RelationRow) -> None:
        prop = self.vocab.properties.get(row.relation)
        if prop is None:
            return self._reject(
                row, "relation", row.relation, f"relation '{row.relation}' is not in the ontology"
            )
        for column in ("source_type", "target_type"):
            name = getattr(row, column)
            if name is not None and name not in self.vocab.classes:
                return self._reject(
                    row, column, name, f"{column} '{name}' is not a class in the ontology"
                )
        if not row.source.strip() or not row.target.strip():
            return self._reject(row, "", "", "every row needs a source, a relation and a target")
        s, o = self._resolve(row.source), self._resolve(row.target)
        if s == o:
            return self._reject(
                row,
                "target",
                row.target,
                f"'{row.source}' and '{row.target}' name the same entity (one is an alias of the "
                "other); a relation must connect two different entities",
            )
        for label, iri, aliases, column in (
            (row.source, s, row.source_aliases, "source_aliases"),
            (row.target, o, row.target_aliases, "target_aliases"),
        ):
            for alias in aliases:
                problem = self._alias_problem(alias, label.strip(), iri)
                if problem:
                    return self._reject(row, column, alias, problem)
        self._entity(s, row.source, row.source_type, row.source_aliases)
        self._entity(o, row.target, row.target_type, row.target_aliases)
        edge = (s, self._iri(prop.iri), o)
        self.asserted[edge] = None
        existed = self.overlay.has(edge)
        if not existed:
            self.overlay.add(edge)
            self.new_edges += 1
        annotated = self._axioms.annotate(edge, row.weight, row.note)
        if existed and annotated:
            self.updated_edges += 1
        elif existed:
            self.unchanged_edges += 1
        self.applied += 1

    def _reject(self, row: RelationRow, column: str, value: str, message: str) -> None:
        self.rejected.append(RowProblem(row.line, column, value, message, self.file))
        self.rejected_rows[row.line] = row

    def _resolve(self, label: str) -> URIRef:
        """An existing entity named `label`, the entity whose alias it is in this table, or a new IRI."""
        path = [label.strip()]
        while True:
            label = path[-1]
            iri = self._by_label.get(label) or self._by_alias.get(label)
            if iri is not None:
                return iri
            owner = self._alias_owner.get(label, (None, 0))[0]
            if owner is None:
                return self._mint(label)
            if owner in path:  # a and b are each other's aliases: one entity, whichever comes first
                return self._mint(min(path[path.index(owner) :]))
            path.append(owner)

    def _alias_problem(self, alias: str, label: str, iri: URIRef) -> str | None:
        """Why `alias` cannot be written for the entity `label` / `iri`, if it cannot.

        An alias that named two entities would resolve differently on the next import, so it is
        refused rather than written twice.
        """
        owner, line = self._alias_owner.get(alias, (label, 0))
        if owner != label:
            return (
                f"alias '{alias}' is already an alias of '{owner}' (line {line}); an alias can name "
                "only one entity"
            )
        existing = self._by_label.get(alias) or self._by_alias.get(alias)
        if existing is not None and existing != iri:
            name = self.graph.value(existing, _LABEL) or existing
            return (
                f"alias '{alias}' already names another entity in the graph, '{name}'; an alias can "
                "name only one entity: remove it from this row"
            )
        return None

    def _mint(self, label: str) -> URIRef:
        if label in self._minted:
            return self._minted[label]
        iri = entity_iri(label)
        if self._iri_taken(iri, label):
            # "a b" and "a_b" share a readable IRI; the label's hash keeps them apart, repeatably.
            iri = URIRef(f"{iri}-{hashlib.sha1(label.encode()).hexdigest()[:8]}")
            if (iri, None, None) not in self.graph:
                self.overlay.fresh.add(iri)
        self._minted[label] = iri
        self._mint_label[iri] = label
        return iri

    def _iri_taken(self, iri: URIRef, label: str) -> bool:
        """True if `iri` already stands for an entity with another label; notes fresh IRIs."""
        if iri in self._mint_label:
            return self._mint_label[iri] != label
        if (iri, None, None) not in self.graph:
            self.overlay.fresh.add(iri)
            return False
        labels = {str(lit).strip() for lit in self.graph.objects(iri, _LABEL)}
        return bool(labels) and label not in labels

    def _entity(
        self, iri: URIRef, label: str, class_name: str | None, aliases: tuple[str, ...]
    ) -> None:
        # Applying the same entity facts again is a no-op (the plan only grows): skip the work.
        key = (iri, label, class_name, aliases)
        if key in self._done:
            return
        self._done.add(key)
        primary = self._mint_label.get(iri)
        if primary is not None and iri not in self._created:
            self._created.add(iri)
            if iri in self.overlay.fresh:
                self.new_entities += 1
            self.overlay.add((iri, _LABEL, Literal(primary)))
        types = self.overlay.types_of(iri)
        if _INDIVIDUAL not in types:
            self.overlay.add((iri, _TYPE, _INDIVIDUAL))
        cls = self._iri(self.vocab.classes[class_name].iri) if class_name is not None else _ENTITY
        if cls != _ENTITY:
            self.overlay.add((iri, _TYPE, cls))
            # kg:Entity is only the placeholder for "no type given" (an empty cell or "Entity"):
            # a real class replaces it, whichever row comes first.
            self.overlay.remove((iri, _TYPE, _ENTITY))
        elif not types - {_INDIVIDUAL}:
            self.overlay.add((iri, _TYPE, _ENTITY))
        names = self._names_of(iri)
        if label.strip() not in names:
            aliases = (label.strip(), *aliases)  # a table alias used as a source or target
        for alias in aliases:
            if alias not in names:
                triple = (iri, _ALT_LABEL, Literal(alias))
                self.overlay.add(triple)
                self.asserted[triple] = None

    def _names_of(self, iri: URIRef) -> set[str]:
        """The entity's rdfs:labels (an alias equal to one of them is not written)."""
        if iri not in self._names:
            names = set(self._labels_of.get(iri, ()))
            if iri in self._mint_label:
                names.add(self._mint_label[iri])
            self._names[iri] = names
        return self._names[iri]
