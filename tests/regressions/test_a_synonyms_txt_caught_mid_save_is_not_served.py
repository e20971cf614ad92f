"""synonyms.txt is a file people edit by hand while a server runs. An editor that saves in place truncates it first:
a process that read it in that instant served a table without a synonym until the next round; a line saved with a
typo (one term, a control character) failed every query that caught up with it. The table read before serves until
the file reads again, a typo is said once (a warning, and `/health`), and an emptied file is believed when it stays
empty."""
from __future__ import annotations

import logging

from conftest import build_kb

from api.routes.health import health

SYNONYMS = "宕机, 故障, outage\n熔断, circuit breaker\n"


def _terms(kb, question: str) -> set[str]:
    return {term for term, _ in kb.synonyms.expand([question])}


def _with_synonyms(tmp_path):
    """The fixture knowledge base, its synonyms.txt saved with two groups and read; (kb, the file)."""
    kb = build_kb(tmp_path)
    path = kb.root / "synonyms.txt"
    path.write_text(SYNONYMS, encoding="utf-8")
    kb.commits.reload()
    return kb, path


def test_an_emptied_synonyms_txt_keeps_the_table_for_a_round(tmp_path):
    kb, path = _with_synonyms(tmp_path)
    try:
        table = kb.synonyms
        assert len(table) == 2 and "故障" in _terms(kb, "宕机")
        path.write_text("", encoding="utf-8")  # the instant between the editor's truncate and its write
        kb.commits.reload()
        assert kb.synonyms is table  # not an empty table served for that round
        assert kb.commits.behind()  # ... and the file is looked at again
        path.write_text(SYNONYMS + "降级, degrade\n", encoding="utf-8")  # the editor's write
        kb.commits.reload()
        assert len(kb.synonyms) == 3 and not kb.commits.behind()
    finally:
        kb.close()


def test_a_synonyms_txt_emptied_for_good_is_believed_at_the_next_round(tmp_path):
    kb, path = _with_synonyms(tmp_path)
    try:
        path.write_text("", encoding="utf-8")
        kb.commits.reload()
        assert len(kb.synonyms) == 2
        kb.commits.reload()  # still empty a round later: the person emptied it
        assert len(kb.synonyms) == 0 and "故障" not in _terms(kb, "宕机") and not kb.commits.behind()
    finally:
        kb.close()


def test_a_synonyms_txt_saved_with_a_typo_is_said_once_and_the_table_read_before_serves(tmp_path, caplog):
    kb, path = _with_synonyms(tmp_path)
    try:
        path.write_text(SYNONYMS + "只有一个词\n", encoding="utf-8")
        with caplog.at_level(logging.WARNING, logger="kgrag"):
            hits = kb.query("redis-cluster 宕机")  # catches up first: no traceback, the question is answered
            kb.query("redis-cluster 宕机")
        assert hits
        warnings = [r.getMessage() for r in caplog.records if "synonyms.txt:3" in r.getMessage()]
        assert len(warnings) == 1, warnings  # once for this version of the file, not once a round
        assert len(kb.synonyms) == 2 and "故障" in _terms(kb, "宕机")
        assert "synonyms.txt:3" in kb.stats()["synonyms_unread"]
        [warning] = health(kb)["warnings"]  # a server says so at /health: the edit is not in force
        assert warning.startswith("synonyms.txt:3:") and "the synonyms read before" in warning
        path.write_text(SYNONYMS + "降级, degrade\n", encoding="utf-8")  # fixed
        kb.query("redis-cluster 宕机")
        assert len(kb.synonyms) == 3 and "synonyms_unread" not in kb.stats() and "warnings" not in health(kb)
    finally:
        kb.close()
