"""KnowledgeBase end to end on the fixture corpus: ingest, re-ingest, query modes, why, graph edits, errors."""

from __future__ import annotations

import shutil

import pytest
from conftest import CROSS_DOC_GOLD, CROSS_DOC_QUERY, build_kb, make_settings, relative_source
from rdflib import OWL, RDF, RDFS, SKOS, Literal, URIRef

from kg.errors import InputError, NotFoundError, RelationTableError
from kg.store import GRAPH_FILE
from ontology import entity_iri, load_rdf
from retrieval.index.analysis import query_terms
from retrieval.pipeline import KnowledgeBase
from retrieval.types import SourceDocument

N_DOCS = 9  # files under tests/data/kb/docs


def counts(kb: KnowledgeBase) -> dict:
    stats = kb.stats()
    return {
        key: stats[key]
        for key in ("documents", "chunks", "indexed_chunks", "mentions", "entities", "edges")
    }


def hit_paths(result, root) -> list[str]:
    return [relative_source(h.source, root) for h in result.hits]


# ---------------------------------------------------------------- write path


def test_the_fixture_knowledge_base_is_complete(kb):
    stats = kb.stats()
    assert stats["documents"] == N_DOCS
    assert stats["indexed_chunks"] == stats["chunks"] >= N_DOCS
    assert stats["entities"] == 11
    assert stats["edges"] == 7
    assert stats["linked_entities"] > 0
    assert (
        stats["documents_about_an_entity"] == 8
    )  # every document but the glossary is titled by an entity


def test_ingesting_the_same_files_again_changes_nothing(fresh_kb, tmp_path):
    before = counts(fresh_kb)
    ids_before = [d.doc_id for d in fresh_kb.store.documents()]
    report = fresh_kb.ingest_paths([tmp_path / "docs"])
    assert (report.added, report.updated, report.unchanged, report.chunks_indexed) == (
        0,
        0,
        N_DOCS,
        0,
    )
    assert report.summary() == f"nothing changed: {N_DOCS} document(s) already up to date"
    assert counts(fresh_kb) == before
    assert [d.doc_id for d in fresh_kb.store.documents()] == ids_before
    assert {d.version for d in fresh_kb.store.documents()} == {1}


def test_a_modified_document_is_updated_without_ghosts(fresh_kb, tmp_path):
    glossary = tmp_path / "docs" / "notes" / "glossary.txt"
    assert [h.title for h in fresh_kb.query("zebrafish").hits] == ["Glossary"]
    before = counts(fresh_kb)
    glossary.write_text(
        glossary.read_text(encoding="utf-8").replace("zebrafish", "walrus"), encoding="utf-8"
    )

    report = fresh_kb.ingest_paths([tmp_path / "docs"])

    assert (report.added, report.updated, report.unchanged) == (0, 1, N_DOCS - 1)
    # The edited chunk is retired from the current version, not deleted: it answers --as-of queries.
    assert (report.chunks_retired, report.chunks_indexed, report.chunks_removed) == (1, 1, 0)
    assert report.summary().startswith(
        f"0 new, 1 updated, {N_DOCS - 1} unchanged document(s); 1 chunks indexed"
    )
    for mode in ("full", "bm25"):
        assert fresh_kb.query("zebrafish", mode=mode).hits == []
    [hit] = fresh_kb.query("walrus").hits
    assert "walrus: the codename" in hit.text
    after = counts(fresh_kb)
    assert after == {**before, "indexed_chunks": before["indexed_chunks"] + 1}
    assert fresh_kb.stats()["retired_chunks"] == 1
    assert fresh_kb.store.document_by_source(str(glossary.resolve())).version == 2


