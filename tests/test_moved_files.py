"""A file moved or renamed (into a subfolder, as note-takers reorganise) stays the same document.

Before, a document's id was derived from its path whenever it was read, so a moved file became a second document: the
same passage came back twice in the hits (old path and new) until `kg ingest --sync`, which then deleted the old
document with all its versions. A file with a front matter `id:` kept its document, but got a new identical version and
the note "its text still answers questions", and `--sync` then deleted its first version. Now the move is recognised
(`retrieval.catalog.moves`): the versions follow the file, the hits name the new path, its folder's words are indexed,
`--sync` has nothing to remove. A file moved or renamed and edited at once keeps its document when at least half its
lines are the old text's and no other gone document or new file is as close. What is not a move stays as it was: a
copy (the old file still there), two files with the same text under other names (the same text under the same names
is paired by them), a file moved and rewritten without an `id:`. Real CLI (its human output too), whoosh on disk.
"""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

from conftest import kg_in_new_process, make_settings

from retrieval.pipeline import KnowledgeBase
from retrieval.types import SourceDocument

YAK = "# Yak runbook\n\nThe yakservice restarts with `yakctl restart`.\n"
YAK_2 = "# Yak runbook\n\nThe yakservice restarts with `yakctl restart` and then pages the on-call engineer.\n"


