"""Regression: with a cookbook pack (its card covers 中式家常菜的做法, one document titled 红烧肉) and a bike-repair
pack, "红烧肉要炖多久" routed to no pack and was answered as out of scope ("no word of it is in any pack"; routing
scored cook 0.45, bikes 0.0): routing counted a word as held only when a document's text held it (not its
title), and took the question's `要炖` (a word jieba's HMM made up for the question) as a word no pack holds,
where the documents were cut `炖`.

Now a question that says the whole title of one pack's documents is routed to that pack ("names its document
'红烧肉'"), and the words routing weighs are the packs' own, cut the way their documents were indexed."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import make_settings

from retrieval.pipeline import KnowledgeBase

COOK = {
    "PACK.md": "---\nid: cook\ntitle: 家常菜谱\ncovers: [中式家常菜的做法]\n---\n",
    "hongshaorou.md": "# 红烧肉\n\n五花肉切块，冷水下锅焯水，捞出洗净。小火把冰糖炒出糖色，下肉块翻炒上色。\n"
                      "加入生抽、老抽、料酒和开水，大火烧开后转小火炖一个小时，最后大火收汁。\n",
    "tomato-egg.md": "# 番茄炒蛋\n\n鸡蛋打散炒至凝固盛出，番茄切块炒出汁水，加盐和少许糖，倒回鸡蛋翻匀即可。\n",
    "README.md": "# README\n\n这些菜谱来自家里的记录。\n",
}
BIKES = {
    "PACK.md": "---\nid: bikes\ntitle: 自行车维修手册\ncovers: [自行车的保养与维修]\n---\n",
    "chain.md": "# 更换链条\n\n用截链器拆下旧链条，按齿数比对新链条长度，穿好后用快扣连接，最后检查变速是否顺畅。\n",
    "brake.md": "# 调整刹车\n\n碟刹异响时先清洁刹车片和碟片，再调整卡钳位置，使刹车片与碟片平行。\n",
    "README.md": "# README\n\n维修记录按部件整理。\n",
}


def _pack(root: Path, files: dict[str, str]) -> str:
    root.mkdir(parents=True)
    for name, text in files.items():
        (root / name).write_text(text, encoding="utf-8")
    return str(root)


@pytest.fixture
def shelf(tmp_path):
    kb = KnowledgeBase(make_settings(tmp_path / "kb"), create=True)
    kb.packs.add("cook", _pack(tmp_path / "src" / "cook", COOK))
    kb.packs.add("bikes", _pack(tmp_path / "src" / "bikes", BIKES))
    try:
        yield kb
    finally:
        kb.close()


def test_a_question_naming_a_dish_of_the_cookbook_is_searched_there(shelf) -> None:
    result = shelf.query("红烧肉要炖多久")
    assert result.out_of_scope is None, result.routing
    assert [p["id"] for p in result.packs_used] == ["cook"]
    assert result.packs_used[0]["why"].startswith("names its document '红烧肉'")
    assert result.hits[0].title == "红烧肉"


def test_a_title_two_packs_share_names_neither_and_unrelated_questions_stay_out_of_scope(shelf) -> None:
    assert "names its document" not in str(shelf.query("README 在哪里").routing)
    assert shelf.query("怎样给猫咪剪指甲？").out_of_scope is not None
