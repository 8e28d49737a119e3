"""Waves of System 1 calls: batching, concurrency, degradation, retries, usage."""

from __future__ import annotations

import asyncio
import threading
from datetime import datetime
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage
from pydantic import Field

from mnemon_langgraph.errors import ConfigurationError, InputError
from mnemon_langgraph.items import IndexItem
from mnemon_langgraph.judges.fake import ScriptedDecisionModel
from mnemon_langgraph.judges.propositions import ITEM_NEEDED, NEEDED, SATISFIES, SCREEN, STALE
from mnemon_langgraph.read._judging import (
    JudgeRequest,
    WaveResult,
    ajudge_wave,
    judge_wave,
    plan_wave,
)
from mnemon_langgraph.read._rules import Judgment, Need

NS = ("t",)


def rec(i: int, text: str | None = None, session: int | None = None) -> Any:
    from mnemon_langgraph.types import Record

    s = session if session is not None else 1 + i % 5
    return Record(
        id=f"rec-{i}",
        namespace=NS,
        session=s,
        date=datetime(2023, 5, s),
        position=i,
        speakers=("Ada",),
        message_ids=(f"m{i}",),
        text=text or f"Ada: note number {i}",
    )


def item(i: int) -> IndexItem:
    return IndexItem(
        id=f"item-{i}", namespace=NS, kind="event", text=f"event {i}", record_ids=("rec-0",)
    )


RECORDS = [rec(i) for i in range(95)]


def _by_target(result: WaveResult) -> dict[tuple[str, str, int | None], float]:
    return {(j.target_id, j.proposition, j.need_index): j.p for j in result.judgments}


def test_95_records_make_three_calls_of_at_most_40() -> None:
    calls = plan_wave([JudgeRequest([SCREEN], RECORDS, ["hi"])])
    assert [len(c.state["records"]) for c in calls] == [40, 40, 15]
    # every record judged once, ids local and short, chunks follow the caller's order
    assert sorted(t for c in calls for t in c.target_ids) == sorted(r.id for r in RECORDS)
    assert set(calls[0].target_ids) == {r.id for r in RECORDS[:40]}
    assert {r["id"] for r in calls[0].state["records"]} == {f"r{i}" for i in range(40)}


def test_records_inside_a_call_are_in_chronological_order() -> None:
    calls = plan_wave([JudgeRequest([NEEDED], [rec(1, session=3), rec(2, session=1)], ["q"])])
    headers = [r["header"] for r in calls[0].state["records"]]
    assert headers == ["Session 1 — 2023-05-01", "Session 3 — 2023-05-03"]
    assert calls[0].keys["r0.needed"][0] == "rec-2"


def test_sync_wave_runs_its_calls_concurrently() -> None:
    model = ScriptedDecisionModel(barrier=threading.Barrier(3), default=0.8)
    result = judge_wave(model, [JudgeRequest([SCREEN], RECORDS, ["hi"])])
    # A barrier of 3 only opens if the three calls are in flight together.
    assert result.errors == []
    assert result.calls == 3 and len(model.requests) == 3
    assert len(result.judgments) == 95
    assert model.max_concurrent == 3


async def test_async_wave_runs_its_calls_concurrently() -> None:
    model = ScriptedDecisionModel(barrier=asyncio.Barrier(3), default=0.8)
    result = await ajudge_wave(model, [JudgeRequest([SCREEN], RECORDS, ["hi"])])
    assert result.errors == []
    assert result.calls == 3 and len(result.judgments) == 95
    assert model.max_concurrent == 3


async def test_sync_and_async_faces_agree() -> None:
    def answer(qid: str, _q: Any, state: Any) -> float:
        return (int(qid[1:].split(".")[0]) % 10) / 10

    model = ScriptedDecisionModel(answers=answer)
    needs = [Need(0, "a"), Need(1, "b", "ALL")]
    requests = [JudgeRequest([NEEDED, STALE, SATISFIES], RECORDS[:50], ["q"], needs, round=2)]
    sync = judge_wave(model, requests)
    asyn = await ajudge_wave(model, requests)
    assert _by_target(sync) == _by_target(asyn)
    assert len(sync.judgments) == 50 * 4
    assert {j.round for j in sync.judgments} == {2}


