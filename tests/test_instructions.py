"""Standing instructions found at read time: the pattern, the lane outside the fused pool, and
the View that leads with the instruction line."""

from __future__ import annotations

import hashlib
from dataclasses import replace
from typing import Any

import numpy as np
import pytest
from langchain_core.messages import HumanMessage

from mnemon_langgraph.errors import ModelCallError
from mnemon_langgraph.judges.fake import ScriptedDecisionModel
from mnemon_langgraph.read._instructions import (
    STANDING,
    instruction_query,
    line_similarities,
    standing_lines,
    standing_texts,
)
from mnemon_langgraph.read.graph import create_read_graph
from mnemon_langgraph.read.memory import InMemorySearchSource, make_record
from mnemon_langgraph.read.settings import ReadSettings
from mnemon_langgraph.read.state import ReadContext
from mnemon_langgraph.search._text import terms

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


# --- the lead instruction nearest the message (``instruction_match``) ---------------------

NEAR = "Always format dates as day month year when I ask about the timelines."
FAR = "Always give the Latin name when I ask about gardening."
TIMELINE_QUESTION = "What is on the timelines for the shed?"


def _bag(text: str) -> np.ndarray:
    """A deterministic bag-of-words embedding (the package's terms, hashed into 64 slots)."""
    vec = np.zeros(64)
    for word in terms(text):
        vec[int(hashlib.sha256(word.encode()).hexdigest(), 16) % 64] += 1.0
    norm = np.linalg.norm(vec)
    return (vec / norm if norm else vec).reshape(1, -1)


class _EmbeddingSource(InMemorySearchSource):
    """The word-overlap source with a query embedder, as a store's (a ``VectorSource``)."""

    def __init__(self, records: Any, fail: bool = False) -> None:
        super().__init__(records)
        self.embedded: list[str] = []
        self.fail = fail

    def query_vector(self, query: str) -> np.ndarray:
        if self.fail:
            raise ModelCallError("embedder down")
        self.embedded.append(query)
        return _bag(query)

    def stored_vectors(self, namespace: Any, ids: Any) -> dict[str, np.ndarray]:
        return {r.id: _bag(r.text)[0] for r in self._records if r.id in set(ids)}


def _two_instructions() -> list[Any]:
    out = _history(False)
    # the record whose instruction is about another topic shares more of the question's
    # words (its assistant line), so the instruction search ranks it first
    out.append(
        make_record(
            "far",
            f"assistant: the shed and its timelines are on the list.\nuser: {FAR}",
            namespace=NS,
            session=9,
            message_ids=["fa", "fb"],
            roles=("assistant", "user"),
            seq=99,
        )
    )
    out.append(
        make_record(
            "near",
            f"user: {NEAR}",
            namespace=NS,
            session=10,
            message_ids=["na"],
            roles=("user",),
            seq=100,
        )
    )
    return out


def _lead(settings: ReadSettings, fail: bool = False) -> tuple[Any, _EmbeddingSource]:
    source = _EmbeddingSource(_two_instructions(), fail=fail)
    judge = ScriptedDecisionModel(answers=lambda qid, q, state: 0.1)
    graph = create_read_graph(source=source, judge=judge, planner=None, settings=settings)
    question = HumanMessage(TIMELINE_QUESTION)
    return graph.invoke({"messages": [question]}, context=ReadContext(namespace=NS))["view"], source


def test_line_similarities_take_each_records_nearest_line() -> None:
    sims = line_similarities(
        TIMELINE_QUESTION, {"near": [FAR, NEAR], "far": [FAR], "none": []}, _bag
    )
    assert set(sims) == {"near", "far"}  # a record without lines is left out
    assert sims["near"] > sims["far"] > -1.0
    assert sims["near"] == pytest.approx(float(_bag(NEAR)[0] @ _bag(TIMELINE_QUESTION)[0]))


def test_standing_texts_are_the_instruction_lines_without_the_speaker() -> None:
    rec = make_record("r", f"assistant: hello\nuser: {NEAR}", roles=("assistant", "user"))
    assert standing_texts(rec) == [NEAR]


def test_the_lead_is_the_instruction_nearest_the_message() -> None:
    by_rank, _ = _lead(replace(ReadSettings(), instruction_match=False))
    assert by_rank.records[0].id == "far"  # the search's rank: the other topic leads
    matched, source = _lead(replace(ReadSettings(), instruction_match=True))
    assert matched.records[0].id == "near" and NEAR in matched.records[0].text
    assert FAR not in matched.records[0].text
    assert NEAR in source.embedded and FAR in source.embedded  # only the lines embedded
    assert not any("the shed and its timelines" in t for t in source.embedded)


def test_the_defaults_lead_with_the_nearest_instruction_and_drop_one_far_from_it() -> None:
    """By default the View leads with the instruction whose own line is nearest the
    message (two at most); one whose line is below the floor is not about the request and
    is no standing instruction here."""
    defaults = ReadSettings()
    assert defaults.instruction_match and defaults.instruction_records == 2
    assert float(_bag(FAR)[0] @ _bag(TIMELINE_QUESTION)[0]) < defaults.instruction_floor
    assert float(_bag(NEAR)[0] @ _bag(TIMELINE_QUESTION)[0]) >= defaults.instruction_floor
    view, _ = _lead(defaults)
    assert view.records[0].id == "near" and NEAR in view.records[0].text
    assert not any(p.get("standing") for p in view.trace["pool"] if p["id"] == "far")
    assert "standing instruction" not in view.trace["placement"].get("far", "")
    both, _ = _lead(replace(defaults, instruction_floor=0.0))  # no floor: both lead
    assert [r.id for r in both.records[:2]] == ["near", "far"]
    assert FAR in both.records[1].text
    assert "the shed and its timelines" not in both.records[1].text  # the line only
    one, _ = _lead(replace(defaults, instruction_floor=0.0, instruction_records=1))
    assert one.records[0].id == "near"
    far = next(r for r in one.records[1:] if r.id == "far")
    assert "the shed and its timelines" in far.text  # a record, not a lead


def test_an_embedder_error_keeps_the_search_order_and_is_traced() -> None:
    view, _ = _lead(replace(ReadSettings(), instruction_match=True), fail=True)
    assert view.records[0].id == "far"
    [event] = [d for d in view.trace["degradations"] if d["step"] == "instructions"]
    assert "embedder down" in event["detail"]


def test_a_deeper_instruction_search_finds_an_instruction_past_the_old_depth() -> None:
    """Many records that share the instruction search's words push the user's one past
    the old ten; ``instruction_depth`` reads further."""
    records = _history(True)
    for i in range(12):  # outrank it: they share the request's words and the query's own
        records.append(
            make_record(
                f"busy{i}",
                f"user: when I ask about the shady corner by the shed, do this {i}",
                namespace=NS,
                session=20 + i,
                message_ids=[f"b{i}"],
                roles=("user",),
                seq=200 + i,
            )
        )
    judge = ScriptedDecisionModel(answers=lambda qid, q, state: 0.1)

    def lead(depth: int) -> list[str]:
        graph = create_read_graph(
            source=InMemorySearchSource(records),
            judge=judge,
            planner=None,
            settings=replace(ReadSettings(), instruction_depth=depth),
        )
        question = HumanMessage("What should I put in the shady corner by the shed?")
        view = graph.invoke({"messages": [question]}, context=ReadContext(namespace=NS))["view"]
        return [r.id for r in view.records]

    assert "instr" not in lead(10)[:1]
    assert lead(40)[0] == "instr"
