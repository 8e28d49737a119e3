"""The hybrid search on PostgreSQL takes a second connection only when the pool has one
free: with a pool of one connection, many threads searching at once all get the same
answers as one search alone (no deadlock, no error); on an idle larger pool the two
rankings do run on two connections. (Both rankings in the server, as for a namespace not
copied into the client: a copied one runs neither there.)"""

from __future__ import annotations

import sys
import threading
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from _reliability_common import fake_embeddings

from mnemon_langgraph.store import PostgresStore
from mnemon_langgraph.store.postgres import PostgresSettings
from mnemon_langgraph.store.postgres._engine import PostgresEngine
from mnemon_langgraph.types import Message

QUERIES = ["alpha beta", "gamma note3", "beta", "alpha note7 filler"]
SERVER = PostgresSettings(client_cache_mb=0)  # both rankings in the server at every search


def _messages() -> list[Message]:
    return [
        Message(f"alpha note{i % 9} beta {'gamma ' * (i % 3)}filler{i % 5}", "A", id=f"m{i}")
        for i in range(150)
    ]


def _spy(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Whether each search got a spare connection."""
    got: list[bool] = []
    real = PostgresEngine.spare_connection

    def spare(self: PostgresEngine) -> Any:
        cm = real(self)

        class Spy:
            async def __aenter__(self) -> Any:
                conn = await cm.__aenter__()
                got.append(conn is not None)
                return conn

            async def __aexit__(self, *exc: Any) -> Any:
                return await cm.__aexit__(*exc)

        return Spy()

    monkeypatch.setattr(PostgresEngine, "spare_connection", spare)
    return got


def test_a_one_connection_pool_serves_concurrent_searches_one_ranking_after_the_other(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    with PostgresStore(postgres_url, fake_embeddings()) as writer:
        writer.ingest(("s",), _messages(), origin="test", pack=False)
        expected = {q: [h.record.id for h in writer.search(q, namespace=("s",))] for q in QUERIES}
    assert all(expected.values())
    got = _spy(monkeypatch)
    results: list[tuple[str, list[str]]] = []
    errors: list[BaseException] = []
    with PostgresStore(postgres_url, fake_embeddings(), pool_size=1, settings=SERVER) as pg:

        def work(i: int) -> None:
            try:
                for q in QUERIES:
                    results.append((q, [h.record.id for h in pg.search(q, namespace=("s",))]))
            except BaseException as exc:
                errors.append(exc)

        threads = [threading.Thread(target=work, args=(i,)) for i in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=120)
        assert not any(t.is_alive() for t in threads), "searches deadlocked"
    assert not errors, errors
    assert len(results) == 6 * len(QUERIES)
    assert all(ids == expected[q] for q, ids in results)
    assert got and not any(got)  # the only connection is the search's own: never a spare


def test_an_idle_pool_runs_the_two_rankings_on_two_connections(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    with PostgresStore(postgres_url, fake_embeddings(), pool_size=4, settings=SERVER) as pg:
        pg.ingest(("s",), _messages(), origin="test", pack=False)

        async def two_ready() -> None:  # the pool opens one connection; have two idle
            await pg.engine.pool.resize(min_size=2, max_size=4)
            await pg.engine.pool.wait(timeout=30)

        pg._run(two_ready())
        got = _spy(monkeypatch)
        for q in QUERIES:
            assert pg.search(q, namespace=("s",))
    assert got == [True] * len(QUERIES)  # a connection was idle every time: no waiting
