"""A document's file path is searchable: its folder's and its own name join every chunk's heading path in the index."""

from __future__ import annotations

from conftest import kg_process, make_settings

from retrieval.ingest.readers import path_words
from retrieval.pipeline import KnowledgeBase


def test_path_words_are_the_file_and_its_folder_without_suffix_separators_or_folder_index_pages():
    assert path_words("/home/someone/docs/contributor-guide/datanode/wal.md") == "datanode wal"
    assert path_words("handbook/about/editing-handbook/_index.md") == "about editing handbook"
    assert path_words("C:\\notes\\runbooks\\redis_cluster-failure.txt") == "runbooks redis cluster failure"
    assert path_words("file:///srv/kb/services/README.md") == "kb services"
    assert path_words("notes.md") == "notes"
    assert path_words("/home/someone/meetings/notes: 2024.md") == "meetings notes: 2024"  # a colon in a name is kept
    assert path_words("ops_docs:guide/datanode/wal.md") == "datanode wal"  # a label before the path is not
    # Not a document file's path: a pasted text's name, a benchmark passage id.
    assert path_words("2wiki_dev:2w-00012") == ""
    assert path_words("upload") == ""


def _folder(root):
    # Two overview pages that say the same of two components, as templated docs often do: only the
    # folder tells them apart (without it, the two tie and either could come first).
    for component in ("datanode", "metasrv"):
        page = root / "docs" / component / "overview.md"
        page.parent.mkdir(parents=True)
        page.write_text("# 概述\n\n## 部署\n\n部署时该组件以独立进程运行，启动时读取配置文件并注册到集群。\n", encoding="utf-8")
    # Pages on other things, so neither name is a common word of the knowledge base.
    for i, topic in enumerate(("备份", "监控", "升级", "权限", "日志", "索引", "压缩", "缓存", "迁移", "告警", "审计", "配额")):
        (root / "docs" / f"topic-{i}.md").write_text(f"# {topic}\n\n{topic}的说明与操作步骤。\n", encoding="utf-8")
    return root / "docs"


def _best_source(kb, question):
    hits = kb.query(question, mode="bm25", k=3).hits
    return kb.store.document(hits[0].doc_id).source if hits else None


def test_a_question_naming_the_folder_finds_the_page_in_it_and_keeps_finding_it_after_a_repair(tmp_path):
    docs = _folder(tmp_path)
    with KnowledgeBase(make_settings(tmp_path / "kb"), create=True) as kb:
        kb.ingest_paths([docs])
        for component in ("datanode", "metasrv"):
            assert _best_source(kb, f"{component} 部署").endswith(f"{component}/overview.md")
        # A chunk the index lost (a crash between commits) comes back with its path words.
        lost = [c for c in kb.store.iter_chunks() if kb.store.document(c.doc_id).source.endswith("metasrv/overview.md")]
        kb.index.delete_chunks([c.chunk_id for c in lost])
        kb.index.commit()
        assert not (_best_source(kb, "metasrv 部署") or "").endswith("metasrv/overview.md")
        kb.check(repair=True)
        assert _best_source(kb, "metasrv 部署").endswith("metasrv/overview.md")


def test_the_shown_heading_path_is_the_documents_own(tmp_path):
    docs = _folder(tmp_path)
    with KnowledgeBase(make_settings(tmp_path / "kb"), create=True) as kb:
        kb.ingest_paths([docs])
        hit = kb.query("datanode 部署", mode="bm25", k=1).hits[0]
        assert hit.section == "部署"