def test_editing_one_section_replaces_only_that_documents_chunks(fresh_kb, tmp_path):
    doc = tmp_path / "docs" / "services" / "payment-service.md"
    old_ids = {h.chunk_id for h in fresh_kb.query("payment-service callback", k=50).hits}
    doc.write_text(
        doc.read_text(encoding="utf-8").replace(
            "kept in redis-cluster for 24 hours", "kept in redis-cluster for 48 hours"
        ),
        encoding="utf-8",
    )
    fresh_kb.ingest_paths([tmp_path / "docs"])

    stats = fresh_kb.stats()
    assert stats["indexed_chunks"] == stats["chunks"] + stats["retired_chunks"]
    assert stats["retired_chunks"] == 1
    hits = fresh_kb.query("payment-service callback idempotent hours", k=50, mode="bm25").hits
    chunk_ids = [h.chunk_id for h in hits]
    assert len(chunk_ids) == len(set(chunk_ids))  # no chunk twice
    texts = [h.text for h in hits if h.title == "payment-service"]
    assert sum("48 hours" in t for t in texts) == 1
    assert not any("24 hours" in t for t in texts)
    assert len(texts) == 2  # the document still has two chunks
    assert set(chunk_ids) != old_ids


def test_documents_posted_by_source_name_are_replaced_by_the_same_source(fresh_kb):
    first = fresh_kb.ingest_documents(
        [SourceDocument("api:runbook", "# 扩容手册\n\n先扩 gamma 集群。")]
    )
    second = fresh_kb.ingest_documents(
        [SourceDocument("api:runbook", "# 扩容手册\n\n先扩 delta 集群。")]
    )
    assert (first.added, second.updated) == (1, 1)
    assert first.doc_ids == second.doc_ids
    assert fresh_kb.query("gamma").hits == []
    assert [h.title for h in fresh_kb.query("delta").hits] == ["扩容手册"]


def test_a_failing_batch_ingests_nothing_and_leaves_the_index_usable(fresh_kb):
    before = counts(fresh_kb)
    with pytest.raises(InputError) as error:
        fresh_kb.ingest_documents(
            [SourceDocument("api:a", "# A\n\nosprey nest"), SourceDocument("api:b", "  ")]
        )
    assert str(error.value) == "api:b: the document is empty"
    assert fresh_kb.query("osprey").hits == []
    assert counts(fresh_kb) == before
    report = fresh_kb.ingest_documents([SourceDocument("api:c", "# C\n\nheron nest")])
    assert report.added == 1
    assert [h.title for h in fresh_kb.query("nest").hits] == ["C"]


def test_the_same_source_twice_in_one_batch_leaves_one_version_and_no_ghost(fresh_kb):
    before = counts(fresh_kb)
    fresh_kb.ingest_documents(
        [
            SourceDocument("api:a", "# A\n\nosprey nest"),
            SourceDocument("api:a", "# A\n\nheron nest"),
        ]
    )
    after = counts(fresh_kb)
    assert after["documents"] == before["documents"] + 1
    assert after["indexed_chunks"] == after["chunks"] == before["chunks"] + 1
    assert [h.text for h in fresh_kb.query("nest").hits] == ["heron nest"]


def test_importing_relations_after_ingest_links_the_existing_documents(tmp_path):
    from conftest import copy_fixture_corpus

    docs, relations = copy_fixture_corpus(tmp_path)
    with KnowledgeBase(make_settings(tmp_path / "kb"), create=True) as kb:
        kb.ingest_paths([docs])
        assert kb.stats()["mentions"] == 0
        result = kb.import_file(relations)
        assert result["kind"] == "relations"
        assert result["chunks_relinked"] == kb.stats()["chunks"]
        assert kb.stats()["mentions"] > 0
        info = kb.entity("order-service")
        assert [d["title"] for d in info["documents_about"]] == ["order-service"]
        assert {m["title"] for m in info["mentioned_in"]} >= {"order-service", "交易团队"}


# ---------------------------------------------------------------- read path


