"""The meaning channel (retrieval/vectors): the dense channel, the graph's semantic fit, nearest-label expansion,
content-hash reuse, the kill and resume of `kg embed`, and `kg check` on vectors.

The embedder here is a deterministic stub through the same `Embedder` protocol the real ones implement: it maps
a few phrases of the fixture corpus to shared "concepts", so that a question and a passage can mean the same thing
without sharing a word (what no rule over words can see). The real model and a real litellm endpoint are in
tests/test_vectors_embedders.py.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from retrieval.vectors.embedders import HashEmbedder

CONCEPTS = {
    "backup": ("备份", "backup"),
    "move": ("挪到另一台", "搬到别的机器", "migrat", "迁移"),
    "timeout": ("超时", "timeout"),
}


class ConceptEmbedder:
    """A phrase of a concept adds to that concept's dimension; a hashed remainder keeps vectors apart."""

    def __init__(self) -> None:
        self.model_id = "concept-stub-1"
        self.calls = 0
        self._rest = HashEmbedder(32)

    def _vector(self, text: str) -> np.ndarray:
        lowered = text.lower()
        concepts = [float(sum(lowered.count(p) for p in phrases)) for phrases in CONCEPTS.values()]
        vec = np.concatenate([np.array(concepts, np.float32) * 4.0, 0.3 * self._rest.embed_query(text)])
        return vec / max(float(np.linalg.norm(vec)), 1e-6)

    def embed_passages(self, texts):
        self.calls += len(texts)
        return np.stack([self._vector(t) for t in texts]) if texts else np.zeros((0, 35), np.float32)

    def embed_query(self, text):
        return self._vector(text)


def _with(kb, **settings):
    kb.settings = kb.settings.model_copy(update=settings)
    return kb


def _embedded(kb, embedder=None):
    kb.vectors.use(embedder or ConceptEmbedder())
    kb.vectors.embed_missing()
    return kb


def _rank_of(result, source_end: str, section: str | None = None) -> int | None:
    for hit in result.hits:
        if hit.source.endswith(source_end) and (section is None or hit.section == section):
            return hit.rank
    return None


# -- the dense channel ------------------------------------------------------------------------------
MOVE_QUESTION = "数据怎么挪到另一台机器上？"


def _add_migration_doc(root: Path, kb) -> None:
    doc = root / "extra" / "region-migration.md"
    doc.parent.mkdir(parents=True, exist_ok=True)
    doc.write_text("# Region Migration\n\nRegion Migration moves a region from one datanode to another datanode "
                   "without downtime.\n", encoding="utf-8")
    kb.ingest_paths([doc])


def test_dense_channel_brings_a_passage_that_shares_no_word(fresh_kb, tmp_path):
    _add_migration_doc(tmp_path, fresh_kb)
    without = fresh_kb.query(MOVE_QUESTION, k=5)
    assert without.meaning is None and _rank_of(without, "region-migration.md") is None
    assert all("dense" not in h.why for h in without.hits)

    _embedded(fresh_kb)
    with_meaning = fresh_kb.query(MOVE_QUESTION, k=5)
    rank = _rank_of(with_meaning, "region-migration.md")
    assert rank is not None and rank <= 3
    hit = with_meaning.hits[rank - 1]
    assert hit.why["dense"]["rank"] == 1 and hit.why["dense"]["similarity"] > 0.5
    assert with_meaning.meaning["candidates"] > 0

    dense_only = fresh_kb.query(MOVE_QUESTION, k=3, mode="dense")
    assert dense_only.hits[0].source.endswith("region-migration.md")
    sims = [h.why["dense"]["similarity"] for h in dense_only.hits]
    assert sims == sorted(sims, reverse=True) and all("bm25" not in h.why for h in dense_only.hits)

    _with(fresh_kb, dense_weight=0.0)  # the channel's weight off: the words-and-graph ranking as before
    assert [h.chunk_id for h in fresh_kb.query(MOVE_QUESTION, k=5).hits] == [h.chunk_id for h in without.hits]


def test_dense_mode_without_vectors_says_how_to_get_them(fresh_kb):
    from kg.errors import ConflictError

    with pytest.raises(ConflictError, match="kg embed"):
        fresh_kb.query("订单服务", mode="dense")


