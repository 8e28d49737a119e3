"""The assistant's replies ranked lower in the View (``view.demote_replies``): the rule on
its own, its properties, the setting, and a real read graph where the user's turn that
holds the answer gets in only with it."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from _chat_records import chat_records
from hypothesis import given
from hypothesis import strategies as st
from langchain_core.messages import HumanMessage

from mnemon_langgraph.errors import ConfigurationError
from mnemon_langgraph.judges.fake import ScriptedDecisionModel
from mnemon_langgraph.read._pooling import dict_to_record, record_to_dict
from mnemon_langgraph.read.graph import create_read_graph
from mnemon_langgraph.read.memory import InMemorySearchSource, make_record
from mnemon_langgraph.read.settings import ReadSettings
from mnemon_langgraph.read.state import ReadContext
from mnemon_langgraph.read.view import demote_replies, is_reply

NS = ("users", "ada")


def _pool(roles: dict[str, tuple[str, ...]]) -> list[dict[str, Any]]:
    return [{"id": rid, "roles": list(r)} for rid, r in roles.items()]


def test_a_reply_competes_at_factor_times_its_place() -> None:
    pool = _pool(
        {
            "a0": ("assistant",),
            "a1": ("assistant", "assistant"),
            "u2": ("user",),
            "a3": ("assistant",),
            "u4": ("user", "assistant"),  # a user line in it: not a reply
            "x5": (),  # roles unknown: never moves
        }
    )
    candidates = [(r["id"], "judged") for r in pool]
    got = demote_replies(candidates, pool, 2.0)
    # places: a0 0, a1 2, u2 2, a3 6, u4 4, x5 5; ties keep the candidates' order
    assert [rid for rid, _ in got] == ["a0", "a1", "u2", "u4", "x5", "a3"]
    why = dict(got)
    assert why["a3"] == "judged; the assistant's words only: ranked as if 2× lower"
    assert why["u2"] == why["u4"] == why["x5"] == "judged"
    assert demote_replies(candidates, pool, 1.0) == candidates


def test_only_records_whose_every_known_line_is_the_assistants_are_replies() -> None:
    assert is_reply({"roles": ["assistant"]})
    assert not is_reply({"roles": ["assistant", "user"]})
    assert not is_reply({"roles": []}) and not is_reply({})
    assert not is_reply({"roles": ["user", "user"]})  # LoCoMo: two people, both users


@given(
    roles=st.lists(st.sampled_from(["user", "assistant", "mixed", "none"]), max_size=30),
    factor=st.floats(min_value=1.0, max_value=20.0),
)
def test_the_rule_only_reorders_and_never_lifts_a_reply(roles: list[str], factor: float) -> None:
    kinds = {"user": ("user",), "assistant": ("assistant",), "mixed": ("user", "assistant")}
    pool = [{"id": f"r{i}", "roles": list(kinds.get(k, ()))} for i, k in enumerate(roles)]
    candidates = [(r["id"], "w") for r in pool]
    got = [rid for rid, _ in demote_replies(candidates, pool, factor)]
    assert sorted(got) == sorted(rid for rid, _ in candidates)
    place = {rid: i for i, rid in enumerate(got)}
    reply = [r["id"] for r in pool if is_reply(r)]
    other = [r["id"] for r in pool if not is_reply(r)]
    # each kind keeps its own order, and every other record keeps its place or moves up
    assert [rid for rid in got if rid in set(reply)] == reply
    assert [rid for rid in got if rid in set(other)] == other
    for i, rid in enumerate(rid for rid, _ in candidates):
        if rid in set(other):
            assert place[rid] <= i
        else:
            assert place[rid] >= i
    if candidates:
        assert got[0] == candidates[0][0]


def test_the_factor_is_validated() -> None:
    with pytest.raises(ConfigurationError, match="assistant_rank_factor"):
        ReadSettings(assistant_rank_factor=0.5)
    assert ReadSettings(assistant_rank_factor=1).assistant_rank_factor == 1


def test_roles_survive_the_pool_round_trip() -> None:
    rec = make_record("r", "user: hi\nassistant: hello", roles=("user", "assistant"))
    back = dict_to_record(record_to_dict(rec), ("test",))
    assert back.roles == ("user", "assistant") and back == rec


def _history() -> list[Any]:
    """A user's turn with the answer, sharing one word with the question, then the
    assistant's long replies, sharing many."""
    tip = (
        "a sourdough starter in the fridge needs feeding weekly; sourdough tip {}: discard half "
        "the starter, feed flour and water, keep the sourdough starter jar loosely covered in "
        "the fridge."
    )
    return chat_records(
        NS,
        [
            ("ask", "user", "oh, and the starter? We call him Gerald.", "m0"),
            *((f"reply{i}", "assistant", tip.format(i), f"m{i}") for i in range(1, 6)),
        ],
    )


def _view(settings: ReadSettings) -> Any:
    judge = ScriptedDecisionModel(answers=lambda qid, q, state: 0.1)  # order = the pool's
    graph = create_read_graph(
        source=InMemorySearchSource(_history()), judge=judge, planner=None, settings=settings
    )
    question = HumanMessage("What is the name of my sourdough starter in the fridge?")
    return graph.invoke({"messages": [question]}, context=ReadContext(namespace=NS))["view"]


def test_in_a_real_graph_the_users_turn_gets_in_only_with_the_rule() -> None:
    # the replies' questions and the sessions' opening turns off: this is the ranking rule
    # alone (test_reply_questions.py, test_opening_turns.py)
    tight = ReadSettings(
        view_chars=900,
        view_neighbours=0,
        excerpt_slots=None,
        reply_questions=False,
        opening_turns=0,
    )
    off = _view(replace(tight, assistant_rank_factor=1.0))
    factor = ReadSettings().assistant_rank_factor  # the default
    on = _view(replace(tight, assistant_rank_factor=factor))
    assert "m0" not in off.message_ids and len(off.records) >= 2
    assert "m0" in on.message_ids and "Gerald" in on.text
    assert f"ranked as if {factor:g}× lower" in " ".join(on.trace["placement"].values())
