"""The entity linker (its Aho-Corasick automaton over every label and alias) is kept in linker.cache beside
graph.cache, keyed by graph.ttl's content hash: a new process reads it instead of building it, and a graph
change (here: an import) makes it stale, so it is never read for the new graph."""

from __future__ import annotations

import pickle

from conftest import make_settings

from retrieval.graph.linking import _LINKER_FORMAT, LINKER_CACHE, EntityLinker
from retrieval.pipeline import KnowledgeBase


def _table(path, rows):
    path.write_text("source,relation,target\n" + "".join(f"{a},dependsOn,{b}\n" for a, b in rows), encoding="utf-8")
    return path


def _entities(kb, text):
    return sorted({m.label for m in kb.linker.link(text)})


def test_a_new_process_reads_the_linker_its_graph_made_and_never_a_stale_one(tmp_path):
    data = tmp_path / "kb"
    with KnowledgeBase(make_settings(data), create=True) as kb:
        kb.import_file(_table(tmp_path / "a.csv", [("billing-api", "ledger-db")]))
        assert _entities(kb, "billing-api talks to ledger-db") == ["billing-api", "ledger-db"]
        digest = kb.graph.digest
    with (data / LINKER_CACHE).open("rb") as fh:
        assert pickle.load(fh) == (_LINKER_FORMAT, digest)

    # Plant a linker that knows one other name, under the same content hash: a new process uses it.
    planted = EntityLinker([("planted-name", "urn:x:planted")], {"urn:x:planted": "planted"})
    with (data / LINKER_CACHE).open("wb") as fh:
        pickle.dump((_LINKER_FORMAT, digest), fh)
        pickle.dump(planted, fh)
    with KnowledgeBase(make_settings(data)) as kb:
        assert _entities(kb, "billing-api and planted-name") == ["planted"]

    # The graph changes: the planted cache is stale, the linker is built again (and saved) for the new graph.
    with KnowledgeBase(make_settings(data)) as kb:
        kb.import_file(_table(tmp_path / "b.csv", [("billing-api", "fraud-check")]))
        assert _entities(kb, "billing-api, fraud-check and planted-name") == ["billing-api", "fraud-check"]
        digest = kb.graph.digest
    with KnowledgeBase(make_settings(data)) as kb:
        assert _entities(kb, "fraud-check and ledger-db") == ["fraud-check", "ledger-db"]
    with (data / LINKER_CACHE).open("rb") as fh:
        assert pickle.load(fh) == (_LINKER_FORMAT, digest)


def test_a_cache_cut_short_is_built_again(tmp_path):
    data = tmp_path / "kb"
    with KnowledgeBase(make_settings(data), create=True) as kb:
        kb.import_file(_table(tmp_path / "a.csv", [("billing-api", "ledger-db")]))
        kb.linker  # noqa: B018
    raw = (data / LINKER_CACHE).read_bytes()
    (data / LINKER_CACHE).write_bytes(raw[: len(raw) // 2])
    with KnowledgeBase(make_settings(data)) as kb:
        assert _entities(kb, "ledger-db") == ["ledger-db"]
        digest = kb.graph.digest
    with (data / LINKER_CACHE).open("rb") as fh:  # written whole again
        assert pickle.load(fh) == (_LINKER_FORMAT, digest)
        assert isinstance(pickle.load(fh), EntityLinker)


def test_the_cached_linker_keeps_the_labels_jieba_is_taught(tmp_path):
    from retrieval.index.analysis import user_word_candidates

    assert user_word_candidates(["琥珀仓库", "billing-api", "库", "ＡＢ", "一个超过八个字的很长的名字", " 玳瑁网关 "]) == ["琥珀仓库", "玳瑁网关"]
    data = tmp_path / "kb"
    with KnowledgeBase(make_settings(data), create=True) as kb:
        kb.import_file(_table(tmp_path / "a.csv", [("琥珀仓库", "玳瑁网关"), ("billing-api", "玳瑁网关")]))
        assert sorted(kb.linker.user_words) == sorted(["琥珀仓库", "玳瑁网关"])
    with (data / LINKER_CACHE).open("rb") as fh:
        pickle.load(fh)
        assert sorted(pickle.load(fh).user_words) == sorted(["琥珀仓库", "玳瑁网关"])
