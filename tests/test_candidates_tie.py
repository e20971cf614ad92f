"""A search takes its candidates by the question's rarer words, best first; when more chunks tie there than it takes,
the common words choose among the tie, not the order the chunks were indexed in. (At 363k chunks a title hundreds of
chunks share made the cut fall inside such a tie, and the chunk that scores 4th was not among the hits.) Real whoosh."""

from __future__ import annotations

import hashlib

from retrieval.index.whoosh_index import WhooshIndex
from retrieval.types import Chunk


def _chunk(i: int, body: str, title: str = "note") -> Chunk:
    return Chunk(f"c{i:04d}", f"d{i:04d}", 0, title, "", body, 1, 1, hashlib.sha256(body.encode()).hexdigest())


def _index(tmp_path) -> WhooshIndex:
    # 15 chunks hold both rare words, with the same lengths: they tie on them. The last one indexed also holds
    # "gateway", a common word (in far more than 10% of the chunks), in place of its own filler word.
    tied = [_chunk(i, f"zebra quokka filler{i}") for i in range(14)] + [_chunk(14, "zebra quokka gateway")]
    others = [_chunk(100 + i, " ".join(["gateway", f"other{i}", "word"][: 1 + i % 3] + ["padding"] * (i % 5)))
              for i in range(200)]
    index = WhooshIndex(tmp_path / "ix", max_df_ratio=0.1)
    index.add_chunks(tied + others)
    index.commit()
    return index


def test_the_common_words_choose_among_a_tie_at_the_candidates_cut(tmp_path):
    index = _index(tmp_path)
    terms = [("zebra", 1.0), ("quokka", 1.0), ("gateway", 1.0)]
    hits = index.search(terms, 10)
    assert len(hits) == 10
    assert hits[0].chunk_id == "c0014" and "gateway" in hits[0].terms  # indexed last, first by its whole score
    assert all(h.chunk_id < "c0100" for h in hits)  # the others hold no rare word
    # reading deeper adds hits after those and does not change them
    deeper = index.search(terms, 10, beyond=5)
    assert [h.chunk_id for h in deeper[:10]] == [h.chunk_id for h in hits] and len(deeper) == 15
    index.close()
