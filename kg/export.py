"""Export: an rdflib Graph and its Vocabulary in, a relation table (relations.csv) or Turtle out.

The table is the one `kg import` reads (see `kg.relations`), written so that a round trip is
exact: importing the export into an empty graph gives back the entity/edge part of a graph that
`kg import` wrote (the same IRIs, labels, aliases, classes, edge weights and notes), and
exporting that again gives the same text. One row per asserted object-property edge between two
entities, sorted by source label, relation and target label; an entity's classes and aliases go
on the first rows that name it.

What a table cannot hold is reported through `warn` rather than dropped silently: entities
without edges, edges to things that are not entities, aliases containing '|', classes the
ontology does not declare, weights that are not numbers from 0 to 1. Graphs edited in Protégé
also lose what only an IRI or a language tag said (the re-import mints kgrag IRIs from labels).
"""

from __future__ import annotations

import csv
import io
import os
import stat
import tempfile
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import TextIO
from urllib.parse import unquote

import rdflib
from rdflib import OWL, RDF, RDFS, SKOS, Literal, URIRef
from rdflib.term import Node

from kg.files import NAME_CONTROLS
from kg.graph import entity_subjects, pick_label
from kg.relations import ALIAS_SEPARATOR, ALLOWED_COLUMNS
from kg.workbook import workbook_bytes
from ontology import KG, Vocabulary, entity_iri, local_name

__all__ = ["HEADER", "export_relations_csv", "export_turtle", "relations_workbook", "write_atomically"]

HEADER = ALLOWED_COLUMNS
Warn = Callable[[str], None]


@dataclass
class _Entity:
    iri: Node
    label: str
    aliases: list[str] = field(default_factory=list)
    classes: list[str] = field(default_factory=list)  # as written in a type column
    mentions: int = 0  # rows written so far that name it


@dataclass(frozen=True)
class _Edge:
    source: Node
    relation: str  # as written in the relation column
    target: Node
    weight: str
    note: str


def export_relations_csv(
    graph: rdflib.Graph, vocab: Vocabulary, out: TextIO, *, warn: Warn | None = None
) -> int:
    """Write the relation table of `graph` to `out`; returns the number of rows (edges)."""
    losses: list[str] = []
    entities = _entities(graph, vocab, losses.append)
    edges = _edges(graph, vocab, entities, losses.append)
    used = {e.source for e in edges} | {e.target for e in edges}
    for iri in set(entities) - used:
        losses.append(
            f"entity '{entities[iri].label}' <{iri}> has no relation; a relation table cannot hold it"
        )
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(HEADER)
    for edge in _import_order(edges, entities):
        source, target = entities[edge.source], entities[edge.target]
        source_type, source_aliases = _first_mention_cells(source)
        target_type, target_aliases = _first_mention_cells(target)
        writer.writerow(
            [
                source.label,
                edge.relation,
                target.label,
                source_type,
                target_type,
                source_aliases,
                target_aliases,
                edge.weight,
                edge.note,
            ]
        )
    for entity in sorted(entities.values(), key=lambda e: e.label):
        if entity.mentions and len(entity.classes) > entity.mentions:
            kept = entity.classes[: entity.mentions]
            losses.append(
                f"entity '{entity.label}' has {len(entity.classes)} classes but is named by "
                f"{entity.mentions} row(s); the table keeps {', '.join(kept)}"
            )
    for message in sorted(losses):  # sorted: the graph's own order is arbitrary
        if warn is not None:
            warn(message)
    return len(edges)


def export_turtle(graph: rdflib.Graph, out_path: Path | str) -> int:
    """Write the whole graph as Turtle, atomically; returns the number of triples."""
    write_atomically(Path(out_path), graph.serialize(format="turtle", encoding="utf-8"))
    return len(graph)


def relations_workbook(table: str) -> bytes:
    """The exported relation table (CSV text) as an Excel workbook that `kg import` reads back (kg/relations/sheet.py):
    one sheet, weights as numbers; a note's line breaks, which a workbook's table reads as spaces, stay in the cell."""
    rows: list[list[str | float]] = list(csv.reader(io.StringIO(table, newline="")))
    at = rows[0].index("weight") if rows and "weight" in rows[0] else None
    for row in rows[1:]:
        if at is not None and row[at]:
            row[at] = float(row[at])
    return workbook_bytes("relations", rows)