def _as_an_older_kgrag_left_it(kb, *, grams: bool = True) -> None:
    """The index as a kgrag before path words wrote it: heading paths only, and no recipe recorded
    (`grams=False`: older still, before the character-pair field)."""
    from whoosh import index as whoosh_index

    from retrieval.index.whoosh_index import _schema

    if not grams:
        kb.index.close()
        schema = _schema()
        schema.remove("grams")
        for path in kb.index.path.iterdir():
            path.unlink()
        whoosh_index.create_in(kb.index.path, schema)
    else:
        kb.index.add_chunks(list(kb.store.iter_chunks()))  # no file words: replaces every entry
        kb.index.commit()
    with kb.store.transaction():
        kb.store.db.execute("DELETE FROM kb_state WHERE key = 'index_recipe'")
    if not grams:
        older = KnowledgeBase(kb.settings)
        older.index.add_chunks(list(older.store.iter_chunks()))
        older.index.commit()
        older.close()


def test_an_index_an_older_kgrag_wrote_is_reported_and_indexed_again_by_check_repair(tmp_path):
    docs = _folder(tmp_path)
    data_dir = tmp_path / "kb"
    settings = make_settings(data_dir)
    with KnowledgeBase(settings, create=True) as kb:
        kb.ingest_paths([docs])
        assert kb.check().clean  # a data dir this kgrag made records its recipe at its first write
        _as_an_older_kgrag_left_it(kb)
        # The two templated pages tie again (seen with both listed: one text in two files is otherwise one hit).
        kb.settings.one_hit_per_parent = False
        top = kb.query("metasrv 部署", mode="bm25", k=2).hits
        kb.settings.one_hit_per_parent = True
        assert len(top) == 2 and top[0].why["bm25"]["score"] == top[1].why["bm25"]["score"]
    # The real CLI, in processes of their own: check says what is stale and exits 1 ...
    stale = kg_process("check", "--data-dir", str(data_dir), cwd=tmp_path)
    assert stale.returncode == 1 and "written by an older kgrag" in stale.stdout, stale.stdout + stale.stderr
    # ... an ingest into it says so too, and still ingests ...
    (docs / "topic-new.md").write_text("# 容量\n\n容量规划的说明。\n", encoding="utf-8")
    ingest = kg_process("ingest", str(docs), "--data-dir", str(data_dir), cwd=tmp_path)
    assert ingest.returncode == 0 and "kg check --repair" in ingest.stderr, ingest.stderr
    # ... and --repair indexes every chunk again, after which the folder's name finds its page.
    repaired = kg_process("check", "--repair", "--data-dir", str(data_dir), cwd=tmp_path)
    assert repaired.returncode == 0 and "indexed again" in repaired.stdout, repaired.stdout + repaired.stderr
    assert kg_process("check", "--data-dir", str(data_dir), cwd=tmp_path).stdout.startswith("clean: ")
    with KnowledgeBase(settings) as kb:
        for component in ("datanode", "metasrv"):
            assert _best_source(kb, f"{component} 部署").endswith(f"{component}/overview.md")


def _answering(hits) -> set[tuple[str, frozenset[str]]]:
    """Each hit's text with the documents holding it: the two templated pages are one hit, either one shown first."""
    return {(h.text, frozenset({h.doc_id} | {c["doc_id"] for c in h.why.get("copies", [])})) for h in hits}


def test_an_index_without_the_character_pair_field_gets_it_back_from_check_repair(tmp_path):
    docs = _folder(tmp_path)
    settings = make_settings(tmp_path / "kb")
    with KnowledgeBase(settings, create=True) as kb:
        kb.ingest_paths([docs])
        before = _answering(kb.query("组件以独立进程运行", mode="bm25", k=5).hits)
        _as_an_older_kgrag_left_it(kb, grams=False)
    with KnowledgeBase(settings) as kb:
        assert not kb.index._has_grams
        report = kb.check(repair=True)
        assert report.repaired and kb.check().clean
    with KnowledgeBase(settings) as kb:  # reopened: the field is in the schema on disk
        assert kb.index._has_grams and kb.index.doc_frequency("进程", "grams") == 2  # filled, not just declared
        assert _answering(kb.query("组件以独立进程运行", mode="bm25", k=5).hits) == before
