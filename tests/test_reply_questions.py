"""A reply judged in depth brings the user's turn it answers (``read.questions``): the walk
back over the reply's pieces, the journal read when the pool lacks the question, its place in
the View, and the graph with a journal source, a plain source and ``ainvoke``."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime
from typing import Any

import pytest
from _chat_records import PlainSource, chat_records, ingest_turn_by_turn, view_of
from _reliability_common import fake_embeddings

from mnemon_langgraph.read._questions import (
    MIN_REPLY_CHARS,
    SPAN,
    question_of,
    questions,
    reads,
    replies_judged,
    windows,
)
from mnemon_langgraph.read.memory import InMemorySearchSource
from mnemon_langgraph.read.settings import ReadSettings
from mnemon_langgraph.read.view import with_questions
from mnemon_langgraph.store import MnemonStore
from mnemon_langgraph.types import JournalSource, Message, Namespace

NS = ("users", "ada")


def _rec(rid: str, position: int, roles: tuple[str, ...], seq: int, **kw: Any) -> dict[str, Any]:
    base = {"source": "chat", "session": 1, "message_ids": [rid], "text": rid}
    return {**base, "id": rid, "position": position, "roles": list(roles), "seq": seq, **kw}


def test_the_walk_passes_the_replys_own_pieces_to_the_users_turn() -> None:
    records = [
        _rec("q", 3, ("user",), 4),
        _rec("p1", 4, ("assistant",), 5),
        _rec("p2", 5, ("assistant",), 6),
        _rec("p3", 6, ("assistant",), 7),
        _rec("older", 1, ("user",), 2),
    ]
    assert question_of(records[3], records)["id"] == "q"  # type: ignore[index]
    mixed = _rec("qa", 3, ("user", "assistant"), 4)  # a packed turn and reply counts too
    assert question_of(records[1], [mixed, records[1]])["id"] == "qa"  # type: ignore[index]


def test_a_gap_another_session_or_a_stranger_ends_the_walk() -> None:
    reply = _rec("r", 5, ("assistant",), 6)
    assert question_of(reply, [_rec("q", 3, ("user",), 4), reply]) is None  # position 4 missing
    other = _rec("q", 4, ("user",), 5, session=2)
    assert question_of(reply, [other, reply]) is None
    system = _rec("s", 4, ("system",), 5)
    assert question_of(reply, [system, _rec("q", 3, ("user",), 4), reply]) is None
    assert question_of({"id": "x", "position": None}, [reply]) is None


def test_only_replies_judged_in_depth_and_longer_than_a_line_or_two_bring_one() -> None:
    long = "x" * MIN_REPLY_CHARS
    pool = [
        _rec("long", 1, ("assistant",), 2, text=long),
        _rec("short", 3, ("assistant",), 4, text="How is Pepper coping?"),
        _rec("user", 4, ("user",), 5, text=long),
        _rec("unjudged", 5, ("assistant",), 6, text=long),
    ]
    assert replies_judged(pool, ["long", "short", "user"]) == ["long"]


def test_the_journal_is_read_only_for_replies_whose_question_is_not_pooled() -> None:
    pooled_q = [_rec("q1", 0, ("user",), 10), _rec("a1", 1, ("assistant",), 11)]
    lone = _rec("a2", 8, ("assistant",), 40)
    pool = [*pooled_q, lone]
    assert windows(pool, ["a1", "a2"]) == [(1, 0, 8)]  # session 1, positions 0 .. 7
    far = _rec("a9", 40, ("assistant",), 900)  # the window is by position, not by seq
    assert windows([far], ["a9"]) == [(1, 40 - SPAN, 40)]
    assert windows([_rec("a0", 0, ("assistant",), 3)], ["a0"]) == []  # nothing before it
    assert windows([_rec("ax", 3, ("assistant",), 3, session=None)], ["ax"]) == []
    found, added = questions(pool, ["a1", "a2"], [_rec("q2", 7, ("user",), 39)])
    assert found == {"a1": "q1", "a2": "q2"}
    assert [q["id"] for q in added] == ["q2"]


def test_each_question_enters_right_before_its_reply() -> None:
    pool = [
        {"id": "a", "question": "qa"},
        {"id": "b", "question": "qb"},
        {"id": "qa"},
        {"id": "qb"},
        {"id": "x"},
    ]
    candidates = [("x", "w"), ("qa", "w"), ("a", "w"), ("b", "w"), ("qb", "w")]
    got = with_questions(candidates, pool)
    assert [rid for rid, _ in got] == ["x", "qa", "a", "qb", "b"]  # qa kept, qb moved up
    assert dict(got)["qb"] == "the user's turn that the reply ranked 4 answers, placed before it"
    assert with_questions(candidates, [{"id": "a"}]) == candidates


GARDEN = "the roses, the beans and the hedge all want water, and the shed door still sticks."


def _history() -> list[Any]:
    """A user's turn sharing no word with the question, then the assistant's three-piece
    reply that shares many, then longer turns of the user that share one ("care")."""
    reply = (
        "a piano is a lovely gift, and a used one deserves care; piano care, part {}: tune the "
        "piano twice a year, keep the room's humidity steady, dust the keys gently and keep "
    )
    return chat_records(
        NS,
        [
            ("ask", "user", "Guess what, the neighbour gave me her old Yamaha yesterday!", "m0"),
            *(
                (f"reply{i}", "assistant", reply.format(i) + "it from the radiator.", "m1")
                for i in range(1, 4)
            ),
            *(
                (
                    f"f{i}",
                    "user",
                    f"note {i}: the garden needs care after the rain; {GARDEN}",
                    f"m{i}",
                )
                for i in range(4, 10)
            ),
        ],
    )


def _piano_judge(qid: str, question: Any, state: Any) -> float:
    """Needed: the records about the piano (the reply's pieces). The user's turn shares no
    word with the question and is judged below everything else."""
    local = qid.partition(".")[0]
    rows = {r["id"]: r for r in state["records"]}
    text = str(rows.get(local, {}).get("text", ""))
    return 0.9 if "piano" in text else 0.05 if "Yamaha" in text else 0.3


TIGHT = ReadSettings(
    view_chars=1200,
    view_neighbours=0,
    instruction_records=0,
    excerpt_slots=None,
    opening_turns=0,
)
"""A View that holds two or three records, so a record is in it for a reason (the
question here also opens the session: ``tests/test_opening_turns.py`` tests that rule)."""


def _view(settings: ReadSettings, source: Any = None, run_async: bool = False) -> Any:
    source = source or InMemorySearchSource(_history())
    asked = "How should I take care of my piano?"
    return view_of(source, _piano_judge, settings, asked, NS, run_async)


def test_in_a_real_graph_the_reply_brings_the_users_turn_from_the_journal() -> None:
    base = TIGHT
    source = InMemorySearchSource(_history())
    assert isinstance(source, JournalSource)
    on = _view(base, source)
    off = _view(replace(base, reply_questions=False))
    assert "m0" in on.message_ids and "Yamaha" in on.text
    assert "m0" not in off.message_ids and "m1" in off.message_ids
    assert "ask" not in {p["id"] for p in on.trace["pool"]}, "the question was not pooled"
    assert source.reads, "the journal was read for it"
    assert on.trace["placement"]["ask"].endswith("answers, placed before it")
    assert on.text.index("Yamaha") < on.text.index("tune the piano")
    assert _view(base, run_async=True).text == on.text


def test_a_source_that_is_not_a_journal_leaves_the_view_as_without_the_rule() -> None:
    base = TIGHT
    plain = PlainSource(InMemorySearchSource(_history()))
    assert not isinstance(plain, JournalSource)
    got = _view(base, plain)
    assert got.text == _view(replace(base, reply_questions=False), plain).text
    assert "m1" in got.message_ids and "m0" not in got.message_ids


def _piano_messages() -> list[Message]:
    """The user's turn, the assistant's long reply (the journal splits it), garden notes."""
    day = datetime(2024, 3, 1, 9, 0)
    reply = " ".join(
        f"Piano care, step {i}: tune the piano twice a year, keep the piano away from the "
        "radiator and dust the piano keys gently."
        for i in range(12)
    )
    ask = "Guess what, the neighbour gave me her old Yamaha yesterday!"
    return [
        Message(ask, "user", "user", "m0", day, 1),
        Message(reply, "assistant", "assistant", "m1", day, 1),
        *(
            Message(f"Note {i} about the garden. " + GARDEN * 5, "user", "user", f"m{i}", day, 1)
            for i in range(2, 62)
        ),
    ]


ONE_PAGE = replace(TIGHT, max_rounds=1, view_chars=3000)
"""One page of each search: the user's turn, sharing no word with the question, is not
pooled, so only the journal read can bring it."""


@pytest.mark.parametrize("others", [False, True], ids=["alone", "others-between"])
def test_both_stores_are_journals_that_give_the_question(journal_target: str, others: bool) -> None:
    """Written through the store (the reply split into pieces by the journal), read by the
    graph sync and async: the user's turn enters the View with its reply on both backends.
    ``others-between``: each turn written on its own, with other users' turns written in
    between (one journal serves many users: its ``seq`` runs across all of them)."""
    with MnemonStore(journal_target, fake_embeddings()) as store:
        ingest_turn_by_turn(store, NS, _piano_messages(), others)
        assert isinstance(store, JournalSource)
        pieces = [r for r in store.records(NS) if r.message_ids == ("m1",)]
        assert len(pieces) >= 2, "the reply was not split: the walk over pieces is untested"
        if others:
            seqs = [r.seq for r in store.records(NS)]
            assert seqs[1] - seqs[0] > SPAN, "other users' records lie between the turns"
        view = _view(ONE_PAGE, store)
        asked = next(r.id for r in store.records(NS) if r.message_ids == ("m0",))
        assert asked not in {p["id"] for p in view.trace["pool"]}, "no search pooled it"
        assert "m0" in view.message_ids and "m1" in view.message_ids
        assert view.text.index("Yamaha") < view.text.index("tune the piano")
        assert _view(ONE_PAGE, store, run_async=True).text == view.text
        without = _view(replace(ONE_PAGE, reply_questions=False), store)
        assert "m0" not in without.message_ids and "m1" in without.message_ids


def test_overlapping_windows_are_read_once() -> None:
    """Pieces of one reply share a window: one journal read covers them all; parts of one
    session that overlap or touch are one read, other sessions' parts are their own."""
    assert reads([]) == []
    assert reads([(1, 0, 16), (1, 1, 17), (1, 2, 18)]) == [(1, 0, 18)]
    assert reads([(1, 40, 56), (1, 0, 16), (1, 16, 32)]) == [(1, 0, 32), (1, 40, 56)]
    assert reads([(1, 0, 16), (2, 0, 4), (1, 0, 4)]) == [(1, 0, 16), (2, 0, 4)]
    assert reads([(1, 0, 4), (1, 5, 9)]) == [(1, 0, 4), (1, 5, 9)]


class _AsyncJournal(InMemorySearchSource):
    """A journal with an async face of its own, which says which face was read."""

    def __init__(self, records: list[Any]) -> None:
        super().__init__(records)
        self.faces: list[str] = []

    def session_records(self, namespace: Namespace, session: int, **kw: Any) -> Any:
        self.faces.append("sync")
        return super().session_records(namespace, session, **kw)

    async def asession_records(self, namespace: Namespace, session: int, **kw: Any) -> Any:
        self.faces.append("async")
        return super().session_records(namespace, session, **kw)


def test_ainvoke_reads_the_journal_through_its_async_face() -> None:
    sync_source, async_source = _AsyncJournal(_history()), _AsyncJournal(_history())
    on = _view(TIGHT, sync_source)
    assert _view(TIGHT, async_source, run_async=True).text == on.text
    assert "m0" in on.message_ids, "the question was read from the journal"
    assert sync_source.faces and set(sync_source.faces) == {"sync"}
    # super().session_records inside the async face is the base class's: no "sync" here
    assert async_source.faces and set(async_source.faces) == {"async"}
