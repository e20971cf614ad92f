"""Versions with effective dates, as-of queries (parameter and question), only changed children re-indexed, deletion and --sync with no ghosts, the /documents endpoints."""

from __future__ import annotations

import base64
import datetime as dt
import json

import pytest
from click.testing import CliRunner
from conftest import make_settings
from fastapi.testclient import TestClient

from api.app import create_app
from kg.cli import cli
from kg.errors import InputError, NotFoundError
from retrieval.pipeline import KnowledgeBase
from retrieval.types import SourceDocument

TODAY = dt.date(2026, 5, 20)


def prd(version: str, effective: str | None, budget: str, extra: str = "") -> str:
    head = f"---\nid: prd\nversion: {version}\n" + (f"effective: {effective}\n" if effective else "") + "---\n\n"
    return head + f"# 产品需求说明书\n\n## 预算\n\n本期预算为 {budget} 万元。\n\n## 范围\n\n支持订单导出。{extra}\n"


@pytest.fixture
def kb(tmp_path):
    with KnowledgeBase(make_settings(tmp_path / "kb", today=TODAY), create=True) as opened:
        yield opened


def write(folder, name, text):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(text, encoding="utf-8")
    return folder / name


def budget_texts(result):
    return [h.text for h in result.hits if "预算" in h.text]


def test_a_new_version_supersedes_the_old_one_from_its_effective_date(kb, tmp_path):
    docs = tmp_path / "docs"
    write(docs, "prd-v1.2.md", prd("v1.2", "2024-06-01", "80"))
    write(docs, "prd-v1.3.md", prd("v1.3", "2025-01-16", "120"))
    report = kb.ingest_paths([docs])
    assert (report.added, report.updated) == (1, 1)  # one logical document, two versions
    assert (report.chunks_indexed, report.chunks_unchanged, report.chunks_retired) == (3, 1, 1)
    [doc] = kb.documents()
    assert (doc["version"]["label"], doc["versions"], doc["chunks"]) == ("v1.3", 2, 2)
    listed = kb.versions("prd")
    assert [(v["label"], v["effective_from"], v["effective_to"], v["in_force"]) for v in listed] == [
        ("v1.2", "2024-06-01", "2025-01-16", False), ("v1.3", "2025-01-16", None, True)]

    now = kb.query("预算")
    assert budget_texts(now) == ["本期预算为 120 万元。"]
    assert now.hits[0].version == {"version_id": listed[1]["version_id"], "label": "v1.3",
                                   "effective_from": "2025-01-16", "effective_to": None}
    assert (now.as_of, now.as_of_from) == (None, None)

    then = kb.query("预算", as_of="2024-12-01")
    assert budget_texts(then) == ["本期预算为 80 万元。"]
    assert then.hits[0].version["label"] == "v1.2"
    assert (then.as_of, then.as_of_from) == ("2024-12-01", "parameter")
    # Before the first version took effect there was no such document.
    assert kb.query("预算", as_of=dt.date(2024, 1, 1)).hits == []
    # The shared section answers as the version in force on the day asked about.
    shared = kb.query("订单导出", as_of="2024-07")
    assert [h.version["label"] for h in shared.hits] == ["v1.2"]


def test_time_words_in_the_question_pick_the_version(kb):
    kb.ingest_documents([SourceDocument("api:prd-1", prd("v1.2", "2024-06-01", "80")[0:], doc_key="prd",
                                        effective_date="2024-06-01", version_label="v1.2"),
                         SourceDocument("api:prd-2", prd("v1.3", "2026-01-16", "120"), doc_key="prd",
                                        effective_date="2026-01-16", version_label="v1.3")])
    last_december = kb.query("去年12月那份方案里预算是多少")
    assert (last_december.as_of, last_december.as_of_from) == ("2025-12-31", "question")
    assert budget_texts(last_december) == ["本期预算为 80 万元。"]
    assert kb.query("what was the 预算 in March 2026").hits[0].version["label"] == "v1.3"
    assert kb.query("预算 as of 2025-01").hits[0].version["label"] == "v1.2"
    # A date from the question's words chooses among versions but never hides a document that did not
    # exist yet (the words may be about its content); the as_of parameter does.
    assert budget_texts(kb.query("2019年的预算")) == ["本期预算为 80 万元。"]
    assert kb.query("预算", as_of="2019-12-31").hits == []
    # A parameter wins over the question's words.
    assert kb.query("去年的预算", as_of="2026-02-01").as_of_from == "parameter"


