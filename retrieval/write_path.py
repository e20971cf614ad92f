"""The write path of a KnowledgeBase: source documents or an import file in, the catalog, the text index and the mentions changed out (an IngestReport or an import summary).

Each function runs inside `KnowledgeBase.writing()` (the write lock and the journal of
`retrieval.writing`), so the ordering here is what makes a killed process recoverable: the truth
(SQLite catalog, graph.ttl, synonyms.txt) is committed first, each part atomically, then what is
derived from it (whoosh, mentions, re-cut index words: the index step is retrieval/indexing.py).
`mark(op, step)` names each step for the crash tests (`KG_CRASH_AT=<op>:<step>`).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Sequence
from contextlib import contextmanager
from pathlib import Path

from kg.errors import InputError, TooLargeError
from kg.files import read_text, replace_file
from kg.relations.aliases import import_alias_table, is_alias_table
from kg.relations.sheet import is_workbook
from kg.store import add_entities as add_graph_entities
from retrieval.catalog import commit, filestats, moves
from retrieval.graph.anchors import anchor_document
from retrieval.graph.seeds import fold_label
from retrieval.index.analysis import add_user_words
from retrieval.index.synonyms import SYNONYMS_FILE, SynonymTable
from retrieval.indexing import (
    INDEX_RECIPE,
    RECIPES,
    index_chunks,
    index_recipe,
    optimize_index,
    reindex_all,
    sync_index_words,
)
from retrieval.ingest.chunking import cut_document, doc_id_for, source_fingerprint
from retrieval.ingest.ocr import configured
from retrieval.ingest.readers import Skipped, find_files, parse_effective, read_sources
from retrieval.ingest.removal import delete_documents as remove_documents
from retrieval.ingest.removal import remove_missing_sources, resolve_documents
from retrieval.ingest.report import IngestReport
from retrieval.types import Chunk, SourceDocument

# INDEX_RECIPE, index_recipe, optimize_index, reindex_all and sync_index_words are retrieval/indexing.py's
# (the index step and writing the index again); callers of the write path still find them here.
__all__ = [
    "INDEX_RECIPE", "SYNONYMS_FILE", "IngestReport", "add_entities", "delete_documents", "import_file",
    "index_recipe", "ingest_documents", "ingest_paths", "optimize_index", "reindex_all", "relink", "sync", "sync_index_words",
]

RDF_SUFFIXES = (".ttl", ".owl", ".rdf", ".xml", ".nt", ".jsonld", ".ofn", ".omn", ".owx")
Progress = Callable[[int], None]

def ingest_paths(kb, paths: Sequence[Path], progress: Progress | None = None, *, strict: bool = False,
                 doc_id: str | None = None, effective: str | None = None, workers: int = 0,
                 ignore: bool = True) -> IngestReport:
    """Files and folders. A file that cannot be read is skipped and reported (`strict`: an error)."""
    found = find_files(paths, ignore)
    if not found.files:
        skipped = "".join(f"\n  skipped {s}" for s in found.skipped)
        raise InputError("no readable files found in " + ", ".join(str(p) for p in paths)
                         + " (kgrag reads Markdown, text, HTML, Word .docx, Excel .xlsx, PowerPoint .pptx, CSV and PDF files)" + skipped)
    if doc_id and len(found.files) > 1:
        raise InputError(f"--doc-id names one document, but {len(found.files)} files were given: ingest them one by one")
    if effective is not None:
        effective = parse_effective(effective, "--effective")
    skipped = list(found.skipped)
    # Stat before reading: a file written while it is read keeps a stamp that no longer matches.
    stamps = {filestats.source_of(f): filestats.file_stamp(f) for f in found.files}
    known = {} if doc_id or effective else filestats.unchanged(kb.store.db, stamps)
    to_read = [f for f in found.files if filestats.source_of(f) not in known]
    # Tesseract is looked for (a subprocess, once a process) only when there is a PDF to read; a progress bar that
    # can say so (the CLI's) hears of each page read by OCR.
    pdfs = any(f.suffix.lower() == ".pdf" for f in to_read)
    ocr = configured(kb.settings.ocr, kb.settings.ocr_languages, getattr(progress, "note", None)) if pdfs else None
    sources = read_sources(to_read, skipped, strict=strict, progress=progress, doc_key=doc_id, effective=effective,
                           max_text_bytes=kb.settings.max_document_bytes, ocr=ocr)
    report = ingest_documents(kb, sources, progress, strict=strict, skipped=skipped, workers=workers)
    report.unchanged += len(known)  # neither read nor hashed: same size, mtime and inode as when ingested
    report.ignored = found.ignored
    report.doc_ids += list(known.values())
    if progress and known:
        progress(len(known))
    failed = {s.path for s in report.skipped} | {filestats.source_of(Path(s.path)) for s in report.skipped}
    with kb.store.transaction():
        filestats.record(kb.store.db, {s: st for s, st in stamps.items() if s not in known and s not in failed},
                         filestats.context_of(kb.root) if index_recipe(kb) >= INDEX_RECIPE else "stale")
    return report


def ingest_documents(kb, sources: Iterable[SourceDocument], progress: Progress | None = None, *,
                     strict: bool = True, skipped: list[Skipped] | None = None, workers: int = 0) -> IngestReport:
    """`workers`: processes that analyse and index the new chunks beside this one (`kg ingest --workers`)."""
    report = IngestReport()
    if skipped is not None:
        report.skipped = skipped  # the caller's list: files it could not read land here as it reads them
    started = time.perf_counter()
    linking: list = []

    def link_state():
        # Loaded for the first document that changed: an unchanged folder never loads spaCy.
        if not linking:
            linker = kb.linker
            sync_index_words(kb)  # older chunks first, so that every chunk is cut the same way
            linking.extend((linker, kb._about()))
        return linking

    # The same source twice in one batch: the last one wins (whoosh cannot delete what
    # the open writer added, so the earlier copy must never reach it).
    batch = list({src.source: src for src in sources}.values())
    def change() -> None:
        keyless = {src.source: src for src in batch if not src.doc_key and os.path.isabs(src.source)}  # files
        moved = moves.moved_files(kb.store.db, keyless, lambda source: source_fingerprint(keyless[source]),
                                  text=lambda source: keyless[source].text)
        for src in batch:
            try:
                _check_size(kb, src)
                _ingest_one(kb, src, link_state, report, moved.get(src.source))
            except InputError as exc:
                if strict:
                    raise
                report.skipped.append(Skipped(src.source, str(exc).removeprefix(f"{src.source}: ")))
            if progress:
                progress(1)

    with _index_workers(kb, workers, report):
        _catalog_then_index(kb, "ingest", change)
    if index_recipe(kb) < INDEX_RECIPE:
        report.warnings.append("the text index was written by an older kgrag and lacks what this one indexes "
                               f"({RECIPES[INDEX_RECIPE]}): run `kg check --repair` to index every chunk again")
    report.seconds = time.perf_counter() - started
    return report


@contextmanager
def _index_workers(kb, workers: int, report: IngestReport):
    use = getattr(kb.index, "use_workers", None) if workers else None
    if workers and not (use and use(workers)):
        report.warnings.append("--workers: this text index is written by this process only (worker processes need "
                               "the embedded whoosh index and a system that can fork)")
    try:
        yield
    finally:
        if use:
            use(0)


def _check_size(kb, src: SourceDocument) -> None:
    limit = kb.settings.max_document_bytes
    size = len(src.text.encode("utf-8", "surrogatepass"))
    if size > limit:
        raise TooLargeError(
            f"{src.source}: {size:,} bytes is over the document size limit of {limit:,} bytes: split it, "
            "or raise KG_MAX_DOCUMENT_BYTES"
        )


def _ingest_one(kb, src: SourceDocument, link_state, report: IngestReport,
                moved: tuple[str, str] | None = None) -> None:
    """`moved`: (doc id, old source) when the file is a document's that moved here (`retrieval.catalog.moves`)."""
    doc_id, old = moved or (_document_id(kb, src), None)
    if old is None and src.doc_key and os.path.isabs(src.source):  # a file, not an API post
        known = kb.store.document(doc_id)
        if known and known.source != src.source and moves.is_gone_file(known.source) \
                and kb.store.document_by_source(src.source) is None:
            old = known.source  # its file moved: the id says which document it is
    if old is not None:
        moves.move_source(kb.store.db, doc_id, old, src.source)
        report.moved.append((old, src.source))
    indexed = _ingest_version(kb, src, doc_id, link_state, report)
    if old is not None:  # every chunk is indexed with its file path's words: the ones not indexed just now
        ids = [c for c in moves.document_chunk_ids(kb.store.db, doc_id) if c not in indexed]
        index_chunks(kb, list(kb.store.chunks(ids).values()), {doc_id: src.source})


