"""Dates a message names relative to when it is asked ("last Saturday", "two weeks ago").

The first round's date search (``ReadSettings.date_search``) keeps the message's search to
the records dated in the months a message names with their year
(:func:`mnemon_langgraph.judges._features.named_date_range`). A message asked on a known
date (``ReadContext.now``) often names its time relative to that date instead: "a month
ago", "last Saturday", "in April" (the latest April up to now), "the past two months".
:func:`relative_date_range` turns those into a window of days around the date meant, so the
same search can keep to them (``ReadSettings.relative_date_search``).

The window is wider than the date meant: a record is dated by its session, which may be a
few days off the event it tells of, and "a month ago" is not exact. Every rule is a pure
function of the text and ``now``.
"""

from __future__ import annotations

import calendar
import re
from datetime import datetime, timedelta

from mnemon_langgraph.search._text import MONTH_PATTERN, month_number

__all__ = ["relative_date_range"]

_NUMBER_WORDS = {
    "a": 1,
    "an": 1,
    "one": 1,
    "two": 2,
    "a couple of": 2,
    "couple of": 2,
    "three": 3,
    "a few": 3,
    "few": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
}
_COUNT = r"(\d{1,3}|" + "|".join(sorted(_NUMBER_WORDS, key=len, reverse=True)) + ")"
_UNIT_DAYS = {"day": 1, "week": 7, "month": 30, "year": 365}
_AGO = re.compile(rf"\b{_COUNT}\s+(day|week|month|year)s?\s+ago\b", re.IGNORECASE)
_PAST = re.compile(
    rf"\b(?:in\s+)?the\s+(?:past|last)\s+(?:{_COUNT}\s+)?(day|week|month|year)s?\b", re.IGNORECASE
)
_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_LAST_DAY = re.compile(
    r"\b(?:last|this past)\s+(" + "|".join(_WEEKDAYS) + r"|weekend|week|month)\b", re.IGNORECASE
)
_YESTERDAY = re.compile(r"\byesterday\b", re.IGNORECASE)
# a month named without a year after it ("in April", "March and April"); "may" only
# after "in"/"of"/"during", where it is a month and not the verb
_MONTH = re.compile(
    rf"\b(?:(?:in|of|during|since)\s+)?({MONTH_PATTERN})\b(?!\s*,?\s*\d)", re.IGNORECASE
)
SLACK_DAYS = 3
"""Days added on each side of a window: a record is dated by its session, which may be a
few days off the event it tells of."""


def _count(word: str | None) -> int:
    if not word:
        return 1
    word = word.casefold()
    return int(word) if word.isdigit() else _NUMBER_WORDS.get(word, 1)


def _day(now: datetime) -> datetime:
    return now.replace(hour=0, minute=0, second=0, microsecond=0, tzinfo=None)


def _windows(text: str, now: datetime) -> list[tuple[datetime, datetime]]:
    """Every window the text names, each as (first day, last day) before the slack."""
    today = _day(now)
    out: list[tuple[datetime, datetime]] = []
    for m in _AGO.finditer(text):
        span = _count(m.group(1)) * _UNIT_DAYS[m.group(2).casefold()]
        centre = today - timedelta(days=span)
        half = timedelta(days=span // 4)
        out.append((centre - half, centre + half))
    for m in _PAST.finditer(text):
        span = _count(m.group(1)) * _UNIT_DAYS[m.group(2).casefold()]
        out.append((today - timedelta(days=span), today))
    for m in _LAST_DAY.finditer(text):
        word = m.group(1).casefold()
        if word in _WEEKDAYS:
            back = (today.weekday() - _WEEKDAYS.index(word) - 1) % 7 + 1
            day = today - timedelta(days=back)
            out.append((day, day))
        elif word == "weekend":
            back = (today.weekday() - 5 - 1) % 7 + 1  # the latest Saturday before today
            out.append((today - timedelta(days=back), today - timedelta(days=back - 1)))
        elif word == "week":
            monday = today - timedelta(days=today.weekday() + 7)
            out.append((monday, monday + timedelta(days=6)))
        else:  # last month: the calendar month before today's
            first = (today.replace(day=1) - timedelta(days=1)).replace(day=1)
            last = calendar.monthrange(first.year, first.month)[1]
            out.append((first, first.replace(day=last)))
    for _ in _YESTERDAY.finditer(text):
        out.append((today - timedelta(days=1), today - timedelta(days=1)))
    for m in _MONTH.finditer(text):
        word = m.group(1).casefold()
        if word == "may" and not m.group(0).casefold().startswith(("in", "of", "during", "since")):
            continue
        month = month_number(word)
        if month is None:
            continue
        year = today.year if month <= today.month else today.year - 1
        last = calendar.monthrange(year, month)[1]
        out.append((datetime(year, month, 1), datetime(year, month, last)))
    return out


def relative_date_range(text: str, now: datetime | None) -> tuple[datetime, datetime] | None:
    """The days ``text`` names relative to ``now``, widened by :data:`SLACK_DAYS`; or ``None``.

    Rules (``now`` = the day the message is asked):

    * "N days / weeks / months / years ago" (N a number, "a", "a couple of", "a few" …):
      N units before now, give or take a quarter of the span;
    * "the past / last [N] days / weeks / months / years": from N units before now to now;
    * "last Saturday" (any weekday; also "this past"): the latest such day before now;
      "last weekend": the latest Saturday and Sunday; "last week": the calendar week before
      this one; "last month": the calendar month before this one; "yesterday";
    * a month named without a year ("in April", "March and April"): the latest such month
      up to now ("May" only after "in", "of", "during" or "since").

    Several expressions give one window from the earliest to the latest day. Nothing after
    ``now`` is ever in a window's reason, but the slack may reach past it.

    Args:
        text: The message.
        now: When it is asked (``None``: no relative date can be placed).

    Returns:
        ``(start, end)`` (start of the first day, end of the last), or ``None``.
    """
    if now is None:
        return None
    found = _windows(text, now)
    if not found:
        return None
    slack = timedelta(days=SLACK_DAYS)
    start = min(a for a, _ in found) - slack
    end = max(b for _, b in found) + slack
    return start, end.replace(hour=23, minute=59, second=59, microsecond=999999)
