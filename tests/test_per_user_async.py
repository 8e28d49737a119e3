"""The per-user API's async twins: the same results as the sync calls, on both backends,
and on PostgreSQL composed of the native async core (no worker thread around a sync call)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from _reliability_common import fake_embeddings

from mnemon_langgraph.errors import InputError
from mnemon_langgraph.store import MnemonStore, is_postgres_url

NOW = datetime(2026, 3, 1, 9, 30, tzinfo=UTC)
TURN = [("user", "My cat is called Pixel."), ("assistant", "Cute!")]


@pytest.fixture(params=["embedded", "postgres"])
def target(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "embedded":
        return str(tmp_path / "memory.db")
    return str(request.getfixturevalue("postgres_url"))


@pytest.fixture
def store(target: str) -> Iterator[MnemonStore]:
    with MnemonStore(target, fake_embeddings()) as s:
        yield s


SYNC_FACES = ("add_messages", "export", "ingest", "records")
SYNC_FACES += ("delete_records", "audit_log", "max_seq")


def _forbid_sync_faces(store: MnemonStore, monkeypatch: pytest.MonkeyPatch) -> None:
    """On PostgreSQL the async twins compose the async core: a sync facade is never called."""
    if not is_postgres_url(str(getattr(store, "url", ""))):
        return
    for name in SYNC_FACES:

        def refuse(*args: Any, _name: str = name, **kwargs: Any) -> Any:
            raise AssertionError(f"an async twin called the sync {_name}")

        monkeypatch.setattr(store, name, refuse)


def _shape(store: MnemonStore, user: str) -> dict[str, Any]:
    """The export without what differs between two users' equal histories."""
    doc = json.loads(store.export(user))
    drop = {"id", "seq", "created_at", "at", "namespace", "record_ids"}
    return {
        "records": [{k: v for k, v in r.items() if k not in drop} for r in doc["records"]],
        "audit": [{k: v for k, v in a.items() if k not in drop} for a in doc["audit"]],
    }


def test_async_per_user_calls_equal_the_sync_ones(
    store: MnemonStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    later = [("user", "We moved to Lyon.")]
    sync_result = store.add_messages("ada", TURN, now=NOW)
    store.add_messages("ada", later, now=NOW.replace(hour=20))
    sync_records = list(store.records("ada"))
    assert [r.session for r in sync_records] == [1, 2]  # ten hours apart: a new session

    async def twin() -> tuple[Any, list[Any]]:
        result = await store.aadd_messages("bo", TURN, now=NOW)
        await store.aadd_messages("bo", later, now=NOW.replace(hour=20))
        return result, [r async for r in store.arecords("bo")]

    _forbid_sync_faces(store, monkeypatch)
    async_result, async_records = asyncio.run(twin())
    assert async_result.messages_written == sync_result.messages_written == 2
    assert [(r.session, r.date, r.text) for r in async_records] == [
        (r.session, r.date, r.text) for r in sync_records
    ]
    deleted = asyncio.run(store.adelete_records("bo", [async_records[0].id], reason="asked"))
    exported = asyncio.run(store.aexport("bo"))
    monkeypatch.undo()

    assert deleted == [async_records[0].id]
    assert store.delete_records("ada", [sync_records[0].id], reason="asked") == [sync_records[0].id]
    assert _shape(store, "ada") == _shape(store, "bo")
    assert json.loads(exported) == json.loads(store.export("bo"))
    assert len(json.loads(exported)["audit"]) == 1


def test_async_per_user_calls_refuse_what_the_sync_ones_refuse(store: MnemonStore) -> None:
    with pytest.raises(InputError, match="list of messages"):
        asyncio.run(store.aadd_messages("ada", "hello"))  # type: ignore[arg-type]
    assert list(store.records("ada")) == []