def _document_id(kb, src: SourceDocument) -> str:
    """The id of the document `src` is a version of: from its key, else the document its path names (which may
    have moved there), else a new one from the path (another if a document that moved away holds that)."""
    if src.doc_key:
        return doc_id_for(src.doc_key)
    found = moves.path_document(kb.store.db, src.source)
    if found:
        return found
    doc_id, n = doc_id_for(src.source), 0
    while (held := kb.store.document(doc_id)) is not None and held.source != src.source:
        n += 1
        doc_id = doc_id_for(f"{src.source}\x00{n}")
    return doc_id


def _ingest_version(kb, src: SourceDocument, doc_id: str, link_state, report: IngestReport) -> set[str]:
    """A new version of the document when its text, title or dates changed; only new children are indexed
    (their ids are returned)."""
    last = kb.history.latest_from_source(doc_id, src.source)
    if last is not None and last[:2] == (source_fingerprint(src), src.effective_date) and src.version_label in (None, last[2]):
        report.unchanged += 1  # decided before cutting: an unchanged folder costs one hash a file
        report.doc_ids.append(doc_id)
        return set()
    linker, about = link_state()
    cut = cut_document(src, kb.chunk_sizes, doc_id)
    doc = cut.document
    report.warnings += src.warnings
    removed = kb.history.take_source(src.source, doc.doc_id)
    report.chunks_removed += kb.index.delete_chunks(removed) if removed else 0
    existed = kb.store.document(doc.doc_id) is not None
    change = kb.history.add_version(doc, src, cut.parents, cut.children, kb.today())
    if src.effective_date and src.effective_date > kb.today().isoformat():
        # Ingested and searched by nothing yet: say so, or a user asking right after finds it missing with no word why.
        before = any(v["in_force"] for v in kb.history.versions(doc.doc_id, kb.today()))
        until = "the version in force today answers" if before else "queries and answers leave it out"
        report.warnings.append(f"{src.source}: this version takes effect on {src.effective_date} (its effective date): "
                               f"until then {until}; `kg query --as-of {src.effective_date}` searches it now")
    report.updated += existed
    report.added += not existed
    report.chunks_indexed += index_chunks(kb, change.new_chunks, {doc.doc_id: src.source})
    report.chunks_unchanged += change.carried
    report.chunks_retired += change.retired
    report.versions_replaced += change.replaced
    report.chunks_dropped += kb.index.delete_chunks(change.dropped) if change.dropped else 0
    kb.history.clear_about(doc.doc_id)
    link_document(kb, doc.doc_id, doc.title, change.new_chunks, linker, about)
    report.doc_ids.append(doc.doc_id)
    return {c.chunk_id for c in change.new_chunks}