def test_another_models_vectors_are_not_searched(fresh_kb, tmp_path, caplog):
    _add_migration_doc(tmp_path, fresh_kb)
    _embedded(fresh_kb)
    fresh_kb.vectors.use(HashEmbedder())  # configured model differs from the one that made the vectors
    with caplog.at_level("WARNING", logger="kgrag.vectors"):
        first = fresh_kb.query(MOVE_QUESTION, k=5)
        fresh_kb.query(MOVE_QUESTION, k=5)
    assert first.meaning is None
    said = [r.message for r in caplog.records if "concept-stub-1" in r.message]
    assert len(said) == 1 and "kg embed" in said[0]


# -- graph hops chosen by meaning ---------------------------------------------------------------------
BACKUP_QUESTION = "订单服务依赖的组件里，哪个每晚做备份？"


def test_graph_hop_chosen_by_meaning(fresh_kb):
    """order-service depends on mysql-core and inventory-service; the question asks for the one that is backed up
    nightly, in Chinese; mysql-core's `Backups` section says so in English. Only meaning ties them."""
    _embedded(fresh_kb)
    _with(fresh_kb, dense_weight=0.0, label_expansion=0.0)  # the graph's own ranking, no dense list fused

    def reached(result):
        """The graph's hits beyond the named service's own document, in the graph's order."""
        graph = [h for h in result.hits if "graph" in h.why and not h.source.endswith("order-service.md")]
        return [(h.source.rsplit("/", 1)[-1], h.section) for h in sorted(graph, key=lambda h: h.why["graph"]["rank"])]

    by_words = reached(_with(fresh_kb, semantic_fit=0.0).query(BACKUP_QUESTION, k=10))
    by_meaning = reached(_with(fresh_kb, semantic_fit=1.0).query(BACKUP_QUESTION, k=10))
    assert by_meaning[0] == ("mysql-core.md", "Backups")
    assert ("mysql-core.md", "Backups") not in by_words  # by words alone its fit is nil: dropped


# -- query expansion by nearest entity labels ---------------------------------------------------------
def test_nearest_labels_join_the_search_and_say_so(fresh_kb, tmp_path):
    fresh_kb.add_entities(["Region Migration"])
    _add_migration_doc(tmp_path, fresh_kb)
    _with(fresh_kb, dense_weight=0.0, label_expansion=0.5)  # on: `kg embed` embeds the labels too
    _embedded(fresh_kb)
    result = fresh_kb.query(MOVE_QUESTION, k=5)
    near = result.meaning["near_labels"]
    assert [n["label"] for n in near] == ["Region Migration"] and near[0]["similarity"] >= 0.5
    assert set(near[0]["terms"]) >= {"region", "migrat"}  # the analysed (stemmed) words of the label
    top = result.hits[0]
    assert top.source.endswith("region-migration.md") and "region" in top.why["bm25"]["terms"]
    off = _with(fresh_kb, label_expansion=0.0).query(MOVE_QUESTION, k=5)
    assert off.meaning["near_labels"] == [] and _rank_of(off, "region-migration.md") is None


# -- vectors as part of the index: content-hash reuse, resume, check ---------------------------------
def test_one_paragraph_edit_embeds_only_its_chunk(fresh_kb, tmp_path):
    embedder = ConceptEmbedder()
    _embedded(fresh_kb, embedder)
    first = embedder.calls
    assert first == fresh_kb.vectors.status()["chunks"]  # labels only when label expansion is on

    doc = tmp_path / "docs" / "services" / "order-service.md"
    doc.write_text(doc.read_text(encoding="utf-8").replace("副本数 6", "副本数 8"), encoding="utf-8")
    fresh_kb.ingest_paths([tmp_path / "docs"])
    report = fresh_kb.vectors.embed_missing()
    assert report.embedded == 1 and embedder.calls == first + 1
    assert report.reused == report.needed - 1
    again = fresh_kb.vectors.embed_missing()
    assert again.embedded == 0 and embedder.calls == first + 1


def _kg(*args, cwd: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    full_env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), **(env or {})}
    return subprocess.run([sys.executable, "-m", "kg.cli", *args], cwd=cwd, capture_output=True, text=True,
                          encoding="utf-8", env=full_env, check=False)


@pytest.fixture
def kb_on_disk(tmp_path):
    from conftest import build_kb

    build_kb(tmp_path).close()
    return tmp_path / "kb"


