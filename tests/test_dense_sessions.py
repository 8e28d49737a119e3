"""The first round's dense sessions searched again inside (``ReadSettings.session_searches``):
which sessions count as dense, how their records fill the first pool, and a history where the
answer is pushed off the first pages by other sessions' records and comes back this way."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from typing import Any

import pytest
from _chat_records import WordVectors
from langchain_core.messages import HumanMessage

from mnemon_langgraph.judges.fake import ScriptedDecisionModel
from mnemon_langgraph.read._pooling import build_first_pool
from mnemon_langgraph.read._sessions import (
    NEAREST,
    SESSION,
    dense_sessions,
    interleave,
    session_nearness,
)
from mnemon_langgraph.read.graph import create_read_graph
from mnemon_langgraph.read.memory import InMemorySearchSource, make_record
from mnemon_langgraph.read.settings import ExperimentSwitches, ReadSettings
from mnemon_langgraph.read.state import ReadContext
from mnemon_langgraph.types import SearchHit

NS = ("users", "ada")


def _hits(*ids_sessions: tuple[str, int]) -> list[SearchHit]:
    return [
        SearchHit(make_record(rid, f"text of {rid}", namespace=NS, session=s), rank, 1.0)
        for rank, (rid, s) in enumerate(ids_sessions)
    ]


def test_dense_sessions_count_distinct_records_and_need_two() -> None:
    first = _hits(("a", 1), ("b", 2), ("c", 2), ("d", 3))
    second = _hits(("a", 1), ("e", 3), ("b", 2), ("f", 4))
    # session 2: b, c; session 3: d, e; session 1: a twice (one record); session 4: one
    assert dense_sessions([(None, first), (None, second)], most=5) == [(None, 2), (None, 3)]
    assert dense_sessions([(None, first), (None, second)], most=1) == [(None, 2)]
    assert dense_sessions([(None, first)], most=5) == [(None, 2)]
    assert dense_sessions([(None, first), (None, second)], most=0) == []


def test_dense_sessions_break_ties_by_rank_and_keep_sources_apart() -> None:
    # sessions 5 and 6 hold two records each; 6's are ranked higher
    hits = _hits(("x", 6), ("y", 6), ("z", 5), ("w", 5))
    assert dense_sessions([(None, hits)], most=2) == [(None, 6), (None, 5)]
    # the same session number in two sources is two sessions, one record each
    one, two = _hits(("p", 7)), _hits(("q", 7))
    assert dense_sessions([("mine", one), ("team", two)], most=3) == []
    assert dense_sessions([("mine", one + _hits(("r", 7)))], most=3) == [("mine", 7)]


def test_interleave_takes_each_pages_first_then_seconds_within_room() -> None:
    a, b = _hits(("a1", 1), ("a2", 1), ("a3", 1)), _hits(("b1", 2), ("b2", 2))
    assert interleave([a, b], set(), 10) == ["a1", "b1", "a2", "b2", "a3"]
    assert interleave([a, b], {"b1"}, 3) == ["a1", "a2", "b2"]
    assert interleave([a, b], set(), 0) == []


def test_fill_takes_only_the_places_the_pages_leave() -> None:
    pages = [(0, 0, _hits(("a", 1), ("b", 2), ("c", 3))), (1, 0, _hits(("b", 2), ("d", 4)))]
    fill = [(2, 0, _hits(("b", 2), ("s1", 2), ("s2", 2))), (3, 0, _hits(("t1", 9)))]
    without = build_first_pool(pages, cap=6)
    with_fill = build_first_pool(pages, cap=6, fill=fill)
    assert {p["id"] for p in without} == {"a", "b", "c", "d"}
    assert {p["id"] for p in with_fill} == {"a", "b", "c", "d", "s1", "t1"}
    # a record the fill found too keeps that provenance
    found_b = next(p["found"] for p in with_fill if p["id"] == "b")
    assert [2, 0] in found_b
    # a full pool takes nothing from the fill, and its choice is the same
    full = build_first_pool(pages, cap=3, fill=fill)
    assert [p["id"] for p in full] == [p["id"] for p in build_first_pool(pages, cap=3)]


def _history(own_last: bool = False) -> list[Any]:
    """Session 1 is the user's kayak trip: two turns on the paddle's colour and paint, and
    the answer ("painted it bright orange"), which shares one word with the question. Ten
    other sessions each hold one record sharing four of its words, so the answer ranks
    twelfth in the whole history and first-but-two inside its session. ``own_last``: the
    session's records are stored after the others, so the others win the ties and the
    session's two turns rank eleventh and twelfth."""
    out = [
        make_record("own-1", "user: the kayak paddle colour and paint were wrong", namespace=NS),
        make_record("own-2", "user: kayak paddle colour and paint, again", namespace=NS),
        make_record("own-3", "user: I painted it bright orange", namespace=NS),
        make_record("own-4", "user: the lake was calm all week", namespace=NS),
    ]
    for s in range(2, 12):
        text = f"user: which colour of paint suits a kayak paddle, day {s}"
        out.append(make_record(f"other-{s}", text, namespace=NS, session=s))
    return out[4:] + out[:4] if own_last else out


