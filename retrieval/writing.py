"""The commit protocol of a KnowledgeBase: a write in, one writer across processes, a journaled commit and the latest commit seen by every process out.

`@writes` wraps each public write method of `KnowledgeBase` in `Commits.writing()`:

    in-process writer mutex (kb.lock) -> data dir write lock (flock) -> catch up with other
    processes' commits -> journal -> the write (retrieval.write_path) -> generation + 1 -> journal off

Queries share `kb.readers` and never wait for a writer except at the instant its catalog and
index commits become visible (`enter_commit_instant`). A process that did not write notices another
one's commit by the catalog's generation number (one indexed SELECT) or graph.ttl's stamp, and
reloads in the background (`Follower`, started by the server), serving the old snapshot until
the new one is built; a library or CLI process without a follower catches up before its next read.

On PostgreSQL (KG_TEXT_BACKEND=postgres) the lock is PostgreSQL's (`catalog.postgres_lock`) and a
commit ends by publishing the catalog and files to it (`catalog.shared`): servers on other machines,
each with its own data dir, follow the published generation and restore what was published.
With a SPARQL store (KG_GRAPH_STORE=sparql+http://...), on either, a commit pushes a changed graph to it
before its generation (`push_graph`).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager

from kg.errors import BusyError, OntologyFormatError, StorageError
from kg.files import disk_full
from kg.lock import DataDirLock
from retrieval.catalog import commit
from retrieval.catalog.postgres_lock import PostgresWriteLock
from retrieval.catalog.shared import open_shared_record
from retrieval.graph.seeds import GraphEvidence
from retrieval.index.synonyms import SYNONYMS_FILE, SynonymFile
from retrieval.periodic import Periodic

__all__ = ["Commits", "writes"]


# The name a write goes by in the journal and in KG_CRASH_AT=<op>:<step>.
OPS = {"ingest_paths": "ingest", "ingest_documents": "ingest", "import_file": "import", "delete_documents": "delete", "sync": "sync"}


def writes(method):
    """Make a KnowledgeBase method a journaled write (one line per write method)."""
    op = OPS.get(method.__name__, method.__name__)

    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        with self.writing(op):
            return method(self, *args, **kwargs)

    return wrapper


class Commits:
    def __init__(self, kb) -> None:
        self.kb = kb
        self.shared = open_shared_record(kb.settings)  # None: the embedded default, one data dir
        self.flock = (DataDirLock(kb.root, kb.settings.write_wait) if self.shared is None else
                      PostgresWriteLock(self.shared.dsn, self.shared.ns, kb.settings.write_wait))
        self.generation = commit.generation(kb.store.db)
        self.synonyms_file = SynonymFile(kb.root / SYNONYMS_FILE)
        self._instant = ExitStack()
        self._op: str | None = None
        self._steps: list[str] = []
        self.follower: Follower | None = None
        self.recovered: list[str] = []  # commits a killed process left half done, finished by this one (kg check says so)

    def close(self) -> None:
        if self.shared is not None:
            self.shared.close()
        self.flock.close()

    # -- writes --------------------------------------------------------------------------------
    @contextmanager
    def writing(self, op: str) -> Iterator[None]:
        """A journaled write (module docstring). A full disk ends it as a `StorageError` saying what it left: nothing,
        when it failed before the catalog's commit (the usual case: the index's new segments are written first)."""
        if self._op is None:
            self._steps = []  # what this write marks as done (not the last write's)
        try:
            with self._journaled(op):
                yield
        except Exception as exc:
            full = disk_full(exc)
            if full is None or isinstance(exc, StorageError):
                raise
            left = ("nothing was changed" if not self._steps else
                    "the catalog has the change but the rest may not: once there is space, `kg check --repair` "
                    "brings it in line")
            raise StorageError(f"the disk of {self.kb.root} is full ({full}): the {op} was stopped and {left}; free "
                               "some space and run it again") from exc

    @contextmanager
    def _journaled(self, op: str) -> Iterator[None]:
        kb = self.kb
        with kb.lock, self.flock:
            if self._op is not None:  # a write inside a write (import -> relink): one commit
                yield
                return
            self.catch_up(writing=True)
            if kb.graph.held_back():  # saving the graph read before would overwrite the user's edit of graph.ttl
                raise OntologyFormatError(f"{kb.graph.unread or 'graph.ttl is being saved'}; nothing was written (it "
                                          "would overwrite that edit of graph.ttl): fix the file, or let its save "
                                          "finish, and run it again")
            from retrieval.indexing import stamp_recipe

            stamp_recipe(kb)
            commit.start_journal(kb.root, op)
            if self.shared is not None:
                self.shared.start_journal(op)
            self._op, self._steps = op, []
            published = False
            try:
                commit.crash_point(op, "journal")
                yield
            except BaseException:
                kb.index.rollback()
                if self._steps and self.shared is None:  # something did commit: bring the rest in line with it now
                    from retrieval.consistency import repair

                    repair(kb)
                elif not self._steps and self.shared is not None:
                    self._forget_shared_journal()  # nothing changed anywhere
                raise
            else:
                self._publish(op)
                published = True
            finally:
                self._op = None
                # Shared: a local change that was not published keeps the journal, so the next catch-up
                # goes back to the published state (`catch_up`) instead of serving what others cannot see.
                if published or self.shared is None or not self._steps:
                    commit.finish_journal(kb.root)

    def writing_now(self) -> bool:
        """Is this process inside a write (its journal is the one on disk)?"""
        return self._op is not None

    def mark(self, op: str, step: str) -> None:
        """A step of the write committed (see `KG_CRASH_AT`)."""
        self._steps.append(f"{op}:{step}")
        commit.crash_point(op, step)

    def enter_commit_instant(self) -> None:
        if not self._instant._exit_callbacks:
            self._instant.enter_context(self.kb.readers.exclusive())

    def leave_commit_instant(self) -> None:
        self._instant.close()

    def _publish(self, op: str) -> None:
        kb = self.kb
        self.push_graph()
        with kb.store.transaction():
            if commit.get_state(kb.store.db, "linked_graph") is None:
                commit.set_state(kb.store.db, "linked_graph", kb.graph.digest)
            self.generation = commit.bump_generation(kb.store.db)
        self.synonyms_file.written()
        commit.crash_point(op, "generation")
        if self.shared is not None:
            self.shared.publish(kb.root, kb.store.db, self.generation)
            commit.crash_point(op, "publish")

    def push_graph(self, strict: bool = False) -> str | None:
        """With a SPARQL store (KG_GRAPH_STORE=sparql+http://...), embedded or shared: the graph, when it changed
        since the last push, goes to the store's `ontology`, `default` and `pack:ID` graphs (what differs, in one
        update request the store takes whole or not at all), unless the store was edited since the last push
        (`retrieval.store_sync.push`). Returns why the push did not happen, None when the store holds this graph.

        A store that fails does not fail the commit (`strict`: it raises): by then the commit is written
        locally, and the store is a copy of graph.ttl that other tools read, so its outage should not stop
        ingesting. The failure is recorded (`store_push_failed`) beside what was pushed last (`store_graph`):
        the next commit, whatever it changes, pushes again, and `kg check` says the store is behind."""
        if not self.kb.settings.graph_store.startswith("sparql+"):
            return None
        from retrieval.store_sync import push

        return push(self.kb, strict=strict)

    def _forget_shared_journal(self) -> None:
        try:
            self.shared.finish_journal()
        except Exception:  # PostgreSQL is gone: the next writer finds the journal and checks (harmless)
            pass

    # -- following other processes ----------------------------------------------------------------
    def behind(self) -> bool:
        """Cheap: did another process commit, or graph.ttl / synonyms.txt change, since we loaded?"""
        kb = self.kb
        if self.shared is not None and (published := self.shared.generation()) is not None and (
                published != self.generation or (self.kb.store.postgres and published != self._restored())):
            return True
        return (
            commit.generation(kb.store.db) != self.generation
            or kb.graph.changed_on_disk()
            or self.synonyms_file.changed()
        )

    def needs_relink(self) -> bool:
        linked = commit.get_state(self.kb.store.db, "linked_graph")
        return linked is not None and linked != self.kb.graph.digest

    def catch_up(self, writing: bool = False) -> None:
        """Reload what other processes committed; repair a dead writer's commit and relink after an
        outside edit of graph.ttl. The last two are writes: a reader does them only when the write
        lock is free this instant (otherwise the writer holding it will), never waiting for it."""
        kb = self.kb
        unpublished = self.shared is not None and commit.pending_journal(kb.root) is not None
        if self.behind() or (writing and unpublished):
            self.reload(restore=unpublished)
        if not writing:
            # Shared: a writer on another machine that died mid-commit left only the shared journal row (and
            # perhaps index rows nothing published): any machine that gets the lock finishes it, not only the
            # next writer, so `kg check` on another machine says so instead of reporting orphans.
            left = (commit.pending_journal(kb.root) is not None or self.needs_relink()
                    or (self.shared is not None and self.shared.journal() is not None))
            if not left or not self.flock.try_acquire():
                return
            try:
                with self.writing("catch_up"):
                    pass  # writing() itself repairs, reloads and relinks (below, with writing=True)
            finally:
                self.flock.release()
            return
        journal = commit.pending_journal(kb.root)
        if journal is None and self.shared is not None:
            journal = self.shared.journal()  # left by a writer on another machine that died mid-commit
        if journal is not None:
            from retrieval.consistency import repair

            done = repair(kb)
            writer = f" ({journal['writer']})" if journal.get("writer") else ""  # shared: who died, and where
            self.recovered.append(f"finished the '{journal.get('op')}' commit a killed process{writer} left half done"
                                  + (f" ({'; '.join(done)})" if done else ""))
        if self.needs_relink():
            from retrieval.indexing import sync_index_words
            from retrieval.write_path import relink

            relink(kb)
            sync_index_words(kb)

    def reload(self, restore: bool = False) -> None:
        """Build the new snapshot beside the old one, then swap it in at one instant. Shared on PostgreSQL:
        first the published catalog and files (`restore`: even at the same generation)."""
        kb = self.kb
        with kb.lock:
            if self.shared is not None and (restore or self.shared.generation() not in (None, self._restored())):
                self._restore_published(restore)
            generation = commit.generation(kb.store.db)
            graph = kb.graph
            if graph.changed_on_disk():
                graph = graph.read_again()
            synonyms = self.synonyms_file.read_again(kb.synonyms)
            linker = kb._linker
            if graph is not kb.graph or synonyms is not kb.synonyms:
                graph.vocab  # noqa: B018 - built here, not in the first query after the swap
                linker = kb.build_linker(graph.view, synonyms, graph, kb.vocabulary)
            with kb.readers.exclusive():
                if graph is not kb.graph:
                    kb.graph = graph
                    kb.evidence = GraphEvidence(kb.store, graph)
                    kb._about_index = kb._relations = None
                kb.synonyms, kb._linker = synonyms, linker
                kb.evidence.invalidate()
                kb.index.commit()  # no writer open: reopens the searcher on the latest index commit
                self.generation = generation

    def _restore_published(self, always: bool) -> None:
        """The published catalog and files into the data dir, only under the write lock: another process
        on this data dir may be between its local commit and its publication (restoring then would undo
        its write). Lock taken elsewhere: skipped, the follower's next round tries again."""
        if not self.flock.try_acquire():
            return
        try:
            if always or self.shared.generation() not in (None, self._restored()):
                self.shared.restore(self.kb.root, self.kb.store.db, swap=self._swap_catalog)
        finally:
            self.flock.release()

    def _restored(self) -> int:
        """Shared: the generation this data dir was last brought to: its catalog file's own, or, with the catalog's
        tables in PostgreSQL (KG_CATALOG, always at the latest), the one its copies of graph.ttl and the other files
        were published or restored at."""
        if self.kb.store.postgres:
            return self.shared.files_generation(self.kb.root)
        return commit.generation(self.kb.store.db)

    def _swap_catalog(self, target) -> bool:
        """The restored catalog file in place of the old one, at an instant no query of this process reads it;
        False (the restore copies it in through SQLite instead) for a write called inside a read, whose
        connection stays in use around it, and where the data dir cannot hold a symbolic link."""
        kb = self.kb
        if kb.readers.reading_here:
            return False
        with kb.readers.exclusive():
            return kb.store.point_to(target)

    def before_read(self) -> None:
        """Called before each query: a follower reloads in the background (the read goes on with the
        snapshot it has); without one, this process catches up first."""
        if self.follower is not None:
            self.follower.poke()
            return
        if self.flock.held or self._op is not None:
            return
        if self.behind() or self.needs_relink():
            self.catch_up()


class Follower(Periodic):
    """A daemon thread that keeps a long-running process on the latest commit."""

    name = "kg-follower"

    def __init__(self, commits: Commits, interval: float) -> None:
        super().__init__(interval)
        self.commits = commits

    def stop(self, timeout: float = 30.0) -> None:
        super().stop(timeout)

    def round(self) -> None:
        log = logging.getLogger("kgrag")
        try:
            commits = self.commits
            if commits.behind() or commits.needs_relink():
                commits.catch_up()
        except BusyError as exc:  # PostgreSQL down, a lock held: one line, no traceback; next round tries again
            self.errors += 1
            log.warning("could not follow other processes' commits this round: %s", exc)
        except Exception:  # the server keeps serving its snapshot; the next round tries again
            self.errors += 1
            log.exception("reloading the knowledge base after another process's commit failed")

