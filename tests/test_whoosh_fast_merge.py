"""Segment merges that copy posting lists a term at a time (retrieval/index/whoosh_merge.py) in place of whoosh's
posting-by-posting `add_reader`: the merged segment is the same bytes whoosh writes, deleted chunks are dropped, and a
knowledge base whose ingest merges its segments this way answers exactly as one merged by whoosh."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

from conftest import make_settings

import retrieval.index.whoosh_merge as whoosh_merge
import retrieval.index.whoosh_segments as whoosh_segments
from kg.cli.base import DEMO_DIR
from retrieval.types import SourceDocument

NEW = 12  # chunks each merge also writes: enough for posting lists of more than INLINE_LIMIT among them alone

QUESTIONS = ["LORA-02 的心跳间隔是多少？", "redis-cluster 宕机会影响哪些服务？", "Who owns payment-service?",
             "Kafka 消费积压告警响了该怎么处理？", "How is the wildcard TLS certificate renewed?", "DiskPressure"]


def _documents() -> list[SourceDocument]:
    return [SourceDocument(str(path.relative_to(DEMO_DIR)), path.read_text(encoding="utf-8"))
            for path in sorted((DEMO_DIR / "docs").rglob("*.md"))]


def _segmented(data_dir: Path, monkeypatch) -> Path:
    """The demo ingested in four commits kept as four segments, one document then deleted; its index folder."""
    from retrieval.pipeline import KnowledgeBase

    docs = _documents()
    with monkeypatch.context() as m:
        m.setattr(whoosh_segments, "MERGE_FACTOR", 1000)  # no merges while the segments are made
        with KnowledgeBase(make_settings(data_dir), create=True) as kb:
            for batch in (docs[:6], docs[6:12], docs[12:18], docs[18:]):
                kb.ingest_documents(batch)
            kb.delete_documents([docs[7].source])  # its chunks are deleted in the second segment, not yet dropped
            assert kb.index.segment_count() == 4
    return data_dir / "index"


def _merge(index_dir: Path, fast: bool, merge: bool = True) -> str:
    """NEW chunks written, with every segment of a copy of `index_dir` merged in (`merge`) or alone, one way or
    the other; a digest of the new segment: every term entry (its place in the posting file aside) with its posting
    bytes, every stored document and every field length."""
    import whoosh.index
    from whoosh.codec.whoosh3 import W3Codec
    from whoosh.reading import SegmentReader

    from retrieval.index import whoosh_write

    ix = whoosh.index.open_dir(str(index_dir))
    writer = ix.writer(codec=W3Codec(inlinelimit=whoosh_write.INLINE_LIMIT))
    for i in range(NEW):
        writer.update_document(chunk_id=f"new-{i}", doc_id="new.md", title="新的", section="new.md > 新的",
                               body=f"redis-cluster 节点 {i} 次重启", grams=f"新的\nredis-cluster 节点 {i} 次重启")
    segments = list(writer.segments) if merge else []
    if fast:
        whoosh_merge.merge_segments(writer, segments)
        merged = whoosh_merge.finalize(writer)
    else:
        for segment in segments:
            reader = SegmentReader(writer.storage, writer.schema, segment)
            writer.add_reader(reader)
            reader.close()
        merged = writer._finalize_segment()
    reader = SegmentReader(writer.storage, writer.schema, merged)
    digest = hashlib.sha256()
    try:
        postfile, head = reader._terms._postfile, whoosh_merge._TERMINFO.size
        blocks = 0
        for key, entry in whoosh_merge._entries(reader._terms._tindex):
            digest.update(key + entry[:head])  # flags, weight, count, lengths, highest weight, first and last docnum
            if not entry[0]:
                (offset,) = whoosh_merge._LONG.unpack_from(entry, head)
                (length,) = whoosh_merge._INT.unpack_from(entry, head + 8)
                digest.update(postfile.get(offset, length))
                blocks += 1
            else:
                digest.update(entry[head:])
        assert blocks > (100 if merge else 5)
        for docnum, stored in reader.iter_docs():
            digest.update(repr((docnum, sorted(stored.items()))).encode())
        for field in ("title", "section", "body", "grams"):
            digest.update(repr([reader.doc_field_length(d, field) for d in range(reader.doc_count_all())]).encode())
        count = reader.doc_count_all()
    finally:
        reader.close()
        writer.cancel()
    return f"{count}:{digest.hexdigest()}"


def test_the_merged_segment_is_what_whoosh_writes(tmp_path, monkeypatch):
    index_dir = _segmented(tmp_path / "kb", monkeypatch)
    shutil.copytree(index_dir, tmp_path / "fast")
    shutil.copytree(index_dir, tmp_path / "whoosh")
    fast, slow = _merge(tmp_path / "fast", fast=True), _merge(tmp_path / "whoosh", fast=False)
    assert fast == slow
    count = int(fast.split(":")[0])
    docs = _documents()
    from retrieval.pipeline import KnowledgeBase

    with KnowledgeBase(make_settings(tmp_path / "kb")) as kb:
        live = kb.index.doc_count()
    assert count == live + NEW  # the deleted document's chunks were dropped, the new ones added
    assert len(docs) > 18


def test_a_segment_of_new_chunks_alone_is_what_whoosh_writes(tmp_path, monkeypatch):
    index_dir = _segmented(tmp_path / "kb", monkeypatch)
    shutil.copytree(index_dir, tmp_path / "fast")
    shutil.copytree(index_dir, tmp_path / "whoosh")
    fast = _merge(tmp_path / "fast", fast=True, merge=False)
    assert fast == _merge(tmp_path / "whoosh", fast=False, merge=False)
    assert fast.startswith(f"{NEW}:")


def _answers(data_dir: Path) -> tuple[dict, int]:
    """Hits and scores after ingests whose commits merge segments, a document replaced and one deleted between."""
    from retrieval.pipeline import KnowledgeBase

    docs = _documents()
    with KnowledgeBase(make_settings(data_dir), create=True) as kb:
        for batch in (docs[:5], docs[5:10], docs[10:15]):
            kb.ingest_documents(batch)
        kb.ingest_documents([SourceDocument(docs[3].source, docs[3].text + "\n\n新增一段：LORA-02 的心跳间隔改为 20 秒。")])
        kb.delete_documents([docs[6].source])
        kb.ingest_documents(docs[15:])
        results = {(q, mode): [(h.chunk_id, round(h.score, 9)) for h in kb.query(q, k=8, mode=mode).hits]
                   for q in QUESTIONS for mode in ("bm25", "full")}
        return results, kb.index.segment_count()


def test_a_knowledge_base_merged_term_by_term_answers_as_one_merged_by_whoosh(tmp_path, monkeypatch):
    monkeypatch.setattr(whoosh_segments, "MERGE_FACTOR", 2)  # every commit merges what it can
    calls = []
    real = whoosh_merge._write_postings
    monkeypatch.setattr(whoosh_merge, "_write_postings", lambda *a: calls.append(1) or real(*a))
    fast, segments = _answers(tmp_path / "fast")
    assert calls  # the merges went through the term-by-term path
    monkeypatch.setattr(whoosh_merge, "_copyable", lambda writer: False)  # whoosh's add_reader for every merge
    slow, _ = _answers(tmp_path / "whoosh")
    assert fast == slow
    assert segments <= 2 and all(fast[(q, "bm25")] for q in QUESTIONS)
