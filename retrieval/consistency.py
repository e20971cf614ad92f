"""`kg check`: a KnowledgeBase in, a CheckReport out (what disagrees between catalog, text index, graph and mentions, and what was repaired).

The SQLite catalog (documents, chunks), graph.ttl and synonyms.txt are the truth; the whoosh
index, the mentions and the re-cut index words are derived from them. So every repair is a
re-derivation, which is also how a commit a killed process left half done is finished: the
result is the state before the write when its catalog transaction had not committed, and the
state after it otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from retrieval.catalog import commit

__all__ = ["CheckReport", "check", "repair", "segment_count", "segments_note", "store_behind"]

# From this many text index segments on, `kg check` suggests merging them. Ingest keeps segments merged by size
# (logarithmic in the index: 14 at 100k chunks); a merged index answered full-mode queries 28% faster at 100k chunks
# (bench/RESULTS-scale.md), but the merge rewrites the whole index (~0.5 CPU-minutes at 100k), so it is advice.
SEGMENTS_HINT = 8


@dataclass
class CheckReport:
    problems: list[str] = field(default_factory=list)
    repaired: list[str] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)
    recovered: list[str] = field(default_factory=list)  # what opening the knowledge base rolled forward first
    notes: list[str] = field(default_factory=list)  # advice that is not a problem (the check stays clean)

    @property
    def clean(self) -> bool:
        return not self.problems

    def to_json(self) -> dict:
        return {"clean": self.clean, "problems": self.problems, "repaired": self.repaired, "counts": self.counts,
                "recovered": self.recovered, "notes": self.notes}


def segment_count(index) -> int | None:
    """How many segments the text index has; None for a backend without segments (PostgreSQL)."""
    count = getattr(index, "segment_count", None)
    return count() if count else None


def segments_note(segments: int | None) -> str | None:
    """The advice `kg check` and `kg ingest` give an index of SEGMENTS_HINT segments or more, else None."""
    if segments is None or segments < SEGMENTS_HINT:
        return None
    return (f"the text index has {segments} segments: `kg check --repair --optimize` merges them into one (queries "
            "read every segment, so they get faster; the merge rewrites the whole index once, about half a CPU-minute "
            "at 100k chunks, while queries go on)")


def _temp_files(kb) -> list:
    root = kb.root
    return [*root.glob(".graph-*.ttl"), *root.glob(".cache-*"), *root.glob(".linker-*"), *root.glob(".synonyms.txt-*"),
            *root.glob(".relation-tables-*.json")]


def _index_ids(kb) -> set[str]:
    if hasattr(kb.index, "chunk_ids"):  # a backend that lists its chunks itself (PostgreSQL)
        return kb.index.chunk_ids()
    with kb.index.ix.searcher() as searcher:
        return {fields["chunk_id"] for fields in searcher.all_stored_fields()}


def _writer_now(kb) -> str | None:
    """Who holds the write lock this instant, if anyone: then a journal on disk is a live write's, not a dead one's
    (a `kg check` run during a long ingest, or a server's check while its follower thread commits)."""
    lock = kb.commits.flock
    if lock.held:  # a write of this process, in another thread (its journal is on disk a moment before and after)
        return "this process"
    if lock.try_acquire():
        lock.release()
        return None
    return "another kg process"


def inspect(kb) -> tuple[CheckReport, dict]:
    """Every disagreement, with what a repair needs to know about it."""
    report, found = CheckReport(), {}
    journal = commit.pending_journal(kb.root)
    if journal is not None and not kb.commits.writing_now():  # inside a write, the journal is that write's own
        writer = _writer_now(kb)
        if writer is not None:
            report.notes.append(f"{writer} is writing to this knowledge base now (its '{journal.get('op')}' "
                                "commit is under way): this check saw what was committed before it")
        else:
            report.problems.append(f"a commit of '{journal.get('op')}' was cut short (its process died before finishing)")
    temps = _temp_files(kb)
    if temps:
        report.problems.append(f"{len(temps)} temporary file(s) left by an interrupted save: "
                               + ", ".join(sorted(p.name for p in temps)))
    if kb.graph.changed_on_disk():
        kb.commits.reload()
    linked = commit.get_state(kb.store.db, "linked_graph")
    found["relink"] = linked is not None and linked != kb.graph.digest
    if found["relink"]:
        report.problems.append("graph.ttl changed after the mentions were linked (an import cut short, or an outside edit)")
    entities = kb.graph.view.entities
    unknown = [e for e in kb.store.mention_counts() if e not in entities]
    unknown += [e for (e,) in kb.store.db.execute("SELECT DISTINCT entity FROM about") if e not in entities]
    if unknown:
        found["relink"] = True
        report.problems.append(f"{len(set(unknown))} linked entit(y/ies) are not in graph.ttl, e.g. {sorted(unknown)[0]}")
    # A document's chunks are those of all its versions (an edited file keeps its earlier versions' chunks for
    # queries as of an earlier day); its chunk count is its newest version's.
    miscounted = kb.store.db.execute(
        "SELECT d.doc_id FROM documents d LEFT JOIN versions v ON v.doc_id = d.doc_id AND v.seq = d.version"
        " LEFT JOIN version_chunks vc ON vc.version_id = v.version_id"
        " GROUP BY d.doc_id HAVING COUNT(vc.chunk_id) != MAX(d.n_chunks)").fetchall()
    if miscounted:
        report.problems.append(f"{len(miscounted)} document(s) whose chunk count disagrees with their newest version's chunks")
    unheld = kb.store.db.execute(
        "SELECT COUNT(*) FROM chunks WHERE chunk_id NOT IN (SELECT chunk_id FROM version_chunks)").fetchone()[0]
    if unheld:
        report.problems.append(f"{unheld} chunk(s) belong to no version of their document")
    dead = kb.store.db.execute(
        "SELECT COUNT(*) FROM versions v WHERE v.effective_to IS NOT NULL AND v.effective_to <= COALESCE(v.effective_from, '')"
        " AND EXISTS (SELECT 1 FROM versions w WHERE w.doc_id = v.doc_id AND w.source = v.source AND w.seq > v.seq)"
    ).fetchone()[0]
    if dead:  # what an older kgrag kept of a file saved twice a day (retrieval/catalog/versions.py, `_drop_replaced`)
        report.notes.append(f"{dead} version(s) are in force on no day (their file was ingested again the day they began, "
                            "by an older kgrag): the next ingest of each file after it changes drops them")
    from kg.relations.ledger import LEDGER_FILE, TableLedger

    if TableLedger(kb.root).unreadable:
        report.notes.append(f"{LEDGER_FILE} cannot be read: a relation table imported again removes no deleted row's edge "
                            "until its next import after this one (each import records its table anew)")
    catalog = {row[0] for row in kb.store.db.execute("SELECT chunk_id FROM chunks")}
    indexed = _index_ids(kb)
    found["missing"], found["orphans"] = catalog - indexed, indexed - catalog
    if found["missing"]:
        report.problems.append(f"{len(found['missing'])} chunk(s) in the catalog are not in the text index (unsearchable)")
    if found["orphans"]:
        report.problems.append(f"{len(found['orphans'])} text index entr(y/ies) have no chunk in the catalog (orphans)")
    misplaced = getattr(kb.index, "misplaced", None)  # packs on databases of their own (KG_PACK_DATABASES)
    found["misplaced"] = misplaced() if misplaced is not None else {}
    if found["misplaced"]:
        report.problems.append(
            "chunk(s) in another PostgreSQL database than KG_PACK_DATABASES gives their pack: "
            + ", ".join(f"{n} in {where} database" for where, n in sorted(found["misplaced"].items()))
            + " (KG_PACK_DATABASES changed since they were indexed): --repair writes every database anew from the catalog")
    from retrieval.indexing import INDEX_RECIPE, RECIPES, holds_traditional, index_recipe

    recipe = index_recipe(kb)
    # Recipe 3 only reads traditional characters as simplified: an older index without any is already one of it.
    found["reindex"] = recipe < INDEX_RECIPE and (recipe < 2 or holds_traditional(kb.store.db))
    if found["reindex"]:
        report.problems.append(
            f"the text index was written by an older kgrag ({RECIPES[recipe]}; this one indexes "
            f"{RECIPES[INDEX_RECIPE]}): --repair indexes its {len(catalog)} chunk(s) again")
    found["push"] = store_behind(kb)
    if found["push"] is not None:
        report.problems.append(found["push"])
    report.counts = {"documents": kb.store.stats()["documents"], "chunks": len(catalog), "indexed": len(indexed),
                     "entities": len(entities)}
    segments = segment_count(kb.index)
    if segments is not None:
        report.counts["segments"] = segments
    note = segments_note(segments)
    if note:
        report.notes.append(note)
    advice = getattr(kb.index, "advice", None)  # a backend's own (PostgreSQL: a key made by an older kgrag)
    if advice is not None:
        report.notes.extend(advice())
    from retrieval.vectors.check import inspect_vectors

    inspect_vectors(kb, report, found)  # the meaning channel's vectors (retrieval/vectors)
    return report, found


def store_behind(kb) -> str | None:
    """With KG_GRAPH_STORE=sparql+...: why the SPARQL store does not hold graph.ttl's graph, if it does not
    (what the commits recorded: `Commits.push_graph`; the store itself is not asked)."""
    if not kb.settings.graph_store.startswith("sparql+"):
        return None
    from retrieval.store_sync import EDITED, graph_mark

    mark = graph_mark(kb)
    if commit.get_state(kb.store.db, "store_graph") == mark:
        return None
    failed = commit.get_state(kb.store.db, "store_push_failed") or ""
    if failed.startswith(EDITED):  # not a failure a retry mends: the user chooses (`kg store pull` or `push --force`)
        return f"the SPARQL store ({kb.settings.graph_store}) is behind graph.ttl, not pushed: {failed}"
    why = f"the last push failed: {failed}" if failed else "no commit has pushed this graph to it yet"
    return (f"the SPARQL store ({kb.settings.graph_store}) is behind graph.ttl ({why}); the next commit pushes it, "
            "or `kg check --repair` now")


def check(kb, repair_problems: bool = False, progress=None) -> CheckReport:
    """`progress(n)`: n more chunks indexed again, when the repair writes the text index anew."""
    report, found = inspect(kb)
    report.recovered = list(kb.commits.recovered)
    if repair_problems and not report.clean:
        report.repaired = _repair(kb, report, found, rebuild=True, progress=progress)
        if found["push"] is not None:  # a store still down fails the repair with what to do (BusyError)
            kb.commits.push_graph(strict=True)
            report.repaired.append(f"pushed graph.ttl's graph to the SPARQL store ({kb.settings.graph_store})")
    return report


def repair(kb) -> list[str]:
    """Finish or undo a half-done commit: re-derive what is derived. Call with the write lock held.
    An index by an older recipe is left for `kg check --repair`: a write that recovers a crash
    does not also take the time to index everything again."""
    report, found = inspect(kb)
    return _repair(kb, report, found)


def _repair(kb, report: CheckReport, found: dict, rebuild: bool = False, progress=None) -> list[str]:
    from retrieval.indexing import index_chunks, reindex_all, sync_index_words
    from retrieval.write_path import relink

    done = []
    removed = _temp_files(kb)
    for path in removed:
        path.unlink(missing_ok=True)
    if removed:
        done.append(f"removed {len(removed)} temporary file(s)")
    if found["relink"]:
        kb._graph_changed()
        done.append(f"linked {relink(kb)} chunk(s) again against graph.ttl")
    if rebuild and (found["reindex"] or found["misplaced"]):
        done.append(f"text index written anew: {reindex_all(kb, progress)} chunk(s) indexed again"
                    + (f", {len(found['orphans'])} orphan(s) gone" if found["orphans"] else ""))
    elif found["orphans"] or found["missing"]:
        kb.index.delete_chunks(sorted(found["orphans"]))
        missing = kb.store.chunks(sorted(found["missing"]))
        index_chunks(kb, list(missing.values()))
        kb.index.prepare()
        with kb.readers.exclusive():
            kb.index.commit()
        done.append(f"text index: {len(found['orphans'])} orphan(s) removed, {len(missing)} chunk(s) added")
    from retrieval.vectors.check import repair_vectors

    done += repair_vectors(kb, found)
    kb._index_words_synced = None
    again = sync_index_words(kb)
    if again:
        done.append(f"re-indexed {again} chunk(s) with words taught since they were indexed")
    with kb.store.transaction():
        commit.set_state(kb.store.db, "linked_graph", kb.graph.digest)
        kb.commits.generation = commit.bump_generation(kb.store.db)
    commit.finish_journal(kb.root)
    if report.problems and not done:
        done.append("cleared the journal of the interrupted commit (nothing else needed)")
    return done
