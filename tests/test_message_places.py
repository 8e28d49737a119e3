"""The survivors of a message deletion keep their place in the conversation (both backends).

``delete_messages`` deletes every record holding the named messages and writes the other
messages of those records back at the place of those records, not at the end of the
session — also when two separate places are deleted at once, and when the survivors need
more records than they had (the records after them move down, order kept).
"""

from __future__ import annotations

import random
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from _reliability_common import fake_embeddings

from mnemon_langgraph.store import MnemonStore
from mnemon_langgraph.types import Message, Record

ADA = ("users", "ada")


@pytest.fixture(params=["embedded", "postgres"])
def target(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A SQLite path, or a fresh PostgreSQL database URL."""
    if request.param == "embedded":
        return str(tmp_path / "memory.db")
    return str(request.getfixturevalue("postgres_url"))


@pytest.fixture
def store(target: str) -> Iterator[MnemonStore]:
    with MnemonStore(target, fake_embeddings()) as s:
        yield s


def _in_place_order(store: MnemonStore) -> list[Record]:
    return sorted(store.records(ADA), key=lambda r: (r.session, r.position))


def _conversation(store: MnemonStore) -> list[str]:
    """Message ids in (session, position) order; positions must be unique per session."""
    records = _in_place_order(store)
    places = [(r.session, r.position) for r in records]
    assert len(places) == len(set(places)), f"(session, position) repeated: {places}"
    lines = [m for r in records for m in r.message_ids]
    # a long message is split over consecutive lines and records: one entry per message
    return [m for i, m in enumerate(lines) if i == 0 or lines[i - 1] != m]


def _o(i: int, words: str = "text") -> Message:
    return Message(f"o{i:02d} {words}", "Ada", id=f"o{i:02d}")


def test_survivors_keep_their_place_in_the_session(store: MnemonStore) -> None:
    store.ingest(ADA, [_o(i) for i in range(3)], origin="a", pack=False)
    store.ingest(ADA, [_o(i) for i in range(3, 6)], origin="b", pack=True)  # one record
    store.ingest(ADA, [_o(i) for i in range(6, 16)], origin="c", pack=False)
    deleted, rewritten = store.delete_messages(ADA, ["o05"])
    assert len(deleted) == 1 and rewritten.messages_written == 2
    assert _conversation(store) == [f"o{i:02d}" for i in range(16) if i != 5]
    (back,) = store.get_records(ADA, list(rewritten.record_ids))
    assert back.position == 3 and back.message_ids == ("o03", "o04")


def test_two_places_deleted_at_once_are_refilled_separately(store: MnemonStore) -> None:
    store.ingest(ADA, [_o(i) for i in range(3)], origin="a", pack=True)  # p: o00 o01 o02
    store.ingest(ADA, [_o(3)], origin="b", pack=True)  # a record of its own between
    store.ingest(ADA, [_o(i) for i in range(4, 7)], origin="c", pack=True)  # o04 o05 o06
    store.ingest(ADA, [_o(7)], origin="d", pack=True)
    store.delete_messages(ADA, ["o01", "o05"])
    order = _conversation(store)
    # o02 is not pulled after o03, nor o04 before it: each run is refilled in its place
    assert order == ["o00", "o02", "o03", "o04", "o06", "o07"]


def test_survivors_needing_more_records_move_the_later_ones_down(target: str) -> None:
    words = "long words " * 10  # ~120 characters a line: five share one 600-char record
    with MnemonStore(target, fake_embeddings()) as wide:
        wide.ingest(ADA, [_o(i, words) for i in range(5)], origin="a", pack=True)
        wide.ingest(ADA, [_o(i) for i in range(5, 9)], origin="b", pack=False)
        packed = _in_place_order(wide)
        assert packed[0].message_ids == ("o00", "o01", "o02", "o03", "o04")
        assert len(packed) == 5
    with MnemonStore(target, fake_embeddings(), record_chars=150) as narrow:
        deleted, rewritten = narrow.delete_messages(ADA, ["o00"])
        assert len(deleted) == 1
        assert rewritten.records_written == 4  # one record's place, four records to put back
        assert _conversation(narrow) == [f"o{i:02d}" for i in range(1, 9)]


@pytest.mark.parametrize("seed", range(4))
def test_random_deletions_keep_the_conversation_order(target: str, seed: int) -> None:
    """Random batches (packed or not, short and long messages), then random deletions, some
    through a store with smaller records: the rest is always in its original order."""
    rng = random.Random(seed)
    said = [
        Message(f"m{i} " + "word " * rng.choice([1, 3, 30, 90, 200]), "Ada", id=f"m{i}")
        for i in range(40)
    ]
    with MnemonStore(target, fake_embeddings()) as store:
        start = 0
        while start < len(said):
            size = rng.randint(1, 8)
            batch = said[start : start + size]
            store.ingest(ADA, batch, origin=f"s{start}", pack=rng.random() < 0.7)
            start += size
    alive = [m.id for m in said]
    for round_ in range(4):
        gone = rng.sample(alive, k=min(len(alive), rng.randint(1, 4)))
        chars = rng.choice([150, 600]) if round_ else 600
        with MnemonStore(target, fake_embeddings(), record_chars=chars) as store:
            store.delete_messages(ADA, gone)
            alive = [m for m in alive if m not in gone]
            assert _conversation(store) == alive, f"round {round_}, deleted {gone}"
