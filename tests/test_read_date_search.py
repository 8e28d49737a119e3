"""``ReadSettings.date_search``: a message that names a month or day also searches those dates.

Real store (SQLite journal, BM25, FAISS) with one session a month; the record that answers
shares none of the question's words, so only the date search keeps to the named month.
"""

from __future__ import annotations

from datetime import datetime

import pytest
from langchain_core.messages import HumanMessage

from mnemon_langgraph.judges._features import named_date_range
from mnemon_langgraph.judges.local import LocalDecisionModel
from mnemon_langgraph.read.graph import create_read_graph
from mnemon_langgraph.read.settings import ReadSettings
from mnemon_langgraph.read.state import ReadContext
from mnemon_langgraph.store import MnemonStore
from mnemon_langgraph.types import Message
from tests._search_fakes import HashEmbeddings

NS = ("users", "maria")
GOLD = "Signed up at the dog shelter down the road, once a month from now on."
GOLD_ID = "D6:9"
QUESTION = "What new hobby did I pick up, as I told you on 3 June 2023?"


@pytest.mark.parametrize(
    ("message", "expect"),
    [
        ("as I told you on 3 June 2023?", ((2023, 6, 1), (2023, 6, 30))),
        ("what did I share in November 2022", ((2022, 11, 1), (2022, 11, 30))),
        ("on 2024-02-10 I said", ((2024, 2, 1), (2024, 2, 29))),  # a leap year's February
        ("from May 2022 to February 2023", ((2022, 5, 1), (2023, 2, 28))),
    ],
)
def test_the_named_months_are_searched_whole(message: str, expect: tuple) -> None:
    found = named_date_range(message)
    assert found is not None
    (y0, m0, d0), (y1, m1, d1) = expect
    assert found[0] == datetime(y0, m0, d0)
    assert found[1].date() == datetime(y1, m1, d1).date()
    assert (found[1].hour, found[1].minute, found[1].second) == (23, 59, 59)


@pytest.mark.parametrize(
    "message", ["what hobby did I pick up?", "in June", "on 2023-13-45", "May I ask you 2023"]
)
def test_no_calendar_month_named_means_no_date_search(message: str) -> None:
    assert named_date_range(message) is None


@pytest.fixture
def store(tmp_path):
    store = MnemonStore(tmp_path / "j.sqlite", embeddings=HashEmbeddings(dim=48))
    messages = []
    for month in range(1, 13):
        texts = [
            f"Any new hobby you picked up lately? I told you about the {month} new things.",
            "I pick up a new hobby every month, it keeps me curious and happy.",
            "What did I tell you? A new hobby, I said, a new hobby to pick up.",
        ]
        if month == 6:
            texts.append(GOLD)
        for i, text in enumerate(texts):
            messages.append(
                Message(
                    id=GOLD_ID if text == GOLD else f"D{month}:{i + 1}",
                    speaker="Maria" if i % 2 == 0 else "John",
                    text=text,
                    session=month,
                    timestamp=datetime(2023, month, 3, 10, i),
                )
            )
    store.ingest(NS, messages, origin="test", pack=False)
    yield store
    store.close()


def _view(store: MnemonStore, question: str, **settings):
    # small pages and one round: the pool holds what the first searches find, not the
    # whole (small) history
    graph = create_read_graph(
        source=store,
        judge=LocalDecisionModel(embeddings=store.embeddings),
        settings=ReadSettings(page_records=4, max_rounds=1, **settings),
    )
    return graph.invoke({"messages": [HumanMessage(question)]}, context=ReadContext(namespace=NS))[
        "view"
    ]


def test_a_named_date_adds_a_search_kept_to_that_month(store: MnemonStore) -> None:
    view = _view(store, QUESTION)
    dated = [s for s in view.trace["searches"] if s["origin"] == "date"]
    assert len(dated) == 1
    index = dated[0]["index"]
    found_by_date = [p for p in view.trace["pool"] if index in {f[0] for f in p["found"]}]
    assert found_by_date  # the date search pooled something
    # and only June's records (a message id names its session, one session a month)
    assert all(m.startswith("D6:") for p in found_by_date for m in p["message_ids"])
    # the answer, which shares no word with the question
    assert any(GOLD_ID in p["message_ids"] for p in found_by_date)
    assert GOLD_ID in view.message_ids


def test_without_a_date_or_with_it_off_there_is_no_date_search(store: MnemonStore) -> None:
    for view in (
        _view(store, "What new hobby did I pick up lately?"),
        _view(store, QUESTION, date_search=False),  # negative control: the switch
    ):
        origins = [s["origin"] for s in view.trace["searches"]]
        assert origins and "date" not in origins


def test_the_answer_is_found_only_through_the_date(store: MnemonStore) -> None:
    """Negative control for the first test: without the date search the record that
    answers shares no word with the question and stays out of the pool."""
    # (the dense sessions' searches off too: kept to June, the message's own search finds
    # the answer by its gist, without the date: tests/test_dense_sessions.py)
    view = _view(store, QUESTION, date_search=False, session_searches=0)
    assert view.records  # the View is not empty: the other months' records fill it
    assert not any(GOLD_ID in p["message_ids"] for p in view.trace["pool"])
