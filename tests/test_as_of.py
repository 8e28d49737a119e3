"""As-of Views (``ReadContext.as_of``, ``read.as_of``): no record dated after ``as_of`` — nor an
undated one — is pooled, judged or shown, on both stores, sync and async; the session reads
and the item reads keep the same bound; ``now`` follows ``as_of``; the View says its date;
without ``as_of`` nothing changes."""

from __future__ import annotations

import asyncio
import json
from datetime import date, datetime
from types import SimpleNamespace
from typing import Any

import pytest
from _reliability_common import fake_embeddings
from langchain_core.messages import HumanMessage

from mnemon_langgraph.errors import InputError
from mnemon_langgraph.items import IndexItem
from mnemon_langgraph.judges.fake import ScriptedDecisionModel
from mnemon_langgraph.read._as_of import as_of_bound, as_of_filters, items_known
from mnemon_langgraph.read._view_types import ViewRecord
from mnemon_langgraph.read.graph import create_read_graph
from mnemon_langgraph.read.memory import InMemoryItemSource, InMemorySearchSource, make_record
from mnemon_langgraph.read.settings import ReadSettings
from mnemon_langgraph.read.state import ReadContext
from mnemon_langgraph.store import MnemonStore
from mnemon_langgraph.types import Message, SearchFilters

NS = ("users", "ada")
AS_OF = datetime(2024, 2, 15, 12, 0)
MONTHS = [datetime(2024, m, 10, 9, 0) for m in (1, 2, 3, 4)]


def _messages() -> list[Message]:
    """Four sessions a month apart, each about the garden (so every search finds each),
    and an undated note."""
    out = []
    for s, day in enumerate(MONTHS, start=1):
        for i in range(3):
            text = f"Garden news {s}.{i}: the tomatoes in the garden grew {s * 10 + i} cm."
            out.append(Message(text, "user", "user", f"s{s}m{i}", day, s))
    out.append(
        Message("Garden note without a date: the tomatoes like the sun.", "user", "user", "u0")
    )
    return out


def _yes(qid: str, question: Any, state: Any) -> float:
    """Every record screened in and judged needed (only the bound keeps one out), none stale."""
    return 0.1 if "stale" in qid else 0.9


def _view(store: Any, how: str, *, run_async: bool = False) -> Any:
    graph = create_read_graph(
        source=store,
        judge=ScriptedDecisionModel(answers=_yes),
        planner=None,
        settings=ReadSettings(max_rounds=1),
    )
    state = {"messages": [HumanMessage("How tall are the tomatoes in the garden?")]}
    if how == "context":
        kwargs: dict[str, Any] = {"context": ReadContext(namespace=NS, as_of=AS_OF)}
    elif how == "configurable":  # an ISO string, as a LangGraph server passes it
        kwargs = {"config": {"configurable": {"namespace": NS, "as_of": AS_OF.isoformat()}}}
    else:
        kwargs = {"context": ReadContext(namespace=NS)}
    run = graph.ainvoke(state, **kwargs) if run_async else None
    out = asyncio.run(run) if run is not None else graph.invoke(state, **kwargs)
    return out["view"]


def _dates(store: Any, ids: list[str]) -> list[datetime | None]:
    return [r.date for r in store.get_records(NS, ids)]


@pytest.mark.parametrize("how", ["context", "configurable"])
def test_no_record_after_as_of_is_pooled_or_shown_on_either_store(
    journal_target: str, how: str
) -> None:
    with MnemonStore(journal_target, fake_embeddings()) as store:
        store.ingest(NS, _messages(), origin="chat")
        plain = _view(store, "none")
        pooled_plain = [p["id"] for p in plain.trace["pool"]]
        later = [d for d in _dates(store, pooled_plain) if d is None or d > AS_OF]
        assert later, "without as_of the later and undated records are pooled"
        for run_async in (False, True):
            view = _view(store, how, run_async=run_async)
            pooled = [p["id"] for p in view.trace["pool"]]
            assert pooled and view.records, "the records of January and February remain"
            dates = _dates(store, pooled)
            assert all(d is not None and d <= AS_OF for d in dates), dates
            judged = {j["target"] for j in view.trace["judgments"]}
            assert judged <= set(pooled)
            assert all(r.date is not None and r.date[:10] <= "2024-02-15" for r in view.records)
            assert "As of 2024-02-15 12:00" in view.text.splitlines()[1]
            assert view.trace["as_of"] == AS_OF.isoformat()
            assert "2024-03" not in view.text and "2024-04" not in view.text
            assert "without a date" not in view.text


