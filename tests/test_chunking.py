"""Tests for mnemon_langgraph.records._chunking: limits, splitting, packing, sessions, stable
ids."""

from __future__ import annotations

from datetime import datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mnemon_langgraph.errors import InputError, NamespaceError
from mnemon_langgraph.records._chunking import chunk_messages, normalize_text, split_text
from mnemon_langgraph.types import Message

NS = ("users", "ada@example.com")


def _msgs(*texts: str, session: int | None = 1, speaker: str = "Ada") -> list[Message]:
    return [
        Message(text=t, speaker=speaker, id=f"m{i}", session=session) for i, t in enumerate(texts)
    ]


def _rejoins(text: str, pieces: list[str]) -> bool:
    """Pieces are consecutive substrings of text with at most one space dropped between."""
    pos = 0
    for piece in pieces:
        if not text.startswith(piece, pos):
            return False
        pos += len(piece)
        if pos < len(text) and text[pos] == " ":
            pos += 1
    return pos == len(text)


def test_short_turns_pack_into_one_record_with_header() -> None:
    msgs = [
        Message(
            text="Hi there.",
            speaker="Ada",
            id="a",
            session=2,
            timestamp=datetime(2023, 5, 8, 13, 56),
        ),
        Message(text="Hello!", speaker="Bob", id="b", role="assistant", session=2),
    ]
    recs = chunk_messages(msgs, namespace=NS, origin="t")
    assert len(recs) == 1
    rec = recs[0]
    assert rec.text == "Ada: Hi there.\nBob: Hello!"
    assert rec.message_ids == ("a", "b")
    assert rec.roles == ("user", "assistant")
    assert rec.speakers == ("Ada", "Bob")
    assert rec.session == 2 and rec.position == 0
    assert rec.render() == "[Session 2 — 2023-05-08 13:56]\nAda: Hi there.\nBob: Hello!"


def test_pack_false_gives_one_turn_per_record() -> None:
    recs = chunk_messages(_msgs("one", "two", "three"), namespace=NS, origin="t", pack=False)
    assert [r.text for r in recs] == ["Ada: one", "Ada: two", "Ada: three"]
    assert [r.position for r in recs] == [0, 1, 2]


def test_packing_respects_limit() -> None:
    texts = [f"turn number {i} " + "x" * 80 for i in range(30)]
    recs = chunk_messages(_msgs(*texts), namespace=NS, origin="t", max_chars=300)
    assert len(recs) > 5
    assert all(len(r.text) <= 300 for r in recs)
    ids = [m for r in recs for m in r.message_ids]
    assert ids == [f"m{i}" for i in range(30)]


def test_never_packs_across_sessions() -> None:
    msgs = [
        Message(text="a", speaker="A", id="1", session=1),
        Message(text="b", speaker="A", id="2", session=2),
        Message(text="c", speaker="A", id="3", session=2),
    ]
    recs = chunk_messages(msgs, namespace=NS, origin="t")
    assert [(r.session, r.message_ids, r.position) for r in recs] == [
        (1, ("1",), 0),
        (2, ("2", "3"), 0),
    ]


def test_long_message_splits_at_sentences() -> None:
    sentences = [f"Sentence number {i} is here and it says something." for i in range(40)]
    text = " ".join(sentences)
    recs = chunk_messages(_msgs(text), namespace=NS, origin="t")
    assert len(recs) >= 3
    assert all(len(r.text) <= 600 for r in recs)
    assert all(r.message_ids == ("m0",) for r in recs)
    pieces = [r.text.removeprefix("Ada: ") for r in recs]
    assert all(p.endswith(".") for p in pieces)  # cut at sentence ends
    assert _rejoins(text, pieces)
    assert len({r.id for r in recs}) == len(recs)


def test_word_split_then_hard_split() -> None:
    words = " ".join(["word"] * 300)  # no sentence end
    pieces = split_text(words, 100)
    assert all(len(p) <= 100 for p in pieces)
    assert all(not p.startswith(" ") and not p.endswith(" ") for p in pieces)
    assert _rejoins(words, pieces)
    blob = "z" * 250
    assert split_text(blob, 100) == ["z" * 100, "z" * 100, "z" * 50]


def test_whitespace_is_normalized_so_lines_stay_parallel() -> None:
    recs = chunk_messages(_msgs("line one\n\nline   two"), namespace=NS, origin="t")
    assert recs[0].text == "Ada: line one line two"
    assert normalize_text("  a\tb\n c ") == "a b c"


def test_ids_are_stable_and_depend_on_namespace_and_source() -> None:
    msgs = _msgs("hello", "world " * 200)
    a = chunk_messages(msgs, namespace=NS, origin="t")
    b = chunk_messages(msgs, namespace=NS, origin="t")
    assert [r.id for r in a] == [r.id for r in b]
    c = chunk_messages(msgs, namespace=("other",), origin="t")
    d = chunk_messages(msgs, namespace=NS, origin="u")
    assert not {r.id for r in a} & {r.id for r in c}
    assert not {r.id for r in a} & {r.id for r in d}


def test_first_positions_continue_a_session() -> None:
    recs = chunk_messages(
        _msgs("a", "b"), namespace=NS, origin="t", pack=False, first_positions={1: 7}
    )
    assert [r.position for r in recs] == [7, 8]


def test_missing_ids_are_derived_deterministically() -> None:
    msgs = [Message(text="hi", speaker="A"), Message(text="hi", speaker="A")]
    a = chunk_messages(msgs, namespace=NS, origin="s", pack=False)
    b = chunk_messages(msgs, namespace=NS, origin="s", pack=False)
    assert a[0].message_ids != a[1].message_ids
    assert [r.message_ids for r in a] == [r.message_ids for r in b]
    assert a[0].session == 1