def write_atomically(path: Path, data: bytes) -> None:
    """Write `data` to a temporary file beside `path`, then rename it: never half a file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    # mkstemp makes the file private (0600); an export is for sharing: keep the mode of the file
    # it replaces, or give the usual rw-r--r--.
    mode = stat.S_IMODE(path.stat().st_mode) if path.exists() else 0o644
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}-", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


# ---------------------------------------------------------------- reading the graph


def _entities(graph: rdflib.Graph, vocab: Vocabulary, warn: Warn) -> dict[Node, _Entity]:
    """Every entity with its label, aliases and classes: the graph view's rule, in a few scans."""
    subjects = entity_subjects(graph, vocab)
    names: dict[Node, dict[Node, list[Literal]]] = {s: {} for s in subjects}
    for predicate in (RDFS.label, SKOS.prefLabel, SKOS.altLabel):
        for s, value in graph.subject_objects(predicate):
            if s in names and isinstance(value, Literal) and str(value).strip():
                names[s].setdefault(predicate, []).append(value)
    entities: dict[Node, _Entity] = {}
    for iri, found in names.items():
        labels = found.get(RDFS.label, []) + found.get(SKOS.prefLabel, [])
        # The importer strips every cell; a label it would change is written as it will be read.
        label = pick_label(labels, "").strip() or unquote(local_name(str(iri))) or str(iri)
        entity = _Entity(iri, label)
        if NAME_CONTROLS.search(label):
            warn(f"entity {label!r}: its label holds a line break or control character, which a relation table "
                 "refuses in a name; its rows are exported but will not import (rename it in graph.ttl)")
        for name in sorted({str(n).strip() for n in labels + found.get(SKOS.altLabel, [])}):
            if name == label:
                continue
            if NAME_CONTROLS.search(name):
                warn(f"entity '{label}': alias {name!r} holds a line break or control character, which a relation "
                     "table refuses in a name; it is not exported (rename it in graph.ttl)")
                continue
            if ALIAS_SEPARATOR in name:
                warn(
                    f"entity '{label}': alias '{name}' contains '{ALIAS_SEPARATOR}', which the "
                    "table uses between aliases; it is not exported (rename it in graph.ttl)"
                )
                continue
            entity.aliases.append(name)
        entities[iri] = entity
    _warn_shared_names(entities, warn)
    cells = _class_cells(vocab)
    for s, cls in graph.subject_objects(RDF.type):
        if s not in entities or cls == OWL.NamedIndividual:
            continue
        if cls in cells:
            entities[s].classes.append(cells[cls])
        else:
            warn(
                f"entity '{entities[s].label}': class <{cls}> is not declared in the ontology; "
                "it is not exported (declare it as an owl:Class)"
            )
    placeholder = cells.get(KG.Entity)
    for entity in entities.values():
        # kg:Entity only means "no class given": the importer writes it for an empty type cell
        # and drops it when a real class arrives, so it is never written out.
        entity.classes = sorted({c for c in entity.classes if c != placeholder})
    return entities


def _warn_shared_names(entities: dict[Node, _Entity], warn: Warn) -> None:
    """A table names entities by label and alias: a name of two entities cannot tell them apart."""
    owners: dict[str, list[_Entity]] = {}
    for entity in entities.values():
        for name in (entity.label, *entity.aliases):
            owners.setdefault(name, []).append(entity)
    for name, named in owners.items():
        if len(named) > 1:
            listed = " and ".join(sorted(f"'{e.label}' <{e.iri}>" for e in named))
            warn(
                f"'{name}' names {listed}; the table cannot tell them apart (importing it merges "
                "them or refuses the alias): run `kg ontology check`"
            )


def _class_cells(vocab: Vocabulary) -> dict[Node, str]:
    """Class IRI -> what to write: its name, or its IRI when the name would not resolve back."""
    cells: dict[Node, str] = {}
    for name, info in vocab.classes.items():
        back = vocab.resolve_class(name)
        cells[URIRef(info.iri)] = name if back is not None and back.iri == info.iri else info.iri
    return cells


def _edges(
    graph: rdflib.Graph, vocab: Vocabulary, entities: dict[Node, _Entity], warn: Warn
) -> list[_Edge]:
    annotations = _edge_annotations(graph)
    edges = []
    for name, info in sorted(vocab.properties.items()):
        back = vocab.resolve_property(name)
        relation = name if back is not None and back.iri == info.iri else info.iri
        prop = URIRef(info.iri)
        for s, o in graph.subject_objects(prop):
            if s not in entities:
                continue
            if o not in entities:
                what = f"'{o}'" if isinstance(o, Literal) else f"<{o}>"
                warn(
                    f"'{entities[s].label}' {name} {what}: the target is not an entity; the edge "
                    "is not exported (run `kg ontology check`)"
                )
                continue
            if s == o:
                warn(
                    f"'{entities[s].label}' {name} itself: a relation table cannot hold a self-loop"
                )
                continue
            weight, note = annotations.get((s, prop, o), ("", ""))
            weight = _weight_cell(
                weight, f"'{entities[s].label}' {name} '{entities[o].label}'", warn
            )
            edges.append(_Edge(s, relation, o, weight, note))
    return edges


