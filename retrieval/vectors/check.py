"""`kg check` on vectors: a KnowledgeBase in, its vectors' problems (and counts) added to the CheckReport, and the repair.

Vectors are derived data keyed by content, so the only repairs are removals: a vector of the wrong size or
holding NaN goes (a torn or foreign write), and `kg embed` makes it again. Chunks still without a vector are
counted, not a problem: ingest is searchable before its vectors are made.
"""

from __future__ import annotations

from retrieval.vectors.dense import chunk_keys
from retrieval.vectors.embedders import configured_model_id

__all__ = ["inspect_vectors", "repair_vectors"]


def inspect_vectors(kb, report, found: dict) -> None:
    store = kb.vectors.store
    configured = configured_model_id(kb.settings)
    if not store.exists():
        if configured:
            report.counts["chunks_without_vectors"] = kb.store.stats()["chunks"]
        return
    recorded = store.model()
    if configured and recorded and recorded != configured:
        report.problems.append(f"the vectors were made by {recorded} but KG_EMBED_MODEL gives {configured}: "
                               "run `kg embed` to embed every chunk again with the configured model")
    dim = int(store.state("dim", "0") or 0)
    bad = store.bad_keys(dim)
    found["bad_vectors"] = bad
    if bad:
        report.problems.append(f"{len(bad)} vector(s) are not {dim} finite numbers (a torn or foreign write): "
                               "--repair removes them, then `kg embed` makes them again")
    keys = {key for key, _ in chunk_keys(kb.store).values()}
    stored = store.keys()
    report.counts["vectors"] = len(stored)
    report.counts["chunks_without_vectors"] = len(keys - stored)


def repair_vectors(kb, found: dict) -> list[str]:
    bad = found.get("bad_vectors")
    if not bad:
        return []
    removed = kb.vectors.store.delete(bad)
    return [f"removed {removed} broken vector(s): run `kg embed` to make them again"]
