"""Regression: a file saved several times in one day (an editor's autosave, `kg ingest --watch`) kept every save as a
version. Each was in force from today until the next one, which also began today: on no day at all. Their chunks
stayed in the catalog and the text index, shown by no query at any date, one more per save. Now a version that a
later one from the same file replaces on the day it began is dropped with the chunks only it held. Versions of
another file that claims the same document stay (dropping one would make the next ingest of that file re-add it).
Real processes and the real CLI (its human output too), and the real ASGI app."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from datetime import date
from pathlib import Path

from conftest import make_settings
from fastapi.testclient import TestClient

from api.app import create_app

WORDS = ["alpha", "bravo", "charlie", "delta", "echo"]


def _kg(*args: str, cwd: Path, today: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("KG_")}
    env["KG_TODAY"] = today
    return subprocess.run([sys.executable, "-m", "kg.cli", *args], cwd=cwd, env=env, capture_output=True, text=True,
                          encoding="utf-8", check=False, timeout=300)


def _note(word: str) -> str:
    return f"# Gateway notes\n\nThe gateway listens on the {word} port today.\n\n## Backups\n\nBackups run nightly.\n"


def _counts(kb: Path) -> tuple[int, int]:
    db = sqlite3.connect(kb / "kb.sqlite")
    try:
        return db.execute("SELECT (SELECT COUNT(*) FROM versions), (SELECT COUNT(*) FROM chunks)").fetchone()
    finally:
        db.close()


def _found(word: str, cwd: Path, today: str, *extra: str) -> bool:
    done = _kg("query", word, "--mode", "bm25", "--json", "--data-dir", "kb", *extra, cwd=cwd, today=today)
    assert done.returncode == 0, done.stderr
    return any(word in hit["text"] for hit in json.loads(done.stdout)["hits"])


def test_saves_of_one_day_leave_one_version_and_earlier_days_keep_theirs(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    note = docs / "gateway.md"
    day = "2026-03-10"
    for word in WORDS:
        note.write_text(_note(word), encoding="utf-8")
        done = _kg("ingest", "docs", "--data-dir", "kb", cwd=tmp_path, today=day)
        assert done.returncode == 0, done.stderr
    # The third to fifth saves each replaced the one before (the first, undated, is in force before today).
    assert "1 earlier version(s) of the same day replaced (1 chunks dropped: no date showed them)" in done.stdout
    listed = _kg("versions", "docs/gateway.md", "--data-dir", "kb", cwd=tmp_path, today=day).stdout.splitlines()
    assert [line.split()[0:2] for line in listed] == [["v1", "always"], ["*", "v5"]], listed
    assert _counts(tmp_path / "kb") == (2, 3)  # the backups chunk shared, alpha's and echo's
    checked = _kg("check", "--data-dir", "kb", cwd=tmp_path, today=day)
    assert checked.returncode == 0 and checked.stdout.startswith("clean: 1 documents, 3 chunks, 3 indexed"), checked.stdout

    assert _found("echo", tmp_path, day)
    assert _found("alpha", tmp_path, day, "--as-of", "2026-03-09")
    for gone in ("bravo", "charlie", "delta"):
        assert not _found(gone, tmp_path, day) and not _found(gone, tmp_path, day, "--as-of", "2026-03-09")

    # The next day's save is a version of its own: yesterday's last save was in force yesterday and stays.
    note.write_text(_note("foxtrot"), encoding="utf-8")
    nxt = _kg("ingest", "docs", "--json", "--data-dir", "kb", cwd=tmp_path, today="2026-03-11")
    assert json.loads(nxt.stdout)["versions_replaced"] == 0, nxt.stdout
    assert _counts(tmp_path / "kb") == (3, 4)
    assert _found("echo", tmp_path, "2026-03-11", "--as-of", "2026-03-10")
    assert _found("foxtrot", tmp_path, "2026-03-11")

    # A knowledge base an older kgrag wrote keeps such versions: `kg check` says so (and stays clean), and the
    # file's next changed save drops them.
    db = sqlite3.connect(tmp_path / "kb" / "kb.sqlite")
    with db:
        db.execute("INSERT INTO versions SELECT version_id || 'old', doc_id, seq - 1, 'old', source, sha256, title,"
                   " '2026-03-11', '2026-03-11', 0, ingested_at, 0 FROM versions WHERE effective_to IS NULL")
    db.close()
    checked = _kg("check", "--data-dir", "kb", cwd=tmp_path, today="2026-03-11")
    assert checked.returncode == 0 and checked.stdout.startswith("clean:"), checked.stdout
    assert "note: 1 version(s) are in force on no day" in checked.stdout, checked.stdout
    note.write_text(_note("golf"), encoding="utf-8")
    assert _kg("ingest", "docs", "--data-dir", "kb", cwd=tmp_path, today="2026-03-11").returncode == 0
    assert _counts(tmp_path / "kb")[0] == 3  # v1, v5 and the newest: foxtrot's and the old row are gone
    assert "in force on no day" not in _kg("check", "--data-dir", "kb", cwd=tmp_path, today="2026-03-11").stdout


def test_two_files_claiming_one_document_on_one_day_both_stay_and_do_not_take_turns(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    day = "2026-03-10"
    first, second = docs / "a.md", docs / "b.md"
    first.write_text("---\nid: gateway\neffective: 2026-03-10\n---\n" + _note("alpha"), encoding="utf-8")
    assert _kg("ingest", "docs/a.md", "--data-dir", "kb", cwd=tmp_path, today=day).returncode == 0
    second.write_text("---\nid: gateway\neffective: 2026-03-10\n---\n" + _note("bravo"), encoding="utf-8")
    assert _kg("ingest", "docs/b.md", "--data-dir", "kb", cwd=tmp_path, today=day).returncode == 0
    assert _counts(tmp_path / "kb")[0] == 2
    for _ in range(2):  # new modification times: each file is hashed again, and each still has its version
        for path in (first, second):
            os.utime(path, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns + 10**9))
        again = _kg("ingest", "docs", "--data-dir", "kb", cwd=tmp_path, today=day)
        assert again.returncode == 0 and again.stdout.startswith("nothing changed"), again.stdout
    assert _counts(tmp_path / "kb")[0] == 2


def test_posting_one_source_again_the_same_day_reports_the_replaced_version(tmp_path):
    settings = make_settings(tmp_path / "kb", today=date(2026, 3, 10))
    with TestClient(create_app(settings)) as client:
        outs = [client.post("/documents", json={"text": _note(word), "source": "api:gateway"}) for word in WORDS[:3]]
        assert [o.status_code for o in outs] == [201, 201, 201]
        assert [(o.json()["versions_replaced"], o.json()["chunks_dropped"]) for o in outs] == [(0, 0), (0, 0), (1, 1)]
        hits = client.post("/query", json={"query": "bravo", "k": 5, "mode": "bm25"}).json()["hits"]
        assert not any("bravo" in hit["text"] for hit in hits)
    assert _counts(tmp_path / "kb") == (2, 3)