def test_a_relation_finds_a_document_that_shares_no_word_with_the_question(kb, kb_root):
    gold_words = set()
    for chunk in kb.store.iter_chunks():
        if chunk.title == "mysql-core":
            gold_words |= set(query_terms(chunk.title + " " + chunk.section + " " + chunk.text))
    assert not gold_words & set(query_terms(CROSS_DOC_QUERY))  # the premise of this test

    assert CROSS_DOC_GOLD not in hit_paths(kb.query(CROSS_DOC_QUERY, mode="bm25"), kb_root)
    full = kb.query(CROSS_DOC_QUERY, mode="full")
    assert CROSS_DOC_GOLD in hit_paths(full, kb_root)
    [order] = [e for e in full.entities if e["label"] == "order-service"]
    assert order["surface"] == "订单服务"
    hit = next(h for h in full.hits if relative_source(h.source, kb_root) == CROSS_DOC_GOLD)
    assert "bm25" not in hit.why
    graph = hit.why["graph"]
    assert graph["entity"] == "mysql-core"
    assert graph["via"] == "about"
    assert "order-service → dependsOn → mysql-core" in graph["path"]


def test_why_bm25_lists_the_matched_query_terms(kb, kb_root):
    result = kb.query("nginx 的 proxy_read_timeout", mode="bm25")
    top = result.hits[0]
    assert relative_source(top.source, kb_root) == "docs/infra/nginx.md"
    assert (top.title, top.section, top.lines) == ("nginx", "Timeouts", (5, 5))
    assert top.why["bm25"]["rank"] == 1
    assert {"nginx", "proxy_read_timeout", "read", "timeout"} <= set(top.why["bm25"]["terms"])
    assert set(top.why["bm25"]["terms"]) <= set(query_terms("nginx 的 proxy_read_timeout"))
    assert "graph" not in top.why


def test_hits_are_ranked_and_carry_their_document(kb, kb_root):
    result = kb.query("LORA-02 心跳间隔", k=3)
    assert [h.rank for h in result.hits] == list(range(1, len(result.hits) + 1))
    assert 0 < len(result.hits) <= 3
    top = result.hits[0]
    assert relative_source(top.source, kb_root) == "docs/devices/lora-02.md"
    assert top.title == "LORA-02"
    lines = (kb_root / "docs" / "devices" / "lora-02.md").read_text(encoding="utf-8").split("\n")
    assert "\n".join(lines[top.lines[0] - 1 : top.lines[1]]) == top.text
    assert [h.score for h in result.hits] == sorted((h.score for h in result.hits), reverse=True)
    assert {e["label"] for e in result.entities} == {"LORA-02", "心跳间隔"}
    assert set(result.timings_ms) == {"link", "bm25", "graph", "fuse", "followup"}


def test_graph_mode_uses_only_the_graph(kb):
    result = kb.query(CROSS_DOC_QUERY, mode="graph")
    assert result.hits
    assert all(set(h.why) == {"graph"} for h in result.hits)
    assert kb.query("zebrafish", mode="graph").hits == []  # no entity, no graph hits


def test_a_query_that_matches_nothing_returns_no_hits(kb):
    for mode in ("full", "bm25", "graph"):
        result = kb.query("qwertyuiop 锟斤拷", mode=mode)
        assert (result.hits, result.entities) == ([], [])


@pytest.mark.parametrize("text", ["", "   ", "\n\t"])
def test_an_empty_query_is_an_input_error(kb, text):
    with pytest.raises(InputError) as error:
        kb.query(text)
    assert str(error.value) == "the query is empty: ask a question or give a few words"


def test_an_unknown_mode_is_an_input_error(kb):
    with pytest.raises(InputError) as error:
        kb.query("nginx", mode="semantic")
    assert str(error.value) == "unknown mode 'semantic' (use one of: full, bm25, graph, dense)"


@pytest.mark.parametrize("k", [0, -1, 201])
def test_k_out_of_range_is_an_input_error(kb, k):
    with pytest.raises(InputError) as error:
        kb.query("nginx", k=k)
    assert str(error.value) == f"k must be between 1 and 200 (the most hits a query returns), got {k}"


# ---------------------------------------------------------------- the graph file


