"""jieba's dictionary read lazily from SQLite cuts exactly as jieba's own in-memory dictionary."""

from __future__ import annotations

from pathlib import Path

import jieba
import pytest

import kg
from retrieval.index.jieba_dict import LazyFreq, dictionary_file

DEMO = Path(kg.__file__).parent / "demo" / "docs"


def _texts() -> list[str]:
    texts = [p.read_text(encoding="utf-8") for p in sorted(DEMO.rglob("*.md"))]
    texts.append("订单服务依赖哪些组件？配置项 max-open-files 的默认值是多少，心跳间隔怎么调")
    return texts


@pytest.fixture
def eager() -> jieba.Tokenizer:
    tokenizer = jieba.Tokenizer()
    tokenizer.initialize()
    return tokenizer


def _lazy(promote_after: int, promote_after_calls: int = 10**9) -> jieba.Tokenizer:
    tokenizer = jieba.Tokenizer()
    tokenizer.FREQ = LazyFreq(dictionary_file(), tokenizer, promote_after=promote_after,
                              promote_after_calls=promote_after_calls)
    tokenizer.total = tokenizer.FREQ.total
    tokenizer.initialized = True
    return tokenizer


@pytest.mark.parametrize("promote_after", [10**9, 2_000])
def test_lazy_dictionary_cuts_like_jiebas_own(eager, promote_after):
    lazy = _lazy(promote_after)
    assert lazy.total == eager.total
    texts = _texts()
    for text in texts:
        assert list(lazy.cut(text, HMM=True)) == list(eager.cut(text, HMM=True))
    # Words taught at run time (entity labels) change both the same way, before and after promotion.
    for tokenizer in (lazy, eager):
        for word in ("订单服务依赖", "心跳间隔", "默认值是"):
            tokenizer.add_word(word, freq=max(tokenizer.suggest_freq(word, tune=False), 5))
    for text in texts:
        assert list(lazy.cut(text, HMM=True)) == list(eager.cut(text, HMM=True))
    assert lazy.total == eager.total
    promoted = not isinstance(lazy.FREQ, LazyFreq)
    assert promoted == (promote_after < 10**9)  # the small threshold did hand jieba the whole dict
    if promoted:
        assert lazy.FREQ["心跳间隔"] == eager.FREQ["心跳间隔"]
        assert len(lazy.FREQ) == len(eager.FREQ)


def test_many_look_ups_of_known_fragments_also_hand_jieba_the_whole_dictionary(eager):
    lazy = _lazy(10**9, promote_after_calls=5_000)
    text = "订单服务依赖哪些组件？" * 20
    for _ in range(30):
        assert list(lazy.cut(text, HMM=True)) == list(eager.cut(text, HMM=True))
    assert isinstance(lazy.FREQ, dict) and len(lazy.FREQ) == len(eager.FREQ)


def test_a_lazy_dictionary_reads_only_what_the_text_needs():
    lazy = _lazy(10**9)
    list(lazy.cut("订单服务依赖哪些组件", HMM=True))
    assert 0 < len(lazy.FREQ._known) < 200


@pytest.mark.parametrize("promote_after", [10**9, 2_000])
def test_a_taught_word_deleted_again_reads_as_jieba_ships_it(eager, promote_after):
    # What `reset_user_words` relies on: deleting what `add_word` wrote, before or after the promotion.
    lazy = _lazy(promote_after)
    text = "LORA-02 新的看门狗超时阈值 90 秒。"
    before = list(lazy.cut(text, HMM=True))
    word = "看门狗超时"
    new_keys = [word[:end] for end in range(1, len(word) + 1) if word[:end] not in lazy.FREQ]
    lazy.add_word(word, freq=50)
    assert word in list(lazy.cut(text, HMM=True))
    for text_ in _texts():  # enough look-ups to promote at the small threshold
        list(lazy.cut(text_, HMM=True))
    assert isinstance(lazy.FREQ, LazyFreq) == (promote_after == 10**9)
    for key in new_keys:
        del lazy.FREQ[key]
    lazy.total -= 50
    assert list(lazy.cut(text, HMM=True)) == before == list(eager.cut(text, HMM=True))
    assert all(lazy.FREQ.get(key) == eager.FREQ.get(key) for key in new_keys)
    if isinstance(lazy.FREQ, LazyFreq):
        lazy.FREQ._promote()  # what jieba wrote and was deleted does not come back with the whole dictionary
        assert all(lazy.FREQ.get(key) == eager.FREQ.get(key) for key in new_keys)


def test_a_second_install_of_the_same_jieba_adds_a_link_not_a_copy(tmp_path, monkeypatch):
    """The on-disk dictionary (8.7 MB) was keyed by the installed dict.txt's stat: every new venv or reinstall of the
    same jieba built another copy in the user's cache, never removed (14 of them here after a day of fresh installs).
    It is kept under its content's key now, and each install finds it through a link."""
    import os

    import retrieval.index.jieba_dict as jd

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    installs = []
    for n in range(2):  # the same bytes, installed at two different times
        copy = tmp_path / f"venv{n}" / "dict.txt"
        copy.parent.mkdir()
        copy.write_bytes(jd._dict_txt(jieba).read_bytes())
        os.utime(copy, ns=(10**18 + n, 10**18 + n))
        installs.append(copy)
    paths = []
    for copy in installs:
        monkeypatch.setattr(jd, "_dict_txt", lambda _jieba, copy=copy: copy)
        paths.append(dictionary_file())
    cache = tmp_path / "cache" / "kgrag"
    copies = [p for p in cache.iterdir() if p.is_file() and not p.is_symlink()]
    assert len(copies) == 1 and copies[0].name.startswith("jieba-c") and copies[0].stat().st_size > 5_000_000
    assert paths[0] != paths[1] and all(p.is_symlink() and p.resolve() == copies[0].resolve() for p in paths)
    assert sorted(p.name for p in cache.iterdir()) == sorted([copies[0].name, *(p.name for p in paths)])  # no leftovers
    tokenizer = jieba.Tokenizer()
    tokenizer.FREQ = LazyFreq(paths[1], tokenizer)  # read through the link
    assert tokenizer.FREQ.total == jieba.Tokenizer().gen_pfdict(tokenizer.get_dict_file())[1]