def test_an_undated_edit_is_a_version_from_the_day_it_was_ingested(tmp_path):
    docs = tmp_path / "docs"
    path = write(docs, "runbook.md", "# Runbook\n\nRestart the gateway with care.\n\n## Limits\n\nThe pool holds 16 workers.\n")
    with KnowledgeBase(make_settings(tmp_path / "kb", today=dt.date(2026, 3, 1)), create=True) as kb:
        kb.ingest_paths([docs])
    path.write_text(path.read_text().replace("16 workers", "32 workers"), encoding="utf-8")
    with KnowledgeBase(make_settings(tmp_path / "kb", today=dt.date(2026, 4, 1))) as kb:
        report = kb.ingest_paths([docs])
        assert (report.updated, report.chunks_indexed, report.chunks_unchanged, report.chunks_retired) == (1, 1, 1, 1)
        assert [(v["effective_from"], v["effective_to"]) for v in kb.versions(str(path))] == [
            (None, "2026-04-01"), ("2026-04-01", None)]
        assert [h.text for h in kb.query("pool workers", mode="bm25").hits] == ["The pool holds 32 workers."]
        assert [h.text for h in kb.query("pool workers", mode="bm25", as_of="2026-03-15").hits] == [
            "The pool holds 16 workers."]
        # Re-ingesting the unchanged folder touches nothing.
        again = kb.ingest_paths([docs])
        assert (again.unchanged, again.chunks_indexed, again.chunks_retired) == (1, 0, 0)
        assert kb.stats()["versions"] == 2


def test_only_children_whose_fingerprint_is_new_are_indexed(kb, tmp_path):
    docs = tmp_path / "docs"
    sections = "".join(f"## 第{i}节\n\n第{i}节的内容讲的是组件{i}的参数。\n\n" for i in range(10))
    path = write(docs, "manual.md", "# 手册\n\n" + sections)
    first = kb.ingest_paths([docs])
    before = {c.chunk_id for c in kb.store.iter_chunks()}
    # Whitespace and invisible formatting do not make a new version.
    path.write_text(path.read_text().replace("的参数。", "的参数。  \u200b"), encoding="utf-8")
    assert kb.ingest_paths([docs]).unchanged == 1
    path.write_text(path.read_text().replace("组件3的参数", "组件3的新参数"), encoding="utf-8")
    second = kb.ingest_paths([docs])
    after = {c.chunk_id for c in kb.store.iter_chunks()}
    assert (first.chunks_indexed, second.chunks_indexed, second.chunks_unchanged, second.chunks_retired) == (10, 1, 9, 1)
    assert len(after - before) == 1 and before <= after
    assert kb.stats()["indexed_chunks"] == 11