def test_session_reads_keep_the_bound_in_their_sql(journal_target: str) -> None:
    with MnemonStore(journal_target, fake_embeddings()) as store:
        day1, day2 = datetime(2024, 2, 1), datetime(2024, 3, 1)
        msgs = [
            Message("first turn", "user", "user", "a", day1, 1),
            Message("second turn, said a month later", "user", "user", "b", day2, 1),
            Message("third turn, no date", "user", "user", "c", None, 1),
        ]
        for m in msgs:  # one record per turn
            store.ingest(NS, [m], origin="chat")
        every = store.session_records(NS, 1)
        assert [r.message_ids for r in every] == [("a",), ("b",), ("c",)]
        bound = SearchFilters(date_to=AS_OF)
        cut = store.session_records(NS, 1, filters=bound)
        assert [r.message_ids for r in cut] == [("a",)]
        cut_async = asyncio.run(store.asession_records(NS, 1, filters=bound))
        assert [r.message_ids for r in cut_async] == [("a",)]
        with pytest.raises(InputError):
            store.session_records(NS, 1, filters="2024-02-15")  # type: ignore[arg-type]


def test_now_follows_as_of_and_is_what_system_1_reads() -> None:
    seen: list[Any] = []

    def judge(qid: str, question: Any, state: Any) -> float:
        seen.append(state)
        return 0.9

    recs = [make_record("r1", "user: my garden", namespace=NS, date=MONTHS[0])]
    graph = create_read_graph(
        source=InMemorySearchSource(recs),
        judge=ScriptedDecisionModel(answers=judge),
        planner=None,
    )
    out = graph.invoke(
        {"messages": [HumanMessage("my garden?")]},
        context=ReadContext(namespace=NS, as_of=date(2024, 2, 15)),
    )
    assert out["view"].trace.get("now", "").startswith("2024-02-15") or "2024-02-15" in str(seen[0])
    assert "2024-02-15" in str(seen[0]), "System 1's date note names the as-of day"
    assert "As of 2024-02-15:" in out["view"].text  # a bare date: the whole day


def test_without_as_of_the_view_is_unchanged_byte_for_byte() -> None:
    recs = [
        make_record(f"r{i}", f"user: garden note {i}", namespace=NS, date=d, session=i + 1)
        for i, d in enumerate(MONTHS)
    ]
    graph = create_read_graph(
        source=InMemorySearchSource(recs), judge=ScriptedDecisionModel(answers=_yes), planner=None
    )
    state = {"messages": [HumanMessage("garden?")]}
    plain = graph.invoke(state, context=ReadContext(namespace=NS))["view"]
    assert "As of" not in plain.text and len(plain.records) == 4
    late = graph.invoke(state, context=ReadContext(namespace=NS, as_of=datetime(2030, 1, 1)))
    assert late["view"].text.split("\n", 2)[2] == plain.text.split("\n", 1)[1]


def test_item_reads_are_cut_by_the_dates_of_the_records_they_link() -> None:
    recs = [
        make_record(f"r{i}", f"user: I drive a {car}", namespace=NS, date=d, session=i + 1)
        for i, (car, d) in enumerate(zip(["Civic", "Tesla"], MONTHS[::2], strict=True))
    ]
    items = [
        IndexItem(
            f"i{i}",
            NS,
            "value",
            f"drives a {car}",
            (f"r{i}",),
            subject="Ada",
            attribute="car",
            value=car,
            date=recs[i].date,
            seq=i,
        )
        for i, car in enumerate(["Civic", "Tesla"])
    ]
    dates = {r.id: r.date for r in recs}
    assert [i.id for i in items_known(items, dates, AS_OF)] == ["i0"]
    assert items_known(items, dates, None) == items
    assert items_known(items, {"r0": None}, AS_OF) == []  # an undated link: not known then
    graph = create_read_graph(
        source=_WithRecords(recs),
        judge=ScriptedDecisionModel(answers=_yes),
        planner=None,
        items=InMemoryItemSource(items),
    )
    state = {"messages": [HumanMessage("Which car do I drive?")]}
    plain = graph.invoke(state, context=ReadContext(namespace=NS))["view"]
    assert "Tesla" in plain.text and "Civic" in plain.text
    view = graph.invoke(state, context=ReadContext(namespace=NS, as_of=AS_OF))["view"]
    assert "Civic" in view.text and "Tesla" not in view.text


class _WithRecords(InMemorySearchSource):
    """An in-memory source that also reads records by id (as both stores do)."""

    def get_records(self, namespace: Any, ids: Any) -> list[Any]:
        wanted = set(ids)
        return [r for r in self._records if r.id in wanted]