def test_kg_embed_resumes_after_a_kill(kb_on_disk, tmp_path):
    env = {"KG_DATA_DIR": str(kb_on_disk), "KG_EMBED_MODEL": "hash"}
    killed = _kg("embed", "--quiet", "--batch", "4", cwd=tmp_path, env={**env, "KG_CRASH_AT": "embed:batch"})
    assert killed.returncode == 86  # died right after its first batch was committed
    status = json.loads(_kg("embed", "--status", "--json", cwd=tmp_path, env=env).stdout)
    assert status["model"] == "hash-384" and status["vectors"] == 4 < status["chunks"]

    resumed = _kg("embed", "--json", cwd=tmp_path, env=env)
    assert resumed.returncode == 0, resumed.stderr
    report = json.loads(resumed.stdout)
    assert report["reused"] == 4 and report["embedded"] == report["needed"] - 4
    status = json.loads(_kg("embed", "--status", "--json", cwd=tmp_path, env=env).stdout)
    assert status["chunks_with_vectors"] == status["chunks"]

    out = _kg("query", "订单服务依赖哪些组件？", "--mode", "dense", "-k", "2", cwd=tmp_path, env=env)
    assert out.returncode == 0 and "why: meaning #1 (similarity" in out.stdout


def test_kg_check_finds_and_repairs_broken_vectors(kb_on_disk, tmp_path):
    env = {"KG_DATA_DIR": str(kb_on_disk), "KG_EMBED_MODEL": "hash"}
    assert _kg("embed", "--quiet", cwd=tmp_path, env=env).returncode == 0
    clean = _kg("check", cwd=tmp_path, env=env)
    assert clean.returncode == 0 and "0 chunks_without_vectors" in clean.stdout

    with sqlite3.connect(kb_on_disk / "vectors.sqlite") as db:
        key = db.execute("SELECT key FROM vectors LIMIT 1").fetchone()[0]
        db.execute("UPDATE vectors SET vec = ? WHERE key = ?", (np.full(384, np.nan, np.float16).tobytes(), key))
    broken = _kg("check", cwd=tmp_path, env=env)
    assert broken.returncode == 1
    assert "problem: 1 vector(s) are not 384 finite numbers" in broken.stdout

    repaired = _kg("check", "--repair", cwd=tmp_path, env=env)
    assert "repaired: removed 1 broken vector(s): run `kg embed` to make them again" in repaired.stdout
    again = json.loads(_kg("embed", "--json", cwd=tmp_path, env=env).stdout)
    assert again["embedded"] == 1
    assert _kg("check", cwd=tmp_path, env=env).returncode == 0

    other = _kg("check", cwd=tmp_path, env={**env, "KG_EMBED_MODEL": "ollama/bge-m3"})
    assert other.returncode == 1
    assert "the vectors were made by hash-384 but KG_EMBED_MODEL gives litellm/ollama/bge-m3" in other.stdout


def test_another_model_embeds_everything_again(fresh_kb):
    _embedded(fresh_kb, HashEmbedder())
    needed = fresh_kb.vectors.status()["vectors"]
    embedder = ConceptEmbedder()
    fresh_kb.vectors.use(embedder)
    report = fresh_kb.vectors.embed_missing()
    assert report.model_changed == "hash-384" and report.embedded == needed and report.reused == 0
    assert fresh_kb.vectors.store.model() == "concept-stub-1"


def test_deleted_documents_lose_their_vectors(fresh_kb, tmp_path):
    _embedded(fresh_kb, HashEmbedder())
    before = fresh_kb.vectors.status()["vectors"]
    doc = next(d for d in fresh_kb.documents() if d["source"].endswith("nginx.md"))
    fresh_kb.delete_documents([doc["doc_id"]])
    report = fresh_kb.vectors.embed_missing()
    assert report.embedded == 0 and report.pruned >= 1
    assert fresh_kb.vectors.status()["vectors"] == before - report.pruned


