"""Traditional and simplified Chinese meet (`retrieval.index.analysis.fold_traditional`).

A note written in traditional characters (a colleague in Taiwan or Hong Kong) was found by no question written in
simplified ones, and the other way round: 結算 and 结算 were different words to the index, to jieba (whose dictionary is
simplified: 帳務系統 was cut into single characters) and to the entity linker. Now both are read as simplified wherever
text is matched, never where it is shown. bench/traditional.py measures it on the Chinese sets (ops_dev_zh R@5 with
its passages in traditional characters 46.2 -> 62.3 in bm25 mode, as they are 62.3). An index written before (recipe 2)
is upgraded for free when it holds no traditional character, and `kg check` asks for `--repair` when it does.
Real CLI (its human output too), whoosh on disk, real jieba and spaCy.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from conftest import kg_in_new_process, kg_process, make_settings

from retrieval.index import analysis
from retrieval.index.analysis import analyze, normalize_text
from retrieval.pipeline import KnowledgeBase

TRADITIONAL = "# 帳務系統\n\n帳務系統每日凌晨結算，結算失敗時請檢查資料庫連線。\n"
SIMPLIFIED = "# 订单服务\n\n订单服务的超时时间是 800 毫秒，重启命令是 systemctl restart order。\n"


def test_both_scripts_read_as_one_one_character_for_one():
    assert normalize_text("帳務系統每日凌晨結算，後臺") == "帐务系统每日凌晨结算,后台"
    assert len(normalize_text("結算後臺頭髮")) == len("結算後臺頭髮")  # offsets do not move
    assert analyze("帳務系統的結算") == analyze("帐务系统的结算")
    assert normalize_text("Redis 集群") == "Redis 集群"  # simplified and Latin text as before


def test_a_traditional_note_answers_a_simplified_question_and_back_through_the_real_cli(tmp_path: Path):
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "billing.md").write_text(TRADITIONAL, encoding="utf-8")
    (notes / "orders.md").write_text(SIMPLIFIED, encoding="utf-8")
    (tmp_path / "relations.csv").write_text("source,relation,target\n帐务系统,dependsOn,数据库\n", encoding="utf-8")
    kb = ["--data-dir", str(tmp_path / "kb")]
    kg_in_new_process("import", "relations.csv", *kb, cwd=tmp_path)
    kg_in_new_process("ingest", "notes", "-q", *kb, cwd=tmp_path)

    out = kg_in_new_process("query", "帐务系统什么时候结算？", *kb, cwd=tmp_path)
    assert "1. 帳務系統" in out and "帳務系統每日凌晨結算" in out, out  # shown as written
    assert "entities: 帐务系统" in out, out  # the table's entity, named in simplified, linked from the note
    hits = json.loads(kg_in_new_process("query", "訂單服務的超時時間", "--mode", "bm25", "--json", *kb, cwd=tmp_path))["hits"]
    assert [h["title"] for h in hits][:1] == ["订单服务"]
    assert kg_in_new_process("check", *kb, cwd=tmp_path).startswith("clean:")


def test_taiwan_words_meet_the_mainland_ones_in_both_directions(tmp_path: Path):
    """Taiwan writes 伺服器 / 執行緒 / 記憶體 where the mainland writes 服务器 / 线程 / 内存 (OpenCC's TWPhrasesRev): in a
    run written in traditional characters the mainland words stand beside them, in the index and in a question."""
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "tw.md").write_text("# 維運手冊\n\n記憶體不足時請重新啟動伺服器。\n", encoding="utf-8")
    (notes / "cn.md").write_text("# 调优\n\n线程数的默认值是 8。\n", encoding="utf-8")
    with KnowledgeBase(make_settings(tmp_path / "kb"), create=True) as kb:
        kb.ingest_paths([notes])
        hit = kb.query("重启服务器", k=1, mode="bm25").hits[0]
        assert hit.title == "維運手冊" and "伺服器" in hit.why["bm25"]["words"]  # said as the note writes it
        assert [h.title for h in kb.query("執行緒數預設是多少", k=1, mode="bm25").hits] == ["调优"]
    terms = analyze("記憶體不足時請重新啟動伺服器")
    assert {("记忆体", 0), ("内存", 0), ("伺服器", 4), ("服务器", 4)} <= set(terms)  # beside them, at their positions
    assert "设置" not in [t for t, _ in analyze("请设定默认值")]  # 设定 is Taiwan's 设置, but simplified text is as before


def _recipe(kb_dir: Path) -> str:
    db = sqlite3.connect(kb_dir / "kb.sqlite")
    try:
        return db.execute("SELECT value FROM kb_state WHERE key = 'index_recipe'").fetchone()[0]
    finally:
        db.close()


def _older_index(tmp_path: Path, monkeypatch, text: str) -> Path:
    """A knowledge base whose index was written as kgrag wrote it before the folding (recipe 2)."""
    notes = tmp_path / "notes"
    notes.mkdir(parents=True)
    (notes / "note.md").write_text(text, encoding="utf-8")
    kb_dir = tmp_path / "kb"
    with monkeypatch.context() as patch:
        patch.setattr(analysis, "_traditional", lambda: ({}, None))
        with KnowledgeBase(make_settings(kb_dir), create=True) as kb:
            kb.ingest_paths([notes])
            with kb.store.transaction():
                kb.store.db.execute("UPDATE kb_state SET value = '2' WHERE key = 'index_recipe'")
    return kb_dir


def test_an_older_index_with_traditional_text_is_repaired_and_one_without_is_upgraded_for_free(tmp_path, monkeypatch):
    kb_dir = _older_index(tmp_path / "a", monkeypatch, TRADITIONAL)
    kb = ["--data-dir", str(kb_dir)]
    assert "no passage matches" in kg_in_new_process("query", "结算", "--mode", "bm25", *kb, cwd=tmp_path)
    check = kg_process("check", *kb, cwd=tmp_path)
    assert check.returncode == 1, check.stderr
    check = check.stdout
    assert "Taiwan's words with the mainland's): --repair indexes its 1 chunk(s) again" in check, check
    kg_in_new_process("check", "--repair", *kb, cwd=tmp_path)
    assert _recipe(kb_dir) == "3"
    assert "帳務系統每日凌晨結算" in kg_in_new_process("query", "结算", "--mode", "bm25", *kb, cwd=tmp_path)

    plain = _older_index(tmp_path / "b", monkeypatch, SIMPLIFIED)
    kb = ["--data-dir", str(plain)]
    assert kg_in_new_process("check", *kb, cwd=tmp_path).startswith("clean:")  # nothing to index again
    (tmp_path / "b" / "notes" / "more.md").write_text("# 库存\n\n库存每 5 分钟同步一次。\n", encoding="utf-8")
    out = kg_in_new_process("ingest", str(tmp_path / "b" / "notes"), *kb, cwd=tmp_path)
    assert "kg check --repair" not in out and _recipe(plain) == "3", out
