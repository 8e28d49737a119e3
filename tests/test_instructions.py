"""Standing instructions found at read time: the pattern, the lane outside the fused pool, and
the View that leads with the instruction line."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from langchain_core.messages import HumanMessage

from mnemon_langgraph.judges.fake import ScriptedDecisionModel
from mnemon_langgraph.read._instructions import STANDING, instruction_query, standing_lines
from mnemon_langgraph.read.graph import create_read_graph
from mnemon_langgraph.read.memory import InMemorySearchSource, make_record
from mnemon_langgraph.read.settings import ReadSettings
from mnemon_langgraph.read.state import ReadContext

NS = ("users", "ada")
INSTRUCTION = "Always give the Latin name when I ask about gardening."


@pytest.mark.parametrize(
    "text",
    [
        "Always format code snippets with syntax highlighting when I ask about code.",
        "Please never use tabs in the examples.",
        "From now on, answer in French.",
        "I want you to always cite the source of a figure.",
        "Whenever I ask about recipes, list the ingredients first.",
        "Make sure to show units in every table.",
        "ok, never suggest a paid tool again",
    ],
)
def test_a_standing_instruction_opens_as_one(text: str) -> None:
    assert STANDING.match(text)


@pytest.mark.parametrize(
    "text",
    [
        "I always go hiking on Sundays.",
        "The band always plays too loud.",
        "Is it always this cold in March?",
        "We never met before the course.",
        "Thanks, that's what I needed.",
    ],
)
def test_a_statement_with_always_in_it_is_not_one(text: str) -> None:
    assert not STANDING.match(text)


def test_only_the_users_lines_count_and_unknown_roles_never() -> None:
    text = f"assistant: Always back up first.\nuser: {INSTRUCTION}\nuser: thanks"
    rec = make_record("r", text, roles=("assistant", "user", "user"))
    assert standing_lines(rec) == [1]
    assert standing_lines(make_record("r", text)) == []  # roles not known


def _history(with_instruction: bool) -> list[Any]:
    out = []
    for i in range(30):
        topic = ["tomatoes", "the hedge", "the compost", "the shed", "rain"][i % 5]
        out.append(
            make_record(
                f"r{i}",
                f"user: we talked about {topic} in the garden on day {i}\n"
                f"assistant: noted, {topic} it is.",
                namespace=NS,
                session=1 + i // 6,
                position=i % 6,
                message_ids=[f"m{i}a", f"m{i}b"],
                roles=("user", "assistant"),
                seq=i + 1,
            )
        )
    if with_instruction:
        out.append(
            make_record(
                "instr",
                f"assistant: happy to help with the garden.\nuser: {INSTRUCTION}",
                namespace=NS,
                session=9,
                message_ids=["ia", "ib"],
                roles=("assistant", "user"),
                seq=99,
            )
        )
    return out


def _turn(settings: ReadSettings, with_instruction: bool = True) -> Any:
    source = InMemorySearchSource(_history(with_instruction))
    judge = ScriptedDecisionModel(answers=lambda qid, q, state: 0.1)  # nothing judged needed
    graph = create_read_graph(source=source, judge=judge, planner=None, settings=settings)
    question = HumanMessage("What should I put in the shady corner by the shed?")
    return graph.invoke({"messages": [question]}, context=ReadContext(namespace=NS))["view"]


def test_the_view_leads_with_the_instruction_line_only() -> None:
    view = _turn(ReadSettings())
    first = view.records[0]
    assert first.id == "instr" and first.message_ids == ("ib",)
    assert INSTRUCTION in first.text and "happy to help" not in first.text
    assert view.trace["placement"]["instr"].startswith(
        "in the View, taken at rank 1: a standing instruction"
    )
    origins = [s["origin"] for s in view.trace["searches"]]
    assert origins.count("instructions") == 1
    query = next(s["query"] for s in view.trace["searches"] if s["origin"] == "instructions")
    assert query == instruction_query("What should I put in the shady corner by the shed?")
    [call] = [e for e in view.trace["search_calls"] if e["origin"] == "instructions"]
    assert call["new"] == 1 and call["returned"] > 1  # one record of the page holds one


def test_without_the_lane_the_instruction_is_not_found() -> None:
    view = _turn(replace(ReadSettings(), instruction_records=0))
    assert "instructions" not in [s["origin"] for s in view.trace["searches"]]
    assert "ib" not in view.message_ids


def test_the_lane_leaves_the_fused_pool_as_it_was() -> None:
    """With no instruction in the history the lane adds nothing: same pool, same View."""
    on = _turn(ReadSettings(), with_instruction=False)
    off = _turn(replace(ReadSettings(), instruction_records=0), with_instruction=False)
    assert [p["id"] for p in on.trace["pool"]] == [p["id"] for p in off.trace["pool"]]
    assert on.text == off.text and on.text.count("<record") > 3