def test_fusions_with_meaning_are_permutations_that_keep_each_lists_rank():
    from retrieval.rank.fusion import Fused, fuse_dense, fuse_hits
    from retrieval.types import GraphHit, TextHit

    text = [TextHit("a", 3.0), TextHit("b", 2.0)]
    graph = [GraphHit("c", 1.0, "e", "about", evidence=1.0)]
    dense = [("d", 0.9), ("b", 0.8)]
    early = fuse_hits(text, graph, graph_weight=2.5, rrf_k=20, dense=dense, dense_weight=1.5)
    assert sorted(f.id for f in early) == ["a", "b", "c", "d"]
    by_id = {f.id: f for f in early}
    assert by_id["b"].ranks == {"bm25": 2, "dense": 2} and by_id["d"].ranks == {"dense": 1}
    assert early[0].id == "c"  # the graph's weight still leads: meaning is a third list, not a veto
    assert [f.id for f in fuse_hits(text, graph, graph_weight=2.5, rrf_k=20, dense=dense, dense_weight=0.0)] == \
        [f.id for f in fuse_hits(text, graph, graph_weight=2.5, rrf_k=20)]

    late = fuse_dense([Fused("a", 1.0, {"bm25": 1}), Fused("b", 0.5, {"bm25": 2})], ["d", "b"], weight=1.0, k=20)
    assert sorted(f.id for f in late) == ["a", "b", "d"] and late[0].id == "b"
    assert {f.id: f.ranks for f in late}["b"] == {"bm25": 2, "dense": 2}


def test_the_nearest_rows_are_a_full_stable_sorts_prefix_with_ties_skips_and_refusals():
    """`ChunkMatrix.nearest` reads only the best rows (argpartition) but must give exactly what sorting every row
    gives: ties (duplicate chunks have the same similarity) in row order, skipped ids and refused ids passed over."""
    import numpy as np

    from retrieval.vectors.dense import ChunkMatrix

    rng = np.random.default_rng(3)
    sims = np.round(rng.random(5000).astype(np.float32), 2)  # ~100 rows a value: ties everywhere
    matrix = ChunkMatrix([f"c{i}" for i in range(len(sims))], np.zeros((len(sims), 1), np.float32), len(sims))

    def by_sorting(k, skip=(), keep=None):
        rows = [r for r in np.argsort(-sims, kind="stable") if f"c{r}" not in skip and (keep is None or keep(f"c{r}"))]
        return [(f"c{r}", float(sims[r])) for r in rows[:k]]

    skip = {f"c{r}" for r in np.argsort(-sims, kind="stable")[:30]}
    for k, kwargs in [(1, {}), (20, {}), (20, {"skip": skip}), (20, {"keep": lambda cid: int(cid[1:]) % 7 == 0}),
                      (20, {"keep": lambda cid: int(cid[1:]) > 4990}), (6000, {})]:
        assert matrix.nearest(sims, k, **kwargs) == by_sorting(k, **kwargs)


def test_an_embed_run_never_prunes_what_another_run_embedded_meanwhile(fresh_kb, tmp_path):
    """Two `kg embed` at once (two servers sharing vectors, or two here): the one that ends last must not drop the
    vectors the other stored for chunks ingested after it read the catalog; stale vectors still go."""
    _embedded(fresh_kb, HashEmbedder())
    doc = next(d for d in fresh_kb.documents() if d["source"].endswith("nginx.md"))
    fresh_kb.delete_documents([doc["doc_id"]])  # its vectors are stale now
    late = tmp_path / "extra" / "late.md"

    class Interleaved(HashEmbedder):
        """The first run: while it embeds, a document is ingested and a second run embeds it."""

        def embed_passages(self, texts):
            if not late.exists():
                late.parent.mkdir(parents=True, exist_ok=True)
                late.write_text("# Late note\n\nThe snapshot window of the late note is 40 minutes.\n", encoding="utf-8")
                fresh_kb.ingest_paths([late])
                fresh_kb.vectors.embed_missing(embedder=HashEmbedder())
            return super().embed_passages(texts)

    # one vector missing, so the first run has something to embed
    keys = fresh_kb.vectors.store.keys()
    fresh_kb.vectors.store.delete({sorted(keys)[0]})
    report = fresh_kb.vectors.embed_missing(embedder=Interleaved())
    assert report.embedded == 1 and report.pruned >= 1  # the nginx chunks' vectors went
    status = fresh_kb.vectors.status()
    assert status["chunks_with_vectors"] == status["chunks"]  # the late note's vector stayed


# -- kg embed --workers ----------------------------------------------------------------------------
def _all_vectors(data_dir: Path) -> dict:
    from retrieval.vectors.store import VectorStore

    store = VectorStore(data_dir)
    try:
        keys = sorted(store.keys())
        return {key: vector.tobytes() for key, vector in store.each(keys)}
    finally:
        store.close()


