"""The passages an answer gets, and the documents about the question's entities in -> the same passages with such a document's lead section among them out.

A page about one thing says what it is, where it runs and who keeps it in its first section (its lead:
a wiki page's opening paragraph, a service page's 概述 / Overview); the later sections hold one aspect
each. A question that names the thing and asks for an aspect ("Which port and keepalive do the gateways
use to connect to the MQTT broker?") gets the aspect's section (keepalive, in 接入规范) from the search,
while the address and port sit in the lead, which the search ranks lower: the question's words
("port") are not the lead's (端口), and the fused ranking keeps one section of a document near the top.
The model then takes the port of the nearest passage that states one (another service's 8090).

So when a passage of a document about an entity the question names is among the answer's passages,
and that document's lead is not, the lead comes right after the document's first passage, in place of
the last passage (the count, and the prompt's size, stay). Only a lead the search itself returned
(within the loop's search depth) is brought forward, in the version that answered; at most `MAX_LEADS`.
Nothing changes for a question that names no entity, or whose entities have no document about them.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from dataclasses import replace

__all__ = ["LeadFinder", "MAX_LEADS"]

MAX_LEADS = 1  # leads brought forward for one answer: the passages are the search's, mostly


class LeadFinder:
    """Reads the catalog (a `DocStore`: `kb.sqlite`): which documents are about an entity, which chunk opens a version."""

    def __init__(self, store) -> None:
        self.store = store  # its `db` is the calling thread's connection: read it when asked, not here

    @property
    def db(self) -> sqlite3.Connection:
        return self.store.db

    def _about(self, entities: Sequence[dict]) -> dict[str, str]:
        """The documents about the entities, each with the label of the (first) entity it is about."""
        labels = {e["id"]: e.get("label") or e["id"] for e in entities}
        marks = ",".join("?" * len(labels))
        rows = self.db.execute(f"SELECT doc_id, entity FROM about WHERE entity IN ({marks})", list(labels))
        about: dict[str, str] = {}
        for doc_id, entity in rows:
            about.setdefault(doc_id, labels[entity])
        return about

    def _first_chunks(self, version_ids: Sequence[str]) -> set[str]:
        marks = ",".join("?" * len(version_ids))
        rows = self.db.execute(
            f"SELECT chunk_id FROM version_chunks AS v WHERE version_id IN ({marks}) AND ordinal = "
            "(SELECT MIN(ordinal) FROM version_chunks WHERE version_id = v.version_id)", list(version_ids))
        return {row[0] for row in rows}

    def __call__(self, hits: Sequence, k: int, entities: Sequence[dict]) -> list:
        """The first `k` of `hits` (fused, best first), with the leads brought forward as the module says (each says so
        in its `why["placed"]`, which the answer's sources show). `entities`: the question's, as `query()` gives them."""
        top = list(hits[:k])
        if not entities or not top or len(hits) <= k:
            return top
        about = self._about(entities)
        shown = [h for h in top if h.doc_id in about]
        if not about or not shown:
            return top
        deeper = [h for h in hits[k:] if h.doc_id in about and _version(h)]
        if not deeper:
            return top
        firsts = self._first_chunks(sorted({_version(h) for h in deeper}))
        leads = {(h.doc_id, _version(h)): h for h in deeper if h.chunk_id in firsts}
        brought = 0
        for passage in shown:
            lead = leads.get((passage.doc_id, _version(passage)))
            if lead is None or lead.chunk_id in {h.chunk_id for h in top}:
                continue
            # The last passage other than the one the lead belongs with gives way (k = 1: no room).
            drop = next((i for i in range(len(top) - 1, -1, -1) if top[i] is not passage), None)
            if drop is None:
                break
            del top[drop]
            why = {**(lead.why or {}), "placed": f"the first section of the page about {about[passage.doc_id]}, "
                                              f"brought after its section {passage.section or passage.title}"}
            top.insert(top.index(passage) + 1, replace(lead, why=why))
            brought += 1
            if brought >= MAX_LEADS:
                break
        return top


def _version(hit) -> str | None:
    return (hit.version or {}).get("version_id")
