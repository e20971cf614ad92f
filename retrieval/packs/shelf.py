"""The packs of one knowledge base: `kg pack add | list | remove | update` (a folder or git repository -> DATA_DIR/packs/ID, ingested, its relation and alias tables imported (`retrieval.packs.tables`), a registry row, a `Pack` entity) and the evidence routing reads.

`packs.json` in the data dir records each pack's origin (for `update`; shown with its credentials as `***`,
`kg.files.masked`); DATA_DIR/packs/ID holds its
files (private packs stay out of any public repository: they live in the data dir). The knowledge
base is used through its public calls: `add`, `update` and `remove` run as one journaled write each
(`KnowledgeBase.add_pack` / `update_pack` / `remove_pack`, `@writes`), inside which the pack's files
go in through `ingest_paths` and out through `delete_documents`.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path

from rdflib import URIRef

from kg.errors import InputError, KgError, NotFoundError
from kg.files import file_stamp, masked
from ontology import entity_iri
from retrieval.catalog.packs import (
    chunk_packs,
    documents_by_pack,
    entity_packs,
    mentioned,
    pack_documents,
    pack_titles,
    set_pack,
)
from retrieval.packs.card import CARD_FILE, PackCard, read_card, valid_pack_id
from retrieval.packs.fetch import fetch, git
from retrieval.packs.registry import Registry
from retrieval.packs.routing import (
    DOCUMENTED,
    MAX_PACKS,
    TABLED,
    Evidence,
    PackChoice,
    Routing,
    RoutingRules,
    route,
)
from retrieval.packs.tables import (
    PACKS_DIR,
    TABLES,
    packs_alone_state,
    retract_tables,
    sync_tables,
    table_entities,
)

__all__ = ["PACK_CLASS", "PackInfo", "PackReport", "PackShelf", "pack_label"]

MANIFEST = "packs.json"
PACK_CLASS = "Pack"


def _unnamed(db, entities: set[str]) -> set[str]:
    """Those of `entities` that no chunk mentions and no document is about, in a pack or not: for them a pack's own table
    may be the one place that names them (TABLED, see `routing.route`)."""
    return entities - mentioned(db, sorted(entities)) if entities else set()


def _not_packs_alone(kb, edge) -> bool:
    """Is the edge said by more than packs' own tables? A pack (often someone else's work) cannot claim the questions
    about the team's entities for itself, or send them to another pack, with a `documentedIn` row."""
    info = kb.graph.vocab.properties.get(edge.asserted)
    if info is None:
        return True
    s, _, o = edge.triple()
    return not packs_alone_state(kb.root, (URIRef(s), URIRef(info.iri), URIRef(o)))


def pack_label(pack_id: str) -> str:
    """The label of a pack's entity in the graph: relation tables name it `pack:ID` (`X documentedIn pack:ID`)."""
    return f"pack:{pack_id}"


@dataclass
class PackReport:
    id: str
    action: str  # added | updated | removed
    documents: int = 0
    ingest: dict = field(default_factory=dict)
    removed_documents: int = 0
    registry_row: bool = False
    origin: str = ""
    notes: list[str] = field(default_factory=list)
    tables: list[dict] = field(default_factory=list)  # the pack's relations.csv / aliases.csv (`retrieval.packs.tables`)

    def summary(self) -> str:
        if self.action == "removed":
            return (f"pack '{self.id}' removed: {self.removed_documents} document(s) out of the index, registry row(s) "
                    "dropped" + "".join(f"\n  {t['file']}: {t['summary']}" for t in self.tables))
        parts = [f"pack '{self.id}' {self.action}: {self.documents} document(s)"]
        if self.ingest:
            parts.append(f"{self.ingest.get('added', 0)} new, {self.ingest.get('updated', 0)} updated, "
                         f"{self.ingest.get('unchanged', 0)} unchanged")
        if self.removed_documents:
            parts.append(f"{self.removed_documents} gone from the pack")
        if self.registry_row:
            parts.append("a row added to REGISTRY.md (edit its intent and example questions)")
        tables = "".join(f"\n  {t['file']}: {t['summary']}" for t in self.tables)
        return "; ".join(parts) + tables + "".join(f"\n  note: {n}" for n in self.notes)

    def to_json(self) -> dict:
        return dict(self.__dict__)


