"""Regression: a `POST /documents` whose `doc_id` was a file's path, or whose front matter `id:` was a file's
front matter id, became a new version of that file's document: the file's text stopped answering, and
re-ingesting the unchanged file said "nothing changed", so it was never restored."""

from __future__ import annotations

import pytest
from conftest import make_settings
from fastapi.testclient import TestClient

from api.app import create_app
from retrieval.pipeline import KnowledgeBase
from retrieval.types import SourceDocument


@pytest.fixture
def files(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "runbook.md").write_text("---\nid: handbook\n---\n# Runbook\n\nRestart the pelican gateway first.\n",
                                     encoding="utf-8")
    (docs / "plain.md").write_text("# Plain\n\nThe walrus cache holds sessions.\n", encoding="utf-8")
    kb = KnowledgeBase(make_settings(tmp_path / "kb"), create=True)
    kb.ingest_paths([docs])
    kb.close()
    return docs


@pytest.fixture
def client(tmp_path, files):
    with TestClient(create_app(make_settings(tmp_path / "kb"))) as test_client:
        yield test_client


def _sources(client, word: str) -> list[str]:
    hits = client.post("/query", json={"query": word, "mode": "bm25"}).json()["hits"]
    return [h["source"] for h in hits]


@pytest.mark.parametrize("body", [
    {"text": "# Hijack\n\nflamingo", "doc_id": "{path}"},  # a file's path as doc_id
    {"text": "# Hijack\n\nflamingo", "doc_id": "handbook"},  # a file's front matter id as doc_id
    {"text": "---\nid: handbook\n---\n# Hijack\n\nflamingo"},  # ... or as the post's own front matter id
    {"text": "# Hijack\n\nflamingo", "doc_id": "{doc_id}"},  # the file document's id itself
])
def test_a_post_naming_a_files_document_is_409(client, files, body):
    kb = client.app.state.kb
    runbook = kb.store.document_by_source(str((files / "runbook.md").resolve()))
    body = {k: v.format(path=runbook.source, doc_id=runbook.doc_id) for k, v in body.items()}
    response = client.post("/documents", json=body)
    assert response.status_code == 409, response.text
    error = response.json()["error"]
    assert error["type"] == "ConflictError"
    assert "names the document of the file" in error["message"] and runbook.source in error["message"]
    assert kb.store.document(runbook.doc_id).sha256 == runbook.sha256
    assert _sources(client, "flamingo") == []
    assert _sources(client, "pelican") == [runbook.source]


def test_a_post_with_an_id_of_its_own_still_versions_itself(client):
    first = client.post("/documents", json={"text": "# Policy\n\nflamingo one", "doc_id": "policy"})
    second = client.post("/documents", json={"text": "# Policy\n\nflamingo two", "doc_id": "policy", "source": "p2"})
    assert first.status_code == second.status_code == 201
    assert first.json()["doc_ids"] == second.json()["doc_ids"]
    assert second.json()["updated"] == 1


def test_re_ingesting_a_file_restores_its_text_after_a_takeover(tmp_path, files):
    """A knowledge base taken over before the fix (the library call the API used to make): the unchanged
    file, ingested again, becomes the document's newest version once more."""
    kb = KnowledgeBase(make_settings(tmp_path / "kb"))
    try:
        runbook = kb.store.document_by_source(str((files / "runbook.md").resolve()))
        kb.ingest_documents([SourceDocument(source="api:x", text="# Hijack\n\nflamingo", format="md", doc_key="handbook")])
        assert kb.store.document(runbook.doc_id).sha256 != runbook.sha256
        report = kb.ingest_paths([files])
        assert report.updated == 1 and report.unchanged == 1
        assert kb.store.document(runbook.doc_id).sha256 == runbook.sha256
        assert [h.source for h in kb.query("pelican", mode="bm25").hits] == [runbook.source]
        assert [h.source for h in kb.query("flamingo", mode="bm25").hits] == []
    finally:
        kb.close()