def test_kg_versions_and_as_of_on_the_command_line(tmp_path):
    docs = tmp_path / "docs"
    write(docs, "a.md", prd("v1.2", "2024-06-01", "80"))
    write(docs, "b.md", prd("v1.3", "2025-01-16", "120"))
    runner, kb = CliRunner(), str(tmp_path / "kb")
    env = {"KG_TODAY": TODAY.isoformat()}
    assert runner.invoke(cli, ["ingest", str(docs), "--data-dir", kb, "-q"], env=env).exit_code == 0
    listed = runner.invoke(cli, ["versions", "prd", "--data-dir", kb], env=env)
    lines = listed.stdout.splitlines()
    assert lines[0].startswith("  v1.2     2024-06-01 .. 2025-01-16")
    assert lines[1].startswith("* v1.3     2025-01-16 .. now")
    listed = runner.invoke(cli, ["documents", "--data-dir", kb], env=env).stdout  # "v1.3 of 2" read as a numbering
    assert "[md, v1.3 in force (2 versions), " in listed
    result = runner.invoke(cli, ["query", "预算", "--as-of", "2024-08-01", "--data-dir", kb, "--json"], env=env)
    data = json.loads(result.stdout)
    assert (data["as_of"], data["as_of_from"]) == ("2024-08-01", "parameter")
    assert data["hits"][0]["version"]["label"] == "v1.2" and "80 万元" in data["hits"][0]["text"]
    text = runner.invoke(cli, ["query", "预算", "--as-of", "2024-08-01", "--data-dir", kb], env=env).stdout
    assert "as of 2024-08-01 (from --as-of): versions in force then" in text
    assert "(v1.2, from 2024-06-01)" in text
    bad = runner.invoke(cli, ["query", "预算", "--as-of", "soon", "--data-dir", kb], env=env)
    assert (bad.exit_code, bad.stderr.strip()) == (2, "error: as_of 'soon' is not a date: write YYYY-MM-DD, YYYY-MM or YYYY")
    missing = runner.invoke(cli, ["versions", "nope", "--data-dir", kb], env=env)
    assert missing.exit_code == 1
    assert missing.stderr.strip() == ("error: no document 'nope' (give a doc_id, a front matter id, a source path or a title; "
                                      "`kg documents` lists them)")


def test_an_ingest_says_when_a_version_takes_effect_later(tmp_path):
    """A version dated after today is searched by nothing until then: a user who ingests it and asks at once found it
    missing with no word why. The ingest says so, and whether another version answers meanwhile."""
    docs = tmp_path / "docs"
    runner, kb, env = CliRunner(), str(tmp_path / "kb"), {"KG_TODAY": TODAY.isoformat()}
    first = write(docs, "a.md", prd("v2", "2026-07-01", "120"))
    result = runner.invoke(cli, ["ingest", str(docs), "--data-dir", kb], env=env)
    assert result.exit_code == 0 and result.stderr.splitlines()[1:] == [  # after the bar's "ingesting"
        f"  warning: {first}: this version takes effect on 2026-07-01 (its effective date): until then queries and "
        "answers leave it out; `kg query --as-of 2026-07-01` searches it now"]
    assert json.loads(runner.invoke(cli, ["query", "预算", "--data-dir", kb, "--json"], env=env).stdout)["hits"] == []
    write(docs, "a.md", prd("v1", "2026-01-01", "80"))  # the version in force today, then the later one again
    assert json.loads(runner.invoke(cli, ["ingest", str(docs), "--data-dir", kb, "--json"], env=env).stdout)["warnings"] == []
    write(docs, "a.md", prd("v2", "2026-07-01", "120"))
    report = json.loads(runner.invoke(cli, ["ingest", str(docs), "--data-dir", kb, "--json"], env=env).stdout)
    assert [w.split(": until then ")[1] for w in report["warnings"]] == [
        "the version in force today answers; `kg query --as-of 2026-07-01` searches it now"]


def test_doc_id_and_effective_flags_make_a_version(tmp_path):
    one, two = tmp_path / "one", tmp_path / "two"
    write(one, "plan.md", "# 方案\n\n预算为 10 万元。\n")
    write(two, "plan-final.md", "# 方案\n\n预算为 12 万元。\n")
    runner, kb = CliRunner(), str(tmp_path / "kb")
    env = {"KG_TODAY": TODAY.isoformat()}
    for folder, day in ((one, "2025-03-01"), (two, "2025-09-01")):
        result = runner.invoke(cli, ["ingest", str(folder / next(folder.iterdir()).name), "--doc-id", "plan",
                                     "--effective", day, "--data-dir", kb, "-q"], env=env)
        assert result.exit_code == 0, result.output
    listed = json.loads(runner.invoke(cli, ["versions", "plan", "--data-dir", kb, "--json"], env=env).stdout)["versions"]
    assert [(v["effective_from"], v["effective_to"]) for v in listed] == [("2025-03-01", "2025-09-01"), ("2025-09-01", None)]
    several = runner.invoke(cli, ["ingest", str(one), str(two), "--doc-id", "plan", "--data-dir", kb, "-q"], env=env)
    assert several.exit_code == 2
    assert "--doc-id names one document, but 2 files were given" in several.stderr