@dataclass(frozen=True)
class PackInfo:
    card: PackCard
    origin: str
    documents: int
    registry_rows: int

    def to_json(self) -> dict:
        return {**self.card.to_json(), "origin": self.origin, "documents": self.documents,
                "registry_rows": self.registry_rows}


class PackShelf:
    def __init__(self, kb) -> None:
        self.kb = kb
        self.root = Path(kb.root).absolute()  # a relative data dir (the default ./.kgrag) too: files are found by resolved path
        self.folder = self.root / PACKS_DIR
        self.registry = Registry(self.root)
        self._cards: dict[str, tuple[tuple, PackCard]] = {}

    # -- what is there -------------------------------------------------------------------------
    def manifest(self) -> dict[str, dict]:
        path = self.root / MANIFEST
        if not path.exists():
            return {}
        try:
            return json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise KgError(f"{MANIFEST} in {self.root} is not valid JSON ({exc}); fix or delete it and "
                          "`kg pack add` the packs again") from exc

    def ids(self) -> list[str]:
        return sorted(self.manifest())

    def __bool__(self) -> bool:
        return (self.root / MANIFEST).exists() and bool(self.manifest())

    def card(self, pack_id: str) -> PackCard:
        """The pack's card, re-read when PACK.md changes."""
        path = self.folder / pack_id / CARD_FILE
        stamp = file_stamp(path)
        cached = self._cards.get(pack_id)
        if cached is None or cached[0] != stamp:
            card = read_card(self.folder / pack_id, default_id=pack_id)
            if card.id != pack_id:  # the id it was added under wins over the one written in the card
                card = PackCard(**{**card.__dict__, "id": pack_id})
            cached = (stamp, card)
            self._cards[pack_id] = cached
        return cached[1]

    def cards(self) -> dict[str, PackCard]:
        return {p: self.card(p) for p in self.ids()}

    def list(self) -> list[PackInfo]:
        self.registry.refresh_if_changed()
        counts = documents_by_pack(self.kb.store.db)
        manifest = self.manifest()
        return [PackInfo(self.card(p), masked(manifest[p].get("origin", "")), counts.get(p, 0),
                         len(self.registry.rows_of(p)))
                for p in sorted(manifest)]

    def documents(self, packs) -> frozenset[str]:
        return pack_documents(self.kb.store.db, packs)

    def check_ids(self, packs) -> list[str]:
        known = self.ids()
        wanted = list(dict.fromkeys(packs))
        unknown = [p for p in wanted if p not in known]
        if unknown:
            raise NotFoundError(f"no pack '{unknown[0]}' (known: {', '.join(known) or 'none: add one with `kg pack add ID PATH`'})")
        return wanted

    def entity_evidence(self, mentions) -> dict[str, dict[str, float]]:
        """Linked entity label -> {pack: chunks that mention it}, {pack: DOCUMENTED} (`X documentedIn pack:ID`) or TABLED."""
        if not mentions:
            return {}
        labels = {m.entity: m.label for m in mentions}
        counts = entity_packs(self.kb.store.db, list(labels))
        unmentioned = _unnamed(self.kb.store.db, set(labels) - set(counts))
        packs_by_iri = {str(entity_iri(pack_label(p))): p for p in self.ids()}
        view = self.kb.graph.view
        tabled_by_iri = table_entities(self.kb.root) if unmentioned else {}  # read once, not once an entity
        out: dict[str, dict[str, float]] = {}
        for iri, label in labels.items():
            documented = {packs_by_iri[e.target] for e in view.neighbours(iri)
                          if e.relation == "documentedIn" and e.target in packs_by_iri and _not_packs_alone(self.kb, e)}
            if documented:  # a person said so in a relation table: that decides (see `routing.route`)
                out[label] = {p: DOCUMENTED for p in documented}
            elif counts.get(iri):
                out[label] = {p: float(n) for p, n in counts[iri].items()}
            elif iri in unmentioned and (tabled := tabled_by_iri.get(iri)):  # only a pack's table names it
                out[label] = dict.fromkeys(sorted(tabled), TABLED)
        return out

    # -- routing -------------------------------------------------------------------------------
    def route(self, question: str, mentions, probe, forced=None, rules: RoutingRules | None = None,
              llm=None) -> Routing:
        """The packs to search for a question: `forced` ids (`--pack`), else the LLM's choice among the
        registry rows when one is configured, else the rules (`retrieval.packs.routing`)."""
        self.registry.refresh_if_changed()
        if forced:
            wanted = self.check_ids(forced)
            if len(wanted) > MAX_PACKS:
                raise InputError(f"at most {MAX_PACKS} packs are searched in one round, got {len(wanted)}: "
                                 f"{', '.join(wanted)} (ask once per pair of packs)")
            return Routing(chosen=[PackChoice(p, 1.0, "asked for (--pack)") for p in wanted], path="forced")
        cards = self.cards()
        where = chunk_packs(self.kb.store.db, [h.chunk_id for h in probe[: (rules or RoutingRules()).probe_depth]])
        evidence = Evidence(question, self.entity_evidence(mentions),
                            probe=[(where.get(h.chunk_id), h.terms) for h in probe],
                            doc_frequency=self.kb.index.doc_frequency, chunks=self.kb.index.doc_count(),
                            titles=pack_titles(self.kb.store.db))
        routing = route(evidence, cards, self.registry.rows, rules)
        if llm is not None:
            from retrieval.packs.llm import choose_packs

            chosen = choose_packs(llm, question, cards, self.registry.rows, routing.scores)
            if chosen is not None:
                return chosen
            routing.note = "the model gave no usable choice: the rules decided"
        return routing

    def scope(self, routing: Routing) -> frozenset[str] | None:
        """The documents a routed query may return; None = every document (no packs, or the fallback)."""
        if routing.fallback or not routing.chosen:
            return None
        return self.documents(routing.pack_ids())

    # -- writes: each one journaled write of the knowledge base (`KnowledgeBase.add_pack` ...) ---------
    def add(self, pack_id: str, origin: str, progress=None) -> PackReport:
        """Fetch a folder or git repository into DATA_DIR/packs/ID and ingest it."""
        return self.kb.add_pack(pack_id, origin, progress=progress)

    def update(self, pack_id: str, progress=None) -> PackReport:
        """Fetch the pack's origin again, re-ingest it and remove the documents it no longer has."""
        return self.kb.update_pack(pack_id, progress=progress)

    def remove(self, pack_id: str) -> PackReport:
        """The pack's documents, registry rows, entity and folder."""
        return self.kb.remove_pack(pack_id)

    def _add(self, pack_id: str, origin: str, progress=None) -> PackReport:
        valid_pack_id(pack_id)
        manifest = self.manifest()
        if pack_id in manifest:
            raise InputError(f"pack '{pack_id}' already exists (from {masked(manifest[pack_id].get('origin', ''))}): "
                             f"`kg pack update {pack_id}` fetches and re-ingests it, `kg pack remove {pack_id}` drops it")
        target = self.folder / pack_id
        if target.exists():
            raise InputError(f"{target} exists but is not a registered pack: move it away, then add the pack again")
        try:
            kind, left_out = fetch(origin, target)
        except BaseException:
            shutil.rmtree(target, ignore_errors=True)
            raise
        try:
            report = self._ingest(pack_id, target, "added", progress)
        except BaseException:
            shutil.rmtree(target, ignore_errors=True)
            raise
        report.origin = masked(origin)
        card = self.card(pack_id)
        self._ensure_pack_class()
        self.kb.add_entities([pack_label(pack_id)], PACK_CLASS)
        report.tables, notes = sync_tables(self.kb, target)
        report.notes += notes
        intent = card.title + (": " + "; ".join(card.covers) if card.covers else "")
        report.registry_row = self.registry.add_row(pack_id, intent)
        # A folder is kept by its absolute path: `kg pack update` may run from another working directory.
        stored = str(Path(origin).expanduser().absolute()) if kind == "path" else origin
        manifest[pack_id] = {"origin": stored, "kind": kind, "added": time.time()}
        self._write_manifest(manifest)
        if not (target / CARD_FILE).exists():
            report.notes.append(f"the pack has no {CARD_FILE}: write one (covers, does not cover, key terms) so routing knows it")
        report.notes += _left_out_notes(left_out)
        return report

    def _update(self, pack_id: str, progress=None) -> PackReport:
        entry = self._entry(pack_id)
        target = self.folder / pack_id
        left_out: list[str] = []
        if entry.get("kind") == "git" and (target / ".git").exists():
            git(["-C", str(target), "pull", "--ff-only", "--quiet"], entry["origin"])
        else:
            fresh = self.folder / f".{pack_id}.update"
            shutil.rmtree(fresh, ignore_errors=True)
            _, left_out = fetch(entry["origin"], fresh)
            shutil.rmtree(target)
            os.replace(fresh, target)
        before = self.documents([pack_id])
        report = self._ingest(pack_id, target, "updated", progress)
        report.notes += _left_out_notes(left_out)
        gone = sorted(before - set(report.ingest.pop("doc_ids", [])))
        report.removed_documents = self._delete_documents(gone)
        report.tables, notes = sync_tables(self.kb, target)
        report.notes += notes
        report.origin = masked(entry["origin"])
        return report

    def _remove(self, pack_id: str) -> PackReport:
        self._entry(pack_id)
        removed = self._delete_documents(sorted(self.documents([pack_id])))
        tables = retract_tables(self.kb, self.folder / pack_id)
        self.registry.remove_pack(pack_id)
        self._remove_entity(pack_id)
        shutil.rmtree(self.folder / pack_id, ignore_errors=True)
        manifest = self.manifest()
        manifest.pop(pack_id, None)
        self._write_manifest(manifest)
        self._cards.pop(pack_id, None)
        return PackReport(id=pack_id, action="removed", removed_documents=removed, tables=tables)

    def _entry(self, pack_id: str) -> dict:
        manifest = self.manifest()
        if pack_id not in manifest:
            raise NotFoundError(f"no pack '{pack_id}' (known: {', '.join(sorted(manifest)) or 'none'}; `kg pack list`)")
        return manifest[pack_id]

    def _ingest(self, pack_id: str, folder: Path, action: str, progress) -> PackReport:
        from retrieval.ingest.chunking import find_source_files

        own = {CARD_FILE, *TABLES}  # the card and the pack's own tables (a workbook one too) are not its documents
        files = [f for f in find_source_files([folder]) if f.relative_to(folder).as_posix() not in own]
        if not files:
            raise InputError(f"the pack '{pack_id}' has no Markdown or text files besides {CARD_FILE}")
        ingest = self.kb.ingest_paths(files, progress)  # inside the pack's write: one commit
        with self.kb.store.transaction():
            set_pack(self.kb.store.db, pack_id, ingest.doc_ids, source_prefix=str(folder.resolve()) + os.sep)
        data = {**{k: v for k, v in ingest.to_json().items() if k != "seconds"}, "doc_ids": list(ingest.doc_ids)}
        return PackReport(id=pack_id, action=action, documents=len(set(ingest.doc_ids)), ingest=data)

    def _delete_documents(self, doc_ids: list[str]) -> int:
        # Every version, chunk, mention and index entry, through the knowledge base's own deletion.
        if not doc_ids:
            return 0
        return len(self.kb.delete_documents(doc_ids))

    def _ensure_pack_class(self) -> None:
        """Knowledge bases made before packs existed carry a graph.ttl without the `Pack` class."""
        graph = self.kb.graph
        if graph.vocab.resolve_class(PACK_CLASS) is not None:
            return
        from ontology import BASE_ONTOLOGY_PATH, KG, load_rdf

        base = load_rdf(BASE_ONTOLOGY_PATH)
        for triple in base.triples((KG[PACK_CLASS], None, None)):
            graph.rdf.add(triple)
        graph.save()
        self.kb._graph_changed()

    def _remove_entity(self, pack_id: str) -> None:
        graph = self.kb.graph
        iri = entity_iri(pack_label(pack_id))
        triples = list(graph.rdf.triples((iri, None, None))) + list(graph.rdf.triples((None, None, iri)))
        if triples:
            for triple in triples:
                graph.rdf.remove(triple)
            graph.save()
            self.kb._graph_changed()  # the linker and graph evidence were derived from the old graph

    def _write_manifest(self, manifest: dict) -> None:
        path = self.root / MANIFEST
        tmp = path.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(manifest, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
        os.replace(tmp, path)


def _left_out_notes(left_out: list[str], shown: int = 10) -> list[str]:
    notes = [f"not copied: {item}" for item in left_out[:shown]]
    if len(left_out) > shown:
        notes.append(f"... and {len(left_out) - shown} more not copied (links leading out of the pack folder, "
                     "unreadable or special files)")
    return notes
