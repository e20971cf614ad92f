"""whoosh segments in, the ones to keep out: the merge policy of the text index (`tiered_merge`), so that ingest never rewrites the whole index."""

from __future__ import annotations

from retrieval.index.whoosh_merge import merge_segments

__all__ = ["MAX_SEGMENTS", "MERGE_FACTOR", "merge_all", "tiered_merge", "tier"]

# Segments. whoosh's own MERGE_SMALL only merges segments of a few dozen documents, so one segment
# per ingest piles up; `optimize` merged every segment on each big ingest, rewriting the whole index
# (ingest went super-linear: STACK.md point 16). `tiered_merge` keeps at most MERGE_FACTOR - 1
# segments per size tier (tiers MERGE_FACTOR times apart): a chunk is rewritten ~log(N/batch) times
# over its life and the count of segments stays logarithmic; past MAX_SEGMENTS (never reached by the
# policy itself, only by an index written without it) everything is merged once.
MERGE_FACTOR = 6
MAX_SEGMENTS = 24


def tiered_merge(writer, segments: list, added: int | None = None) -> list:
    """whoosh merge policy: the segments to keep; the merged ones are added to `writer`'s new segment.

    Tier of a segment = floor(log_MERGE_FACTOR(documents)). The new segment (this writer's documents)
    takes in every older segment of a lower tier (they are smaller than it, so this costs at most
    what it adds), then the segments of its own tier once MERGE_FACTOR - 1 of them wait there, and
    again at the tier the merged segment reaches. Past MAX_SEGMENTS everything merges (an index
    written before this policy). `added`: the documents this commit adds when worker processes wrote them
    (`whoosh_workers`; the writer's own count otherwise)."""
    if len(segments) >= MAX_SEGMENTS:
        return merge_all(writer, segments)
    size = max(writer.docnum - writer.docbase + (added or 0), 1)  # documents this commit adds
    keep = sorted(segments, key=lambda seg: seg.doc_count_all())
    merged: list = []
    while keep:
        level = tier(size)
        lower = [seg for seg in keep if tier(seg.doc_count_all()) < level]
        same = [seg for seg in keep if tier(seg.doc_count_all()) == level]
        take = lower + (same if len(same) >= MERGE_FACTOR - 1 else [])
        if not take:
            break
        merged += take
        size += sum(seg.doc_count_all() for seg in take)
        keep = [seg for seg in keep if seg not in take]
    merge_segments(writer, merged)
    return keep


def merge_all(writer, segments: list, added: int | None = None) -> list:
    """whoosh merge policy: every segment merged into the writer's new one (whoosh's OPTIMIZE, `whoosh_merge`'s way)."""
    merge_segments(writer, segments)
    return []


def tier(documents: int) -> int:
    tier, size = 0, MERGE_FACTOR
    while documents >= size:
        tier, size = tier + 1, size * MERGE_FACTOR
    return tier