def _turn(settings: ReadSettings, own_last: bool = False) -> dict[str, Any]:
    def answer(qid: str, question: Any, state: Any) -> float:
        rows = {r["id"]: r for r in state["records"]}
        local = qid.partition(".")[0]
        return 0.9 if "orange" in str(rows.get(local, {}).get("text", "")) else 0.2

    graph = create_read_graph(
        source=InMemorySearchSource(_history(own_last)),
        judge=ScriptedDecisionModel(answers=answer),
        settings=settings,
    )
    out = graph.invoke(
        {"messages": [HumanMessage("What colour did I paint my kayak paddle?")]},
        context=ReadContext(namespace=NS),
    )
    return out["view"].to_dict()


def test_the_answer_pushed_off_the_first_pages_comes_back_from_its_dense_session() -> None:
    base = replace(
        ReadSettings(), max_rounds=1, page_records=8, instruction_records=0, session_searches=0
    )
    without = _turn(base)
    with_it = _turn(replace(base, session_searches=2))
    pooled = {p["id"] for p in without["trace"]["pool"]}
    assert "own-3" not in pooled, "the history must push the answer off the first pages"
    assert {"own-1", "own-2"} <= pooled  # its session is the dense one
    sessions = [s for s in with_it["trace"]["searches"] if s["origin"] == SESSION]
    assert [s["session"] for s in sessions] == [1]  # no other session holds two hits
    assert sessions[0]["query"] == "What colour did I paint my kayak paddle?"
    assert "own-3" in {p["id"] for p in with_it["trace"]["pool"]}
    assert "own-3" in [r["id"] for r in with_it["records"]]
    assert "own-3" not in [r["id"] for r in without["records"]]
    # the first pool never passes its cap
    assert len(with_it["trace"]["pool"]) <= base.pool_size


def test_the_dense_sessions_are_counted_over_session_depth_hits() -> None:
    """The session's two turns rank eleventh and twelfth: a page of eight shows none of
    them, twelve hits show both."""
    base = replace(
        ReadSettings(), max_rounds=1, page_records=8, instruction_records=0, session_searches=2
    )
    shallow = _turn(replace(base, session_depth=8), own_last=True)
    deep = _turn(replace(base, session_depth=12), own_last=True)
    assert not [s for s in shallow["trace"]["searches"] if s["origin"] == SESSION]
    assert "own-3" not in {p["id"] for p in shallow["trace"]["pool"]}
    assert [s["session"] for s in deep["trace"]["searches"] if s["origin"] == SESSION] == [1]
    assert "own-3" in {p["id"] for p in deep["trace"]["pool"]}
    # the planned searches' pages are still pages: the deeper read only counts sessions
    planned = [c for c in deep["trace"]["search_calls"] if c["origin"] != SESSION]
    assert planned and all(c["returned"] <= 8 for c in planned)
    assert max(c["returned"] for c in planned) == 8


