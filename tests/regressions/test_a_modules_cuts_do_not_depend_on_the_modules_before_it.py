"""Regression: a test's tokens depended on the tests that ran before it. jieba has one dictionary per process;
after one test module taught it 看门狗超时, another module's chunk no longer held the word 看门狗 and its search
for 看门狗 found nothing, in the full suite only (each passed alone). tests/conftest.py now returns jieba to its
own dictionary before each module (`reset_user_words`). The two modules, in the order that failed, run in a
pytest of their own: once without this suite's conftest (the search fails, as it did), once with it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

TEACHES = '''
from retrieval.index.analysis import add_user_words, query_terms


def test_teaches_jieba_a_word():
    assert add_user_words(["看门狗超时"]) == 1
    assert "看门狗" not in query_terms("LORA-02 新的看门狗超时阈值 90 秒。")
'''

SEARCHES = '''
from retrieval.index.analysis import query_terms
from retrieval.index.whoosh_index import WhooshIndex
from retrieval.types import Chunk


def test_finds_a_chunk_by_a_word_of_jiebas_own(tmp_path):
    index = WhooshIndex(tmp_path / "index")
    index.add_chunks([Chunk("c-new", "d-new", 0, "LORA-02", "", "LORA-02 新的看门狗超时阈值 90 秒。", 1, 1, "0")])
    index.commit()
    hits = index.search([(term, 1.0) for term in query_terms("看门狗")], 10)
    index.close()
    assert [h.chunk_id for h in hits] == ["c-new"]
'''


def _pytest(folder: Path) -> subprocess.CompletedProcess:
    (folder / "test_1_teaches.py").write_text(TEACHES, encoding="utf-8")
    (folder / "test_2_searches.py").write_text(SEARCHES, encoding="utf-8")
    # No plugins (6 s of start-up here), none that would change the order of the files either.
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q",
                           "test_1_teaches.py", "test_2_searches.py"],
                          cwd=folder, env=env, capture_output=True, text=True, check=False)


def test_a_word_one_module_taught_is_gone_when_the_next_module_starts(tmp_path: Path):
    without = tmp_path / "without"
    without.mkdir()
    done = _pytest(without)
    assert done.returncode == 1 and "1 failed, 1 passed" in done.stdout, done.stdout[-2000:]
    assert "test_finds_a_chunk_by_a_word_of_jiebas_own" in done.stdout

    with_conftest = tmp_path / "with"
    with_conftest.mkdir()
    shutil.copyfile(Path(__file__).parents[1] / "conftest.py", with_conftest / "conftest.py")
    done = _pytest(with_conftest)
    assert done.returncode == 0 and "2 passed" in done.stdout, done.stdout[-2000:] + done.stderr[-2000:]