def delete_documents(kb, doc_ids: Sequence[str]) -> list[dict]:
    """Remove documents (by id, front matter `id:` or source path) with every version, chunk, mention
    and index entry. Unknown names are an error before anything is removed."""
    found = resolve_documents(kb.history, doc_ids)
    return _catalog_then_index(kb, "delete", lambda: remove_documents(kb.store, kb.history, kb.index, found))


def sync(kb, paths: Sequence[Path], ignore: bool = True) -> IngestReport:
    """Remove the versions (and documents) whose source files under the folders `paths` are gone (or ignored)."""
    removed = _catalog_then_index(kb, "sync", lambda: remove_missing_sources(kb.store, kb.history, kb.index, paths,
                                                                             ignore))
    return IngestReport(versions_removed=removed.versions, chunks_removed=removed.chunks, deleted=removed.documents)


def _catalog_then_index(kb, op: str, change: Callable):
    """Run `change` in one catalog transaction, then commit the text index: the catalog is the truth,
    so a process killed between the two is rolled forward on the next open. Each step is marked for
    the crash tests (`KG_CRASH_AT=<op>:<step>`)."""
    try:
        # The catalog transaction stays open (and invisible to queries) until the commit instant;
        # whoosh's new segments are written before it too (`prepare`: files no reader opens yet), so
        # queries wait only for the switch: the catalog's COMMIT, the index's new generation file and
        # a new searcher, never for the index's segments being written or merged.
        with kb.store.transaction():
            result = change()
            kb.index.prepare()
            commit.crash_point(op, "prepared")
            kb.commits.enter_commit_instant()
        kb.commits.mark(op, "catalog")
        kb.index.commit()
        kb.commits.mark(op, "index")
    except BaseException:
        kb.index.rollback()
        raise
    finally:
        kb.commits.leave_commit_instant()
    kb.evidence.invalidate()
    return result


