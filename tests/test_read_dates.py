"""Relative dates of a message placed from when it is asked (``read.dates``), and the
coordinated parts of a message the rule planner searches for (``planner.question_parts``)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from langchain_core.messages import HumanMessage

from mnemon_langgraph.read._dates import SLACK_DAYS, relative_date_range
from mnemon_langgraph.read.planner import RulePlanner, question_parts
from mnemon_langgraph.read.settings import ExperimentSwitches, ReadSettings

NOW = datetime(2023, 3, 9, 14, 30)  # a Thursday


def _days(text: str, now: datetime = NOW) -> tuple[str, str]:
    found = relative_date_range(text, now)
    assert found is not None, text
    return found[0].date().isoformat(), found[1].date().isoformat()


@pytest.mark.parametrize(
    ("text", "start", "end"),
    [
        # the latest Saturday before Thursday 9 March is 4 March; +- the slack
        ("I received a piece of jewelry last Saturday from whom?", "2023-03-01", "2023-03-07"),
        # two weeks: 23 February, +- a quarter of 14 days (3) and the slack (3)
        ("What did I do two weeks ago?", "2023-02-17", "2023-03-01"),
        ("What did I buy 10 days ago?", "2023-02-22", "2023-03-04"),
        ("Where did I eat yesterday?", "2023-03-05", "2023-03-11"),
        # the past month: from 30 days back to today
        ("How many dinner parties have I attended in the past month?", "2023-02-04", "2023-03-12"),
        # a month without a year: the latest such month up to now
        ("What sports events did I watch in January?", "2022-12-29", "2023-02-03"),
        ("What did I plant in April?", "2022-03-29", "2022-05-03"),
        ("Which airline did I fly in January and February?", "2022-12-29", "2023-03-03"),
        ("What did I do last weekend?", "2023-03-01", "2023-03-08"),
        ("What did I do last week?", "2023-02-24", "2023-03-08"),
        ("What did I read last month?", "2023-01-29", "2023-03-03"),
    ],
)
def test_relative_expressions_give_their_window(text: str, start: str, end: str) -> None:
    assert _days(text) == (start, end)


@pytest.mark.parametrize(
    "text",
    [
        "What is my dog's name?",
        "How many weeks ago did I attend the festival?",  # asks for the count: no anchor
        "May I ask what my favourite colour is?",  # the verb, not the month
        "When did I go to Paris in June 2022?",  # a named date: the named-date search's
    ],
)
def test_messages_without_a_relative_date_give_none(text: str) -> None:
    assert relative_date_range(text, NOW) is None


def test_no_date_without_now() -> None:
    assert relative_date_range("What did I do last Saturday?", None) is None


def test_the_window_ends_at_the_end_of_its_last_day() -> None:
    start, end = relative_date_range("What did I do yesterday?", NOW) or (None, None)
    assert start == datetime(2023, 3, 8 - SLACK_DAYS)
    assert end is not None and (end.hour, end.minute, end.second) == (23, 59, 59)


def test_a_timezone_aware_now_is_placed_in_its_own_calendar() -> None:

    aware = NOW.replace(tzinfo=UTC)
    assert relative_date_range("yesterday?", aware) == relative_date_range("yesterday?", NOW)


@pytest.mark.parametrize(
    ("text", "parts"),
    [
        (
            "What is the total cost of the car cover and detailing spray I purchased?",
            ["total cost car cover", "detailing spray purchased"],
        ),
        (
            "Which came first, the meeting with Rachel or the pride parade?",
            ["came first", "meeting Rachel", "pride parade"],
        ),
        ("How much did I pay for rent versus groceries?", ["pay rent", "groceries"]),
    ],
)
def test_coordinated_parts_each_make_a_search(text: str, parts: list[str]) -> None:
    assert question_parts(text, 3) == parts


def test_parts_are_capped_and_a_message_without_parts_has_none() -> None:
    text = "Which came first, the meeting with Rachel or the pride parade?"
    assert question_parts(text, 2) == ["came first", "meeting Rachel"]
    assert question_parts(text, 0) == []
    assert question_parts("Where did I go on my most recent family trip?", 3) == []
    # pieces without a content word do not count as parts
    assert question_parts("And what, or why?", 3) == []


def test_the_rule_planner_adds_part_searches_only_when_asked() -> None:
    message = [HumanMessage("What is the total cost of the car cover and detailing spray?")]
    plain = RulePlanner().plan(
        message, ReadSettings(experiments=ExperimentSwitches(part_searches=0))
    )
    parts = RulePlanner().plan(
        message, ReadSettings(experiments=ExperimentSwitches(part_searches=3))
    )
    assert [s.origin for s in plain.searches if s.origin == "part"] == []
    added = [s.query for s in parts.searches if s.origin == "part"]
    assert added == ["total cost car cover", "detailing spray"]
    assert parts.searches[: len(plain.searches)] == plain.searches