def test_satisfies_expands_one_question_per_need() -> None:
    model = ScriptedDecisionModel(answers={"r0.need0": 0.9, "r0.need1": 0.2}, default=0.1)
    result = judge_wave(model, [JudgeRequest([SATISFIES], [rec(0)], ["q"], ["x", "y"])])
    assert sorted(model.requests[0]["questions"]) == ["r0.need0", "r0.need1"]
    assert _by_target(result) == {
        ("rec-0", "satisfies", 0): 0.9,
        ("rec-0", "satisfies", 1): 0.2,
    }
    assert all(isinstance(j, Judgment) for j in result.judgments)
    assert model.requests[0]["state"]["needs"][1] == {"index": 1, "kind": "NEED", "text": "y"}


def test_items_and_records_in_one_wave() -> None:
    model = ScriptedDecisionModel(default=0.7)
    result = judge_wave(
        model,
        [
            JudgeRequest([NEEDED], [rec(0), rec(1)], ["q"]),
            JudgeRequest([ITEM_NEEDED], [item(0), item(1), item(2)], ["q"]),
        ],
    )
    assert result.calls == 2 and result.errors == []
    props = sorted({(j.proposition, j.target_id[:4]) for j in result.judgments})
    assert props == [("item_needed", "item"), ("needed", "rec-")]
    item_call = model.requests[1]
    assert [i["id"] for i in item_call["state"]["items"]] == ["i0", "i1", "i2"]
    assert sorted(item_call["questions"]) == ["i0.item", "i1.item", "i2.item"]


def test_a_proposition_that_fits_no_target_is_refused() -> None:
    with pytest.raises(InputError):
        plan_wave([JudgeRequest([ITEM_NEEDED], [rec(0)], ["q"])])
    with pytest.raises(ConfigurationError):
        plan_wave([JudgeRequest([NEEDED], [rec(0)])], max_records_per_call=0)


def test_only_the_last_six_messages_are_sent() -> None:
    messages = [HumanMessage(f"m{i}") if i % 2 == 0 else AIMessage(f"m{i}") for i in range(9)]
    model = ScriptedDecisionModel()
    judge_wave(model, [JudgeRequest([NEEDED], [rec(0)], messages)])
    sent = model.requests[0]["state"]["messages"]
    assert [m["text"] for m in sent] == [f"m{i}" for i in range(3, 9)]
    assert sent[-1]["role"] == "user" and sent[-2]["role"] == "assistant"


def _boom_on_record_50(qid: str, _q: Any, state: Any) -> float:
    if any(r["text"] == "Ada: note number 50" for r in state["records"]):
        raise RuntimeError("boom")
    return 0.6


@pytest.mark.parametrize("face", ["sync", "async"])
def test_a_failing_call_degrades_only_itself(face: str) -> None:
    model = ScriptedDecisionModel(answers=_boom_on_record_50)
    requests = [JudgeRequest([SCREEN], RECORDS, ["q"])]
    if face == "sync":
        result = judge_wave(model, requests)
    else:
        result = asyncio.run(ajudge_wave(model, requests))
    assert result.calls == 3
    assert len(result.judgments) == 55  # the calls with records 0-39 and 80-94
    assert len(result.errors) == 1
    assert sorted(result.failed_target_ids) == sorted(r.id for r in RECORDS[40:80])
    assert "scripted/scripted" in result.errors[0] and "boom" in result.errors[0]
    judged = {j.target_id for j in result.judgments}
    assert len(result.failed_target_ids) == 40 and not judged & set(result.failed_target_ids)


async def test_timeouts_degrade_without_raising() -> None:
    model = ScriptedDecisionModel(hang=True)
    result = await ajudge_wave(model, [JudgeRequest([SCREEN], RECORDS, ["q"])], timeout_s=0.05)
    assert result.judgments == []
    assert len(result.errors) == 3 and all("timed out" in e for e in result.errors)
    assert sorted(result.failed_target_ids) == sorted(r.id for r in RECORDS)


