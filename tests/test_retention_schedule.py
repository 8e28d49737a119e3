"""Retention on a schedule for a server (``MNEMON_RETENTION``): parsing, one run over every
namespace (held ones skipped), and the store factory running it while the store is open.
Runs are dated by an explicit clock; the thread is waited for through its ``ran`` event."""

from __future__ import annotations

import sys
import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from _reliability_common import fake_embeddings

from mnemon_langgraph.errors import ConfigurationError
from mnemon_langgraph.integrations.basestore import base_store_from_env
from mnemon_langgraph.integrations.retention_schedule import (
    THREAD_NAME,
    retention_schedule_from_env,
    schedule_from_spec,
)
from mnemon_langgraph.store import MnemonStore
from mnemon_langgraph.types import Message

NOW = datetime(2025, 6, 30, tzinfo=UTC)


def _seed(path: Path, embeddings: Any = "test", now: datetime = NOW) -> None:
    old, new = (now - timedelta(days=180)).replace(tzinfo=None), now - timedelta(days=1)
    with MnemonStore(path, fake_embeddings() if embeddings == "test" else None) as store:
        for ns in (("users", "ada"), ("users", "bo"), ("teams", "blue")):
            store.ingest(ns, [Message("old words", "A", id="o", timestamp=old),
                              Message("new words", "A", id="n", timestamp=new)],
                         origin="chat", pack=False)  # fmt: skip
        store.hold(("users", "bo"))


def test_a_spec_gives_the_policy_and_a_bad_one_is_refused(tmp_path: Path) -> None:
    with MnemonStore(tmp_path / "m.db", fake_embeddings()) as store:
        s = schedule_from_spec(store, "30d keep_last=5 every=6h prefix=users")
        assert (s.older_than, s.keep_last, s.every, s.prefix) == (
            timedelta(days=30), 5, timedelta(hours=6), ("users",),
        )  # fmt: skip
        assert schedule_from_spec(store, "2w").every == timedelta(hours=24)
        for bad in ("", "soon", "30d keep_last=x", "30d every=5s", "30d colour=red"):
            with pytest.raises(ConfigurationError, match="MNEMON_RETENTION"):
                schedule_from_spec(store, bad)


def test_one_run_applies_the_policy_to_every_namespace_under_the_prefix(tmp_path: Path) -> None:
    _seed(tmp_path / "m.db")
    with MnemonStore(tmp_path / "m.db", fake_embeddings()) as store:
        receipts = schedule_from_spec(store, "30d prefix=users").run_once(now=NOW)
        assert [(r.namespace, r.held, r.records) for r in receipts] == [
            (("users", "ada"), False, 1), (("users", "bo"), True, 0),
        ]  # fmt: skip
        assert store.count(("users", "ada")) == 1 and store.count(("users", "bo")) == 2
        assert store.count(("teams", "blue")) == 2  # not under the prefix
        assert [a.actor for a in store.audit_log(("users", "ada"))] == ["retention-schedule"]


def test_the_store_factory_runs_the_schedule_while_the_store_is_open(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MNEMON_EMBEDDINGS", "fake")  # what the factory's store embeds with
    db = tmp_path / "m.db"
    _seed(db, None, now=datetime.now(UTC))  # the server's schedule runs by the real clock
    env = {"MNEMON_DB": str(db), "MNEMON_RETENTION": "30d every=1h"}
    with MnemonStore(db) as store, retention_schedule_from_env(store, {}) as s:
        assert s is None  # unset: no schedule
    with base_store_from_env(env) as base:
        threads = [t for t in threading.enumerate() if t.name == THREAD_NAME]
        assert len(threads) == 1
        assert base.get(("users", "ada"), "nothing") is None  # the BaseStore works meanwhile
    assert threads[0].is_alive() is False  # stopped with the store
    with MnemonStore(db) as store:
        # the first run happens at start: old records of unheld namespaces are gone
        assert store.count(("users", "ada")) == 1 and store.count(("teams", "blue")) == 1
        assert store.count(("users", "bo")) == 2
