"""Rich HTML for notebooks (``_repr_html_``): the View, ``explain``, the trace, a namespace.

Every stored string is escaped (records are data), ``print`` and ``str`` stay as they were,
and ``explain`` is still a ``str`` for its callers.
"""

from __future__ import annotations

import copy
import json
import pickle
import re
from datetime import datetime
from pathlib import Path

from mnemon_langgraph.read._rules import Judgment
from mnemon_langgraph.read.html import Explanation, show_memory, show_trace, view_html
from mnemon_langgraph.read.settings import ReadSettings
from mnemon_langgraph.read.view import compose_view, explain

PAYLOAD = "<script>document.title='owned'</script><img src=x onerror=alert(1)>"


def _view():
    pool = [
        {
            "id": "r-aaaa000011112222",
            "session": 2,
            "date": "2024-03-01T10:00:00",
            "position": 0,
            "text": f"Ann: I moved to Lisbon {PAYLOAD}",
            "message_ids": ["m1"],
        },
        {
            "id": "r-bbbb000011112222",
            "session": 1,
            "date": "2024-01-01T10:00:00",
            "position": 0,
            "text": "Ann: the weather is nice",
            "message_ids": ["m2"],
        },
    ]
    judgments = [
        Judgment("r-aaaa000011112222", "needed", 0.91, None, 1),
        Judgment("r-aaaa000011112222", "satisfies", 0.8, 0, 1),
        Judgment("r-bbbb000011112222", "needed", 0.1, None, 1),
    ]
    trace = {
        "namespace": ["users", PAYLOAD],
        "needs": [{"index": 0, "text": f"where Ann lives {PAYLOAD}", "kind": "NEED"}],
        "searches": [{"index": 0, "query": f"Ann lives {PAYLOAD}", "origin": "message"}],
        "pool": [{"id": p["id"], "found": [[0, 1]], "round": 1} for p in pool],
        "judgments": [
            {"target": j.target_id, "proposition": j.proposition, "p": j.p,
             "need_index": j.need_index, "round": j.round}
            for j in judgments
        ],
        "actions": [],
        "counts": {"searches": 1, "pool": 2, "judgments": 3, "rounds": 1},
        "timings": {"by_node": [{"node": "plan", "seconds": 0.01, "model_seconds": 0.0}]},
        "settings": {"view_chars": 12_000},
    }  # fmt: skip
    return compose_view(
        pool,
        judgments,
        needs_named=True,
        index={},
        settings=ReadSettings(view_records=1),
        trace=trace,
    )


def _no_live_markup(page: str) -> None:
    assert not re.search(r"<script|<[^<>]*\bon\w+\s*=", page, re.I)  # no live tag or handler
    assert "&lt;script&gt;" in page  # the payload is there, as text


def test_view_html_groups_records_with_judgments_needs_and_budget() -> None:
    view = _view()
    page = view._repr_html_()
    _no_live_markup(page)
    assert "I moved to Lisbon" in page
    assert re.search(r"1 records, [\d,]+ of 12,000 characters", page)
    assert "serves need 0" in page  # the need the record satisfies
    assert "0.910" in page and "needed" in page  # its judgment: proposition, p
    assert "left out" in page and "r-bbbb0000" in page  # the pooled record not taken, and why
    assert str(view) == view.text and repr(view).startswith("View(1 records")


def test_explain_is_still_a_str_and_shows_a_table() -> None:
    view = _view()
    why = explain(view, "r-aaaa000011112222")
    assert isinstance(why, str) and isinstance(why, Explanation)
    assert why.startswith("record r-aaaa000011112222:") and "found by:" in why
    assert json.loads(json.dumps({"x": why})) == {"x": str(why)}
    assert copy.deepcopy(why) == why and pickle.loads(pickle.dumps(why)) == why
    page = why._repr_html_()
    _no_live_markup(page)
    assert "<table>" in page and "0.910" in page and "in the View" in page
    ambiguous = explain(view, "r-")
    assert "several records start with it" in ambiguous
    assert "several records" in ambiguous._repr_html_()


def test_trace_shows_searches_and_counts_escaped() -> None:
    shown = show_trace(_view())
    assert str(shown).startswith("trace: 1 searches, 2 pooled, 3 judgments")
    _no_live_markup(shown._repr_html_())
    assert "Ann lives" in shown._repr_html_()


def test_memory_timeline_marks_the_records_a_view_used(tmp_path: Path, monkeypatch) -> None:
    from langchain_core.messages import HumanMessage

    from mnemon_langgraph.read import ReadContext, create_read_graph
    from mnemon_langgraph.store import MnemonStore
    from mnemon_langgraph.types import Message

    monkeypatch.setenv("MNEMON_EMBEDDINGS", "fake")
    store = MnemonStore(tmp_path / "j.db")
    msgs = [
        Message(id="a1", session=1, speaker=PAYLOAD, text="I adopted a cat named Miso",
                timestamp=datetime(2024, 1, 2)),
        Message(id="a2", session=2, speaker="Ann", text="We painted the kitchen blue",
                timestamp=datetime(2024, 2, 3)),
    ]  # fmt: skip
    store.ingest(("users", "ann"), msgs, origin="t")
    from mnemon_langgraph.judges.fake import ScriptedDecisionModel

    graph = create_read_graph(source=store, judge=ScriptedDecisionModel(default=0.6))
    view = graph.invoke(
        {"messages": [HumanMessage("What is my cat called?")]},
        context=ReadContext(namespace=("users", "ann")),
    )["view"]
    shown = show_memory(store, ("users", "ann"), view=view)
    page = shown._repr_html_()
    _no_live_markup(page)
    assert "session 1" in page and "2024-01-02" in page and "session 2" in page
    cat = next(r for r in store.records(("users", "ann")) if "Miso" in r.text)
    assert cat.id in view.record_ids
    assert page.count("in the View") == len(view.record_ids) >= 1
    assert f"{cat.id[:10]} *" in str(shown)
    store.close()


def test_the_markup_check_sees_live_markup() -> None:
    """A negative control: the check above fails on an unescaped payload."""
    import pytest

    for live in (
        "<img src=x onerror=alert(1)>&lt;script&gt;",
        "<script>x()</script>&lt;script&gt;",
    ):
        with pytest.raises(AssertionError):
            _no_live_markup(live)


def test_two_views_on_one_page_keep_their_ids_apart() -> None:
    view = _view()
    a, b = (view_html(view, prefix=p) for p in ("v0-", "v1-"))
    ids_a = set(re.findall(r'id="([^"]+)"', a))
    ids_b = set(re.findall(r'id="([^"]+)"', b))
    assert ids_a and ids_a.isdisjoint(ids_b)
    assert all(i.startswith("v0-rec-") for i in ids_a)
    assert set(re.findall(r'href="#([^"]+)"', a)) <= ids_a  # the need table's links land
