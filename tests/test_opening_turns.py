"""The session of a record judged most needed brings its opening turn (``read.questions``,
``ReadSettings.opening_turns``): the walk from the session's start, which sessions bring one,
the journal read when the pool lacks it, its place in the View, and the graph with a journal
source, a conversation between people, a plain source, ``ainvoke`` and both stores."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime
from typing import Any

import pytest
from _chat_records import PlainSource, ingest_turn_by_turn, view_of
from _reliability_common import fake_embeddings

from mnemon_langgraph.read._questions import (
    OPENING_SPAN,
    opening_of,
    opening_windows,
    openings,
    sessions_opened,
)
from mnemon_langgraph.read.memory import InMemorySearchSource, make_record
from mnemon_langgraph.read.settings import ReadSettings
from mnemon_langgraph.read.view import explain, with_openings
from mnemon_langgraph.store import MnemonStore
from mnemon_langgraph.types import JournalSource, Message, Record, Role

NS = ("users", "ada")


def _rec(
    rid: str, position: int, roles: tuple[str, ...], seq: int = 0, **kw: Any
) -> dict[str, Any]:
    base = {"source": "chat", "session": 1, "message_ids": [rid], "text": rid}
    return {**base, "id": rid, "position": position, "roles": list(roles), "seq": seq, **kw}


def test_the_walk_goes_from_the_sessions_start_over_the_assistants_records() -> None:
    best = _rec("best", 6, ("user",))
    opener = _rec("open", 0, ("user",))
    assert opening_of(best, [best, opener, _rec("x", 1, ("assistant",))]) == opener
    # a session the assistant opened: its first user line
    greeting = _rec("hello", 0, ("assistant",))
    asked = _rec("asked", 1, ("user", "assistant"))
    assert opening_of(best, [greeting, asked, best]) == asked
    other = _rec("other", 0, ("user",), session=2)
    assert opening_of(best, [other, best]) is None


def test_a_gap_a_stranger_a_long_greeting_or_the_record_itself_gives_none() -> None:
    best = _rec("best", 9, ("user",))
    assert opening_of(best, [_rec("late", 1, ("user",)), best]) is None  # position 0 missing
    assert opening_of(best, [_rec("sys", 0, ("system",)), _rec("u", 1, ("user",))]) is None
    hellos = [_rec(f"a{i}", i, ("assistant",)) for i in range(OPENING_SPAN)]
    user = _rec("u", OPENING_SPAN, ("user",))
    assert opening_of(best, [*hellos, user]) is None  # past the span
    assert opening_of(best, [*hellos[:-1], _rec("u", OPENING_SPAN - 1, ("user",))]) is not None
    second = _rec("second", 1, ("user",))
    assert opening_of(second, [_rec("a0", 0, ("assistant",)), second]) is None  # not past itself
    assert opening_of({"id": "x", "position": None}, [best]) is None


def test_the_best_record_of_each_session_looks_for_its_opening_turn() -> None:
    pool = [
        _rec("a1", 3, ("user",)),
        _rec("a2", 5, ("assistant",)),  # same session as a1: a2 is its best
        _rec("c0", 0, ("user",), session=3),  # opens its session itself
        _rec("d1", 2, ("user",), session=4),
    ]
    ranked = ["a2", "a1", "c0", "ghost", "d1"]
    assert sessions_opened(pool, ranked, 5) == ["a2", "d1"]
    people = [{**r, "roles": ["user"]} for r in pool]
    assert sessions_opened(people, ranked, 5) == []  # no assistant pooled: nothing to read
    assert sessions_opened(pool, ranked, 4) == ["a2"]  # only the best four are looked at
    assert sessions_opened(pool, ranked, 0) == []


def test_only_a_session_with_an_assistant_in_it_gives_one() -> None:
    people = [_rec("p0", 0, ("user",), session=2), _rec("p3", 3, ("user",), session=2)]
    assert openings(people, ["p3"]) == ({}, [])  # a greeting opens a talk between people
    # the assistant's line may be in the pool or among the records read
    read = [_rec("p1", 1, ("assistant",), session=2)]
    assert openings(people, ["p3"], read)[0] == {"p3": "p0"}


def test_the_journal_is_read_only_where_the_pool_lacks_the_opening_turn() -> None:
    pool = [
        _rec("q0", 0, ("user",), 10),
        _rec("q1", 3, ("user",), 13),
        _rec("q2", 4, ("assistant",), 14),
        _rec("r5", 5, ("assistant",), 45, session=2),
    ]
    assert opening_windows(pool, ["q1", "r5"]) == [(2, 0, OPENING_SPAN)]
    assert opening_windows([_rec("r", 2, ("assistant",), 1)], ["r"]) == [(1, 0, 2)]  # not past it
    read = [_rec("r0", 0, ("user",), 40, session=2), _rec("r1", 1, ("assistant",), 41, session=2)]
    found, added = openings(pool, ["q1", "r5"], read)
    assert found == {"q1": "q0", "r5": "r0"}
    assert [r["id"] for r in added] == ["r0"]


def test_each_opening_turn_enters_right_before_its_sessions_best_record() -> None:
    pool = [{"id": "a", "opening": "oa"}, {"id": "b", "opening": "ob"}, {"id": "oa"}]
    candidates = [("x", "w"), ("oa", "w"), ("a", "w"), ("b", "w")]
    got = with_openings(candidates, pool)
    assert [rid for rid, _ in got] == ["x", "oa", "a", "ob", "b"]  # oa stays, ob enters
    assert dict(got)["ob"] == (
        "the turn that opens the session of the record ranked 4, placed before it"
    )
    assert with_openings(candidates, [{"id": "a"}]) == candidates


ASKED = "List every drink I could brew in my espresso machine this week."
"""A question about every instance (the rule planner names an ``ALL`` need)."""
ONE = "What should I brew in my espresso machine this week?"
"""A question about one fact (a ``NEED``)."""
OPENER = "Morning! I finally gave my old drip coffee maker to the charity shop."


def _history(roles: tuple[Role, Role] = ("user", "assistant")) -> list[Record]:
    """Session 1: the user's opening turn sharing no word with the question, then the
    exchange the question's words find; session 2: the user's garden notes, which share one
    ("week") and fill a small View."""
    you, helper = roles
    turns = [
        (you, OPENER),
        (helper, "That is kind of you. What are you using now?"),
        (you, "An espresso machine, a gift. What should I brew in it?"),
        (helper, "Try a ristretto first: a new espresso machine loves a fine grind."),
    ]
    out = [
        make_record(
            f"s1p{i}", f"{role}: {text}", namespace=NS, position=i, roles=(role,), seq=i + 1
        )
        for i, (role, text) in enumerate(turns)
    ]
    for i in range(6):
        text = f"{you}: garden note {i} of the week: the beans, roses and hedge want water."
        out.append(
            make_record(
                f"s2p{i}", text, namespace=NS, session=2, position=i, roles=(you,), seq=len(out) + 1
            )
        )
    return out


def _espresso_judge(qid: str, question: Any, state: Any) -> float:
    """Needed: the exchange about the espresso machine; the opening turn is judged low."""
    rows = {r["id"]: r for r in state["records"]}
    text = str(rows.get(qid.partition(".")[0], {}).get("text", ""))
    return 0.9 if "espresso" in text else 0.05 if "charity" in text else 0.3


TIGHT = ReadSettings(view_chars=700, view_neighbours=0, instruction_records=0, excerpt_slots=None)
"""A View that holds a few records, so a record is in it for a reason."""


def _view(settings: ReadSettings, source: Any, run_async: bool = False, asked: str = ASKED) -> Any:
    return view_of(source, _espresso_judge, settings, asked, NS, run_async)


def test_in_a_real_graph_the_opening_turn_comes_from_the_journal() -> None:
    source = InMemorySearchSource(_history())
    on = _view(TIGHT, source)
    off = _view(replace(TIGHT, opening_turns=0), InMemorySearchSource(_history()))
    assert "ALL" in [n["kind"] for n in on.trace["needs"]]
    assert "charity shop" in on.text and "charity shop" not in off.text
    assert "s1p2:m0" in on.message_ids and "s1p2:m0" in off.message_ids
    assert "s1p0" not in {p["id"] for p in on.trace["pool"]}, "the opening turn was not pooled"
    assert source.reads, "the journal was read for it"
    assert "the turn that opens the session of the record ranked 1" in on.trace["placement"]["s1p0"]
    why = explain(on, "s1p0")
    assert "never judged: brought in for a record that was" in why
    assert "the turn that opens the session" in why
    unseen = [r.id for r in _history() if r.id not in on.trace["placement"]]
    assert unseen and "no search of this turn returned it" in explain(on, unseen[0])
    assert on.text.index("charity shop") < on.text.index("An espresso machine")
    assert _view(TIGHT, InMemorySearchSource(_history()), run_async=True).text == on.text


def test_a_question_about_one_fact_brings_no_opening_turn() -> None:
    on = _view(TIGHT, InMemorySearchSource(_history()), asked=ONE)
    assert [n["kind"] for n in on.trace["needs"]] == ["NEED"]
    assert "s1p2:m0" in on.message_ids and "charity shop" not in on.text
    off = _view(replace(TIGHT, opening_turns=0), InMemorySearchSource(_history()), asked=ONE)
    assert on.text == off.text


def test_a_conversation_between_people_brings_no_opening_turn() -> None:
    people = _history(("user", "user"))
    source = InMemorySearchSource(people)
    on = _view(TIGHT, source)
    assert not source.reads, "a talk between people is not read for openings"
    assert "s1p2:m0" in on.message_ids, "the exchange is in the View"
    assert "charity shop" not in on.text
    assert on.text == _view(replace(TIGHT, opening_turns=0), InMemorySearchSource(people)).text


def test_a_source_that_is_not_a_journal_leaves_the_view_as_without_the_rule() -> None:
    plain = PlainSource(InMemorySearchSource(_history()))
    assert not isinstance(plain, JournalSource)
    got = _view(TIGHT, plain)
    assert "s1p2:m0" in got.message_ids and "charity shop" not in got.text
    assert got.text == _view(replace(TIGHT, opening_turns=0), plain).text


@pytest.mark.parametrize("others", [False, True], ids=["alone", "others-between"])
def test_both_stores_are_journals_that_give_the_opening_turn(
    journal_target: str, others: bool
) -> None:
    """Written through the store (a record per turn: each is too long to share one) and read
    by the graph sync and async: the opening turn, which no search pools, enters the View
    before the session's best record on both backends. ``others-between``: each turn
    written on its own with another user's turns written in between (the journal's ``seq``
    runs across users; positions do not)."""
    day = datetime(2024, 3, 1, 9, 0)
    pad = " It took two trips by bus, and the volunteers there were lovely about it all." * 4
    turns = [
        ("user", OPENER + pad),
        ("assistant", "That is kind of you. What are you using now?" + pad),
        ("user", "An espresso machine, a gift. What should I brew in it?" + pad),
        ("assistant", "Try a ristretto first: a new espresso machine loves a fine grind." + pad),
    ]
    messages = [Message(text, role, role, f"m{i}", day, 1) for i, (role, text) in enumerate(turns)]
    note = "Garden note {} of the week: the beans want water and the hedge wants a trim."
    messages += [Message(note.format(i) * 6, "user", "user", f"g{i}", day, 2) for i in range(60)]
    # the dense sessions' searches (``session_searches``) search session 1 again with the
    # message and may pool the opening turn themselves: off, so no search pools it
    one_page = replace(TIGHT, view_chars=1400, max_rounds=1, session_searches=0)
    with MnemonStore(journal_target, fake_embeddings()) as store:
        ingest_turn_by_turn(store, NS, messages[:4], others)
        store.ingest(NS, messages[4:], origin="chat")
        assert isinstance(store, JournalSource)
        assert all(len(r.message_ids) == 1 for r in store.records(NS)), "one turn per record"
        view = _view(one_page, store)
        opener = next(r.id for r in store.records(NS) if r.message_ids == ("m0",))
        assert opener not in {p["id"] for p in view.trace["pool"]}, "no search pooled it"
        assert "m0" in view.message_ids and "m2" in view.message_ids
        assert view.text.index("charity shop") < view.text.index("An espresso machine")
        assert _view(one_page, store, run_async=True).text == view.text
        without = _view(replace(one_page, opening_turns=0), store)
        assert "m0" not in without.message_ids and "m2" in without.message_ids