def test_oversized_message_is_an_error_naming_the_id() -> None:
    # Above the package-wide bound, the message itself is refused (one rule everywhere).
    with pytest.raises(InputError, match=r"huge-1.*100,000"):
        Message(text="x " * 60_000, speaker="A", id="huge-1")
    # chunk_messages may set a lower bound of its own.
    msgs = [Message(text="x " * 40_000, speaker="A", id="big-1")]
    with pytest.raises(InputError, match="big-1"):
        chunk_messages(msgs, namespace=NS, origin="t", max_message_chars=50_000)
    recs = chunk_messages(msgs, namespace=NS, origin="t")
    assert len(recs) > 100


@pytest.mark.parametrize("text", ["", "   \n\t"])
def test_empty_message_is_an_error(text: str) -> None:
    with pytest.raises(InputError, match="empty"):
        chunk_messages([Message(text=text, speaker="A", id="e1")], namespace=NS, origin="t")


def test_duplicate_ids_in_one_batch_are_an_error() -> None:
    msgs = [Message(text="a", speaker="A", id="x"), Message(text="b", speaker="A", id="x")]
    with pytest.raises(InputError, match="'x'"):
        chunk_messages(msgs, namespace=NS, origin="t")


def test_bad_namespace_is_an_error() -> None:
    with pytest.raises(NamespaceError):
        chunk_messages(_msgs("a"), namespace=("users", ""), origin="t")


@settings(max_examples=60, deadline=None)
@given(
    texts=st.lists(
        st.lists(
            st.sampled_from([*"abc xyz.!?\n", "  ", "longwordlongword", "。", "q" * 700]),
            min_size=1,
            max_size=150,
        )
        .map("".join)
        .filter(lambda t: bool(t.strip())),
        min_size=1,
        max_size=6,
    ),
    pack=st.booleans(),
    max_chars=st.integers(min_value=80, max_value=700),
)
def test_property_text_preserved_and_records_within_limit(
    texts: list[str], pack: bool, max_chars: int
) -> None:
    msgs = [Message(text=t, speaker="Sp", id=f"m{i}") for i, t in enumerate(texts)]
    recs = chunk_messages(msgs, namespace=NS, origin="p", max_chars=max_chars, pack=pack)
    pieces: dict[str, list[str]] = {}
    for rec in recs:
        assert len(rec.text) <= max_chars
        lines = rec.text.split("\n")
        assert len(lines) == len(rec.message_ids) == len(rec.roles)
        for mid, line in zip(rec.message_ids, lines, strict=True):
            assert line.startswith("Sp: ")
            pieces.setdefault(mid, []).append(line[4:])
        if not pack:
            assert len(lines) == 1
    for i, text in enumerate(texts):
        assert _rejoins(normalize_text(text), pieces[f"m{i}"])
    assert len({r.id for r in recs}) == len(recs)


def test_one_message_is_chunked_as_the_general_path_chunks_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A single message that fits one piece is written out (``_one_record``); on random
    messages around every limit it gives the general path's records, or its error."""
    import random
    from datetime import UTC, timedelta, timezone

    from mnemon_langgraph.records import _chunking

    rng = random.Random(45)
    words = ["hi", "a", "longer-word", "Zanzibar.", "ok!", "\t", "  ", "\n", "étude", "日本"]

    def message() -> Message:
        n = rng.choice([0, 1, 3, 20, 120, 400, 700])
        text = " ".join(rng.choices(words, k=n))
        when = rng.choice(
            [
                None,
                datetime(2024, 5, 1, 9, 30),
                datetime(2024, 5, 1, 9, 30, tzinfo=UTC),
                datetime(2024, 5, 1, 9, 30, tzinfo=timezone(timedelta(hours=5))),
            ]
        )
        return Message(
            text,
            rng.choice(["Ada", "  Ada  Lovelace ", "", "x" * 100]),
            role=rng.choice(["user", "assistant"]),
            id=rng.choice(["m1", "D1:3", "  ", None, "d" * 30]),
            timestamp=when,
            session=rng.choice([None, 1, 7]),
        )

    def outcome(msgs: list[Message], **kwargs: object) -> object:
        try:
            return chunk_messages(msgs, **kwargs)  # type: ignore[arg-type]
        except Exception as exc:  # the same error, or the same records
            return (type(exc), str(exc))

    made = 0
    for _ in range(600):
        msg = message()
        kwargs = {
            "namespace": rng.choice([("docs",), ("u", "ada")]),
            "origin": rng.choice(["docs", "chat"]),
            "max_chars": rng.choice([80, 120, 600]),
            "pack": rng.random() < 0.5,
            "first_positions": rng.choice([None, {1: 5}, {7: 0, 1: 2}]),
        }
        fast = outcome([msg], **kwargs)
        with monkeypatch.context() as m:
            m.setattr(_chunking, "_one_record", lambda *a: None)
            general = outcome([msg], **kwargs)
        assert fast == general, (msg, kwargs)
        made += isinstance(fast, list) and len(fast) == 1
    assert made > 100  # the written-out path was taken, not only refused or cut
    for max_chars in (80, 120, 600):  # a text of the piece budget's length, and one more
        budget = max_chars - len("Ada: ")
        for size in (budget - 1, budget, budget + 1):
            for text in ("a" * size, ("ab " * size)[:size].strip() + "x" * (size % 2)):
                msg = Message(text, "Ada", id="m1", session=1)
                fast = outcome([msg], namespace=("d",), origin="d", max_chars=max_chars)
                with monkeypatch.context() as m:
                    m.setattr(_chunking, "_one_record", lambda *a: None)
                    general = outcome([msg], namespace=("d",), origin="d", max_chars=max_chars)
                assert fast == general, (max_chars, size)