def test_an_alias_added_to_graph_ttl_on_disk_is_used_by_the_next_query(fresh_kb, tmp_path):
    assert fresh_kb.query("账务中心").entities == []
    assert fresh_kb.query("账务中心").hits == []

    path = tmp_path / "kb" / GRAPH_FILE
    g = load_rdf(path)  # as Protégé (or a script) would edit it
    g.add((URIRef(entity_iri("mysql-core")), SKOS.altLabel, Literal("账务中心", lang="zh")))
    g.serialize(destination=str(path), format="turtle")

    result = fresh_kb.query("账务中心")
    assert [(e["label"], e["surface"]) for e in result.entities] == [("mysql-core", "账务中心")]
    assert relative_source(result.hits[0].source, tmp_path) == "docs/infra/mysql-core.md"
    assert result.hits[0].why["graph"]["path"] == "query: mysql-core → document about it"
    assert "账务中心" in fresh_kb.entity("mysql-core")["aliases"]


def test_stats_see_an_entity_added_to_graph_ttl_on_disk(fresh_kb, tmp_path):
    # graph.ttl is the source of truth and edits on disk are picked up "on the next read".
    before = fresh_kb.stats()["entities"]
    path = tmp_path / "kb" / GRAPH_FILE
    g = load_rdf(path)
    new = URIRef(entity_iri("billing-service"))
    g.add((new, RDF.type, OWL.NamedIndividual))
    g.add((new, RDFS.label, Literal("billing-service")))
    g.serialize(destination=str(path), format="turtle")
    assert fresh_kb.stats()["entities"] == before + 1
    assert fresh_kb.entity("billing-service")["label"] == "billing-service"


def test_a_failed_relation_import_leaves_graph_ttl_byte_identical(fresh_kb, tmp_path):
    path = tmp_path / "kb" / GRAPH_FILE
    before_bytes, before = path.read_bytes(), counts(fresh_kb)
    bad = tmp_path / "more.csv"
    bad.write_text(
        "source,relation,target\nbilling-service,dependsOn,mysql-core\nbilling-service,depend_on,redis-cluster\n",
        encoding="utf-8",
    )
    with pytest.raises(RelationTableError) as error:
        fresh_kb.import_file(bad)
    assert error.value.message == (
        "more.csv: 1 bad row; nothing was imported (fix them, or use --skip-invalid to import the good rows)"
    )
    assert error.value.problems == [
        "more.csv:3: relation 'depend_on' is not in the ontology (did you mean 'dependsOn'?)"
    ]
    assert path.read_bytes() == before_bytes
    assert counts(fresh_kb) == before
    with pytest.raises(NotFoundError):
        fresh_kb.entity("billing-service")  # the good row was not applied in memory either


def test_synonyms_imported_from_a_table_expand_the_query(fresh_kb, tmp_path):
    assert fresh_kb.query("备份", mode="bm25").hits == []
    table = tmp_path / "synonyms.txt"
    table.write_text("# 运维同义词\n备份, backup\n", encoding="utf-8")
    assert fresh_kb.import_file(table)["groups_added"] == 1
    assert fresh_kb.import_file(table)["groups_added"] == 0  # importing again adds nothing
    hits = fresh_kb.query("备份", mode="bm25").hits
    assert {relative_source(h.source, tmp_path) for h in hits} == {"docs/infra/mysql-core.md"}
    assert hits[0].why["bm25"]["terms"] == ["backup"]


def test_a_synonym_table_saved_by_a_chinese_windows_editor_is_read(fresh_kb, tmp_path):
    # Notepad on a Chinese Windows saves "ANSI" (GBK); a person may also edit the data dir's copy that way.
    table = tmp_path / "synonyms.txt"
    table.write_bytes("# 运维同义词\n备份, backup\n".encode("gbk"))
    assert fresh_kb.import_file(table)["groups_added"] == 1
    assert fresh_kb.query("备份", mode="bm25").hits[0].why["bm25"]["terms"] == ["backup"]
    own = fresh_kb.root / "synonyms.txt"
    own.write_bytes(own.read_text(encoding="utf-8").encode("gbk") + "库存, inventory\n".encode("gbk"))
    reopened = KnowledgeBase(fresh_kb.settings)
    assert ["库存", "inventory"] in reopened.synonyms.groups
    own.write_bytes(b"\x81\x30 not text \xff\xff")
    with pytest.raises(InputError) as error:
        KnowledgeBase(fresh_kb.settings)
    assert str(error.value) == "synonyms.txt: neither UTF-8, GBK/GB18030 nor Big5 text (byte 0); save it as UTF-8"


