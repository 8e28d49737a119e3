"""Updates recognised offline: 'no longer current' on labelled (earlier, later) pairs.

The pairs (tests/data/update_pairs*.jsonl, invented, none from LoCoMo) are statements by
one person followed by a later statement that either explicitly replaces the value
(positive) or is same-topic chatter, a plan, a question, a negated or hypothetical change,
or a change of someone else (hard negative). ``update_pairs.jsonl`` was used while writing
the rule; ``update_pairs_heldout.jsonl`` was written after the rule was frozen and is
measured, never tuned on.
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

import pytest

from mnemon_langgraph.judges.local import LocalDecisionModel
from mnemon_langgraph.judges.propositions import NEEDED, STALE
from mnemon_langgraph.read._judging import JudgeRequest, judge_wave
from mnemon_langgraph.types import Record

DATA = Path(__file__).parent / "data"
JUDGE = LocalDecisionModel(lexical_only=True)


def _rec(rid: str, session: int, speaker: str, text: str) -> Record:
    return Record(
        id=rid,
        namespace=("t",),
        session=session,
        date=datetime(2024, session, 1),
        position=0,
        speakers=(speaker,),
        message_ids=(rid,),
        text=f"{speaker}: {text}",
    )


def _stale(earlier: str, later: str, same_speaker: bool = True) -> float:
    a = _rec("a", 1, "Sam", earlier)
    b = _rec("b", 2, "Sam" if same_speaker else "Alex", later)
    result = judge_wave(JUDGE, [JudgeRequest([STALE], [a, b], ["What's new?"])])
    assert result.errors == []
    return {j.target_id: j.p for j in result.judgments}["a"]


def _confusion(name: str) -> tuple[int, int, int, int]:
    tp = fp = fn = tn = 0
    for line in (DATA / name).read_text(encoding="utf-8").splitlines():
        pair = json.loads(line)
        yes = _stale(pair["earlier"], pair["later"], pair["same_speaker"]) >= 0.5
        tp += yes and pair["stale"]
        fp += yes and not pair["stale"]
        fn += not yes and pair["stale"]
        tn += not yes and not pair["stale"]
    return tp, fp, fn, tn


def test_the_labelled_set_is_big_and_balanced_enough() -> None:
    pairs = [json.loads(x) for x in (DATA / "update_pairs.jsonl").read_text().splitlines()]
    assert sum(p["stale"] for p in pairs) >= 60
    assert sum(not p["stale"] for p in pairs) >= 60
    assert len({p["kind"] for p in pairs}) >= 6


@pytest.mark.parametrize(
    ("name", "min_precision", "min_recall"),
    # Measured: 64/64 precision, 64/64 recall; held out 20/21 and 20/20 (docs/results/updates.md).
    [("update_pairs.jsonl", 0.95, 0.95), ("update_pairs_heldout.jsonl", 0.9, 0.9)],
)
def test_precision_and_recall_on_labelled_pairs(
    name: str, min_precision: float, min_recall: float
) -> None:
    tp, fp, fn, _ = _confusion(name)
    assert tp > 0
    assert tp / (tp + fp) >= min_precision
    assert tp / (tp + fn) >= min_recall


@pytest.mark.parametrize(
    ("earlier", "later"),
    [
        ("I live in Leeds at the moment.", "Big news: I'm moving to Rotterdam in July."),
        ("My sister's wedding is on 14 June in Bristol.", "The wedding got moved to 6 September."),
        ("I'm vegetarian.", "I've started eating fish again, so I'm pescatarian now."),
    ],
)
def test_the_issue_examples_are_recognised(earlier: str, later: str) -> None:
    assert _stale(earlier, later) >= 0.5


@pytest.mark.parametrize(
    ("earlier", "later"),
    [
        ("I drink about four coffees a day.", "I quit coffee completely, only tea now."),
        ("I run 10k every morning.", "I gave up running after my knee surgery."),
        ("I smoke a few cigarettes a day.", "I quit smoking three weeks ago."),
    ],
)
def test_one_word_in_two_forms_is_one_subject(earlier: str, later: str) -> None:
    # The shared stemmer is light ("running" -> runn, "coffees" -> coffe): the detector
    # compares sentences on forms that conflate those (update_clauses.canon).
    assert _stale(earlier, later) >= 0.5


@pytest.mark.parametrize(
    ("earlier", "later", "same"),
    [
        ("I live in Leeds.", "Leeds is lovely in spring.", True),
        ("I live in Leeds.", "My brother moved to Rotterdam.", True),
        ("I live in Leeds.", "I'm thinking of moving to Rotterdam one day.", True),
        ("I live in Leeds.", "Have you moved to Rotterdam?", True),
        ("I live in Leeds.", "I moved to Rotterdam last month.", False),
        ("The concert is on 20 July.", "It was such a moving concert.", True),
        (
            "I love our home and my family.",
            "I've known them since I moved from my home town.",
            True,
        ),
        ("I won't quit the choir.", "It won't be easy, but I'll keep singing in the choir.", True),
        ("I sing in the choir.", "Don\u2019t quit the choir, you told me.", True),
    ],
)
def test_chatter_plans_questions_and_others_are_not_updates(
    earlier: str, later: str, same: bool
) -> None:
    assert _stale(earlier, later, same) < 0.5


def test_an_earlier_statement_never_makes_a_later_one_stale() -> None:
    a = _rec("a", 2, "Sam", "I live in Leeds.")
    b = _rec("b", 1, "Sam", "I moved to Rotterdam last month.")
    result = judge_wave(JUDGE, [JudgeRequest([STALE], [a, b], ["Where do I live?"])])
    p = {j.target_id: j.p for j in result.judgments}
    assert p["a"] < 0.5


def test_the_replacing_record_ranks_where_the_replaced_one_would() -> None:
    old = _rec("old", 1, "Noor", "I live in Leeds at the moment, in a flat near the park.")
    new = _rec("new", 2, "Noor", "Big news: I'm moving to Rotterdam at the end of July.")
    chat = _rec("chat", 2, "Noor", "The weather was lovely, we had a picnic in the park.")
    request = JudgeRequest([NEEDED, STALE], [old, new, chat], ["Where do I live these days?"])
    result = judge_wave(JUDGE, [request])
    needed = {j.target_id: j.p for j in result.judgments if j.proposition == "needed"}
    stale = {j.target_id: j.p for j in result.judgments if j.proposition == "stale"}
    assert stale["old"] >= 0.5 and stale["new"] < 0.5
    assert needed["new"] >= needed["old"] > needed["chat"]


def _sample_stale() -> dict[str, float]:
    """stale p of every record of the demo's sample conversation, judged on all of them."""
    from mnemon_langgraph.judges._features import Doc
    from mnemon_langgraph.judges._staleness import stale_p

    path = Path(__file__).parent.parent / "mnemon_langgraph" / "data" / "sample_conversation.jsonl"
    rows = [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]
    docs = [
        Doc(
            {
                "id": r["id"],
                "header": f"Session {r['session']} — {r['timestamp'][:10]}",
                "text": f"{r['speaker']}: {r['text']}",
            },
            i,
        )
        for i, r in enumerate(rows)
    ]
    return {d.id: stale_p(d, docs, []) for d in docs}