def test_kg_embed_with_worker_processes_stores_what_one_process_stores(kb_on_disk, tmp_path):
    import shutil

    alone, pooled = tmp_path / "alone", tmp_path / "pooled"
    shutil.copytree(kb_on_disk, alone)
    shutil.copytree(kb_on_disk, pooled)
    env = {"KG_EMBED_MODEL": "hash"}
    one = _kg("embed", "--json", "--batch", "3", "--data-dir", str(alone), cwd=tmp_path, env=env)
    two = _kg("embed", "--batch", "3", "--workers", "2", "--data-dir", str(pooled), cwd=tmp_path, env=env)
    assert one.returncode == 0 and two.returncode == 0, two.stderr
    report = json.loads(one.stdout)
    assert report["workers"] == 0 and report["embedded"] > 6  # several batches to share out
    assert f"{report['embedded']} embedded, 0 reused" in two.stdout and "2 worker processes" in two.stdout
    assert _all_vectors(pooled) == _all_vectors(alone) and len(_all_vectors(alone)) == report["embedded"]


def test_embedding_workers_are_other_processes_and_a_dead_one_is_said(tmp_path):
    import signal

    from conftest import make_settings

    from retrieval.vectors.embedders import EmbedUnavailable
    from retrieval.vectors.workers import EmbedWorkers

    batches = [[f"第 {i} 段：备份窗口 {j} 分钟" for j in range(3)] for i in range(7)]
    with EmbedWorkers(make_settings(tmp_path / "kb", embed_model="hash"), 2) as pool:
        got = list(pool.embedded(batches))
        assert [v.tobytes() for v in got] == [HashEmbedder().embed_passages(b).tobytes() for b in batches]
        worker = pool._pool.submit(os.getpid).result()
        assert worker != os.getpid()
        os.kill(worker, signal.SIGKILL)
        # the pool learns of the death from its own thread: until then the other worker could do every batch alone
        assert _wait(lambda: bool(pool._pool._broken))
        with pytest.raises(EmbedUnavailable, match="an embedding worker process died"):
            for _ in pool.embedded(batches):
                pass


def test_kg_ingest_embed_gives_new_and_changed_chunks_their_vectors(tmp_path):
    docs, data_dir = tmp_path / "docs", tmp_path / "kb"
    docs.mkdir()
    sections = {"备份": "每天 02:00 做一次全量备份，保留 7 天。", "迁移": "Region 迁移把数据挪到另一台机器，不停机。",
                "超时": "客户端读超时默认 30 秒，写超时 60 秒。"}
    runbook = docs / "runbook.md"
    runbook.write_text("# 运维手册\n\n" + "".join(f"## {h}\n\n{t}\n\n" for h, t in sections.items()), encoding="utf-8")
    (docs / "notes.md").write_text("# Notes\n\nThe backup window is two hours.\n", encoding="utf-8")
    env = {"KG_EMBED_MODEL": "hash"}

    first = _kg("ingest", str(docs), "--embed", "--data-dir", str(data_dir), cwd=tmp_path, env=env)
    assert first.returncode == 0, first.stderr
    assert "2 new" in first.stdout and "embedded, 0 reused" in first.stdout  # the human output says both
    status = json.loads(_kg("embed", "--status", "--json", "--data-dir", str(data_dir), cwd=tmp_path, env=env).stdout)
    assert status["chunks"] >= 4 and status["chunks_with_vectors"] == status["chunks"]

    runbook.write_text(runbook.read_text(encoding="utf-8").replace("30 秒", "45 秒"), encoding="utf-8")
    edited = _kg("ingest", str(docs), "--embed", "--json", "--data-dir", str(data_dir), cwd=tmp_path, env=env)
    assert edited.returncode == 0, edited.stderr
    report = json.loads(edited.stdout)
    assert report["chunks_indexed"] == 1 and report["embedding"]["embedded"] == 1  # only the changed chunk
    assert report["embedding"]["reused"] >= 3

    no_model = _kg("ingest", str(docs), "--embed", "--data-dir", str(data_dir), cwd=tmp_path, env={"KG_EMBED_MODEL": ""})
    assert no_model.returncode == 2 and "--embed needs an embedding model: set KG_EMBED_MODEL" in no_model.stderr


