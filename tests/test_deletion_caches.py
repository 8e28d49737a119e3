"""A deletion empties the process's in-memory copies of memory content.

Real stores (a SQLite file; the throwaway PostgreSQL server), the real read graph with the
offline local judge, and the integrations' View cache. The text-keyed caches of the read
path are filled by a turn, then a record is deleted: every cache must be empty and the same
turn asked again must get a View without the deleted text.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from _search_fakes import HashEmbeddings
from langchain_core.messages import HumanMessage

import mnemon_langgraph.judges._features as features
import mnemon_langgraph.judges._staleness as staleness
import mnemon_langgraph.store.embedded._schema as embedded_rows
from mnemon_langgraph.integrations._common import ViewCache
from mnemon_langgraph.judges.local import LocalDecisionModel
from mnemon_langgraph.read.graph import create_read_graph
from mnemon_langgraph.records._content_caches import (
    forget_cached_content,
    register_content_cache,
)
from mnemon_langgraph.store import MnemonStore, PostgresStore
from mnemon_langgraph.store._internal.query_vectors import SingleFlightCache
from mnemon_langgraph.types import Message

NS = ("users", "ada")
SECRET = "my locker code is 4471 at the Harbour Street gym"
MESSAGES = [
    Message(f"Ada: {SECRET}", "Ada", id="m0", session=1),
    Message("I moved to Rotterdam last spring", "Ada", id="m1", session=2),
    Message("The gym on Harbour Street opens at six", "Ada", id="m2", session=3),
]
QUESTION = [HumanMessage("What is my locker code at the Harbour Street gym?")]


def _turn_and_delete(store: Any, delete: Callable[[], object], *, survivors: bool = True) -> None:
    judge = LocalDecisionModel(embeddings=store.embeddings)
    views = ViewCache(create_read_graph(source=store, judge=judge))
    before = views.get(NS, QUESTION).content
    assert "4471" in str(before)  # the turn used the record, so every cache holds it
    assert len(store._query_vectors) > 0
    assert features._text_facts.cache_info().currsize > 0
    assert views._cached(next(iter(views._cache))) is not None
    if not isinstance(store, PostgresStore):  # the journal's parsed speakers and roles
        assert embedded_rows._names.cache_info().currsize > 0

    delete()

    assert len(store._query_vectors) == 0
    assert features._text_facts.cache_info().currsize == 0
    assert staleness.clauses.cache_info().currsize == 0
    assert embedded_rows._names.cache_info().currsize == 0
    assert embedded_rows._namespace.cache_info().currsize == 0
    assert not judge._cache and not views._cache
    after = views.get(NS, QUESTION).content  # the same turn, asked again
    assert "4471" not in str(after)
    assert ("Harbour Street" in str(after)) is survivors  # a fresh View, not an empty one


def test_deleting_a_record_empties_the_caches_and_the_next_view(tmp_path: Path) -> None:
    with MnemonStore(tmp_path / "j.db", HashEmbeddings()) as store:
        result = store.ingest(NS, MESSAGES, origin="chat", pack=False)
        secret_id = result.record_ids[0]
        _turn_and_delete(store, lambda: store.delete_records(NS, [secret_id]))


def test_deleting_a_message_empties_the_caches(tmp_path: Path) -> None:
    with MnemonStore(tmp_path / "j.db", HashEmbeddings()) as store:
        store.ingest(NS, MESSAGES, origin="chat", pack=False)
        _turn_and_delete(store, lambda: store.delete_messages(NS, ["m0"]))


def test_erasing_a_namespace_empties_the_caches(tmp_path: Path) -> None:
    with MnemonStore(tmp_path / "j.db", HashEmbeddings()) as store:
        store.ingest(NS, MESSAGES, origin="chat", pack=False)
        _turn_and_delete(store, lambda: store.erase_namespace(NS), survivors=False)


def test_deleting_on_postgres_empties_the_caches(postgres_url: str) -> None:
    with PostgresStore.from_conn_string(postgres_url, HashEmbeddings()) as store:
        result = store.ingest(NS, MESSAGES, origin="chat", pack=False)
        secret_id = result.record_ids[0]
        _turn_and_delete(store, lambda: store.delete_records(NS, [secret_id]))


def test_a_vector_computed_while_the_cache_is_emptied_is_not_kept() -> None:
    gate, started = threading.Event(), threading.Event()

    def compute(key: str) -> str:
        started.set()
        assert gate.wait(timeout=10)
        return key.upper()

    cache: SingleFlightCache[str] = SingleFlightCache(compute, 8)
    with ThreadPoolExecutor(1) as pool:
        running = pool.submit(cache, "locker 4471")
        assert started.wait(timeout=10)
        cache.clear()  # a deletion lands while the model call runs
        gate.set()
        assert running.result(timeout=10) == "LOCKER 4471"  # its caller still gets it
    assert len(cache) == 0


def test_one_broken_cache_does_not_keep_the_others() -> None:
    emptied: list[str] = []

    class Broken:
        def clear(self) -> None:
            raise RuntimeError("cannot empty")

    broken = Broken()  # held weakly, so it leaves the registry with this test
    register_content_cache(broken.clear)
    register_content_cache(lambda: emptied.append("after"))
    before = forget_cached_content()
    assert emptied == ["after"]
    del broken
    assert forget_cached_content() == before  # a broken cache never counts as emptied


def test_a_cache_owner_that_is_gone_is_not_called() -> None:
    emptied: list[str] = []

    class Owner:
        def clear(self) -> None:
            emptied.append("owner")

    owner = Owner()
    register_content_cache(owner.clear)
    forget_cached_content()
    assert emptied == ["owner"]
    del owner  # held weakly
    emptied.clear()
    forget_cached_content()
    assert emptied == []


@pytest.fixture(autouse=True)
def _empty_first() -> None:
    forget_cached_content()  # earlier tests' turns must not count as this test's


def test_a_retention_run_empties_the_caches_and_the_next_view(tmp_path: Path) -> None:
    from dataclasses import replace
    from datetime import UTC, datetime

    days = [datetime(2024, 1, 5), datetime(2025, 6, 1), datetime(2025, 6, 2)]
    dated = [replace(m, timestamp=day) for m, day in zip(MESSAGES, days, strict=True)]
    now = datetime(2025, 6, 30, tzinfo=UTC)
    with MnemonStore(tmp_path / "j.db", HashEmbeddings()) as store:
        store.ingest(NS, dated, origin="chat", pack=False)
        _turn_and_delete(store, lambda: store.apply_retention(NS, older_than="30d", now=now))
