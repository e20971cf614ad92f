"""The final fused ranking + the passages' own vectors -> the same ranking with its head re-ordered by maximal
marginal relevance, so that a question whose answer spans several documents finds the second one in the top few.

A question with two or three gold passages in different documents (ops_dev_zh's cross_doc kind) often has one of
them first and the others pushed below rank 5 by near-copies of the first (its sibling sections, another page on the
same topic). MMR (Carbonell & Goldstein 1998) picks the head greedily: the next hit is the one with the best

    relevance(d) - weight * max_{s already picked} cosine(d, s)

where relevance is the fused score over the best one (1.0 for the first hit, which always stays first). Only the
first `DIVERSITY_WINDOW` hits are re-ordered; a hit without a vector keeps its place (it cannot be compared, and a
missing penalty would lift it above every hit that has one). Each slot keeps the score it had, so scores stay in
order; a hit that moved up records where it was and how close it is to the hits above it (`why.diversity`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from retrieval.rank.fusion import Fused

if TYPE_CHECKING:
    import numpy as np

__all__ = ["DIVERSITY_WINDOW", "diversify"]

# The head re-ordered: the ranks an answer reads (`kg ask` numbers at most 20 passages). Fixed, not chosen per set,
# and not tied to the k asked for, so the first five hits are the same whatever k is.
DIVERSITY_WINDOW = 20


def diversify(fused: Sequence[Fused], vectors: Mapping[str, np.ndarray], weight: float,
              window: int = DIVERSITY_WINDOW) -> list[Fused]:
    """`fused` with its first `window` hits re-ordered by MMR (`weight` 0 = unchanged). `vectors`: chunk id ->
    L2-normalised vector, for the hits that have one. A permutation of `fused`; the first hit stays first."""
    out = list(fused)
    head = out[:window]
    movable = [i for i, f in enumerate(head) if f.id in vectors]
    if weight <= 0 or len(movable) < 3 or not head[0].score:
        return out
    import numpy as np  # here, not at import: a write (`kg ingest`) imports the query path but never diversifies

    top = head[0].score
    matrix = np.stack([np.asarray(vectors[head[i].id], dtype=np.float32) for i in movable])
    pairwise = matrix @ matrix.T  # cosine: the vectors are normalised
    relevance = [head[i].score / top for i in movable]
    picked = [0]  # indices into `movable`; the best of them stays in its slot
    closest = pairwise[0].copy()  # each candidate's max similarity to the hits picked so far
    left = list(range(1, len(movable)))
    while left:
        # Ties go to the earlier hit: with nothing to tell them apart, the fused order stands.
        best = max(left, key=lambda j: (relevance[j] - weight * float(closest[j]), -j))
        left.remove(best)
        picked.append(best)
        closest = np.maximum(closest, pairwise[best])
    reordered = list(head)
    for position, j in enumerate(picked):  # the movable hits in their new order, written back into the movable slots
        slot, source = movable[position], movable[j]
        similarity = max((float(pairwise[j, i]) for i in picked[:position]), default=0.0)
        reordered[slot] = replace(head[source], score=head[slot].score,
                                  diversity={"from": source + 1, "similarity_above": round(similarity, 4)}
                                  if slot < source else None)
    return reordered + out[window:]