def test_sync_timeouts_degrade_without_raising() -> None:
    model = ScriptedDecisionModel(hang=True)
    try:
        result = judge_wave(model, [JudgeRequest([SCREEN], RECORDS[:10], ["q"])], timeout_s=0.05)
    finally:
        model.release()
    assert result.judgments == [] and len(result.errors) == 1
    assert "timed out" in result.errors[0]


class _WhereScripted(ScriptedDecisionModel):
    """Records the thread each call ran on."""

    threads: list[str] = Field(default_factory=list)

    def _classify(self, state: Any, questions: Any) -> Any:
        self.threads.append(threading.current_thread().name)
        return super()._classify(state, questions)


def test_sync_waves_share_the_process_pool_and_a_hung_call_does_not_hold_it() -> None:
    hung = ScriptedDecisionModel(hang=True)
    try:
        stuck = judge_wave(hung, [JudgeRequest([SCREEN], RECORDS[:10], ["q"])], timeout_s=0.05)
        assert "timed out" in stuck.errors[0]  # its worker is still busy with the call
        model = _WhereScripted(default=0.6)
        for _ in range(10):
            result = judge_wave(model, [JudgeRequest([SCREEN], RECORDS, ["q"])])
            assert result.errors == [] and len(result.judgments) == 95
    finally:
        hung.release()
    assert len(model.threads) == 30 and all(t.startswith("mnemon-call") for t in model.threads)
    assert len(set(model.threads)) <= 4  # reused workers, not three new threads per wave


def test_missing_answers_fail_the_call() -> None:
    model = ScriptedDecisionModel(answers={"r0.needed": 0.9}, default=None)
    result = judge_wave(model, [JudgeRequest([NEEDED], RECORDS[:3], ["q"])])
    assert result.judgments == []
    assert len(result.errors) == 1 and "missing" in result.errors[0]


@pytest.mark.parametrize("bad", [1.5, -0.1, float("nan")])
def test_out_of_range_answers_fail_the_call(bad: float) -> None:
    model = ScriptedDecisionModel(default=bad, raw=True)
    result = judge_wave(model, [JudgeRequest([NEEDED], RECORDS[:3], ["q"])])
    assert result.judgments == [] and len(result.errors) == 1
    assert "outside [0, 1]" in result.errors[0]


async def test_one_retry_recovers_a_failed_call() -> None:
    model = ScriptedDecisionModel(default=0.6, error=RuntimeError("flaky"), fail_calls=1)
    result = await ajudge_wave(model, [JudgeRequest([SCREEN], RECORDS, ["q"])], retries=1)
    assert result.errors == [] and len(result.judgments) == 95
    assert result.calls == 3 and result.attempts == 4


def test_sync_retry_and_the_retry_limit() -> None:
    model = ScriptedDecisionModel(default=0.6, error=RuntimeError("flaky"), fail_calls=1)
    result = judge_wave(model, [JudgeRequest([SCREEN], RECORDS[:5], ["q"])], retries=1)
    assert result.errors == [] and result.attempts == 2 and len(result.judgments) == 5
    with pytest.raises(ConfigurationError):
        judge_wave(model, [JudgeRequest([SCREEN], RECORDS[:5], ["q"])], retries=2)


def test_no_retry_by_default() -> None:
    model = ScriptedDecisionModel(default=0.6, error=RuntimeError("flaky"), fail_calls=1)
    result = judge_wave(model, [JudgeRequest([SCREEN], RECORDS[:5], ["q"])])
    assert result.attempts == 1 and len(model.requests) == 1 and len(result.errors) == 1


def test_usage_is_summed_over_successful_calls() -> None:
    model = ScriptedDecisionModel(usage={"input_tokens": 100, "output_tokens": 7})
    result = judge_wave(model, [JudgeRequest([SCREEN], RECORDS, ["q"])])
    assert result.usage == {"input_tokens": 300, "output_tokens": 21, "total_tokens": 321}


def test_only_satisfies_without_needs_sends_nothing() -> None:
    model = ScriptedDecisionModel()
    result = judge_wave(model, [JudgeRequest([SATISFIES], RECORDS[:3], ["q"])])
    assert result.calls == 0 and model.requests == [] and result.errors == []