def link_document(kb, doc_id: str, title: str, chunks: Sequence[Chunk], linker, about) -> None:
    found = list(linker.link_many(c.text for c in chunks))
    for chunk, mentions in zip(chunks, found, strict=True):
        kb.store.put_mentions(chunk.chunk_id, mentions)
    kb.store.put_about(doc_id, about.get(fold_label(title), ()))
    anchor_document(kb.store.db, title, chunks, found, linker.link_many)


def relink(kb, progress: Progress | None = None) -> int:
    """Recompute every chunk's entity mentions against the graph in memory; records which graph it was."""
    linker, about = kb.linker, kb._about()
    by_doc: dict[str, list[Chunk]] = {}
    for chunk in kb.store.iter_chunks():
        by_doc.setdefault(chunk.doc_id, []).append(chunk)
    try:
        with kb.store.transaction():
            kb.store.clear_links()
            for doc_id, chunks in by_doc.items():
                link_document(kb, doc_id, chunks[0].title, chunks, linker, about)
                if progress:
                    progress(len(chunks))
            commit.set_state(kb.store.db, "linked_graph", kb.graph.digest)
            kb.commits.enter_commit_instant()
    finally:
        kb.commits.leave_commit_instant()
    kb.commits.mark("relink", "mentions")
    kb.evidence.invalidate()
    return sum(len(c) for c in by_doc.values())


