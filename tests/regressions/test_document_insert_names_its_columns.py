"""A column added to the catalog's documents table (the `pack` column of knowledge packs, or any later
one) broke every ingest: `INSERT INTO documents VALUES (8 values)` failed with "table documents has 9
columns but 8 values were supplied". The insert now names its columns."""

from __future__ import annotations

import sqlite3

from conftest import make_settings

from retrieval.pipeline import KnowledgeBase
from retrieval.types import SourceDocument


def test_ingest_works_on_a_catalog_with_an_added_column(tmp_path):
    with KnowledgeBase(make_settings(tmp_path / "kb"), create=True):
        pass
    db = sqlite3.connect(tmp_path / "kb" / "kb.sqlite")
    db.execute("ALTER TABLE documents ADD COLUMN added_later TEXT")
    db.commit()
    db.close()
    with KnowledgeBase(make_settings(tmp_path / "kb")) as kb:
        report = kb.ingest_documents([SourceDocument(source="api:note", text="# Note\n\nredis-cluster 宕机\n")])
        assert report.added == 1
        assert [d.title for d in kb.store.documents()] == ["Note"]
        row = kb.store.db.execute("SELECT pack, added_later FROM documents").fetchone()
        assert row == (None, None)