def test_the_bound_parses_dates_strings_and_refuses_the_rest() -> None:
    assert as_of_bound("2024-02-15") == datetime(2024, 2, 15, 23, 59, 59, 999999)
    assert as_of_bound("2024-02-15T08:30") == datetime(2024, 2, 15, 8, 30)
    assert as_of_bound(None) is None and as_of_bound("") is None
    with pytest.raises(InputError):
        as_of_bound("last tuesday")
    with pytest.raises(InputError):
        as_of_bound(3.5)
    both = as_of_filters(AS_OF, SearchFilters(date_from=MONTHS[0], date_to=MONTHS[3]))
    assert both is not None and both.date_to == AS_OF and both.date_from == MONTHS[0]
    assert as_of_filters(None, None) is None


def test_cli_view_as_of_and_search_before_after(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from mnemon_langgraph.cli import main
    from mnemon_langgraph.cli._common import open_store

    monkeypatch.setenv("MNEMON_EMBEDDINGS", "fake")
    db = str(tmp_path / "memory.db")
    with open_store(
        db, create=True
    ) as store:  # the embedder the commands use (fake, by the variable)
        store.ingest(NS, _messages(), origin="chat")
    ns = ["--db", db, "--user", "ada"]
    assert main(["view", "How tall are the tomatoes?", *ns, "--as-of", "2024-02-15"]) == 0
    out = capsys.readouterr().out
    assert "As of 2024-02-15:" in out and 'date="2024-02-10"' in out
    assert "2024-03-10" not in out and "2024-04-10" not in out
    assert (
        main(["search", "tomatoes garden", *ns, "-k", "20", "--json", "--before", "2024-02-10"])
        == 0
    )
    dates = [h["date"] for h in json.loads(capsys.readouterr().out)]
    assert dates and all(d is not None and d[:10] <= "2024-02-10" for d in dates)
    assert "2024-02-10T09:00:00" in dates  # a bare date includes that day
    assert (
        main(["search", "tomatoes garden", *ns, "-k", "20", "--json", "--after", "2024-03-01"]) == 0
    )
    dates = [h["date"] for h in json.loads(capsys.readouterr().out)]
    assert dates and all(d is not None and d[:10] >= "2024-03-01" for d in dates)
    with pytest.raises(SystemExit):
        main(["view", "x", *ns, "--as-of", "last tuesday"])


def test_eval_dates_come_from_the_gold_evidence() -> None:
    from mnemon_langgraph.eval.as_of import (
        after_as_of,
        as_of_summary,
        locomo_as_of,
        longmemeval_as_of,
    )

    dates = {"a_1": MONTHS[0], "a_2": MONTHS[0], "b_1": MONTHS[2], "c_1": MONTHS[3], "u": None}
    as_of, old = longmemeval_as_of(["a_1", "b_1", "c_1"], dates) or (None, [])
    assert as_of == MONTHS[0] + (MONTHS[2] - MONTHS[0]) / 2 and old == ["a_1"]
    assert longmemeval_as_of(["a_1", "a_2"], dates) is None  # one date: no earlier evidence
    assert locomo_as_of(["a_1", "b_1", "u"], dates) == datetime(2024, 3, 11, 9, 0)
    assert locomo_as_of(["u"], dates) is None

    view = SimpleNamespace(
        records=(
            ViewRecord("r1", ("a_1",), 1, None, "t"),
            ViewRecord("r2", ("c_1",), 3, None, "t"),
        ),
        trace={
            "pool": [{"message_ids": ["a_1"]}, {"message_ids": ["u"]}, {"message_ids": ["b_1"]}]
        },
    )
    assert after_as_of(view, dates, MONTHS[1]) == {"pool_after_as_of": 2, "view_after_as_of": 1}
    rows = [
        {"as_of": "x", "old_evidence": ["a_1"], "old_evidence_shown": True, "pool_after_as_of": 0},
        {"as_of": "x", "old_evidence": ["b_1"], "old_evidence_shown": False, "view_after_as_of": 1},
    ]
    assert as_of_summary(rows) == {
        "questions": 2,
        "pools_with_a_later_record": 0,
        "views_with_a_later_record": 1,
        "old_evidence_shown": 1,
        "old_evidence_questions": 2,
    }
    assert as_of_summary([{"question": "q"}]) is None


def test_eval_locomo_as_of_evidence_pools_nothing_later(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mnemon_langgraph.cli import main

    monkeypatch.setenv("MNEMON_EMBEDDINGS", "fake")
    sample = "notebooks/data/allotment_year.json"
    out = tmp_path / "eval"
    argv = ["eval", "locomo", sample, "--out", str(out), "--limit-questions", "6"]
    assert main([*argv, "--no-plots", "--no-progress", "--as-of-evidence"]) == 0
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    asked = [r for r in rows if r.get("as_of")]
    assert asked, "the sample's questions have dated evidence"
    assert all(r["pool_after_as_of"] == 0 and r["view_after_as_of"] == 0 for r in asked)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["as_of"]["questions"] == len(asked)
    assert summary["as_of"]["pools_with_a_later_record"] == 0
