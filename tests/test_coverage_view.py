"""A question about a topic across the whole history: the user's mentions lead the View, a
few of each session, shown as their user lines, and the View reads earliest first
(``view.coverage_first``, ``ReadSettings.experiments.coverage_records``): the rule on its
own, its properties, and a real read graph whose System 1 ranks the mentions below the
assistant's replies."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime
from typing import Any

import pytest
from _chat_records import view_of
from hypothesis import given
from hypothesis import strategies as st

from mnemon_langgraph.errors import ConfigurationError
from mnemon_langgraph.read._view_order import MENTION_OVERHEAD, Marks, arranged, coverage_first
from mnemon_langgraph.read.memory import InMemorySearchSource, make_record
from mnemon_langgraph.read.settings import ExperimentSwitches, ReadSettings
from mnemon_langgraph.types import Record

NS = ("users", "ada")


def _rec(rid: str, session: int, roles: tuple[str, ...], chars: int = 20) -> dict[str, Any]:
    lines = [f"{role}: " + "x" * chars for role in roles]
    return {"id": rid, "session": session, "roles": list(roles), "text": "\n".join(lines)}


def test_user_records_lead_at_most_per_session_in_the_candidates_order() -> None:
    pool = [
        _rec("a1", 1, ("assistant",)),
        _rec("u1", 1, ("user",)),
        _rec("m1", 1, ("assistant", "user")),
        _rec("u1b", 1, ("user",)),
        _rec("v2", 2, ("user",)),
        _rec("a2", 2, ("assistant",)),
    ]
    candidates = [(r["id"], "ranked") for r in pool]
    marks = Marks()
    got = coverage_first(candidates, pool, 2, 10_000, marks)
    assert [rid for rid, _ in got] == ["u1", "m1", "v2", "a1", "u1b", "a2"]
    assert marks.mentions == {"u1": [0], "m1": [1], "v2": [0]}
    assert got[0][1].startswith("a mention of the topic by the user")
    assert dict(got)["a1"] == "ranked"
    # off, or no room: unchanged, nothing marked
    for per_session, room in ((0, 10_000), (2, 0)):
        none = Marks()
        assert coverage_first(candidates, pool, per_session, room, none) == candidates
        assert none.mentions == {}


def test_ranked_mentions_come_first_then_the_candidates_order() -> None:
    pool = [_rec(rid, s, ("user",)) for rid, s in (("u9", 1), ("u1", 1), ("u5", 1), ("w", 1))]
    candidates = [(r["id"], "ranked") for r in pool]
    marks = Marks()
    # u1 and u5 found by the topic search at places 1 and 5 of the session; u9 at 9
    got = coverage_first(candidates, pool, 3, 10_000, marks, {"u9": 9, "u1": 1, "u5": 5})
    assert [rid for rid, _ in got] == ["u1", "u5", "u9", "w"]
    assert set(marks.mentions) == {"u1", "u5", "u9"}
    # records rank_of does not name follow the named ones, in the candidates' order
    marks = Marks()
    got = coverage_first(candidates, pool, 2, 10_000, marks, {"w": 0})
    assert [rid for rid, _ in got][:2] == ["w", "u9"]


def test_the_mentions_stay_within_their_room_and_instructions_stay_first() -> None:
    pool = [_rec("s", 1, ("user",)), *(_rec(f"u{i}", i, ("user",), 100) for i in range(5))]
    candidates = [(r["id"], "ranked") for r in pool]
    marks = Marks(standing={"s": [0]})
    each = len("user: ") + 100 + 1 + MENTION_OVERHEAD
    got = coverage_first(candidates, pool, 1, 2 * each + 10, marks)
    assert [rid for rid, _ in got][:3] == ["s", "u0", "u1"]
    assert set(marks.mentions) == {"u0", "u1"}
    assert marks.only("s") == [0] and marks.only("u0") == [0] and marks.only("u4") is None


def test_without_the_rule_a_standing_instruction_is_taken_once() -> None:
    # the standing instructions lead the arranged candidates once, and the mentions that
    # lead a coverage View come right after them, each record still once
    pool = [{**_rec("i", 1, ("user",)), "standing": [0]}, _rec("u", 2, ("user",))]
    pool.append(_rec("a", 2, ("assistant",)))
    candidates = [("a", "ranked"), ("u", "ranked"), ("i", "ranked")]
    got, marks = arranged(candidates, pool, set(), ReadSettings(view_neighbours=0))
    assert [rid for rid, _ in got] == ["i", "a", "u"]
    led = coverage_first(got, pool, 1, 10_000, marks)
    assert [rid for rid, _ in led] == ["i", "u", "a"]


@given(
    kinds=st.lists(
        st.tuples(st.integers(1, 4), st.sampled_from(["u", "a", "ua", "none"])), max_size=25
    ),
    per_session=st.integers(0, 4),
    room=st.integers(0, 2_000),
    ranked=st.booleans(),
)
def test_the_rule_only_reorders_within_its_quota_and_room(
    kinds: list[tuple[int, str]], per_session: int, room: int, ranked: bool
) -> None:
    roles = {"u": ("user",), "a": ("assistant",), "ua": ("user", "assistant"), "none": ()}
    pool = [_rec(f"r{i}", s, roles[k], chars=7 * i) for i, (s, k) in enumerate(kinds)]
    candidates = [(r["id"], "w") for r in pool]
    marks = Marks()
    rank_of = {r["id"]: -i for i, r in enumerate(pool) if i % 3 == 0} if ranked else None
    got = coverage_first(candidates, pool, per_session, room, marks, rank_of)
    assert sorted(rid for rid, _ in got) == sorted(rid for rid, _ in candidates)
    lead = [rid for rid, _ in got][: len(marks.mentions)]
    assert set(lead) == set(marks.mentions)
    by_id = {r["id"]: r for r in pool}
    per: dict[int, int] = {}
    used = 0
    for rid in lead:
        rec = by_id[rid]
        assert "user" in rec["roles"]
        per[rec["session"]] = per.get(rec["session"], 0) + 1
        lines = rec["text"].split("\n")
        assert marks.mentions[rid] == [i for i, r in enumerate(rec["roles"]) if r == "user"]
        used += sum(len(lines[i]) + 1 for i in marks.mentions[rid]) + MENTION_OVERHEAD
    assert all(n <= per_session for n in per.values())
    assert used <= max(room, 0)
    order = [rid for rid, _ in candidates]
    if rank_of:  # the ranked first, lowest rank first, then the candidates' order
        place = {rid: i for i, rid in enumerate(order)}
        order.sort(key=lambda rid: (rid not in rank_of, rank_of.get(rid, 0), place[rid]))
    # the mentions keep that order; the rest keep the candidates' order
    assert lead == [rid for rid in order if rid in set(lead)]
    order = [rid for rid, _ in candidates]
    assert [rid for rid, _ in got][len(lead) :] == [rid for rid in order if rid not in set(lead)]


def test_the_switch_and_the_share_are_validated() -> None:
    with pytest.raises(ConfigurationError, match="coverage_records"):
        ExperimentSwitches(coverage_records=-1)
    with pytest.raises(ConfigurationError, match="coverage_share"):
        ReadSettings(coverage_share=1.5)
    assert ReadSettings().experiments.coverage_records == 0  # off by default


ASKED = (
    "Can you list the order in which I brought up different aspects of my budget tracker "
    "throughout our conversations?"
)
MENTIONS = {
    1: "user: The budget tracker should keep a savings goal for the holidays.",
    2: "user: Could the budget tracker export a CSV file for my accountant?",
    3: "user: I want the budget tracker to sync with my bank every night.",
}


def _history() -> list[Record]:
    """Three sessions, each a day apart: the user's mention of the topic, then long replies
    of the assistant about it (a reply line and a user line share some records)."""
    out: list[Record] = []
    for s in (1, 2, 3):
        turns: list[tuple[tuple[str, ...], str]] = [(("user",), MENTIONS[s])]
        for j in range(6):
            reply = f"assistant: The budget tracker, aspect {s}-{j}: " + "a long explanation " * 12
            turns.append((("assistant",), reply.strip()))
        for pos, (roles, text) in enumerate(turns):
            out.append(
                make_record(
                    f"s{s}p{pos}",
                    text,
                    namespace=NS,
                    session=s,
                    position=pos,
                    roles=roles,  # type: ignore[arg-type]
                    seq=len(out) + 1,
                    date=datetime(2024, s, 1),
                )
            )
    return out


def _judge(qid: str, question: Any, state: Any) -> float:
    """System 1 ranks the assistant's replies above the user's short mentions."""
    rows = {r["id"]: r for r in state["records"]}
    text = str(rows.get(qid.partition(".")[0], {}).get("text", ""))
    return 0.1 if text in MENTIONS.values() else 0.7


def test_in_a_real_graph_every_sessions_mention_is_shown_earliest_first() -> None:
    tight = ReadSettings(view_chars=1_400, opening_turns=0, reply_questions=False)
    off = view_of(InMemorySearchSource(_history()), _judge, tight, ASKED, NS)
    switches = ExperimentSwitches(coverage_records=1)
    on = view_of(
        InMemorySearchSource(_history()), _judge, replace(tight, experiments=switches), ASKED, NS
    )
    pooled = {p["id"] for p in off.trace["pool"]}
    assert {"s1p0", "s2p0", "s3p0"} <= pooled  # pooled either way: the View decides
    shown_off = [s for s, m in MENTIONS.items() if m in off.text]
    assert len(shown_off) < 3, "the replies no longer fill the View without the rule"
    assert all(m in on.text for m in MENTIONS.values())
    places = [on.text.index(MENTIONS[s]) for s in (1, 2, 3)]
    assert places == sorted(places), "the View is not earliest first"
    assert {"s1p0:m0", "s2p0:m0", "s3p0:m0"} <= set(on.message_ids)
    why = on.trace["placement"]["s2p0"]
    assert "a mention of the topic by the user" in why
    # a question about one fact is read as without the rule
    one = "What should the budget tracker export for my accountant?"
    assert (
        view_of(InMemorySearchSource(_history()), _judge, tight, one, NS).text
        == view_of(
            InMemorySearchSource(_history()),
            _judge,
            replace(tight, experiments=switches),
            one,
            NS,
        ).text
    )
