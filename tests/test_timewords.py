"""Time words in questions (zh and en) -> the as-of date, against a fixed today."""

from __future__ import annotations

import datetime as dt

import pytest

from kg.errors import InputError
from retrieval.catalog.timewords import find_as_of, parse_as_of

TODAY = dt.date(2026, 5, 20)


@pytest.mark.parametrize(("question", "day", "words"), [
    ("去年12月那份方案里预算是多少", "2025-12-31", "去年12月"),
    ("去年的预算是多少", "2025-12-31", "去年"),
    ("前年 3 月的值班表", "2024-03-31", "前年 3 月"),
    ("上个月的发布计划", "2026-04-30", "上个月"),
    ("上月谁值班", "2026-04-30", "上月"),
    ("6 月的发布计划", "2025-06-30", "6 月"),  # June has not come yet this year: last June
    ("3月份的预算", "2026-03-31", "3月份"),
    ("十二月的计划", "2025-12-31", "十二月"),
    ("2025年1月的方案", "2025-01-31", "2025年1月"),
    ("2025年1月16日生效的版本", "2025-01-16", "2025年1月16日"),
    ("2024年的预算", "2024-12-31", "2024年"),
    ("今年的预算", None, None),
    ("last year's budget", "2025-12-31", "last year"),
    ("the budget in March 2024", "2024-03-31", "March 2024"),
    ("what changed in March", "2026-03-31", "in March"),
    ("who owns it as of 2025-01", "2025-01-31", "as of 2025-01"),
    ("the plan on 2025-01-16", "2025-01-16", "2025-01-16"),
    ("how many were sold in 2012", "2012-12-31", "in 2012"),
    ("budget last month", "2026-04-30", "last month"),
])
def test_time_words_become_a_date(question, day, words):
    found = find_as_of(question, TODAY)
    if day is None:
        assert found is None
        return
    assert (found.day.isoformat(), found.text) == (day, words)


@pytest.mark.parametrize("question", [
    "redis 超时多少", "LORA-02 的配置", "Redis 6.2 的新特性", "version 2.0 of the api", "maxPoolSize for 10 connections",
    "1990年代的技术", "2024-02-30 是哪天", "设置 3 个副本", "最近 12 个月的增长",
])
def test_no_time_word_no_date(question):
    assert find_as_of(question, TODAY) is None


def test_a_period_not_over_yet_is_capped_at_today():
    assert find_as_of("2026年5月的计划", TODAY).day == TODAY
    assert find_as_of("in 2026", TODAY).day == TODAY


def test_the_first_time_expression_counts():
    assert find_as_of("去年12月和今年3月的预算对比", TODAY).day == dt.date(2025, 12, 31)


@pytest.mark.parametrize(("value", "day"), [
    ("2025-01-16", "2025-01-16"), ("2025-01", "2025-01-31"), ("2024", "2024-12-31"), (dt.date(2024, 2, 3), "2024-02-03"),
    ("2024/2/29", "2024-02-29"),
])
def test_as_of_parameter(value, day):
    assert parse_as_of(value).isoformat() == day


def test_an_as_of_that_is_not_a_date_says_how_to_write_it():
    with pytest.raises(InputError) as error:
        parse_as_of("next week")
    assert str(error.value) == "as_of 'next week' is not a date: write YYYY-MM-DD, YYYY-MM or YYYY"