def test_an_unsupported_import_file_says_what_is_accepted(kb, tmp_path):
    path = tmp_path / "relations.ods"
    path.write_bytes(b"PK")
    with pytest.raises(InputError) as error:
        kb.import_file(path)
    assert str(error.value) == (
        "relations.ods: cannot import '.ods' files: give a relation table (.csv or .xlsx), an ontology "
        "(.ttl, .owl, .rdf) or a synonym table (.txt)"
    )


# ---------------------------------------------------------------- inspection and opening


def test_entity_shows_neighbours_in_both_directions_and_documents(kb):
    order = kb.entity("order-service")
    assert order["types"] == ["Service"] and order["aliases"] == ["订单服务"]
    assert {rel: [n["label"] for n in ns] for rel, ns in order["neighbours"].items()} == {
        "dependsOn": ["mysql-core"],
        "runtimeDependsOn": ["inventory-service"],
        "ownedBy": ["交易团队"],
    }
    mysql = kb.entity(str(entity_iri("mysql-core")))
    assert mysql["neighbours"] == {
        "requiredBy": [
            {"id": str(entity_iri("order-service")), "label": "order-service", "asserted": False}
        ]
    }
    assert [d["title"] for d in mysql["documents_about"]] == ["mysql-core"]


def test_an_unknown_entity_is_not_found(kb):
    with pytest.raises(NotFoundError) as error:
        kb.entity("no-such-service")
    assert (
        str(error.value)
        == "no entity 'no-such-service' (give its IRI, its exact label or an alias; `kg stats` counts entities)"
    )


def test_opening_a_folder_without_a_knowledge_base_says_how_to_create_one(tmp_path):
    with pytest.raises(NotFoundError) as error:
        KnowledgeBase(make_settings(tmp_path / "nothing-here"))
    assert str(error.value) == (
        f"no knowledge base in '{tmp_path / 'nothing-here'}': run `kg init` (or `kg ingest PATH`) first, "
        "or point --data-dir / KG_DATA_DIR at an existing one"
    )
    assert not (tmp_path / "nothing-here").exists()


def test_a_knowledge_base_reopened_from_disk_answers_the_same(tmp_path):
    kb = build_kb(tmp_path)
    first = kb.query(CROSS_DOC_QUERY).to_json()
    kb.close()
    shutil.copytree(tmp_path / "kb", tmp_path / "copy")
    with KnowledgeBase(make_settings(tmp_path / "copy")) as reopened:
        again = reopened.query(CROSS_DOC_QUERY).to_json()
    assert [(h["chunk_id"], h["why"]) for h in again["hits"]] == [
        (h["chunk_id"], h["why"]) for h in first["hits"]
    ]
    assert again["entities"] == first["entities"]


def test_a_type_filter_keeps_expansion_to_that_class_and_its_subclasses(kb):
    # order-service reaches mysql-core (Database), inventory-service (Service) and 交易团队 (Team).
    # Database and Cache are subclasses of System; Service is too.
    def reached(types):
        result = kb.query("order-service", k=30, mode="graph", types=types)
        return {h.why["graph"]["entity"] for h in result.hits if "graph" in h.why}

    everything = reached(None)
    assert {"mysql-core", "交易团队"} <= everything
    databases = reached(["Database"])
    assert "mysql-core" in databases and "交易团队" not in databases and "inventory-service" not in databases
    systems = reached(["System"])  # rdfs:subClassOf: Database and Service are Systems, Team is not
    assert {"mysql-core", "inventory-service"} <= systems and "交易团队" not in systems


def test_an_unknown_type_filter_names_the_nearest_classes(kb):
    with pytest.raises(InputError, match=r"unknown type 'Servce' \(did you mean Service"):
        kb.query("redis", types=["Servce"])
