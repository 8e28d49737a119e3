"""The scripted decision model used by tests, notebooks and benchmarks."""

from __future__ import annotations

import pytest
from langchain_core.decisions import Noul

from mnemon_langgraph.judges.fake import ScriptedDecisionModel

Q = {"r0.needed": Noul(instructions="a?"), "r1.needed": Noul(instructions="b?")}


def test_answers_from_a_dict_with_a_default() -> None:
    model = ScriptedDecisionModel(
        answers={"r0.needed": 0.9}, default=0.2, usage={"input_tokens": 3}
    )
    out = model.invoke({"state": {"records": []}, "questions": Q})
    assert {k: v.noul for k, v in out.nouls.items()} == {"r0.needed": 0.9, "r1.needed": 0.2}
    assert out.usage is not None and out.usage["total_tokens"] == 3
    assert model.requests[0]["state"] == {"records": []} and model.calls == 1


async def test_answers_from_a_callable_async() -> None:
    model = ScriptedDecisionModel(answers=lambda qid, q, state: 0.7 if "r1" in qid else None)
    out = await model.ainvoke({"state": "s", "questions": Q})
    assert list(out.nouls) == ["r1.needed"]


def test_errors_for_the_first_calls_only() -> None:
    model = ScriptedDecisionModel(error=ValueError("nope"), fail_calls=2)
    for _ in range(2):
        with pytest.raises(ValueError, match="nope"):
            model.invoke({"state": "s", "questions": Q})
    assert len(model.invoke({"state": "s", "questions": Q}).nouls) == 2


def test_requests_can_go_unrecorded() -> None:
    model = ScriptedDecisionModel(record_requests=False)
    model.invoke({"state": "s", "questions": Q})
    assert model.requests == [] and model.calls == 1