def test_ainvoke_searches_the_same_dense_sessions_as_invoke() -> None:
    settings = replace(
        ReadSettings(), max_rounds=1, page_records=8, instruction_records=0, session_searches=2
    )
    graph = create_read_graph(
        source=InMemorySearchSource(_history()),
        judge=ScriptedDecisionModel(answers=lambda qid, question, state: 0.5),
        settings=settings,
    )
    args = (
        {"messages": [HumanMessage("What colour did I paint my kayak paddle?")]},
        ReadContext(namespace=NS),
    )
    sync = graph.invoke(args[0], context=args[1])["view"]
    asyn = asyncio.run(graph.ainvoke(args[0], context=args[1]))["view"]
    sessions = [s for s in sync.trace["searches"] if s["origin"] == SESSION]
    assert sessions and sessions == [s for s in asyn.trace["searches"] if s["origin"] == SESSION]
    assert "own-3" in sync.record_ids and sync.record_ids == asyn.record_ids


def test_fill_places_give_the_fill_room_in_a_full_pool() -> None:
    pages = [(0, 0, _hits(("a", 1), ("b", 2), ("c", 3))), (1, 0, _hits(("b", 2), ("d", 4)))]
    fill = [(2, 0, _hits(("b", 2), ("s1", 2), ("s2", 2))), (3, 0, _hits(("t1", 9)))]
    planned = [p["id"] for p in build_first_pool(pages, cap=3)]
    assert len(planned) == 3
    sure = build_first_pool(pages, cap=3, fill=fill, fill_places=2)
    ids = {p["id"] for p in sure}
    assert len(sure) == 3  # the pool's size is unchanged
    # each dense session's first new record, in place of the last-chosen planned one(s)
    assert {"s1", "t1"} <= ids
    assert ids - {"s1", "t1"} == {"a"}  # the first page's first, chosen first
    # places the fill cannot use go back to the planned searches' records
    empty = [(2, 0, _hits(("a", 1), ("b", 2)))]
    assert [p["id"] for p in build_first_pool(pages, cap=3, fill=empty, fill_places=2)] == planned
    # 0 places: the fill takes only what is left, as before
    assert [p["id"] for p in build_first_pool(pages, cap=3, fill=fill, fill_places=0)] == planned


def test_session_places_bring_back_the_answer_when_the_planned_pages_fill_the_pool() -> None:
    base = replace(
        ReadSettings(),
        max_rounds=1,
        page_records=8,
        pool_size=8,
        instruction_records=0,
        session_searches=2,
    )
    without = _turn(base)
    with_it = _turn(replace(base, experiments=ExperimentSwitches(session_places=2)))
    assert SESSION in {s["origin"] for s in without["trace"]["searches"]}
    assert len(without["trace"]["pool"]) == 8  # the planned pages leave the session no place
    assert "own-3" not in {p["id"] for p in without["trace"]["pool"]}
    assert "own-3" in {p["id"] for p in with_it["trace"]["pool"]}
    assert len(with_it["trace"]["pool"]) <= 8


def test_session_queries_search_each_dense_session_with_every_planned_query() -> None:
    base = replace(
        ReadSettings(), max_rounds=1, page_records=8, instruction_records=0, session_searches=2
    )
    switched = replace(base, experiments=ExperimentSwitches(session_queries=True))
    one = [s for s in _turn(base)["trace"]["searches"] if s["origin"] == SESSION]
    every = _turn(switched)["trace"]["searches"]
    planned = [s["query"] for s in every if s["round"] == 1 and s["origin"] != SESSION]
    in_session = [s for s in every if s["origin"] == SESSION]
    assert [s["query"] for s in one] == ["What colour did I paint my kayak paddle?"]
    assert len(set(planned)) >= 2, "the planner must word more than the message"
    assert {s["session"] for s in in_session} == {s["session"] for s in one}
    # the message first, then each other distinct planned query, once
    queries = [s["query"] for s in in_session]
    assert queries[0] == one[0]["query"] and len(queries) == len(set(queries)) >= 2
    assert set(queries) <= {*planned, one[0]["query"]}