# -- a server keeps its vectors up to date ---------------------------------------------------------------
def _wait(condition, seconds: float = 120.0) -> bool:
    import time

    deadline = time.monotonic() + seconds  # a bound on waiting for the server's thread, not a timing assertion
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.1)
    return condition()


def test_a_server_embeds_the_chunks_a_posted_document_adds(kb_on_disk, tmp_path):
    from conftest import make_settings
    from fastapi.testclient import TestClient

    from api.app import create_app

    embedded = _kg("embed", "--quiet", "--data-dir", str(kb_on_disk), cwd=tmp_path, env={"KG_EMBED_MODEL": "hash"})
    assert embedded.returncode == 0, embedded.stderr
    with TestClient(create_app(make_settings(kb_on_disk, embed_model="hash", follow_interval=0.2))) as client:
        kb = client.app.state.kb
        background = kb._background_embedder
        assert _wait(lambda: background.rounds >= 1)  # its first round looks at every chunk: all have a vector
        assert background.last.needed == kb.vectors.status()["chunks"] and background.last.embedded == 0
        late = "# Late note\n\nThe snapshot window of the late note is 40 minutes.\n"
        posted = client.post("/documents", json={"source": "late.md", "text": late})
        assert posted.status_code == 201, posted.text

        def complete() -> bool:
            status = kb.vectors.status()
            return status["chunks_with_vectors"] == status["chunks"]

        assert _wait(complete), kb.vectors.status()
        assert _wait(lambda: background.embedded >= 1)
        assert background.last.needed == background.last.embedded == 1  # the next looks at the new chunk alone
        assert background.errors == 0
        # its worker killed: the round after fails once, says so, and the next starts another worker
        import signal

        os.kill(background._pool._pool.submit(os.getpid).result(), signal.SIGKILL)
        again = client.post("/documents", json={"source": "later.md",
                                                "text": "# Later note\n\nThe retention of the later note is 9 days.\n"})
        assert again.status_code == 201, again.text
        assert _wait(complete), kb.vectors.status()
        assert background.errors >= 1 and background.embedded >= 2
        found = client.post("/query", json={"query": "snapshot window of the late note", "mode": "dense", "k": 3})
        assert found.status_code == 200 and found.json()["hits"][0]["source"].endswith("late.md")


def test_a_server_leaves_a_knowledge_base_never_embedded_to_kg_embed(kb_on_disk, tmp_path):
    from conftest import make_settings
    from fastapi.testclient import TestClient

    from api.app import create_app
    from retrieval.catalog import commit

    with TestClient(create_app(make_settings(kb_on_disk, embed_model="hash", follow_interval=0.2))) as client:
        kb = client.app.state.kb
        assert client.post("/documents", json={"source": "late.md", "text": "# Late\n\nA late note.\n"}).status_code == 201
        background = kb._background_embedder
        assert _wait(lambda: background._seen == commit.generation(kb.store.db))  # it has looked since the post
        assert kb.vectors.status()["vectors"] == 0 and background.embedded == 0 and background._pool is None
    with TestClient(create_app(make_settings(kb_on_disk, embed_model="hash", embed_background=False))) as client:
        assert client.app.state.kb._background_embedder is None


# -- the matrix of vectors follows what is stored, without being built anew --------------------------------
def test_a_matrix_extended_with_new_vectors_is_the_matrix_built_anew(tmp_path):
    from retrieval.vectors.dense import ChunkMatrix
    from retrieval.vectors.store import VectorStore

    rng = np.random.default_rng(3)
    store = VectorStore(tmp_path)
    store.start_model("random-8")
    # 40 chunks over 30 keys: some chunks share a text (and so a vector), as copies of a paragraph do
    keyed = {f"c{i:02d}": (f"k{i % 30:02d}", "") for i in range(40)}
    keys = sorted({key for key, _ in keyed.values()})
    vectors = {key: rng.standard_normal(8).astype(np.float32) for key in keys}
    store.put(keys[::3], np.stack([vectors[k] for k in keys[::3]]))
    first = ChunkMatrix.build(keyed, store)
    assert 0 < len(first.ids) < 40
    assert first.extended({cid: key for cid, (key, _) in keyed.items()}, store) is first  # nothing stored since
    later = [k for k in keys if k not in keys[::3]][:12]
    store.put(later, np.stack([vectors[k] for k in later]))
    grown = first.extended({cid: key for cid, (key, _) in keyed.items()}, store)
    anew = ChunkMatrix.build(keyed, store)
    assert grown.ids == anew.ids and len(grown.ids) > len(first.ids)
    assert np.array_equal(grown.matrix, anew.matrix) and grown.total == anew.total
    store.close()


