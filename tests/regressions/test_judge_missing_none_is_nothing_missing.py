"""A judge writing "missing": "none" (or "无", "N/A") had its verdict stored as missing == ["none"]: a
missing item called "none" that went into the record and the follow-up query."""

from __future__ import annotations

import pytest

from retrieval.answer.judge import parse_verdict


@pytest.mark.parametrize("missing", ['"none"', '"None."', '"无"', '"N/A"', '["none"]', "null", '""'])
def test_nothing_missing_is_an_empty_list(missing):
    verdict = parse_verdict(f'{{"sufficient": true, "missing": {missing}, "followup_query": ""}}')
    assert verdict.sufficient and verdict.missing == []


def test_a_real_missing_item_stays():
    assert parse_verdict('{"sufficient": false, "missing": "none of the ports"}').missing == ["none of the ports"]