# ---------------------------------------------------------------- deletion and --sync


def test_deleted_documents_never_answer_again(kb, tmp_path):
    docs = tmp_path / "docs"
    write(docs, "prd-v1.2.md", prd("v1.2", "2024-06-01", "80"))
    write(docs, "prd-v1.3.md", prd("v1.3", "2025-01-16", "120"))
    write(docs, "other.md", "# 其他\n\n预算之外的说明。\n")
    kb.ingest_paths([docs])
    kb.relink()
    [deleted] = kb.delete_documents(["prd"])
    assert deleted["chunks_removed"] == 3
    for as_of in (None, "2024-12-01", "2025-06-01"):
        for mode in ("full", "bm25"):
            hits = kb.query("预算 订单导出 产品需求说明书", mode=mode, as_of=as_of, k=50).hits
            assert all(h.doc_id != deleted["doc_id"] for h in hits)
    assert [h.title for h in kb.query("预算", k=50).hits] == ["其他"]
    stats = kb.stats()
    assert (stats["documents"], stats["chunks"], stats["indexed_chunks"], stats["versions"]) == (1, 1, 1, 1)
    rows = {t: kb.store.db.execute(f"SELECT COUNT(*) FROM {t} WHERE {c}").fetchone()[0] for t, c in (
        ("parents", f"doc_id = '{deleted['doc_id']}'"), ("versions", f"doc_id = '{deleted['doc_id']}'"),
        ("version_chunks", "chunk_id NOT IN (SELECT chunk_id FROM chunks)"),
        ("mentions", "chunk_id NOT IN (SELECT chunk_id FROM chunks)"))}
    assert rows == {"parents": 0, "versions": 0, "version_chunks": 0, "mentions": 0}
    with pytest.raises(NotFoundError) as error:
        kb.delete_documents(["prd", str(docs / "other.md")])
    assert str(error.value).startswith("no document 'prd' (")
    assert kb.stats()["documents"] == 1  # an unknown name removes nothing


def test_ingest_sync_removes_documents_whose_files_are_gone(tmp_path):
    docs = tmp_path / "docs"
    write(docs, "keep.md", "# Keep\n\nheron notes.\n")
    gone = write(docs, "gone.md", "# Gone\n\nosprey notes.\n")
    write(docs, "prd-v1.2.md", prd("v1.2", "2024-06-01", "80"))
    write(docs, "prd-v1.3.md", prd("v1.3", "2025-01-16", "120"))
    runner, kb = CliRunner(), str(tmp_path / "kb")
    env = {"KG_TODAY": TODAY.isoformat()}
    assert runner.invoke(cli, ["ingest", str(docs), "--data-dir", kb, "-q"], env=env).exit_code == 0
    gone.unlink()
    (docs / "prd-v1.2.md").unlink()
    without_sync = json.loads(runner.invoke(cli, ["ingest", str(docs), "--data-dir", kb, "--json"], env=env).stdout)
    assert without_sync["deleted"] == []
    result = runner.invoke(cli, ["ingest", str(docs), "--sync", "--data-dir", kb, "-q"], env=env)
    assert result.exit_code == 0
    summary, removed = result.stdout.splitlines()
    assert summary.endswith("; removed 2 version(s) whose files are gone (1 whole document(s), 2 chunks)")
    assert removed == f"  removed {gone.resolve()} (its file is gone)"
    query = json.loads(runner.invoke(cli, ["query", "osprey", "--data-dir", kb, "--json", "--mode", "bm25"], env=env).stdout)
    assert query["hits"] == []
    old = json.loads(runner.invoke(cli, ["query", "预算", "--as-of", "2024-08", "--data-dir", kb, "--json"], env=env).stdout)
    assert old["hits"] == []  # v1.2's file is gone, and so is v1.2
    listed = json.loads(runner.invoke(cli, ["versions", "prd", "--data-dir", kb, "--json"], env=env).stdout)["versions"]
    assert [v["label"] for v in listed] == ["v1.3"]
    stats = json.loads(runner.invoke(cli, ["stats", "--data-dir", kb, "--json"]).stdout)
    assert (stats["documents"], stats["indexed_chunks"]) == (2, stats["chunks"] + stats["retired_chunks"])


