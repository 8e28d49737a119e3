"""Replaced values are marked (``read.replaced``): a record judged no longer current stays in
the View, and its block says "no longer current" and the date of the later record that
replaced it, as of the View's date. An 80-message conversation with four updates (a job, a
car, a wedding date the user's sister moved, "allergic to nothing" → "allergic to peanuts")
goes through the real read graph with the offline defaults (rule planner, local judge, the
bundled embedder); asked as of a date before the updates, nothing is marked."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from _updates_conversation import QUESTIONS, START, messages
from langchain_core.messages import HumanMessage

from mnemon_langgraph.read._replaced import replaced_marks
from mnemon_langgraph.read._view_types import ViewRecord, render_block
from mnemon_langgraph.read.graph import create_read_graph
from mnemon_langgraph.read.state import ReadContext
from mnemon_langgraph.store import MnemonStore

NS = ("users", "maya")
ASKED = datetime(2024, 5, 1, 9, 0)
NEW_DAY = {  # the session day of each new value (sessions are two weeks apart)
    "job": START + timedelta(days=14 * 4),
    "car": START + timedelta(days=14 * 5),
    "wedding": START + timedelta(days=14 * 6),
    "allergy": START + timedelta(days=14 * 7),
}
_BLOCK = re.compile(r"<record ([^>]*)>\n(.*?)\n</record>", re.S)


def _block_of(view_text: str, words: str) -> str:
    """The header attributes of the View's block that quotes ``words``."""
    found = [head for head, body in _BLOCK.findall(view_text) if words in body]
    assert len(found) == 1, f"{words!r} is in {len(found)} blocks of the View:\n{view_text}"
    return found[0]


@pytest.fixture(scope="module")
def graph(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    path: Path = tmp_path_factory.mktemp("updates") / "memory.db"
    with MnemonStore(path) as store:  # the bundled embedder: the offline defaults
        store.ingest(NS, messages(), origin="chat")
        yield create_read_graph(source=store)


def _view(graph: Any, question: str, **context: Any) -> Any:
    out = graph.invoke(
        {"messages": [HumanMessage(question)]}, context=ReadContext(namespace=NS, **context)
    )
    return out["view"]


@pytest.mark.integration
@pytest.mark.parametrize("what", list(QUESTIONS))
def test_each_old_value_is_marked_with_the_date_that_replaced_it(graph: Any, what: str) -> None:
    question, old, new = QUESTIONS[what]
    view = _view(graph, question, now=ASKED)
    old_head = _block_of(view.text, old)
    day = NEW_DAY[what].strftime("%Y-%m-%d")
    assert 'status="no longer current as of 2024-05-01: replaced on ' in old_head, old_head
    assert day in old_head.split("status=", 1)[1], f"the mark names {day}: {old_head}"
    new_head = _block_of(view.text, new)
    assert "status=" not in new_head, "the new value is current"


@pytest.mark.integration
def test_as_of_before_the_updates_nothing_is_marked_and_no_new_value_shows(graph: Any) -> None:
    for question, old, new in QUESTIONS.values():
        view = _view(graph, question, as_of=datetime(2024, 2, 20))
        assert "status=" not in _block_of(view.text, old), "nothing later was known then"
        assert new not in view.text


@pytest.mark.integration
def test_as_of_between_updates_marks_only_what_had_changed_by_then(graph: Any) -> None:
    as_of = datetime(2024, 3, 20)  # after the job and the car, before the wedding and allergy
    for what, (question, old, new) in QUESTIONS.items():
        view = _view(graph, question, as_of=as_of)
        head = _block_of(view.text, old)
        if what in ("job", "car"):
            assert 'status="no longer current as of 2024-03-20' in head, head
            assert new in view.text
        else:
            assert "status=" not in head, head
            assert new not in view.text


def test_the_mark_names_every_day_a_later_record_changed_it_or_says_it_cannot() -> None:
    pool = [
        {
            "id": "a",
            "header": "Session 1 · 2024-01-05",
            "date": "2024-01-05T10:00",
            "session": 1,
            "position": 0,
            "text": "Maya: I drive a silver Honda Civic.",
        },
        {
            "id": "b",
            "header": "Session 2 · 2024-03-15",
            "date": "2024-03-15T10:00",
            "session": 2,
            "position": 0,
            "text": "Maya: I sold the Civic and bought a blue Tesla Model 3.",
        },
        {
            "id": "c",
            "header": "Session 3 · 2024-03-20",
            "date": "2024-03-20T10:00",
            "session": 3,
            "position": 0,
            "text": "Maya: I like quiet mornings.",
        },
    ]
    marks = replaced_marks(pool, ["a", "c"], "2024-05-01T09:00")
    assert marks["a"] == "no longer current as of 2024-05-01: replaced on 2024-03-15"
    assert marks["c"] == (
        "no longer current as of 2024-05-01: a later message or record changes it"
    )
    assert replaced_marks(pool, [], "") == {}
    assert replaced_marks(pool, ["a"])["a"] == "no longer current: replaced on 2024-03-15"
    # the header says it, escaped, and the record stands alone in its block
    vr = ViewRecord("a", ("m1",), 1, "2024-01-05", "Maya: x", status='no "longer" <current>')
    assert 'status="no &quot;longer&quot; &lt;current&gt;"' in render_block([vr])
    assert vr.to_dict()["status"] == 'no "longer" <current>'
    assert "status" not in ViewRecord("b", (), 1, None, "t").to_dict()