def import_file(kb, path: Path, progress: Progress | None = None, **options) -> dict:
    """A relation or alias table (.csv, or a sheet of an .xlsx), an RDF/OWL file (.ttl .owl .rdf .nt) or a synonym
    table (.txt)."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"{path}: no such file")
    suffix = path.suffix.lower()
    table = suffix == ".csv" or is_workbook(path)  # a workbook holds a relation or alias table (kg/relations/sheet.py)
    if table and is_alias_table(path):
        kb.graph.view  # noqa: B018 - queries keep reading the view built before the triples change
        result = _import_aliases(kb, path, **options)
    elif table:
        kb.graph.view  # noqa: B018 - queries keep reading the view built before the triples change
        report = kb.graph.import_relations(path, progress=progress, **options)
        result = {"kind": "relations", "summary": report.summary(), "report": _report_json(report)}
    elif suffix in RDF_SUFFIXES:
        from ontology import load_rdf

        # Read (or refuse: .ofn/.omn/.owx, billion laughs) the file before touching the graph.
        incoming = load_rdf(path)
        left_out = _without_control_literals(incoming, path.name)
        vocab_before = list(kb.graph.vocab.warnings)  # the view is built: queries keep reading it meanwhile
        added, removed = kb.graph.merge_rdf(path, incoming, table=options.get("table"))
        summary = f"{added} new triples" + (f", {removed} removed (gone from the file)" if removed else "")
        if left_out:
            summary += f"; {len(left_out)} left out (a control character in a name or text)"
        result = {"kind": "rdf", "summary": summary, "triples_added": added, "triples_removed": removed,
                  "warnings": left_out}
    elif suffix == ".txt":
        return _import_synonyms(kb, path)
    else:
        raise InputError(
            f"{path.name}: cannot import '{suffix}' files: give a relation table (.csv or .xlsx), an ontology "
            "(.ttl, .owl, .rdf) or a synonym table (.txt)"
        )
    kb.commits.mark("import", "graph")
    if not options.get("dry_run"):
        kb._graph_changed()
        if result["kind"] == "rdf":
            from kg.check import import_warnings

            result["warnings"] += import_warnings(incoming, kb.graph.view, kb.graph.vocab, vocab_before)
        result["chunks_relinked"] = relink(kb)
        kb.commits.mark("import", "mentions")
        result["chunks_reindexed"] = sync_index_words(kb)
    return result


def _without_control_literals(graph, name: str) -> list[str]:
    """Take out of an RDF file's triples each literal holding a control character (in a name, a line break or tab too),
    as a relation table's row with one is refused: a label is printed in every answer and list that names its entity,
    so an ontology from someone else must not carry a terminal escape into them. One line per triple left out."""
    from rdflib import RDFS, SKOS, Literal

    from kg.files import visible
    from kg.relations.model import control_problem

    names = {RDFS.label, SKOS.prefLabel, SKOS.altLabel, SKOS.hiddenLabel}
    bad = [(s, p, o) for s, p, o in graph
           if isinstance(o, Literal) and control_problem("name" if p in names else "note", str(o))]
    for triple in bad:
        graph.remove(triple)
    return [f"{name}: <{visible(str(s))}> {graph.namespace_manager.normalizeUri(p)} \"{visible(str(o))}\" holds a control "
            "character: left out" for s, p, o in bad]


def _import_aliases(kb, path: Path, skip_invalid: bool = False, dry_run: bool = False, table: str | None = None,
                    **_) -> dict:
    """An `entity,alias` table: other names of entities the graph already has (skos:altLabel); the aliases deleted
    from it since its last import go (recorded as a relation table's edges are: kg/relations/ledger.py)."""
    from kg.graph import entity_subjects
    from kg.relations.ledger import TableLedger

    graph = kb.graph
    ledger = TableLedger(kb.root)
    table = table or ledger.key(path)
    keys: list = []
    report = import_alias_table(graph.rdf, path, entity_subjects(graph.rdf, graph.vocab), skip_invalid=skip_invalid,
                                dry_run=dry_run, forget=ledger.only_in(table), asserted=keys.append)
    if keys:
        ledger.around(table, keys[0], graph.save if report.new_aliases or report.removed_aliases else None,
                      keep_old=bool(report.rejected))
    return {"kind": "aliases", "summary": report.summary(), "report": {
        "rows": report.rows, "new_aliases": report.new_aliases, "unchanged": report.unchanged,
        "removed_aliases": report.removed_aliases, "rejected": report.rejected, "dry_run": report.dry_run,
        "encoding": report.encoding}}


def _import_synonyms(kb, path: Path) -> dict:
    table = SynonymTable.read(path)  # validates before anything is written
    target = kb.root / SYNONYMS_FILE
    existing = read_text(target) if target.exists() else ""
    new_lines = [", ".join(g) for g in table.groups if ", ".join(g) not in existing.splitlines()]
    if new_lines:
        replace_file(target, (existing + "".join(line + "\n" for line in new_lines)).encode("utf-8"), f".{SYNONYMS_FILE}-")
        kb.commits.mark("import", "synonyms")
    kb.synonyms = SynonymTable.read(target)
    add_user_words(kb.synonyms.words(), kb.vocabulary)
    return {"kind": "synonyms", "summary": f"{len(new_lines)} new synonym groups", "groups_added": len(new_lines),
            "chunks_reindexed": sync_index_words(kb)}


def add_entities(kb, labels: Iterable[str], type_name: str = "Topic") -> int:
    kb.graph.view  # noqa: B018 - queries keep this one while the triples change
    added = add_graph_entities(kb.graph, labels, type_name)
    if added:
        kb.commits.mark("add_entities", "graph")
        kb._graph_changed()
        # Chunks already ingested may name the new entities: their mentions follow the graph.
        if kb.store.stats()["chunks"]:
            relink(kb)
        else:
            with kb.store.transaction():
                commit.set_state(kb.store.db, "linked_graph", kb.graph.digest)
    return added


def _report_json(report) -> dict:
    return {
        "rows": report.rows, "new_entities": report.new_entities, "new_edges": report.new_edges,
        "unchanged_edges": report.unchanged_edges, "removed_edges": report.removed_edges, "kept_edges": report.kept_edges,
        "removed_aliases": report.removed_aliases,
        "rejected": [str(p) for p in report.rejected],
        "dry_run": report.dry_run, "encoding": report.encoding,
    }
