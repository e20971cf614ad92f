"""`whoosh_adding.add_document` writes the segment whoosh's own `add_document` writes, byte for byte (postings, term
table, lengths, stored fields), with the posting pool spilling or not; a field whoosh would treat otherwise (a boost)
takes whoosh's path. Real whoosh with kgrag's schema and analyzers, Chinese and English text."""

from __future__ import annotations

import hashlib

import pytest
from whoosh import index as whoosh_index
from whoosh.filedb.compound import CompoundStorage
from whoosh.filedb.filestore import FileStorage

import retrieval.index.whoosh_index as kg_whoosh  # installs whoosh_write's mends
from retrieval.index import whoosh_adding, whoosh_write

TEXTS = [
    ("LORA-02 网关", "心跳", "网关默认每 15 秒上报一次心跳（`heartbeat_interval`）。连续 3 次未收到即判定离线，心跳心跳。"),
    ("Region Migration", "选择目标节点", "Region 迁移允许用户在 Datanode 间移动 Region 数据 region region."),
    ("payment-service", "Owners", "payment-service is owned by 资金结算组; it depends on redis-cluster and mysql-core."),
    ("空文档", "", ""),
    ("Kafka 消费积压", "第二步：处置", "rebalance 风暴：调小 `max.poll.records`（例如 500 → 200）。" * 3),
]


def _fields(i: int) -> dict:
    title, section, body = TEXTS[i % len(TEXTS)]
    return {"chunk_id": f"c{i}", "doc_id": f"d{i // 2}", "title": title, "section": section, "body": f"{body} {i}",
            "grams": f"{title}\n{body}"}


def _segment_files(folder, add, n: int, limit_mb: float) -> dict[str, list[str]]:
    folder.mkdir()
    ix = whoosh_index.create_in(str(folder), kg_whoosh._schema())
    writer = ix.writer(**{**whoosh_write._writer_args(), "limitmb": limit_mb})
    for i in range(n):
        add(writer, _fields(i))
    spilled = len(writer.pool.runs)
    writer.commit()
    storage, out = FileStorage(str(folder)), {}
    for path in sorted(folder.iterdir()):
        if path.suffix == ".seg":
            inner = CompoundStorage(storage.open_file(path.name), use_mmap=False)
            for name in inner.list():
                out.setdefault(name.rsplit(".", 1)[-1], []).append(hashlib.sha1(inner.open_file(name).read()).hexdigest())
    return {"spilled runs": spilled, **{kind: sorted(hashes) for kind, hashes in out.items()}}


@pytest.mark.parametrize("limit_mb", [64, 0.002])
def test_the_segment_is_whooshs_own(tmp_path, limit_mb):
    theirs = _segment_files(tmp_path / "whoosh", lambda writer, fields: writer.add_document(**fields), 60, limit_mb)
    ours = _segment_files(tmp_path / "ours", whoosh_adding.add_document, 60, limit_mb)
    assert {"col", "pst", "trm"} <= set(ours)
    assert (ours["spilled runs"] > 1) == (limit_mb < 1)  # the small limit spills, at the same postings as whoosh
    assert ours == theirs


def test_a_boosted_field_takes_whooshs_path(tmp_path, monkeypatch):
    taken = []
    ix = whoosh_index.create_in(str(tmp_path), kg_whoosh._schema())
    writer = ix.writer()
    real = writer.add_document
    monkeypatch.setattr(writer, "add_document", lambda **fields: taken.append(fields) or real(**fields))
    whoosh_adding.add_document(writer, _fields(0))
    whoosh_adding.add_document(writer, {**_fields(1), "_title_boost": 2.0})
    writer.commit()
    assert [fields["chunk_id"] for fields in taken] == ["c1"]
    assert ix.doc_count() == 2
