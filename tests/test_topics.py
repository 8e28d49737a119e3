"""A question about a topic across the whole history pools the user's mentions of it in
every session (``read.topics``, ``ReadSettings.topic_records``): which questions, the topic
words, the lane's per-session quota, and a real read graph over a history whose assistant
replies bury the user's own mentions below every planned search."""

from __future__ import annotations

from typing import Any

from _chat_records import view_of
from langchain_core.messages import HumanMessage

from mnemon_langgraph.read._topics import is_coverage, topic_lane, topic_query
from mnemon_langgraph.read.memory import InMemorySearchSource, make_record
from mnemon_langgraph.read.planner import RulePlanner
from mnemon_langgraph.read.settings import ExperimentSwitches, ReadSettings
from mnemon_langgraph.types import Record, SearchHit

NS = ("users", "ada")
ASKED = (
    "Can you list the order in which I brought up different aspects of my budget tracker "
    "throughout our conversations? Mention only three items."
)
MENTIONS = {
    1: "user: The budget tracker should keep a savings goal for the holidays.",
    2: "user: Could the budget tracker export a CSV file for my accountant?",
    3: "user: I want the budget tracker to sync with my bank every night.",
}
"""The user's mentions of the topic, one per session, worded in their own terms."""


def test_which_questions_ask_about_a_topic_across_the_history() -> None:
    assert is_coverage(ASKED)
    assert is_coverage("Summarize how my garden project progressed.")
    assert is_coverage("Give me a summary of what we covered about triangles.")
    assert is_coverage("How did my plans change across our conversations?")
    assert not is_coverage("What did Caroline do last week?")
    assert not is_coverage("How many cups of coffee did I drink in May?")


def test_the_topic_search_keeps_the_topic_words_only() -> None:
    assert topic_query(ASKED) == "budget tracker"
    assert topic_query("Can you summarize how my resume improved over time?") == "resume improved"
    assert topic_query("Give me a summary") == "Give me a summary"  # nothing left: as asked


def _hit(rid: str, session: int, role: str, rank: int) -> SearchHit:
    rec = make_record(rid, f"{role}: {rid}", namespace=NS, session=session, roles=(role,))
    return SearchHit(rec, rank, 1.0)


def test_the_lane_takes_user_records_up_to_a_quota_per_session_in_order() -> None:
    hits = [
        _hit("a1", 1, "assistant", 0),
        _hit("u1", 1, "user", 1),
        _hit("u2", 1, "user", 2),
        _hit("u3", 1, "user", 3),
        _hit("v1", 2, "user", 4),
        _hit("a2", 2, "assistant", 5),
    ]
    assert [h.record.id for h in topic_lane(hits, 2)] == ["u1", "u2", "v1"]
    assert [h.record.id for h in topic_lane(hits, 1)] == ["u1", "v1"]
    assert topic_lane(hits, 0) == []


def _history() -> list[Record]:
    """Three sessions; in each, a user opener without the topic, then 50 assistant replies
    that repeat the question's own words ("different aspects", "brought up", "our
    conversations", "order"), with the user's mention of the topic in the middle."""
    out: list[Record] = []
    for s in (1, 2, 3):
        turns = [("user", f"user: Hello again, session {s}.")]
        for j in range(50):
            if j == 25:
                turns.append(("user", MENTIONS[s]))
            turns.append(
                (
                    "assistant",
                    f"assistant: In order, the different aspects of the budget tracker we "
                    f"brought up throughout our conversations: item {s}-{j}.",
                )
            )
        for pos, (role, text) in enumerate(turns):
            out.append(
                make_record(
                    f"s{s}p{pos}",
                    text,
                    namespace=NS,
                    session=s,
                    position=pos,
                    roles=(role,),  # type: ignore[arg-type]
                    seq=len(out) + 1,
                )
            )
    return out


def _judge(qid: str, question: Any, state: Any) -> float:
    """The user's mentions are what the question needs; the replies satisfy it too."""
    rows = {r["id"]: r for r in state["records"]}
    text = str(rows.get(qid.partition(".")[0], {}).get("text", ""))
    return 0.9 if text in MENTIONS.values() else 0.6 if "assistant:" in text else 0.1


def _mention_ids() -> set[str]:
    return {r.id for r in _history() if r.text in MENTIONS.values()}


ON = ReadSettings(experiments=ExperimentSwitches(topic_records=6))
"""The lane on (an experiment switch: off by default)."""


def test_the_users_mentions_in_every_session_are_pooled_and_shown() -> None:
    on = view_of(InMemorySearchSource(_history()), _judge, ON, ASKED, NS)
    # the default is the read path without the lane
    off = view_of(InMemorySearchSource(_history()), _judge, ReadSettings(), ASKED, NS)
    wanted = _mention_ids()
    assert len(wanted) == 3
    # without the lane, every planned search ranks the replies above the user's mentions
    assert not wanted & {p["id"] for p in off.trace["pool"]}, "the old pool holds a mention"
    assert "topic" not in [s["origin"] for s in off.trace["searches"]]
    pooled = {p["id"] for p in on.trace["pool"]}
    assert wanted <= pooled, f"mentions not pooled: {sorted(wanted - pooled)}"
    topic = [s for s in on.trace["searches"] if s["origin"] == "topic"]
    assert [s["query"] for s in topic] == ["budget tracker"]
    assert [n["kind"] for n in off.trace["needs"]] == ["ALL"]  # "list": ALL either way
    assert all(MENTIONS[s] in on.text for s in MENTIONS)
    assert not any(MENTIONS[s] in off.text for s in MENTIONS)
    assert "ALL" in [n["kind"] for n in on.trace["needs"]]


def test_a_question_about_one_fact_is_read_as_without_the_lane() -> None:
    one = "What should the budget tracker export for my accountant?"
    on = view_of(InMemorySearchSource(_history()), _judge, ON, one, NS)
    off = view_of(InMemorySearchSource(_history()), _judge, ReadSettings(), one, NS)
    assert "topic" not in [s["origin"] for s in on.trace["searches"]]
    assert on.text == off.text and on.text


def test_the_rule_planner_names_a_summary_question_all_with_the_lane_on() -> None:
    asked = [HumanMessage("Summarize how my budget tracker project progressed.")]
    assert [n.kind for n in RulePlanner().plan(asked, ON).needs] == ["ALL"]
    assert [n.kind for n in RulePlanner().plan(asked, ReadSettings()).needs] == ["NEED"]
