"""Regression: "开了恢复模式是不是就能挡住建表删表？" weighed 是不是 as one of its key words.

jieba cuts 是不是 (and, once a knowledge base taught it, 能不能 and the like) as one word, and the
list of question words only had 是否 and 吗: the extractive answer then scored sentences by a word
that says what kind of answer is wanted, and the judge asked the passages to hold it.
"""

from __future__ import annotations

from retrieval.answer.terms import QUESTION_WORDS, key_terms


def test_shi_bu_shi_is_a_question_word():
    assert [t.text for t in key_terms("开了恢复模式是不是就能挡住建表删表？")] == ["恢复模式", "挡住", "建表", "删表"]


def test_every_a_not_a_question_form_is_a_question_word():
    assert {"是不是", "能不能", "会不会", "可不可以", "要不要", "有没有"} <= QUESTION_WORDS