def test_the_demo_s_updates_are_recognised_and_their_new_values_stay_current() -> None:
    p = _sample_stale()
    # replaced: Leeds (moved to Rotterdam), 14 June (moved to 6 September), vegetarian and
    # the assistant's echo of it (pescatarian now), the night-shift job (a day-shift
    # position at Erasmus MC); the records holding the new values stay current
    stale = {rid for rid, v in p.items() if v >= 0.5}
    assert stale == {"s1-03", "s1-07", "s1-11", "s1-13", "s1-14"}
    assert all(p[rid] < 0.5 for rid in ("s2-01", "s2-03", "s2-07", "s3-01", "s3-11"))


def test_a_record_without_words_is_judged_beside_a_change() -> None:
    # A record with no words has no clause: finding what replaces it once raised
    # "max() arg is an empty sequence", and the whole judge call fell back to search order.
    old = _rec("old", 1, "Noor", "I live in Leeds at the moment, in a flat near the park.")
    blank = _rec("blank", 1, "Noor", "👍 ...")
    new = _rec("new", 2, "Noor", "Big news: I'm moving to Rotterdam at the end of July.")
    request = JudgeRequest([NEEDED, STALE], [old, blank, new], ["Where do I live these days?"])
    result = judge_wave(JUDGE, [request])
    assert not result.errors
    stale = {j.target_id: j.p for j in result.judgments if j.proposition == "stale"}
    assert set(stale) == {"old", "blank", "new"}
    assert stale["old"] >= 0.5 and stale["blank"] < 0.5