def _write(path: Path, text: str, age: int = 10) -> None:
    """A file written `age` seconds ago (older than the racy-stamp window, so it is recorded as ingested)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    when = path.stat().st_mtime - age
    os.utime(path, (when, when))


def _rows(kb_dir: Path, sql: str) -> list[tuple]:
    db = sqlite3.connect(kb_dir / "kb.sqlite")
    try:
        return db.execute(sql).fetchall()
    finally:
        db.close()


def test_a_moved_file_keeps_its_document_and_versions_through_the_real_cli(tmp_path: Path) -> None:
    notes, kb_dir = tmp_path / "notes", tmp_path / "kb"
    kb = ["--data-dir", str(kb_dir)]
    _write(notes / "yak.md", YAK)
    _write(notes / "zebra.md", "# Zebra\n\nZebra handles billing.\n")
    kg_in_new_process("ingest", "notes", "-q", *kb, cwd=tmp_path)
    _write(notes / "yak.md", YAK_2, age=5)
    kg_in_new_process("ingest", "notes", "-q", *kb, cwd=tmp_path)  # a second version of yak.md
    (notes / "runbooks").mkdir()
    (notes / "yak.md").rename(notes / "runbooks" / "yak.md")

    out = kg_in_new_process("ingest", "notes", *kb, cwd=tmp_path)
    moved = notes.resolve() / "runbooks" / "yak.md"
    assert "0 new, 0 updated, 2 unchanged document(s)" in out and "1 moved" in out, out
    assert f"moved {notes.resolve() / 'yak.md'} -> {moved}" in out, out
    hits = json.loads(kg_in_new_process("query", "yakctl", "--json", *kb, cwd=tmp_path))["hits"]
    assert [h["source"] for h in hits] == [str(moved)]  # once, under its new path
    # The new folder's name is a word of the path, indexed with every chunk (both versions').
    assert [h["source"] for h in json.loads(kg_in_new_process(
        "query", "runbooks", "--mode", "bm25", "--json", *kb, cwd=tmp_path))["hits"]] == [str(moved)]
    assert [h["source"] for h in json.loads(kg_in_new_process(
        "query", "runbooks", "--mode", "bm25", "--as-of", "2000-01-01", "--json", *kb, cwd=tmp_path))["hits"]] \
        == [str(moved)]
    versions = kg_in_new_process("versions", str(moved), *kb, cwd=tmp_path)
    assert versions.count(str(moved)) == 2 and "yak.md\n" not in versions.replace(str(moved), ""), versions
    assert "nothing changed" in kg_in_new_process("ingest", "notes", "--sync", *kb, cwd=tmp_path)
    assert _rows(kb_dir, "SELECT COUNT(*) FROM versions") == [(3,)]
    assert kg_in_new_process("check", *kb, cwd=tmp_path).startswith("clean: 2 documents, 3 chunks, 3 indexed")

    # A new file at the old path is a document of its own (the moved one still holds the id that path once gave).
    _write(notes / "yak.md", "# Yak feeding\n\nThe yak eats hay at noon.\n")
    as_json = json.loads(kg_in_new_process("ingest", "notes", "--json", *kb, cwd=tmp_path))
    assert (as_json["added"], as_json["moved"]) == (1, [])
    ids = _rows(kb_dir, "SELECT doc_id, source FROM documents ORDER BY source")
    assert len({doc_id for doc_id, _ in ids}) == 3 and [s for _, s in ids] == sorted(
        str(p) for p in (moved, notes.resolve() / "yak.md", notes.resolve() / "zebra.md"))
    assert kg_in_new_process("check", *kb, cwd=tmp_path).startswith("clean: 3 documents, 4 chunks, 4 indexed")


def test_a_file_with_an_id_moved_gets_no_new_version_and_sync_keeps_its_history(tmp_path: Path) -> None:
    notes, kb_dir = tmp_path / "notes", tmp_path / "kb"
    kb = ["--data-dir", str(kb_dir)]
    _write(notes / "yak.md", "---\nid: yak\n---\n" + YAK)
    kg_in_new_process("ingest", "notes", "-q", *kb, cwd=tmp_path)
    (notes / "ops").mkdir()
    (notes / "yak.md").rename(notes / "ops" / "yak.md")
    done = kg_in_new_process("ingest", "notes", "--json", *kb, cwd=tmp_path)
    report = json.loads(done)
    assert (report["updated"], report["unchanged"]) == (0, 1), report
    assert report["moved"] == [{"from": str(notes.resolve() / "yak.md"), "to": str(notes.resolve() / "ops" / "yak.md")}]
    kg_in_new_process("ingest", "notes", "--sync", "-q", *kb, cwd=tmp_path)
    assert _rows(kb_dir, "SELECT label, source FROM versions") == [("v1", str(notes.resolve() / "ops" / "yak.md"))]

    # Moved and edited at once: the id says which document; the edit is its second version, both from the new path.
    (notes / "ops" / "yak.md").rename(notes / "yak.md")
    _write(notes / "yak.md", "---\nid: yak\n---\n" + YAK_2)
    report = json.loads(kg_in_new_process("ingest", "notes", "--json", *kb, cwd=tmp_path))
    assert (report["updated"], len(report["moved"])) == (1, 1), report
    assert {s for (s,) in _rows(kb_dir, "SELECT source FROM versions")} == {str(notes.resolve() / "yak.md")}


def test_what_is_not_a_move_stays_as_it_was(tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    _write(notes / "a.md", YAK)
    _write(notes / "twin1.md", "# Twin\n\nTwins share one text.\n")
    _write(notes / "twin2.md", "# Twin\n\nTwins share one text.\n")
    _write(notes / "edited.md", "# Edited\n\nThe first text of the edited note.\n")
    for name in ("same1.md", "same2.md"):  # one text too, but moved with their names: paired by them
        _write(notes / "pair" / name, "# Same\n\nTwo notes, one text.\n")
    with KnowledgeBase(make_settings(tmp_path / "kb"), create=True) as kb:
        kb.ingest_paths([notes])
        (notes / "pair").rename(notes / "pairs")
        report = kb.ingest_paths([notes])
        assert sorted((Path(a).parent.name, Path(b).parent.name, Path(b).name) for a, b in report.moved) == [
            ("pair", "pairs", "same1.md"), ("pair", "pairs", "same2.md")]
        assert {Path(a).name for a, b in report.moved} == {"same1.md", "same2.md"}
        assert all(Path(a).name == Path(b).name for a, b in report.moved)
        _write(notes / "copy" / "a.md", YAK)  # a copy: a.md is still there
        for name, to in (("twin1.md", "x.md"), ("twin2.md", "y.md")):  # one text, other names: which went where?
            (notes / name).rename(notes / "copy" / to)
        (notes / "edited.md").unlink()  # moved and rewritten (no line kept), no id: a new document, the old until --sync
        _write(notes / "copy" / "edited.md", "# Edited\n\nThe second text of the edited note.\n")
        report = kb.ingest_paths([notes])
        assert (report.added, report.moved) == (4, [])
        assert len(kb.store.documents()) == 10
        synced = kb.sync([notes])
        assert sorted(Path(s).name for s in synced.deleted) == ["edited.md", "twin1.md", "twin2.md"]
        assert len(kb.store.documents()) == 7
        (notes / "copy" / "a.md").unlink()  # gone, and the same text posted through the API: not a file that moved
        posted = kb.ingest_documents([SourceDocument(source="api:yak", text=YAK, format="md")])
        assert (posted.added, posted.moved) == (1, [])


BACKUP = ("# Backups\n\nA full backup runs at 02:00 every night.\n\nBackups are kept for seven days.\n\n"
          "They are written to the backup bucket.\n\nA restore starts by stopping writes.\n")
PLAN = ("# 迁移方案\n\n目标：把订单库迁到新集群。\n\n步骤一：建立同步链路。\n\n步骤二：双写一周。\n\n"
        "步骤三：切读流量。\n\n预算：20 万元。\n")


def test_a_file_moved_or_renamed_and_edited_at_once_keeps_its_document(tmp_path: Path) -> None:
    """A note moved to another folder and touched up, a plan renamed v1 -> v2 and revised: new versions of their
    documents, through the real CLI (its human output: the move and the update); `kg versions` shows both texts."""
    notes, kb = tmp_path / "notes", tmp_path / "kb"
    _write(notes / "ops" / "plan-v1.md", PLAN)
    _write(notes / "ops" / "backup.md", BACKUP)
    kg_in_new_process("ingest", str(notes), "--data-dir", str(kb), cwd=tmp_path)
    (notes / "ops" / "plan-v1.md").unlink()  # renamed and revised
    _write(notes / "ops" / "plan-v2.md", PLAN.replace("20 万元", "25 万元") + "\n风险：切换窗口内只读。\n", age=0)
    (notes / "ops" / "backup.md").unlink()  # moved to the archive and touched up
    _write(notes / "archive" / "backup.md", BACKUP + "\nIt is kept in the archive now.\n", age=0)
    out = kg_in_new_process("ingest", str(notes), "--data-dir", str(kb), cwd=tmp_path)
    assert "0 new, 2 updated" in out and "2 moved (the same document at a new path" in out, out
    assert f"moved {notes / 'ops' / 'plan-v1.md'} -> {notes / 'ops' / 'plan-v2.md'}" in out, out
    versions = kg_in_new_process("versions", str(notes / "ops" / "plan-v2.md"), "--data-dir", str(kb), cwd=tmp_path)
    assert versions.count("plan-v2.md") == 2 and "* v2" in versions, versions
    assert "gone" not in kg_in_new_process("ingest", str(notes), "--data-dir", str(kb), cwd=tmp_path)
    assert len(_rows(kb, "SELECT doc_id FROM documents")) == 2


def test_an_edited_move_that_could_be_either_is_no_move(tmp_path: Path) -> None:
    """Two gone documents as close to one new file (a note and its copy, both deleted), or one gone document as close
    to two new files (a note split in two): which is which cannot be told, so each new file is a new document."""
    notes = tmp_path / "notes"
    _write(notes / "a" / "plan.md", PLAN)
    _write(notes / "b" / "plan.md", PLAN + "\n备注：抄送财务。\n")
    _write(notes / "c" / "plan.md", PLAN)
    with KnowledgeBase(make_settings(tmp_path / "kb"), create=True) as kb:
        kb.ingest_paths([notes])
        (notes / "a" / "plan.md").unlink()
        (notes / "b" / "plan.md").unlink()
        _write(notes / "d" / "plan.md", PLAN.replace("20 万元", "30 万元"), age=0)
        report = kb.ingest_paths([notes])
        assert (report.added, report.moved) == (1, [])
        (notes / "c" / "plan.md").unlink()
        _write(notes / "c" / "plan-part1.md", PLAN.replace("步骤三", "第三步"), age=0)
        _write(notes / "c" / "plan-part2.md", PLAN.replace("步骤二", "第二步"), age=0)
        report = kb.ingest_paths([notes])
        assert (report.added, report.moved) == (2, []), report.moved