def _edge_annotations(graph: rdflib.Graph) -> dict[tuple, tuple[str, str]]:
    """(source, property, target) -> (kg:weight, rdfs:comment) of its owl:Axiom annotations.

    The first axiom (in sorted order) with a weight gives the weight, as the importer chooses;
    several comments are joined with '; ' so that no note is lost.
    """
    axioms = set(graph.subjects(RDF.type, OWL.Axiom))
    parts = [
        {a: o for a, o in graph.subject_objects(p) if a in axioms}
        for p in (OWL.annotatedSource, OWL.annotatedProperty, OWL.annotatedTarget)
    ]
    weights: dict[tuple, str] = {}
    notes: dict[tuple, list[str]] = {}
    for axiom in sorted(axioms, key=str):
        edge = tuple(part.get(axiom) for part in parts)
        if None in edge:
            continue
        for value in sorted(graph.objects(axiom, KG.weight), key=str):
            weights.setdefault(edge, str(value))
        comments = graph.objects(axiom, RDFS.comment)
        for value in sorted(comments, key=lambda c: (str(c), getattr(c, "language", None) or "")):
            text = str(value).strip()  # the importer strips every cell
            if text and text not in notes.setdefault(edge, []):
                notes[edge].append(text)
    keys = set(weights) | set(notes)
    return {edge: (weights.get(edge, ""), "; ".join(notes.get(edge, []))) for edge in keys}


def _weight_cell(value: str, edge: str, warn: Warn) -> str:
    """The weight as the importer writes it back (0.9, not 0.90), or '' if it is not 0-1."""
    if not value:
        return ""
    try:
        weight = float(value)
    except ValueError:
        weight = float("nan")
    if not 0.0 <= weight <= 1.0:  # NaN fails too
        warn(f"{edge}: weight '{value}' is not a number from 0 to 1; it is not exported")
        return ""
    return format(Decimal(repr(weight)), "f")


# ---------------------------------------------------------------- writing rows


def _first_mention_cells(entity: _Entity) -> tuple[str, str]:
    """(type cell, aliases cell) for the next row naming `entity`: aliases on the first row,
    one class per row while classes last (each row adds its class)."""
    n = entity.mentions
    entity.mentions += 1
    cls = entity.classes[n] if n < len(entity.classes) else ""
    aliases = ALIAS_SEPARATOR.join(entity.aliases) if n == 0 else ""
    return cls, aliases


def _import_order(edges: list[_Edge], entities: dict[Node, _Entity]) -> list[_Edge]:
    """Edges sorted by labels, except that an entity must be named after the entity holding the
    IRI its label would mint.

    The importer mints `entity_iri(label)` for the first label it meets and a hashed variant for
    a later label with the same readable IRI ("a b" and "a_b"); naming the holder first makes the
    re-import give every entity the IRI it has now. Rows waiting for a holder follow the row that
    names it; if no order can satisfy every holder (a graph the importer did not write), the rest
    follow in sorted order.
    """
    rows = sorted(
        edges,
        key=lambda e: (
            entities[e.source].label,
            e.relation,
            entities[e.target].label,
            str(e.source),
            str(e.target),
        ),
    )
    used = {e.source for e in edges} | {e.target for e in edges}
    holder: dict[Node, Node] = {}
    for iri in used:
        minted = entity_iri(entities[iri].label)
        if minted != iri and minted in used:
            holder[iri] = minted
    introduced: set[Node] = set()
    waiting: dict[Node, list[int]] = {}
    order: list[int] = []

    def blocker(i: int) -> Node | None:
        s, t = rows[i].source, rows[i].target
        if s not in introduced and s in holder and holder[s] not in introduced:
            return holder[s]
        if t not in introduced and t in holder and holder[t] not in introduced and holder[t] != s:
            return holder[t]
        return None

    def place(first: int, force: bool = False) -> None:
        queue = deque([first])
        while queue:
            i = queue.popleft()
            if not force and (b := blocker(i)) is not None:
                waiting.setdefault(b, []).append(i)
                continue
            force = False
            order.append(i)
            for end in (rows[i].source, rows[i].target):
                if end not in introduced:
                    introduced.add(end)
                    queue.extend(sorted(waiting.pop(end, ())))

    for i in range(len(rows)):
        place(i)
    while waiting:
        stuck = min(i for rows_ in waiting.values() for i in rows_)
        for key, rows_ in list(waiting.items()):
            if stuck in rows_:
                rows_.remove(stuck)
                if not rows_:
                    del waiting[key]
        place(stuck, force=True)
    return [rows[i] for i in order]