class _SessionVectors:
    """Sessions of records with stored vectors (two dimensions): a vector and journal
    source for ``session_nearness``."""

    def __init__(self, vectors: dict[int, list[list[float]]]) -> None:
        self.records = {
            s: [make_record(f"s{s}r{i}", "x", namespace=NS, session=s) for i in range(len(v))]
            for s, v in vectors.items()
        }
        self.vectors = {f"s{s}r{i}": vec for s, v in vectors.items() for i, vec in enumerate(v)}

    def query_vector(self, query: str) -> list[list[float]]:
        return [[1.0, 0.0]]

    def session_records(self, namespace: Any, session: int) -> list[Any]:
        return self.records.get(session, [])

    def stored_vectors(self, namespace: Any, ids: Any) -> dict[str, Any]:
        return {i: self.vectors[i] for i in ids if i in self.vectors}


def test_session_nearness_is_the_mean_of_a_sessions_nearest_records() -> None:
    source = _SessionVectors(
        {
            1: [[0.0, 1.0]] * 5 + [[1.0, 0.0]],  # one near record among many far ones
            2: [[0.8, 0.6]] * 3 + [[0.0, 1.0]],  # three fairly near ones
            3: [],
        }
    )
    near = session_nearness(source, [1, 2, 3, 4], "paddle")
    assert near[2] > near[1] > near[3]
    assert near[1] == pytest.approx((1.0 + 0.0 + 0.0) / NEAREST)
    assert near[2] == pytest.approx(0.8)
    assert near[3] == near[4] == -1.0


def test_session_nearness_keeps_the_counts_order_without_stored_vectors() -> None:
    base = replace(
        ReadSettings(), max_rounds=1, page_records=8, instruction_records=0, session_searches=1
    )
    count = [s for s in _turn(base)["trace"]["searches"] if s["origin"] == SESSION]
    near = replace(base, experiments=ExperimentSwitches(session_nearness=3))
    got = [s for s in _turn(near)["trace"]["searches"] if s["origin"] == SESSION]
    # the in-memory source stores no vectors: the count's order stays
    assert [s["session"] for s in got] == [s["session"] for s in count] == [1]


def _near_and_dense() -> list[Any]:
    """Session 1 holds three records sharing the question's words among many others (the
    densest); session 2 two records that say little else (the nearest)."""
    filler = "with the harbour crew and the long list of ropes, tides, sails and buoys"
    dense = [
        make_record(f"d{i}", f"user: kayak paddle colour {filler} {i}", namespace=NS, session=1)
        for i in range(3)
    ]
    near = [
        make_record(f"n{i}", "user: the colour I paint my kayak paddle", namespace=NS, session=2)
        for i in range(2)
    ]
    return dense + near


def test_session_nearness_searches_the_nearest_of_the_densest_sessions() -> None:
    base = replace(
        ReadSettings(), max_rounds=1, page_records=8, instruction_records=0, session_searches=1
    )
    near = replace(base, experiments=ExperimentSwitches(session_nearness=2))
    views = []
    message: Any = {"messages": [HumanMessage("What colour did I paint my kayak paddle?")]}
    for i, settings in enumerate((base, base, near, near)):
        graph = create_read_graph(
            source=WordVectors(_near_and_dense()),
            judge=ScriptedDecisionModel(answers=lambda qid, question, state: 0.5),
            settings=settings,
        )
        context = ReadContext(namespace=NS)
        if i % 2 == 0:
            views.append(graph.invoke(message, context=context)["view"])
        else:
            views.append(asyncio.run(graph.ainvoke(message, context=context))["view"])
    sessions = [
        [s["session"] for s in v.trace["searches"] if s["origin"] == SESSION] for v in views
    ]
    # by the count the densest session is searched; by nearness the nearer of the two,
    # the same under invoke and ainvoke
    assert sessions == [[1], [1], [2], [2]]
