"""TTL on ``MnemonBaseStore`` (LangGraph's ``TTLConfig``), on both backends.

Every test runs on a clock the test moves (``MnemonBaseStore(..., clock=...)``), never on
sleeps: ``put(..., ttl=minutes)`` and ``default_ttl`` set the expiry, ``get`` / ``search``
refresh it (``refresh_ttl``, ``refresh_on_read``), expired items are left out of ``get``,
``search`` and ``list_namespaces`` by the backends' SQL before any sweep (their rows are
still in the table), and ``sweep_ttl`` / the background sweeper delete them through the
store's checked ``sweep_expired_items`` with erase's no-residue scan (SQLite: every cell,
the raw file with its free pages, the WAL; PostgreSQL: every cell after ``VACUUM``).
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from _reliability_common import fake_embeddings, files_containing, sqlite_cells, utf16

from mnemon_langgraph import MnemonBaseStore, MnemonStore
from mnemon_langgraph.errors import ConfigurationError, InputError
from mnemon_langgraph.integrations.basestore import base_store_from_env
from mnemon_langgraph.store import is_postgres_url

ADA = ("memories", "ada")
TEMP = ("memories", "temp")
T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


class Clock:
    """A clock the test moves: ``clock()`` is now, ``clock.advance(minutes)`` moves it."""

    def __init__(self, start: datetime = T0) -> None:
        self.now = start

    def __call__(self) -> datetime:
        return self.now

    def advance(self, minutes: float) -> None:
        self.now += timedelta(minutes=minutes)


@pytest.fixture(params=["sqlite", "postgres"])
def target(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return str(tmp_path / "memory.db")
    return str(request.getfixturevalue("postgres_url"))


@pytest.fixture
def store(target: str) -> Iterator[MnemonStore]:
    with MnemonStore(target, fake_embeddings()) as s:
        yield s


@pytest.fixture
def clock() -> Clock:
    return Clock()


def _stored_keys(target: str) -> list[str]:
    """The keys of every stored item row, expired or not (read past the store)."""
    if is_postgres_url(target):
        import psycopg

        with psycopg.connect(target) as conn:
            return sorted(r[0] for r in conn.execute("SELECT key FROM mnemon_kv_items"))
    with sqlite3.connect(target) as conn:
        return sorted(r[0] for r in conn.execute("SELECT key FROM mnemon_kv_items"))


def _keys(items: list) -> list[str]:  # type: ignore[type-arg]
    return sorted(i.key for i in items)


def test_an_item_expires_at_its_minute_in_every_read_before_any_sweep(
    store: MnemonStore, target: str, clock: Clock
) -> None:
    with MnemonBaseStore(store, clock=clock) as bs:
        bs.put(ADA, "brief", {"content": "parked on level three"}, ttl=10)
        bs.put(ADA, "lasting", {"content": "parked cars are blue"})
        bs.put(TEMP, "only", {"content": "parked for a moment"}, ttl=5)
        clock.advance(4.99)
        assert bs.get(TEMP, "only", refresh_ttl=False) is not None
        assert TEMP in bs.list_namespaces(prefix=("memories",))
        clock.advance(0.01)  # exactly five minutes: expired (expires_at <= now)
        assert bs.get(TEMP, "only") is None
        assert bs.list_namespaces(prefix=("memories",)) == [ADA]
        assert _keys(bs.search(("memories",), refresh_ttl=False)) == ["brief", "lasting"]
        found = bs.search(("memories",), query="parked", refresh_ttl=False)
        assert _keys(found) == ["brief", "lasting"]
        clock.advance(5)  # ten minutes
        assert bs.get(ADA, "brief") is None and bs.get(ADA, "lasting") is not None
        assert _keys(bs.search(("memories",), query="parked")) == ["lasting"]
        assert asyncio.run(bs.aget(ADA, "brief")) is None
        assert _keys(asyncio.run(bs.asearch(("memories",)))) == ["lasting"]
        # left out by the reads' SQL: the rows are all still stored until a sweep
        assert _stored_keys(target) == ["brief", "lasting", "only"]
        assert bs.sweep_ttl() == 2
        assert _stored_keys(target) == ["lasting"]
        assert bs.sweep_ttl() == 0
        audit = [a for a in bs.audit_log() if a.action == "expire_items"]
        assert [(a.namespace, a.keys, a.count, a.actor) for a in audit] == [
            (ADA, ("brief",), 1, "ttl"),
            (TEMP, ("only",), 1, "ttl"),
        ]


def test_reads_refresh_the_ttl_unless_told_not_to(store: MnemonStore, clock: Clock) -> None:
    with MnemonBaseStore(store, clock=clock) as bs:
        bs.put(ADA, "got", {"content": "apples"}, ttl=10)
        bs.put(ADA, "found", {"content": "pears"}, ttl=10)
        bs.put(ADA, "unread", {"content": "figs"}, ttl=10)
        clock.advance(8)
        assert bs.get(ADA, "got") is not None  # refresh_on_read defaults to True
        assert _keys(bs.search(ADA, query="pears", limit=1)) == ["found"]
        assert bs.get(ADA, "unread", refresh_ttl=False) is not None
        clock.advance(8)  # 16 minutes: the unread one expired at 10
        assert bs.get(ADA, "unread") is None
        assert bs.get(ADA, "got", refresh_ttl=False) is not None  # until 18
        assert bs.get(ADA, "found", refresh_ttl=False) is not None
        clock.advance(2)
        assert bs.get(ADA, "got") is None and bs.get(ADA, "found") is None
        # an expired item is not brought back by a refreshing read
        assert bs.search(ADA) == []
    with MnemonBaseStore(store, ttl={"refresh_on_read": False}, clock=clock) as bs:
        bs.put(ADA, "k", {"content": "plums"}, ttl=10)
        clock.advance(8)
        assert bs.get(ADA, "k") is not None and bs.search(ADA) != []  # no refresh by default
        assert bs.get(ADA, "k", refresh_ttl=True) is not None  # asked: 10 minutes from now
        clock.advance(9)
        assert bs.get(ADA, "k") is not None
        clock.advance(8)
        assert bs.get(ADA, "k") is None


def test_default_ttl_and_a_put_replace_the_expiry(store: MnemonStore, clock: Clock) -> None:
    with MnemonBaseStore(store, ttl={"default_ttl": 30}, clock=clock) as bs:
        assert bs.ttl_config == {"default_ttl": 30.0}
        bs.put(ADA, "default", {"content": "a"})  # default_ttl
        bs.put(ADA, "never", {"content": "b"}, ttl=None)  # LangGraph: None is no expiry
        bs.put(ADA, "short", {"content": "c"}, ttl=1)
        clock.advance(0.5)
        bs.put(ADA, "short", {"content": "c2"}, ttl=60)  # a put counts the TTL afresh
        clock.advance(29.5)
        assert _keys(bs.search(ADA, refresh_ttl=False)) == ["never", "short"]
        bs.put(ADA, "short", {"content": "c3"}, ttl=None)  # and may take it away
        clock.advance(10_000)
        assert _keys(bs.search(ADA)) == ["never", "short"]
        assert bs.sweep_ttl() == 1


def test_sweeping_leaves_no_residue(store: MnemonStore, target: str, clock: Clock) -> None:
    """The swept values are in no cell, and (SQLite) nowhere in the file, its free pages
    or its WAL; the scan finds them before the sweep, and keeps finding the live item."""
    gone, kept = "QzvTtlMarkerAlpha4417", "KeepTtlOmega8812"
    needles = [gone.encode(), gone.lower().encode(), utf16(gone)]
    with MnemonBaseStore(store, clock=clock) as bs:
        bs.put(ADA, "secret", {"content": f"the code is {gone}"}, ttl=5)
        bs.put(("memories", "bo"), "other", {"content": f"note {gone} too"}, ttl=5)
        bs.put(ADA, "kept", {"content": f"keep {kept}"})
        assert _scan(target, needles), "the scan must find the marker before the sweep"
        clock.advance(5)
        assert store.sweep_expired_items(now=clock.now, actor="ops") == 2
        assert bs.get(ADA, "kept") is not None
    assert _scan(target, needles) == []
    assert _scan(target, [kept.encode()])
    with MnemonBaseStore(store) as bs:
        audit = [a for a in bs.audit_log() if a.action == "expire_items"]
    assert {a.actor for a in audit} == {"ops"} and sum(a.count for a in audit) == 2


def _scan(target: str, needles: list[bytes]) -> list[str]:
    if is_postgres_url(target):
        import psycopg

        with psycopg.connect(target) as conn:
            cells = [
                (t, text.encode())
                for t in ("mnemon_kv_items", "mnemon_kv_audit")
                for (text,) in conn.execute(f"SELECT t::text FROM {t} t")
            ]
        return [f"{t}: {n!r}" for t, raw in cells for n in needles if n in raw]
    db = Path(target)
    found = [f"{t}.{c}: {n!r}" for t, c, raw in sqlite_cells(db) for n in needles if n in raw]
    return found + files_containing([db, Path(f"{db}-wal"), Path(f"{db}-shm")], needles)


def test_the_background_sweeper_sweeps_when_it_starts_and_stops(
    store: MnemonStore, target: str, clock: Clock
) -> None:
    """LangGraph's ``start_ttl_sweeper`` / ``stop_ttl_sweeper`` on the caller's loop: the
    first sweep runs as the task starts, so stopping it at once leaves it done."""
    with MnemonBaseStore(store, ttl={"sweep_interval_minutes": 60}, clock=clock) as bs:
        bs.put(ADA, "old", {"content": "x"}, ttl=1)
        bs.put(ADA, "new", {"content": "y"}, ttl=90)
        clock.advance(2)

        async def run() -> bool:
            task = await bs.start_ttl_sweeper()
            assert await bs.start_ttl_sweeper() is task  # one sweeper
            stopped = await bs.stop_ttl_sweeper(timeout=30)
            assert task.done() and task.get_name() == "mnemon_ttl_sweeper"
            return stopped

        assert asyncio.run(run()) is True
        assert _stored_keys(target) == ["new"]
    with MnemonBaseStore(store, clock=clock) as plain:  # no ttl config: no sweeper
        plain.put(ADA, "brief", {"content": "z"}, ttl=1)
        clock.advance(2)

        async def nothing() -> None:
            await (await plain.start_ttl_sweeper())
            assert await plain.stop_ttl_sweeper() is True

        asyncio.run(nothing())
        assert _stored_keys(target) == ["brief", "new"]
        assert plain.sweep_ttl() == 1

    async def in_async_with() -> bool:
        async with MnemonBaseStore(store, ttl={"sweep_interval_minutes": 60}) as timed:
            task = await timed.start_ttl_sweeper()
        return task.done() and not task.cancelled()

    assert asyncio.run(in_async_with())  # leaving `async with` stopped it, and waited


def test_ttl_exports_and_imports_with_its_expiry(store: MnemonStore, clock: Clock) -> None:
    with MnemonBaseStore(store, clock=clock) as bs:
        bs.put(ADA, "timed", {"content": "a"}, ttl=10)
        bs.put(ADA, "gone", {"content": "b"}, ttl=1)
        bs.put(ADA, "plain", {"content": "c"})
        clock.advance(1)
        rows = {r["key"]: r for r in bs.export_items(ADA)}
        assert sorted(rows) == ["plain", "timed"]  # an expired item is not exported
        assert "ttl" not in rows["plain"] and rows["timed"]["ttl"] == 10.0
        assert rows["timed"]["expires_at"] == (T0 + timedelta(minutes=10)).isoformat()
        bs.delete(ADA, "timed")
        assert bs.import_items(json.loads(json.dumps(list(rows.values())))) == 2
        clock.advance(8.5)
        assert bs.get(ADA, "timed", refresh_ttl=False) is not None
        clock.advance(0.5)
        assert bs.get(ADA, "timed") is None and bs.get(ADA, "plain") is not None
        with pytest.raises(InputError, match="expires_at"):
            bs.import_items([{**rows["timed"], "expires_at": None}])


def test_bad_ttl_settings_are_refused_and_write_nothing(store: MnemonStore) -> None:
    for bad in (
        {"default_tll": 5},
        {"default_ttl": -1},
        {"default_ttl": "5"},
        {"sweep_interval_minutes": 0},
        {"refresh_on_read": "yes"},
        {"omit_expired": False},
        ["default_ttl"],
    ):
        with pytest.raises(ConfigurationError):
            MnemonBaseStore(store, ttl=bad)  # type: ignore[arg-type]
    with MnemonBaseStore(store, ttl={"omit_expired": True}) as bs:
        for ttl in (0, -3, float("nan"), float("inf"), True, "5", 10**12):
            with pytest.raises(InputError, match="ttl"):
                bs.put(ADA, "k", {"content": "x"}, ttl=ttl)  # type: ignore[arg-type]
        assert bs.search(ADA) == []
    naive = MnemonBaseStore(store, clock=lambda: datetime(2026, 1, 1))
    with naive, pytest.raises(ConfigurationError, match="timezone-aware"):
        naive.get(ADA, "k")
    with pytest.raises(InputError, match="timezone-aware"):
        store.sweep_expired_items(now=datetime(2026, 1, 1))


def test_the_server_factory_reads_the_ttl_and_sweeps_until_closed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``base_store_from_env`` takes ``ttl`` from ``LANGGRAPH_STORE`` (what ``langgraph dev``
    sets from ``langgraph.json``'s ``store``) and runs its own sweeper, stopped on exit."""
    monkeypatch.setenv("MNEMON_EMBEDDINGS", "fake")
    db = tmp_path / "j.db"
    past = Clock(datetime.now(UTC) - timedelta(hours=2))
    with MnemonStore(db) as store, MnemonBaseStore(store, clock=past) as bs:
        bs.put(ADA, "stale", {"content": "expired an hour ago"}, ttl=60)
        bs.put(ADA, "fresh", {"content": "kept"}, ttl=60 * 24)
    config = {
        "path": "mnemon_langgraph.integrations.basestore.base_store_from_env",
        "ttl": {"default_ttl": 30, "refresh_on_read": False, "sweep_interval_minutes": 10},
    }
    environ = {"MNEMON_DB": str(db), "LANGGRAPH_STORE": json.dumps(config)}
    with base_store_from_env(environ) as base:
        assert base.ttl_config == {
            "default_ttl": 30.0,
            "refresh_on_read": False,
            "sweep_interval_minutes": 10.0,
        }
        assert base._sweeper.running and base._sweeper.loop() is base._loop.loop
        assert base.get(ADA, "stale") is None and base.get(ADA, "fresh") is not None
    assert not base._sweeper.running  # stopped with the store, after its first sweep
    assert _stored_keys(str(db)) == ["fresh"]
    with base_store_from_env({"MNEMON_DB": str(db)}) as untimed:
        assert untimed.ttl_config is None and not untimed._sweeper.running
    with pytest.raises(ConfigurationError, match="omit_expired"):
        bad = {"ttl": {"omit_expired": False}}
        with base_store_from_env({"MNEMON_DB": str(db), "LANGGRAPH_STORE": json.dumps(bad)}):
            pass


def test_the_sweeper_sweeps_every_interval_and_outlives_a_failing_sweep(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The loop itself, with a pause the test controls (no sleeping): a sweep at start,
    one after each interval, a failure logged and the next sweep still run."""
    from mnemon_langgraph.integrations.basestore_ttl import TTLSweeper

    sweeps: list[int] = []
    pauses: list[float] = []

    async def sweep() -> int:
        sweeps.append(len(sweeps))
        if len(sweeps) == 2:
            raise RuntimeError("database gone for a moment")
        return 1

    async def pause(seconds: float, stop: asyncio.Event) -> bool:
        pauses.append(seconds)
        return len(pauses) == 3 or stop.is_set()  # the third pause ends it

    async def run() -> None:
        sweeper = TTLSweeper(sweep, wait=pause)
        await sweeper.start(2.5)
        assert not sweeper.running and await sweeper.stop() is True

    with caplog.at_level("INFO", logger="mnemon_langgraph.integrations.basestore_ttl"):
        asyncio.run(run())
    assert sweeps == [0, 1, 2] and pauses == [150.0, 150.0, 150.0]
    assert "TTL sweep failed" in caplog.text and "deleted 1 expired items" in caplog.text
