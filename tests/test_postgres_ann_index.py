"""The partial HNSW index on PostgreSQL (schema version 9): only namespaces the server
searches through HNSW are in it.

A write flags a namespace ``ann`` once it holds the writer's ``exact_below`` records and puts
its vectors in the index then; smaller namespaces never pay the graph's upkeep (most of a
write's server CPU). A reader searches a flagged namespace through the index and any other
exactly, whatever its own ``exact_below``; an old database migrates with every row kept.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import psycopg

from mnemon_langgraph.store import PostgresStore
from mnemon_langgraph.store.postgres import PostgresSettings
from mnemon_langgraph.store.postgres._schema import SCHEMA_VERSION
from mnemon_langgraph.types import Message
from tests.test_postgres_vector_cache import WORDS, WordSumEmbeddings

BIG, SMALL = ("big",), ("small",)
# the server ranks (no client copy), HNSW from 300 records
SERVER = PostgresSettings(exact_below=300, client_cache_mb=0)


def _messages(start: int, count: int) -> list[Message]:
    rng = np.random.default_rng(start)
    return [
        Message(" ".join(rng.choice(WORDS, size=5)), "A", id=f"m{i}", session=1 + i % 5)
        for i in range(start, start + count)
    ]


def _flags(url: str) -> dict[str, tuple[bool, int, int]]:
    """Per namespace: its flag, its vectors flagged and not."""
    with psycopg.connect(url) as conn:
        rows = conn.execute(
            "SELECT n.namespace, n.ann, count(*) FILTER (WHERE v.ann), "
            "count(*) FILTER (WHERE NOT v.ann) FROM mnemon_namespaces n "
            "JOIN mnemon_vectors v ON v.nsid = n.nsid GROUP BY n.namespace, n.ann"
        ).fetchall()
    return {key: (bool(ann), int(on), int(off)) for key, ann, on, off in rows}


def _plan(url: str, nsid_of: str) -> str:
    """The server's plan for a namespace's HNSW query (``AND v.ann``, as the store's), with
    the plans a table this small would rather use turned off: can the index serve it."""
    with psycopg.connect(url) as conn:
        nsid = conn.execute(
            "SELECT nsid FROM mnemon_namespaces WHERE namespace = %s", (nsid_of,)
        ).fetchone()
        assert nsid is not None
        for plan in ("seqscan", "bitmapscan", "sort"):  # so small a table: force the index
            conn.execute(f"SET enable_{plan} = off")
        q = "[" + ",".join(["0.1"] * 32) + "]"
        rows = conn.execute(
            "EXPLAIN SELECT v.record_id FROM mnemon_vectors v WHERE v.nsid = %s AND v.ann "
            "ORDER BY v.embedding <=> %s::vector LIMIT 10",
            (nsid[0], q),
        ).fetchall()
    return "\n".join(r[0] for r in rows)


def test_a_namespace_joins_the_hnsw_index_when_it_reaches_exact_below(postgres_url: str) -> None:
    with PostgresStore(postgres_url, WordSumEmbeddings(), settings=SERVER) as pg:
        pg.ingest(BIG, _messages(0, 200), origin="test", pack=False)
        pg.ingest(SMALL, _messages(5000, 100), origin="test", pack=False)
        assert _flags(postgres_url) == {'["big"]': (False, 0, 200), '["small"]': (False, 0, 100)}
        exact = pg.with_settings(exact_below=10**9)
        # below exact_below, and a reader with a smaller one: the exact scan either way
        low = pg.with_settings(exact_below=50)
        for q in ("w1 w2", "w7 w30 w31"):
            want = exact.dense_ranking(q, namespace=SMALL, k=20)
            assert low.dense_ranking(q, namespace=SMALL, k=20) == want and len(want) == 20
        pg.ingest(BIG, _messages(200, 150), origin="test", pack=False)  # 350 >= 300
        flags = _flags(postgres_url)
        assert flags == {'["big"]': (True, 350, 0), '["small"]': (False, 0, 100)}
        pg.ingest(BIG, _messages(350, 10), origin="test", pack=False)  # joins as written
        assert _flags(postgres_url)['["big"]'] == (True, 360, 0)
        assert "mnemon_vectors_hnsw" in _plan(postgres_url, '["big"]')
        # the flagged namespace through the index: its exact neighbours, found
        for q in ("w1 w2 w3", "w5", "w9 w21"):
            got = dict(pg.dense_ranking(q, namespace=BIG, k=30))
            want = dict(exact.dense_ranking(q, namespace=BIG, k=30))
            assert len(got) == 30 and len(set(got) & set(want)) >= 27
        # a deletion lowers the count below exact_below: the flag stays, nothing to rebuild
        ids = [r.id for r in pg.records(BIG)][:100]
        pg.delete_records(BIG, ids, reason="test")
        assert _flags(postgres_url)['["big"]'] == (True, 260, 0)


def _to_version_8(url: str) -> None:
    """The layout version 8 left: no flags, the index over every vector."""
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("ALTER TABLE mnemon_vectors DROP COLUMN ann")  # drops the partial index
        conn.execute("ALTER TABLE mnemon_namespaces DROP COLUMN ann")
        conn.execute(
            "CREATE INDEX mnemon_vectors_hnsw ON mnemon_vectors "
            "USING hnsw (embedding vector_cosine_ops) WITH (m = 16, ef_construction = 64)"
        )
        conn.execute("UPDATE mnemon_meta SET value = '8' WHERE key = 'schema_version'")


def _rows(url: str) -> list[Any]:
    with psycopg.connect(url) as conn:
        return conn.execute(
            "SELECT v.record_id, v.nsid, v.embedding::text FROM mnemon_vectors v ORDER BY 1"
        ).fetchall()


def test_version_8_migrates_flagging_the_large_namespaces_and_keeping_every_row(
    postgres_url: str,
) -> None:
    with PostgresStore(postgres_url, WordSumEmbeddings(), settings=SERVER) as pg:
        pg.ingest(BIG, _messages(0, 120), origin="test", pack=False)
        pg.ingest(SMALL, _messages(5000, 80), origin="test", pack=False)
    _to_version_8(postgres_url)
    before = _rows(postgres_url)
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        # the migration flags namespaces of ANN_FROM records (150,000): pretend "big" is one
        conn.execute("UPDATE mnemon_namespaces SET docs = 150000 WHERE namespace = '[\"big\"]'")
    with PostgresStore(postgres_url, WordSumEmbeddings(), settings=SERVER, setup=False) as pg:
        assert pg.setup() == SCHEMA_VERSION == 9
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute("UPDATE mnemon_namespaces SET docs = 120 WHERE namespace = '[\"big\"]'")
        index = conn.execute(
            "SELECT indexdef FROM pg_indexes WHERE indexname = 'mnemon_vectors_hnsw'"
        ).fetchone()
    assert index is not None and "hnsw" in index[0] and "WHERE ann" in index[0]
    assert _rows(postgres_url) == before and len(before) == 200  # every vector kept
    assert _flags(postgres_url) == {'["big"]': (True, 120, 0), '["small"]': (False, 0, 80)}
    with PostgresStore(postgres_url, WordSumEmbeddings(), settings=SERVER) as pg:
        exact = pg.with_settings(exact_below=10**9)
        for ns in (BIG, SMALL):
            got = pg.dense_ranking("w1 w2", namespace=ns, k=20)
            assert len(got) == 20
            want = exact.dense_ranking("w1 w2", namespace=ns, k=20)
            assert len(set(dict(got)) & set(dict(want))) >= 18
        assert pg.stats(BIG)["namespaces"][0]["vector_index"] == "exact"  # 120 < 300
