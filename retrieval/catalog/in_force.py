"""A day (and chunk ids, or hits) in, what the versions in force that day show out: the children they hide (kept until the catalog changes) and, per hit, the version that answered with its lines, page and parent.

The query side of the versions tables (retrieval/catalog/versions.py): every query asks what its day
hides and annotates its hits, so these reads are kept apart from the writes that add and chain the
versions, and the hidden set is cached here.
"""

from __future__ import annotations

import datetime as dt
import sqlite3
from collections.abc import Sequence

__all__ = ["VersionsInForce", "version_json"]


def version_json(row) -> dict:
    version_id, label, effective_from, effective_to = row[:4]
    return {"version_id": version_id, "label": label, "effective_from": effective_from, "effective_to": effective_to}


class VersionsInForce:
    """SQL over the versions tables for one day at a time; `VersionCatalog` hands its calls here."""

    def __init__(self, store) -> None:
        # The DocStore, not one connection: it hands each thread its own (a writer's open transaction
        # stays invisible to other threads' queries), and the hidden chunks are kept per connection.
        self._store = store
        # ((connection, its total_changes, PRAGMA data_version), {(day, keep_unborn): hidden chunks}): see `hidden_chunks`
        self._hidden: tuple | None = None

    @property
    def db(self) -> sqlite3.Connection:
        return self._store.db

    def hidden_chunks(self, day: dt.date, keep_unborn: bool = False) -> set[str]:
        """Children of no version in force on `day` (superseded, not yet in force): queries skip them.

        `keep_unborn`: a document none of whose versions had begun by `day` answers with its first
        version instead of not at all (for a date read from the question's words, which may be about
        the content rather than the document: "2019年的招生人数" in a report dated 2024).

        Every query asks, and at 100k chunks the answer cost two scans of the versions table (~12 ms):
        it is kept until the catalog changes, which this connection's `total_changes` (its own writes,
        committed or not) and `PRAGMA data_version` (other connections' commits) tell exactly. Never kept from
        inside a transaction: a rollback undoes writes without taking back their count.
        """
        db = self.db
        if db.in_transaction:
            return self._read_hidden_chunks(day, keep_unborn)
        state = (db, db.total_changes, db.execute("PRAGMA data_version").fetchone()[0])
        cached = self._hidden  # read once: another thread may replace it meanwhile (its own connection and state)
        if cached is None or cached[0][0] is not db or cached[0][1:] != state[1:]:
            cached = self._hidden = (state, {})
        known = cached[1]
        key = (day.isoformat(), keep_unborn)  # a question's own date ("去年12月") asks for another day
        hidden = known.get(key)
        if hidden is None:
            if len(known) >= 64:
                known.clear()
            hidden = known[key] = frozenset(self._read_hidden_chunks(day, keep_unborn))
        return set(hidden)

    def _read_hidden_chunks(self, day: dt.date, keep_unborn: bool) -> set[str]:
        d = day.isoformat()
        # Each half of the condition asked on its own, so that each reads its partial index (versions.py), not every version.
        if not self.db.execute("SELECT EXISTS (SELECT 1 FROM versions WHERE effective_to IS NOT NULL)"
                               " OR EXISTS (SELECT 1 FROM versions WHERE effective_from > ?)", (d,)).fetchone()[0]:
            return set()  # no document has a history or a future version: the common case, one query
        # Only documents with an ended or a future version can hide anything (every version of any other
        # document is in force): read those alone, not every version of the catalog on every query.
        by_doc: dict[str, list[tuple[str, str, str | None]]] = {}
        for version_id, doc_id, start, end in self.db.execute(
                "SELECT version_id, doc_id, COALESCE(effective_from, ''), effective_to FROM versions WHERE doc_id IN"
                " (SELECT doc_id FROM versions WHERE effective_to IS NOT NULL"
                " UNION SELECT doc_id FROM versions WHERE effective_from > ?) ORDER BY seq", (d,)):
            by_doc.setdefault(doc_id, []).append((version_id, start, end))
        chosen: set[str] = set()
        affected: list[str] = []  # versions of documents that have some version not chosen
        for versions in by_doc.values():
            live = [v for v, start, end in versions if start <= d and (end is None or end > d)]
            if not live and keep_unborn:
                live = [min(versions, key=lambda v: v[1])[0]]
            chosen.update(live)
            if len(live) < len(versions):
                affected += [v for v, _, _ in versions]
        hidden: set[str] = set()
        shown: set[str] = set()
        for i in range(0, len(affected), 500):
            part = affected[i : i + 500]
            for version_id, chunk_id in self.db.execute(
                    f"SELECT version_id, chunk_id FROM version_chunks WHERE version_id IN ({','.join('?' * len(part))})", part):
                (shown if version_id in chosen else hidden).add(chunk_id)
        return hidden - shown

    def in_force(self, chunk_ids: Sequence[str], day: dt.date) -> dict[str, tuple[dict, int, int, int | None, str]]:
        """chunk id -> (version json, line_start, line_end, page, parent id) in the version in force on `day`."""
        d, out = day.isoformat(), {}
        ids = list(dict.fromkeys(chunk_ids))
        for i in range(0, len(ids), 500):
            part = ids[i : i + 500]
            rows = self.db.execute(
                "SELECT v.version_id, v.label, v.effective_from, v.effective_to, vc.chunk_id, vc.line_start,"
                " vc.line_end, vc.page, vc.parent_id FROM version_chunks vc JOIN versions v USING (version_id)"
                f" WHERE vc.chunk_id IN ({','.join('?' * len(part))}) ORDER BY v.seq", part)
            for row in rows:
                live = (row[2] or "") <= d and (row[3] is None or row[3] > d)
                if live or row[4] not in out:  # the version in force, else the newest that holds it
                    out[row[4]] = (version_json(row), row[5], row[6], row[7], row[8])
        return out

    def parent_texts(self, parent_ids: Sequence[str]) -> dict[str, str]:
        ids = [p for p in dict.fromkeys(parent_ids) if p]
        if not ids:
            return {}
        return dict(self.db.execute(f"SELECT parent_id, text FROM parents WHERE parent_id IN ({','.join('?' * len(ids))})", ids))

    def annotate(self, hits: Sequence, day: dt.date) -> None:
        """Each hit gets the version that answered on `day`, its lines and page in it, and its parent's text."""
        placed = self.in_force([h.chunk_id for h in hits], day)
        parents = self.parent_texts([p[4] for p in placed.values()])
        for hit in hits:
            if hit.chunk_id not in placed:
                continue
            version, start, end, page, parent_id = placed[hit.chunk_id]
            hit.version, hit.lines, hit.page = version, (start, end), page
            if parent_id in parents:
                hit.parent = {"chunk_id": parent_id, "text": parents[parent_id]}