def test_vectors_stored_beside_a_server_reach_its_queries_without_a_whole_rebuild(fresh_kb, monkeypatch):
    from retrieval.pipeline import KnowledgeBase
    from retrieval.vectors import channel

    _embedded(fresh_kb, HashEmbedder())
    store = fresh_kb.vectors.store
    gone = sorted(store.keys())[::2]
    store.delete(set(gone))  # as if `kg embed` were still running
    question = "订单服务依赖哪些组件？"
    before = fresh_kb.query(question, mode="dense", k=5)
    fresh_kb.vectors.embed_missing(embedder=HashEmbedder())  # the rest stored: the store's version moves
    builds = []  # a matrix built anew reads every chunk's key from the catalog first
    real = channel.chunk_keys
    monkeypatch.setattr(channel, "chunk_keys", lambda store: builds.append(1) or real(store))
    after = fresh_kb.query(question, mode="dense", k=5)
    assert builds == []  # extended, not built anew
    with KnowledgeBase(fresh_kb.settings) as other:  # a process that builds its matrix from scratch
        other.vectors.use(HashEmbedder())
        anew = other.query(question, mode="dense", k=5)
    assert [(h.chunk_id, round(h.score, 6)) for h in after.hits] == [(h.chunk_id, round(h.score, 6)) for h in anew.hits]
    assert [h.chunk_id for h in after.hits] != [h.chunk_id for h in before.hits]


def test_one_process_of_a_data_dir_embeds_at_a_time(kb_on_disk, tmp_path):
    """`kg serve --workers 2`: each process follows the commits, one embeds what they add, the other waits for it."""
    from conftest import background_embedding_waits_for, make_settings

    from kg.lock import DataDirLock
    from retrieval.vectors.background import LOCK_FILE

    embedded = _kg("embed", "--quiet", "--data-dir", str(kb_on_disk), cwd=tmp_path, env={"KG_EMBED_MODEL": "hash"})
    assert embedded.returncode == 0, embedded.stderr
    other = DataDirLock(kb_on_disk, 0, name=LOCK_FILE)  # as the other process's round holds it
    assert other.try_acquire()
    try:
        background_embedding_waits_for(other, make_settings(kb_on_disk, embed_model="hash", follow_interval=0.2))
    finally:
        if other.held:
            other.release()
    done = _kg("check", "--data-dir", str(kb_on_disk), cwd=tmp_path, env={"KG_EMBED_MODEL": "hash"})
    assert done.returncode == 0, done.stdout + done.stderr  # the lock file is no stray file to the check


def test_failed_background_rounds_are_tried_again_later_and_later(fresh_kb, monkeypatch):
    """A model that is not installed or an endpoint that is down: one warning a round, the rounds spaced out (2, 4, ...
    60 s), not one a second; a round that works again resets the spacing."""
    from retrieval.vectors import background as bg
    from retrieval.vectors.embedders import EmbedUnavailable

    _embedded(fresh_kb, HashEmbedder())
    tries = []

    def failing(**_):
        tries.append(1)
        raise EmbedUnavailable("embedding model x failed: down")

    monkeypatch.setattr(fresh_kb.vectors, "embed_missing", failing)
    chores = bg.BackgroundEmbedder(fresh_kb, 1.0)  # its rounds called here, no thread started
    waits = []
    for _ in range(7):
        assert chores.round() == 0
        waits.append(round(chores._retry_at - bg.time.monotonic()))
        assert chores.round() == 0  # right after: not tried again
        chores._retry_at = 0.0  # as if the wait were over
    assert len(tries) == 7 and chores.errors == 7
    assert waits == [2, 4, 8, 16, 32, 60, 60]
    monkeypatch.setattr(fresh_kb.vectors, "embed_missing", lambda **_: type("R", (), {"embedded": 0, "seconds": 0})())
    chores.round()
    assert chores._failures == 0 and chores.rounds == 1
    chores.finish()
