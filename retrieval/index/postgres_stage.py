"""Chunks a `PostgresIndex` has been given but not committed, kept in PostgreSQL instead of in memory once there are many.

A commit is one transaction, so until it runs every added chunk's term counts must be held somewhere. In
Python that is ~20 KB a chunk (a `kg migrate` or `kg reindex` of 100k chunks held 2.1 GB); here they go, in
batches, into two temporary tables of the writer's session (`stage_chunks`, `stage_postings`), which
PostgreSQL keeps on its own disk, and the commit moves them into the index with `INSERT … SELECT`. What
stays in Python is each staged chunk id's place in the order of addition (a chunk added again goes last,
as in whoosh). Temporary tables are private to the session and vanish with it: if the connection breaks
before the commit, the staged chunks are lost, so that commit fails (nothing is written) instead of
being retried.
"""

from __future__ import annotations

from collections import Counter

from retrieval.index.postgres_schema import FIELDS, rounded_length

__all__ = ["STAGE_CHUNKS", "StagedChunks"]

STAGE_CHUNKS = 2000  # chunks held in Python before they go to the writer's temporary tables

_TABLES = ("CREATE TEMP TABLE IF NOT EXISTS stage_chunks (seq bigint PRIMARY KEY, chunk_id text NOT NULL, "
           "doc_id text NOT NULL, lengths int[] NOT NULL, rounded int[] NOT NULL); "
           "CREATE TEMP TABLE IF NOT EXISTS stage_postings (seq bigint NOT NULL, field smallint NOT NULL, "
           "term text NOT NULL, tf int NOT NULL, length int NOT NULL)")


class StagedChunks:
    """The chunk ids staged on one writer session, each with its place (`seq`) in the order of addition."""

    def __init__(self) -> None:
        self.seq: dict[str, int] = {}
        self._next = 1

    def __bool__(self) -> bool:
        return bool(self.seq)

    def add(self, conn, pending: dict[str, tuple[str, list[Counter]]]) -> None:
        """Move `pending` (chunk id -> (doc id, term counts per field), in order) to the temporary tables."""
        if not pending:
            return
        conn.execute(_TABLES)
        self.discard(conn, [cid for cid in pending if cid in self.seq])  # added again: it goes last
        with conn.cursor() as cur:
            with cur.copy("COPY stage_chunks (seq, chunk_id, doc_id, lengths, rounded) FROM STDIN") as copy:
                for seq, (chunk_id, (doc_id, counts)) in enumerate(pending.items(), start=self._next):
                    lengths = [sum(c.values()) for c in counts]
                    copy.write_row((seq, chunk_id, doc_id, lengths, [rounded_length(n) for n in lengths]))
                    self.seq[chunk_id] = seq
            with cur.copy("COPY stage_postings (seq, field, term, tf, length) FROM STDIN") as copy:
                for seq, (_doc_id, counts) in enumerate(pending.values(), start=self._next):
                    for f, count in enumerate(counts):
                        length = sum(count.values())
                        for term, tf in count.items():
                            copy.write_row((seq, f, term, tf, length))
        self._next += len(pending)

    def discard(self, conn, chunk_ids: list[str]) -> int:
        """Drop these chunks from the stage (deleted, or added again); how many were staged."""
        seqs = [self.seq.pop(cid) for cid in chunk_ids if cid in self.seq]
        if seqs:
            conn.execute("DELETE FROM stage_postings WHERE seq = ANY(%s)", (seqs,))
            conn.execute("DELETE FROM stage_chunks WHERE seq = ANY(%s)", (seqs,))
        return len(seqs)

    def clear(self, conn) -> None:
        """Forget every staged chunk (`conn` None: the session, and its tables, are gone already)."""
        if self.seq and conn is not None and not conn.closed:
            conn.execute("TRUNCATE stage_chunks, stage_postings")
        self.seq, self._next = {}, 1

    def insert(self, conn, ns: str, tables: dict[str, str]) -> tuple[list[int], list[int]]:
        """Inside the commit's transaction: the staged chunks into the index, in the order they were added
        (docnums rising with `seq`; a chunk staged and then dropped leaves an unused docnum), their
        document frequencies added to the terms'; returns the field length totals (exact, rounded)."""
        last = max(self.seq.values())
        base = conn.execute(f"SELECT nextval('{ns}.docnums')").fetchone()[0]
        if last > 1:
            conn.execute(f"SELECT setval('{ns}.docnums', %s)", (base + last - 1,))
        offset = base - 1
        conn.execute(f"INSERT INTO {tables['chunks']} (docnum, chunk_id, doc_id, lengths, rounded) "
                     "SELECT seq + %s, chunk_id, doc_id, lengths, rounded FROM stage_chunks ORDER BY seq", (offset,))
        conn.execute(f"INSERT INTO {tables['postings']} (field, term, docnum, tf, length) "
                     "SELECT field, term, seq + %s, tf, length FROM stage_postings", (offset,))
        conn.execute(f"INSERT INTO {tables['terms']} AS terms SELECT field, term, count(*) FROM stage_postings GROUP BY field, term "
                     "ON CONFLICT (field, term) DO UPDATE SET df = terms.df + EXCLUDED.df")
        sums = ", ".join(f"coalesce(sum(lengths[{f + 1}]), 0), coalesce(sum(rounded[{f + 1}]), 0)"
                         for f in range(len(FIELDS)))
        row = conn.execute(f"SELECT {sums} FROM stage_chunks").fetchone()
        return [int(v) for v in row[0::2]], [int(v) for v in row[1::2]]
