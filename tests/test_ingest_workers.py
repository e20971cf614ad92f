"""`kg ingest --workers N`: worker processes analyse and write the new chunks while the writing process reads, cuts,
records and links the files (retrieval/index/whoosh_workers.py).

What a user must be able to count on: the same knowledge base as without workers (the same chunks found with the same
scores), a failed or killed worker failing the whole ingest with nothing written, and no worker outliving the ingest
that started it, even when that ingest is killed."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from processes import alive, children, outliving

from kg.cli import cli
from retrieval.index.whoosh_workers import IndexWorkerError, SegmentWorkers, can_fork

pytestmark = pytest.mark.skipif(not can_fork() or not sys.platform.startswith("linux"),
                                reason="worker processes are forked; the process checks read Linux's /proc")

GUARD = 120  # seconds to wait for a process to appear or end before failing (a guard, not a speed target)
ZH = ["集群", "节点", "副本", "配置", "证书", "网关", "缓存", "队列", "索引", "备份", "迁移", "监控", "告警", "日志",
      "权限", "租户", "快照", "分片", "限流", "熔断"]
EN = ["cluster", "replica", "gateway", "certificate", "snapshot", "throttle", "tenant", "shard", "backup", "latency",
      "rollout", "quota", "failover", "heartbeat", "webhook", "scheduler", "ingress", "vault", "broker", "retention"]


def write_folder(folder: Path, documents: int, seed: int = 7) -> Path:
    """Markdown files of mixed Chinese and English sentences drawn from two small vocabularies (so that terms
    repeat across files with different frequencies), two sections each."""
    rng = random.Random(seed)
    folder.mkdir(parents=True, exist_ok=True)
    for n in range(documents):
        sections = []
        for heading in ("概述", "Operations"):
            sentences = [" ".join(rng.choice(ZH) if rng.random() < 0.5 else rng.choice(EN) for _ in range(12)) + "。"
                         for _ in range(rng.randint(3, 8))]
            sections.append(f"## {heading} {n}\n\n" + "\n".join(sentences))
        (folder / f"doc{n:05d}.md").write_text(f"# 文档 {n}\n\n" + "\n\n".join(sections) + "\n", encoding="utf-8")
    return folder


def kg(*args) -> tuple[int, str]:
    result = CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)
    return result.exit_code, result.output


def index_content(data_dir: Path) -> dict:
    """Everything BM25F reads, by chunk id instead of whoosh's docnums (which depend on how segments are laid out):
    each field's terms with their (chunk, weight) postings, each chunk's field lengths, the live chunk count."""
    from whoosh import index as whoosh_index

    with whoosh_index.open_dir(str(data_dir / "index")).reader() as reader:
        ids = {n: fields["chunk_id"] for n, fields in reader.iter_docs()}
        fields = [name for name, field in reader.schema.items() if field.scorable]
        postings = {}
        for field, term in reader.all_terms():
            if field in fields:
                matcher = reader.postings(field, term)
                postings[field, term] = sorted((ids[n], w) for n, w in matcher.items_as("weight") if n in ids)
        lengths = {(ids[n], field): reader.doc_field_length(n, field) for n in ids for field in fields}
        return {"chunks": len(ids), "postings": postings, "lengths": lengths}


def kg_process(*args: str) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if not k.startswith("KG_")}
    env["PYTHONPATH"] = os.environ.get("PYTHONPATH", str(Path(__file__).parent.parent))
    return subprocess.Popen([sys.executable, "-m", "kg.cli", *args], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, encoding="utf-8")


def wait_for_workers(process: subprocess.Popen, count: int) -> list[int]:
    deadline = time.monotonic() + GUARD
    while time.monotonic() < deadline and process.poll() is None:
        found = children(process.pid)
        if len(found) >= count:
            return found
        time.sleep(0.01)
    raise AssertionError(f"the ingest started no {count} worker processes (exit {process.poll()})")


def test_workers_build_the_knowledge_base_one_process_builds(tmp_path):
    folder = write_folder(tmp_path / "notes", 120)
    alone, helped = tmp_path / "alone", tmp_path / "helped"
    code, out = kg("ingest", "--data-dir", alone, folder)
    assert code == 0, out
    code, out = kg("ingest", "--workers", "2", "--data-dir", helped, folder)
    assert code == 0, out
    assert "120 new, 0 updated, 0 unchanged document(s)" in out  # the human summary, as without workers
    for data_dir, segments in ((alone, 1), (helped, 2)):  # each worker wrote a segment: the workers did the indexing
        code, out = kg("check", "--data-dir", data_dir)
        assert code == 0 and out.startswith("clean: 120 documents") and f", {segments} segments" in out, out
    content = index_content(alone)
    assert content["chunks"] >= 240 and len(content["postings"]) > 100
    assert index_content(helped) == content  # so every BM25F score is the same

    # An edit with workers: only the changed file's chunks are indexed again, and the index stays the catalog's.
    doc = folder / "doc00003.md"
    doc.write_text(doc.read_text(encoding="utf-8") + "\n## 新增\n\n专门 的 段落 mentions failover twice failover。\n",
                   encoding="utf-8")
    code, out = kg("ingest", "--workers", "2", "--data-dir", helped, folder)
    assert code == 0 and "0 new, 1 updated, 119 unchanged" in out, out
    code, out = kg("check", "--data-dir", helped)
    assert code == 0 and out.startswith("clean: 120 documents"), out
    code, out = kg("query", "--data-dir", helped, "专门的段落")  # the human output: the edited file's new section first
    first = next(line for line in out.splitlines() if line.startswith(" 1. "))
    assert code == 0 and "§ 新增" in first and "doc00003.md" in first, out


def test_a_worker_that_fails_fails_the_ingest_with_its_reason(tmp_path):
    from whoosh import index as whoosh_index

    from kg.settings import Settings
    from retrieval.pipeline import KnowledgeBase

    with KnowledgeBase(Settings(data_dir=tmp_path / "kb"), create=True) as kb:
        ix = kb.index.ix
        workers = SegmentWorkers(ix, 2, {})
        workers.add({"chunk_id": "a", "body": "一个 chunk"})
        workers.add({"chunk_id": "b", "no_such_field": "x"})  # whoosh refuses a field the schema lacks
        with pytest.raises(IndexWorkerError, match="UnknownFieldError"):
            workers.finish()
        assert not any(alive(proc.pid) for proc in workers._procs)

        workers = SegmentWorkers(ix, 2, {})
        os.kill(workers._procs[1].pid, signal.SIGKILL)  # as the kernel's out-of-memory killer would
        workers._procs[1].join()
        with pytest.raises(IndexWorkerError, match="killed by signal 9"):
            workers.finish()
        assert whoosh_index.open_dir(str(tmp_path / "kb" / "index")).doc_count_all() == 0


def test_a_killed_worker_fails_the_ingest_and_leaves_the_knowledge_base_as_it_was(tmp_path):
    folder = write_folder(tmp_path / "notes", 1500)
    data_dir = tmp_path / "kb"
    code, out = kg("ingest", "--data-dir", data_dir, write_folder(tmp_path / "first", 5, seed=1))
    assert code == 0, out
    ingest = kg_process("ingest", "--workers", "2", "--data-dir", str(data_dir), str(folder))
    try:
        workers = wait_for_workers(ingest, 2)
        os.kill(workers[0], signal.SIGKILL)
        _, err = ingest.communicate(timeout=GUARD)
    finally:
        if ingest.poll() is None:
            ingest.kill()
            ingest.wait()
    assert ingest.returncode != 0
    assert "error: index worker" in err and "killed by signal 9" in err and "wrote nothing" in err, err
    assert "Traceback" not in err
    assert not [pid for pid in workers if alive(pid)]
    code, out = kg("check", "--data-dir", data_dir)
    assert code == 0 and out.startswith("clean: 5 documents"), out  # the 5 of before; none of the failed ingest
    code, out = kg("ingest", "--workers", "2", "--data-dir", data_dir, folder)
    assert code == 0 and "1500 new" in out, out
    code, out = kg("check", "--data-dir", data_dir)
    assert code == 0 and out.startswith("clean: 1505 documents"), out


def test_workers_end_with_a_killed_ingest(tmp_path):
    folder = write_folder(tmp_path / "notes", 1500)
    data_dir = tmp_path / "kb"
    ingest = kg_process("ingest", "--workers", "2", "--data-dir", str(data_dir), str(folder))
    try:
        left = outliving(ingest, wait_for_workers(ingest, 2), GUARD)  # SIGKILL: no clean-up runs in the writer
    finally:
        if ingest.poll() is None:
            ingest.kill()
            ingest.wait()
    assert not left, f"worker processes {left} outlived the killed ingest"
    code, out = kg("ingest", "--workers", "2", "--data-dir", data_dir, folder)  # the lock is free, the catalog sound
    assert code == 0 and "1500 new" in out, out
    code, out = kg("check", "--data-dir", data_dir)
    assert code == 0 and out.startswith("clean: 1500 documents"), out