# ---------------------------------------------------------------- HTTP


@pytest.fixture
def client(tmp_path):
    settings = make_settings(tmp_path / "kb", api_token="s3cret", today=TODAY)
    with TestClient(create_app(settings)) as c:
        yield c


AUTH = {"Authorization": "Bearer s3cret"}


def test_documents_endpoints_list_show_version_and_delete(client):
    for version, day, budget in (("v1.2", "2024-06-01", "80"), ("v1.3", "2025-01-16", "120")):
        response = client.post("/documents", json={"text": prd(version, day, budget), "source": f"api:prd-{version}"},
                               headers=AUTH)
        assert response.status_code == 201, response.text
    listed = client.get("/documents").json()["documents"]
    assert [(d["title"], d["version"]["label"], d["versions"], d["format"], d["pack"]) for d in listed] == [
        ("产品需求说明书", "v1.3", 2, "md", None)]
    doc_id = listed[0]["doc_id"]
    assert set(listed[0]) >= {"doc_id", "title", "source", "format", "chunks", "version", "versions", "pack"}
    shown = client.get(f"/documents/{doc_id}").json()
    assert (shown["doc_id"], shown["id"], [v["label"] for v in shown["version_history"]]) == (doc_id, "prd", ["v1.2", "v1.3"])
    versions = client.get("/documents/prd/versions").json()["versions"]
    assert [v["label"] for v in versions] == ["v1.2", "v1.3"]
    hit = client.post("/query", json={"query": "预算", "as_of": "2024-12-01"}).json()["hits"][0]
    assert hit["version"]["label"] == "v1.2" and hit["parent"]["text"].startswith("本期预算为 80")
    assert client.delete(f"/documents/{doc_id}").status_code == 401
    deleted = client.delete(f"/documents/{doc_id}", headers=AUTH)
    assert deleted.status_code == 200 and deleted.json()["deleted"]["doc_id"] == doc_id
    assert client.post("/query", json={"query": "预算 订单导出"}).json()["hits"] == []
    missing = client.get(f"/documents/{doc_id}")
    assert missing.status_code == 404 and missing.json()["error"]["type"] == "NotFoundError"


def test_post_documents_accepts_a_base64_file(client):
    html = "<html><body><main><h1>Gateway</h1><p>zebrafish is the load-test environment.</p></main></body></html>"
    body = {"content_base64": base64.b64encode(html.encode()).decode(), "filename": "gateway.html"}
    response = client.post("/documents", json=body, headers=AUTH)
    assert response.status_code == 201, response.text
    [doc] = client.get("/documents").json()["documents"]
    assert (doc["title"], doc["format"], doc["source"]) == ("Gateway", "html", "api:gateway.html")
    both = client.post("/documents", json={**body, "text": "x"}, headers=AUTH)
    assert both.status_code == 400
    assert both.json()["error"]["message"] == "give the document as `text` or as `content_base64` (with `filename`), not both or neither"
    bad = client.post("/documents", json={"content_base64": "@@@", "filename": "x.md"}, headers=AUTH)
    assert (bad.status_code, bad.json()["error"]["message"]) == (400, "content_base64 is not valid base64")


def test_as_of_that_is_not_a_date_is_refused_by_the_schema(client):
    # The spec says what a date looks like (YYYY, YYYY-MM, YYYY-MM-DD), so the body is invalid: 422.
    response = client.post("/query", json={"query": "预算", "as_of": "someday"})
    assert response.status_code == 422
    error = response.json()["error"]
    assert error["type"] == "InputError" and any(p.startswith("body.as_of:") for p in error["problems"])


def test_a_bad_as_of_parameter_is_an_input_error(kb):
    with pytest.raises(InputError):
        kb.query("x", as_of="2025-13-01")
