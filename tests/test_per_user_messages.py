"""The per-user API thinks in messages, and a message said again is stored again (both backends).

* ``list_messages`` gives each message with its id, and ``delete_messages(user, [id])``
  removes that message and keeps the rest of its record (records pack short turns).
* A message without an id repeated in a later turn ("yes", "ok") is stored again, while the
  same batch ingested twice is still written once.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from _reliability_common import fake_embeddings

from mnemon_langgraph.errors import InputError
from mnemon_langgraph.store import MnemonStore
from mnemon_langgraph.types import Message

ADA = ("users", "ada")
T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)


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


def test_per_user_api_deletes_one_message_and_keeps_the_rest_of_its_record(
    store: MnemonStore,
) -> None:
    ada = "ada"
    store.add_messages(ada, [("user", "My cat is called Pixel."), ("assistant", "Cute!")])
    (record,) = list(store.records(ada))
    assert len(record.message_ids) == 2  # the premise: one record holds both messages
    messages = store.list_messages(ada)
    assert [(m.text, m.role) for m in messages] == [
        ("My cat is called Pixel.", "user"),
        ("Cute!", "assistant"),
    ]
    assert len({m.id for m in messages}) == 2
    assert store.list_messages(ada, limit=1) == messages[:1]
    store.delete_messages(ada, [messages[-1].id], reason="the user asked")
    assert [m.text for m in store.list_messages(ada)] == ["My cat is called Pixel."]
    hits = store.search("Pixel cat", namespace=ada, k=3)
    assert [h.record.text for h in hits] == ["user: My cat is called Pixel."]
    assert [a.action for a in store.audit_log(ada)] == ["delete_messages"]
    with pytest.raises(InputError, match="limit"):
        store.list_messages(ada, limit=-1)


def test_list_messages_rejoins_a_message_split_over_records(store: MnemonStore) -> None:
    long = " ".join(f"Sentence number {i} of a long message." for i in range(60))
    store.add_messages("ada", [("user", long), ("assistant", "ok")])
    assert len(list(store.records("ada"))) > 2
    assert [m.text for m in store.list_messages("ada")] == [long, "ok"]


def test_a_message_repeated_in_a_later_turn_is_stored_again(store: MnemonStore) -> None:
    turn = [("user", "yes"), ("assistant", "ok")]
    first = store.add_messages("ada", turn, now=T0)
    store.add_messages("ada", [("user", "something else")], now=T0 + timedelta(minutes=1))
    again = store.add_messages("ada", turn, now=T0 + timedelta(minutes=2))
    assert (first.messages_written, again.messages_written, again.messages_skipped) == (2, 2, 0)
    replay = store.add_messages("ada", turn, now=T0 + timedelta(minutes=2))  # the same call
    assert (replay.messages_written, replay.messages_skipped) == (0, 2)
    texts = [m.text for m in store.list_messages("ada")]
    assert texts == ["yes", "ok", "something else", "yes", "ok"]
    store.add_messages("ada", turn)  # default now: a later turn again
    assert [m.text for m in store.list_messages("ada")].count("yes") == 3


def test_derived_ids_of_dated_messages_include_the_time(store: MnemonStore) -> None:
    store.ingest(ADA, [Message("yes", "Ada", timestamp=T0)], origin="chat")
    same = store.ingest(ADA, [Message("yes", "Ada", timestamp=T0)], origin="chat")
    assert same.messages_skipped == 1  # the same message again: idempotent
    hour = T0 + timedelta(hours=1)
    later = store.ingest(ADA, [Message("yes", "Ada", timestamp=hour)], origin="chat")
    assert later.messages_written == 1
    undated = [Message("no", "Ada"), Message("no", "Ada")]  # two places in one call: both kept
    assert store.ingest(ADA, undated, origin="file").messages_written == 2
    assert store.ingest(ADA, undated, origin="file").messages_skipped == 2  # re-ingest: none
    assert [m.text for m in store.list_messages(ADA)].count("yes") == 2
