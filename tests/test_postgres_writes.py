"""Batched writes on PostgreSQL store what the per-record path stores.

An ingest reads its sessions' next positions in one statement and writes its records in
batches. A namespace written in two batches must hold the very rows (texts, places, message
ids, float and half-precision vectors, postings) of the same messages written one ingest
per message, and rank them the same."""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from mnemon_langgraph.records.schema import ns_to_key
from mnemon_langgraph.store import PostgresStore
from mnemon_langgraph.store.postgres import PostgresSettings
from mnemon_langgraph.types import Message
from tests.test_postgres_vector_cache import WORDS, WordSumEmbeddings

_ROWS_SQL = """
SELECT r.session, r.position, r.text, r.message_ids, r.terms, r.tfs, r.length,
       v.embedding::text, h.embedding::text,
       (SELECT array_agg(m.message_id ORDER BY m.message_id) FROM mnemon_messages m
        WHERE m.record_id = r.id),
       (SELECT array_agg((p.term, p.tf, p.len)::text ORDER BY p.term) FROM mnemon_postings p
        WHERE p.seq = r.seq)
FROM mnemon_records r JOIN mnemon_namespaces n ON n.nsid = r.nsid
JOIN mnemon_vectors v ON v.record_id = r.id JOIN mnemon_halfvecs h ON h.record_id = r.id
WHERE n.namespace = %s ORDER BY r.session, r.position
"""


def _messages() -> list[Message]:
    rng = np.random.default_rng(7)
    return [
        Message(" ".join(rng.choice(WORDS, size=5)), "A", id=f"m{i}", session=1 + i % 7)
        for i in range(140)
    ]


def _rows(pg: PostgresStore, ns: tuple[str, ...]) -> list[tuple[Any, ...]]:
    import psycopg

    with psycopg.connect(pg.url) as conn:
        rows = conn.execute(_ROWS_SQL, (ns_to_key(ns),)).fetchall()
    # terms carry their namespace's number ("1:w5"): compared without it
    return [(*r[:4], _bare(r[4]), *r[5:10], _bare(r[10])) for r in rows]


def _bare(terms: list[str]) -> list[str]:
    return [re.sub(r"(^|\()\d+:", r"\1", t) for t in terms]


def test_batched_ingest_stores_and_ranks_as_one_ingest_per_message(postgres_url: str) -> None:
    messages = _messages()
    # both namespaces ranked by the server: a client copy of one and not yet of the other
    # could order equal vectors (repeated word sets) at the cut differently
    server = PostgresSettings(client_cache_mb=0)
    with PostgresStore(postgres_url, WordSumEmbeddings(), settings=server) as pg:
        pg.ingest(("batch",), messages[:70], origin="test", pack=False)
        pg.ingest(("batch",), messages[70:], origin="test", pack=False)  # sessions go on
        for m in messages:
            pg.ingest(("single",), [m], origin="test", pack=False)
        batch, single = _rows(pg, ("batch",)), _rows(pg, ("single",))
        assert len(batch) == len(messages) and batch == single
        assert {r[1] for r in batch} == set(range(20))  # 20 records per session, in order
        for query in ("w1 w2 w3", "w7 w30", "w11"):
            got = pg.search(query, namespace=("batch",), k=30)
            want = pg.search(query, namespace=("single",), k=30)
            assert len(got) == 30
            assert [(h.record.session, h.record.position, h.score) for h in got] == [
                (h.record.session, h.record.position, h.score) for h in want
            ]
