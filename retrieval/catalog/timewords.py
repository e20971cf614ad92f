"""A question (zh or en) and a "today" in, the date whose versions it asks about out: 去年12月, 上个月, 6 月, 2025年1月, last year, in March 2024, as of 2025-01 ...

A period means its last day (the state of things by the end of it: "去年" on 2026-05-01 is
2025-12-31); a period not yet over (今年, this month) is today; a month without a year ("6 月",
"in March") is the most recent one that has begun. Only the first time expression counts.
"""

from __future__ import annotations

import calendar
import datetime as dt
import re
from dataclasses import dataclass

from kg.errors import InputError

__all__ = ["TimeReference", "as_of_day", "find_as_of", "parse_as_of"]

_MONTHS = {name: i for i, name in enumerate(calendar.month_name) if name} | {
    name: i for i, name in enumerate(calendar.month_abbr) if name}
_MONTH_RE = "|".join(sorted((m.lower() for m in _MONTHS), key=len, reverse=True)) + r"|sept"
_ZH_DIGITS = {"一": 1, "二": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9, "十": 10,
              "十一": 11, "十二": 12, "两": 2}
_ZH_MONTH = r"(\d{1,2}|十[一二]?|[一二三四五六七八九])\s*月(?:份)?"


@dataclass(frozen=True)
class TimeReference:
    day: dt.date
    text: str  # the words that said it


def _month_end(year: int, month: int) -> dt.date:
    return dt.date(year, month, calendar.monthrange(year, month)[1])


def _cap(day: dt.date, today: dt.date) -> dt.date:
    return min(day, today)


def _month_number(token: str) -> int | None:
    month = int(token) if token.isdigit() else _ZH_DIGITS.get(token)
    return month if month and 1 <= month <= 12 else None


def _recent_month(month: int, today: dt.date) -> dt.date:
    year = today.year if month <= today.month else today.year - 1
    return _cap(_month_end(year, month), today)


def _last_month(today: dt.date) -> dt.date:
    first = today.replace(day=1)
    return first - dt.timedelta(days=1)


# (pattern, day) in order: longer and more specific expressions first.
def _rules(today: dt.date):
    y = today.year
    return [
        (r"(?:as of|as at|since|before|until|per)\s+(\d{4})[-/.](\d{1,2})[-/.](\d{1,2})|(\d{4})[-/.](\d{1,2})[-/.](\d{1,2})",
         lambda m: dt.date(*(int(g) for g in (m.groups()[:3] if m.group(1) else m.groups()[3:])))),
        (r"(\d{4})\s*年\s*" + _ZH_MONTH + r"\s*(\d{1,2})\s*[日号]",
         lambda m: dt.date(int(m.group(1)), _month_number(m.group(2)), int(m.group(3)))),
        (r"(?:as of|as at|in|since|by)\s+(\d{4})[-/.](\d{1,2})(?![\d-])", lambda m: _cap(_month_end(int(m.group(1)), int(m.group(2))), today)),
        (r"(\d{4})\s*年\s*" + _ZH_MONTH, lambda m: _cap(_month_end(int(m.group(1)), _month_number(m.group(2))), today)),
        (r"去年\s*" + _ZH_MONTH, lambda m: _month_end(y - 1, _month_number(m.group(1)))),
        (r"前年\s*" + _ZH_MONTH, lambda m: _month_end(y - 2, _month_number(m.group(1)))),
        (r"今年\s*" + _ZH_MONTH, lambda m: _cap(_month_end(y, _month_number(m.group(1))), today)),
        (r"\b(" + _MONTH_RE + r")\.?,?\s+(\d{4})\b", lambda m: _cap(_month_end(int(m.group(2)), _MONTHS_LOWER[m.group(1).lower()[:3]]), today)),
        (r"\b(?:in|of|since|by|during)\s+(" + _MONTH_RE + r")\b(?!\s+\d)", lambda m: _recent_month(_MONTHS_LOWER[m.group(1).lower()[:3]], today)),
        (r"(\d{4})\s*年(?!\s*\d|代)", lambda m: _cap(dt.date(int(m.group(1)), 12, 31), today)),
        (r"(?:as of|in|since|during|by)\s+((?:19|20)\d{2})\b", lambda m: _cap(dt.date(int(m.group(1)), 12, 31), today)),
        (r"去年|last year|a year ago", lambda m: dt.date(y - 1, 12, 31)),
        (r"前年|two years ago", lambda m: dt.date(y - 2, 12, 31)),
        (r"上个?月|last month|a month ago", lambda m: _last_month(today)),
        (r"(?<![\d年])" + _ZH_MONTH + r"(?!\s*\d)", lambda m: _recent_month(_month_number(m.group(1)), today)),
    ]


_MONTHS_LOWER = {name.lower()[:3]: i for name, i in _MONTHS.items()}


def find_as_of(question: str, today: dt.date) -> TimeReference | None:
    """The first time expression of the question as a date, or None."""
    best: tuple[int, int, dt.date, str] | None = None
    for pattern, to_day in _rules(today):
        for match in re.finditer(pattern, question, flags=re.I):
            try:
                day = to_day(match)
            except (ValueError, TypeError):  # 2025年13月, February 30th: not a date
                continue
            key = (match.start(), -len(match.group(0)))
            if best is None or key < best[:2]:
                best = (*key, day, match.group(0).strip())
            break  # the first match of a rule is the only one it can contribute first
    return TimeReference(best[2], best[3]) if best else None


def parse_as_of(value, today: dt.date | None = None) -> dt.date:
    """An `as_of` parameter (a date, `YYYY-MM-DD`, `YYYY-MM`, `YYYY`) -> a date; a month or year means its end."""
    if isinstance(value, dt.datetime):
        return value.date()
    if isinstance(value, dt.date):
        return value
    text = str(value).strip()
    match = re.fullmatch(r"(\d{4})(?:[-/.](\d{1,2}))?(?:[-/.](\d{1,2}))?", text)
    try:
        if match:
            year, month, day = (int(g) if g else None for g in match.groups())
            if day:
                # 2025-02-30 means the end of February, as "2025-02" does.
                return min(dt.date(year, month, 1) + dt.timedelta(days=day - 1), _month_end(year, month))
            if month:
                return _month_end(year, month)
            return dt.date(year, 12, 31)
        return dt.date.fromisoformat(text[:10])
    except ValueError:
        raise InputError(f"as_of '{text}' is not a date: write YYYY-MM-DD, YYYY-MM or YYYY") from None


def as_of_day(question: str, as_of, today: dt.date, time_words: bool = True) -> tuple[dt.date, str | None]:
    """The day whose versions a query searches, and what set it: "parameter", "question" or None (today)."""
    if as_of not in (None, ""):
        return parse_as_of(as_of), "parameter"
    if time_words:
        found = find_as_of(question, today)
        if found is not None:
            return found.day, "question"
    return today, None
