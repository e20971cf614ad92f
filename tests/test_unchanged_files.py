"""An edit is cheap: files whose size, modification time and inode are as recorded at their last ingest are
neither read nor hashed, only the edited file's new chunks are indexed and linked, and `kg ingest` of a folder
with no change answers from the catalog without opening the knowledge base (no commit, no generation)."""

from __future__ import annotations

import json
import os
import sqlite3
import time

from conftest import copy_fixture_corpus, kg_process, make_settings

from retrieval.pipeline import KnowledgeBase

HOUR = 3600


def _age(folder, seconds: int = HOUR) -> None:
    """Files last written a while ago (a file written this very second is read again: it may change in the same tick)."""
    past = time.time() - seconds
    for path in folder.rglob("*"):
        if path.is_file():
            os.utime(path, (past, past))


def _mention_rows(data) -> dict[str, list[int]]:
    with sqlite3.connect(data / "kb.sqlite") as db:
        rows = db.execute("SELECT chunk_id, rowid FROM mentions ORDER BY rowid").fetchall()
    out: dict[str, list[int]] = {}
    for chunk_id, rowid in rows:
        out.setdefault(chunk_id, []).append(rowid)
    return out


def _generation(data) -> str:
    with sqlite3.connect(data / "kb.sqlite") as db:
        return db.execute("SELECT value FROM kb_state WHERE key = 'generation'").fetchone()[0]


def test_an_edit_reads_indexes_and_links_only_the_edited_file(tmp_path):
    docs, relations = copy_fixture_corpus(tmp_path)
    _age(docs)
    with KnowledgeBase(make_settings(tmp_path / "kb"), create=True) as kb:
        kb.import_file(relations)
        first = kb.ingest_paths([docs])
        before = _mention_rows(tmp_path / "kb")

        edited = docs / "services" / "payment-service.md"
        edited.write_text(edited.read_text(encoding="utf-8").replace("24 hours", "48 hours"), encoding="utf-8")
        # Another file's content changes behind its recorded stamp (same size, same mtime): not read again.
        other = docs / "infra" / "mysql-core.md"
        text = other.read_text(encoding="utf-8")
        stamp = other.stat()
        other.write_text(text.replace("MySQL", "MyS0L", 1), encoding="utf-8")
        os.utime(other, ns=(stamp.st_atime_ns, stamp.st_mtime_ns))
        _age(edited, 60)

        report = kb.ingest_paths([docs])
        assert (report.updated, report.added, report.unchanged) == (1, 0, first.added + first.updated - 1)
        assert report.chunks_indexed == 1  # the edited paragraph's chunk, nothing else
        after = _mention_rows(tmp_path / "kb")
        relinked = {c for c in after if after[c] != before.get(c)}
        new_chunk = {h.chunk_id for h in kb.query("payment-service callback 48 hours", k=5, mode="bm25").hits}
        assert relinked and relinked <= new_chunk  # mentions written again for the new chunk only
        assert all(after[c] == rows for c, rows in before.items() if c in after)  # every other chunk's rows untouched
        assert not any("MyS0L" in h.text for h in kb.query("MyS0L", k=5, mode="bm25").hits)


def test_kg_ingest_of_an_unchanged_folder_opens_nothing_and_commits_nothing(tmp_path):
    docs, relations = copy_fixture_corpus(tmp_path)
    _age(docs)
    data = tmp_path / "kb"
    kg_process("import", str(relations), "--data-dir", str(data), cwd=tmp_path)
    done = kg_process("ingest", str(docs), "-q", "--data-dir", str(data), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    n = len([p for p in docs.rglob("*") if p.is_file()])
    generation = _generation(data)

    again = kg_process("ingest", str(docs), "-q", "--data-dir", str(data), cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert again.stdout.strip() == f"nothing changed: {n} document(s) already up to date"
    assert _generation(data) == generation  # the knowledge base was not opened for a write

    # The graph changed since: the full path runs (it may have to relink or re-cut), and says the same.
    (tmp_path / "more.csv").write_text("source,relation,target\npayment-service,dependsOn,fraud-check\n", encoding="utf-8")
    kg_process("import", str(tmp_path / "more.csv"), "--data-dir", str(data), cwd=tmp_path)
    generation = _generation(data)
    third = kg_process("ingest", str(docs), "-q", "--data-dir", str(data), cwd=tmp_path)
    assert third.stdout.strip() == f"nothing changed: {n} document(s) already up to date"
    assert _generation(data) != generation

    # A document deleted since is read and ingested again, though its file did not change.
    with sqlite3.connect(data / "kb.sqlite") as db:
        doc_id = db.execute("SELECT doc_id FROM versions WHERE source LIKE '%mysql-core.md'").fetchone()[0]
    assert kg_process("delete", doc_id, "--data-dir", str(data), cwd=tmp_path).returncode == 0
    fourth = kg_process("ingest", str(docs), "-q", "--data-dir", str(data), cwd=tmp_path)
    assert fourth.stdout.startswith("1 new, 0 updated"), fourth.stdout


def test_kg_ingest_says_when_files_it_read_from_the_folder_are_gone(tmp_path):
    docs = tmp_path / "notes"
    (docs / "a").mkdir(parents=True)
    (docs / "a" / "alpha.md").write_text("# Alpha\n\nalpha notes about redis\n", encoding="utf-8")
    (docs / "beta.md").write_text("# Beta\n\nbeta notes about nginx\n", encoding="utf-8")
    _age(docs)
    data = tmp_path / "kb"
    assert kg_process("ingest", str(docs), "--data-dir", str(data), cwd=tmp_path).returncode == 0
    (docs / "a" / "alpha.md").unlink()
    # A folder beside it whose name starts with the same letters ("notes-old"): its gone file is not this folder's.
    (tmp_path / "notes-old").mkdir()
    (tmp_path / "notes-old" / "omega.md").write_text("# Omega\n\nomega notes\n", encoding="utf-8")
    assert kg_process("ingest", str(tmp_path / "notes-old"), "--data-dir", str(data), cwd=tmp_path).returncode == 0
    (tmp_path / "notes-old" / "omega.md").unlink()

    # Nothing else changed (the path that opens no knowledge base) and a change beside it (the full path): both say so.
    for change in (None, "gamma"):
        if change:
            (docs / "gamma.md").write_text("# Gamma\n\ngamma notes\n", encoding="utf-8")
        run = kg_process("ingest", str(docs), "--data-dir", str(data), cwd=tmp_path)
        assert run.returncode == 0, run.stderr
        assert "note: 1 file ingested from here is gone, and its text still answers questions" in run.stderr
        assert str((docs / "a" / "alpha.md").resolve()) in run.stderr and f"kg ingest --sync {docs}" in run.stderr
    still = kg_process("query", "alpha", "--data-dir", str(data), "--json", cwd=tmp_path)
    assert json.loads(still.stdout)["hits"]  # as the note says: until --sync, the text answers

    synced = kg_process("ingest", "--sync", str(docs), "--data-dir", str(data), cwd=tmp_path)
    assert "removed" in synced.stdout and "note:" not in synced.stderr
    after = kg_process("ingest", str(docs), "--data-dir", str(data), cwd=tmp_path)
    assert "note:" not in after.stderr
    assert json.loads(kg_process("query", "alpha", "--data-dir", str(data), "--json", cwd=tmp_path).stdout)["hits"] == []
