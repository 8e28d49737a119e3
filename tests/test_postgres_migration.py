"""Schema version 1 → 4 on a real server: every row kept, the term bounds, the
half-precision vector copies and the impact postings filled.

Version 1 is built here as version 4 minus what ``MIGRATIONS[1:]`` add (the two bound
columns of ``mnemon_terms``; the ``mnemon_halfvecs`` table; ``mnemon_namespaces.ref_avgdl``
and the ``mnemon_postings`` table) and the version row set back to 1: the exact layout a
version-1 package left.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from _packs_check import check_packs
from _reliability_common import fake_embeddings

from mnemon_langgraph.store import PostgresStore
from mnemon_langgraph.store.postgres import PostgresSettings
from mnemon_langgraph.store.postgres._impact import impact
from mnemon_langgraph.store.postgres._schema import SCHEMA_VERSION, TABLES
from mnemon_langgraph.types import Message

QUERIES = ["alpha note3", "beta gamma", "note7 filler2"]


def _to_version_1(url: str) -> None:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(
            "ALTER TABLE mnemon_terms DROP COLUMN max_tf, DROP COLUMN min_len, "
            "DROP COLUMN packed, DROP COLUMN upto"
        )
        conn.execute("DROP TABLE mnemon_packs")
        conn.execute("DROP TABLE mnemon_halfvecs")
        conn.execute("DROP TABLE mnemon_postings")
        conn.execute("ALTER TABLE mnemon_namespaces DROP COLUMN ref_avgdl")
        conn.execute("ALTER TABLE mnemon_records RENAME COLUMN origin TO source")
        conn.execute("ALTER TABLE mnemon_vectors DROP COLUMN ann")  # version 9's flags
        conn.execute("ALTER TABLE mnemon_namespaces DROP COLUMN ann")
        conn.execute(
            "CREATE INDEX mnemon_vectors_hnsw ON mnemon_vectors "
            "USING hnsw (embedding vector_cosine_ops)"
        )
        conn.execute("UPDATE mnemon_meta SET value = '1' WHERE key = 'schema_version'")


def _snapshot(url: str) -> dict[str, Any]:
    import psycopg

    with psycopg.connect(url) as conn:
        out: dict[str, Any] = {
            t: conn.execute(f"SELECT count(*) FROM {t}").fetchone()
            for t in TABLES
            if t not in ("mnemon_halfvecs", "mnemon_postings", "mnemon_packs")  # checked below
        }
        out["records"] = conn.execute(
            "SELECT id, seq, nsid, text, terms, tfs, length FROM mnemon_records ORDER BY seq"
        ).fetchall()
        out["terms"] = conn.execute(
            "SELECT term, nsid, df FROM mnemon_terms ORDER BY term"
        ).fetchall()
        out["vectors"] = conn.execute(
            "SELECT record_id, embedding::text FROM mnemon_vectors ORDER BY record_id"
        ).fetchall()
        out["meta"] = conn.execute("SELECT key, value FROM mnemon_meta ORDER BY key").fetchall()
    return out


def _rankings(store: PostgresStore) -> list[Any]:
    return [
        (store.lexical_ranking(q, namespace=("m",)), store.dense_ranking(q, namespace=("m",)))
        for q in QUERIES
    ]


def test_migration_from_version_1_keeps_every_row_and_fills_bounds_halfvecs_and_postings(
    postgres_url: str,
) -> None:
    """Same rows in every table and rankings; the bounds equal a recount from the records;
    every vector has its half-precision copy (the exact dense search reads only those)."""
    import psycopg

    msgs = [
        Message(f"alpha note{i % 9} beta {'gamma ' * (i % 3)}filler{i % 5}", "A", id=f"m{i}")
        for i in range(120)
    ]
    with PostgresStore(postgres_url, fake_embeddings()) as pg:
        pg.ingest(("m",), msgs, origin="test", pack=False)
        pg.delete_records(("m",), [next(iter(pg.records(("m",)))).id], actor="test")
    _to_version_1(postgres_url)
    before = _snapshot(postgres_url)
    assert dict(before["meta"])["schema_version"] == "1" and len(before["records"]) == 119

    # packs small enough that there are some; both rankings read the migrated tables (a
    # client copy would rank the dense side, and FAISS orders equal vectors at the cut its
    # own way: these records repeat their texts)
    small = PostgresSettings(bm25_pack_min=8, bm25_pack_part=8, client_cache_mb=0)
    pg = PostgresStore(postgres_url, fake_embeddings(), setup=False, settings=small)
    with pg:
        assert pg.setup() == SCHEMA_VERSION  # migrates, then packs the common terms
        after_rankings = _rankings(pg)
        # the impact postings the migration wrote rank the same
        assert after_rankings == _rankings(pg.with_settings(bm25_full_below=0))
        assert after_rankings == _rankings(pg.with_settings(bm25_prune=False))
    after = _snapshot(postgres_url)
    meta = dict(after.pop("meta"))
    assert meta.pop("schema_version") == str(SCHEMA_VERSION)
    assert meta == {k: v for k, v in before.pop("meta") if k != "schema_version"}
    assert after == before  # every row of every table, unchanged
    with psycopg.connect(postgres_url) as conn:
        recount = conn.execute(
            "SELECT u.term, max(u.tf), min(r.length) FROM mnemon_records r "
            "CROSS JOIN LATERAL unnest(r.terms, r.tfs) AS u(term, tf) GROUP BY u.term"
        ).fetchall()
        stored = conn.execute("SELECT term, max_tf, min_len FROM mnemon_terms").fetchall()
        halves = conn.execute(
            "SELECT h.record_id, h.nsid = v.nsid, h.embedding = v.embedding::halfvec "
            "FROM mnemon_halfvecs h JOIN mnemon_vectors v USING (record_id) "
            "ORDER BY h.record_id"
        ).fetchall()
        postings = conn.execute(
            "SELECT p.seq, p.term, p.impact, p.tf, p.len FROM mnemon_postings p ORDER BY 1, 2"
        ).fetchall()
        expected = conn.execute(
            "SELECT r.seq, u.term, u.tf, r.length, n.ref_avgdl, n.total_len::float8 / n.docs "
            "FROM mnemon_records r JOIN mnemon_namespaces n USING (nsid) "
            "CROSS JOIN LATERAL unnest(r.terms, r.tfs) AS u(term, tf) ORDER BY 1, 2"
        ).fetchall()
    assert sorted(stored) == sorted(recount) and len(stored) > 10
    # one posting per (record, distinct term), impact at the namespace's average length
    assert len(postings) == len(expected) > 119
    for (seq, term, imp, tf, length), (eseq, eterm, etf, elen, ref, avg) in zip(
        postings, expected, strict=True
    ):
        assert (seq, term, tf, length) == (eseq, eterm, etf, elen) and ref == avg
        assert imp == pytest.approx(impact(etf, elen, ref), rel=1e-6)
    assert halves == [(rid, True, True) for rid, _ in after["vectors"]] and len(halves) == 119
    assert all(ranked for _, ranked in after_rankings)  # dense search reads the copies
    packed = check_packs(postgres_url)  # built from the postings the migration wrote
    assert len(packed) >= 5 and sum(packed.values()) > 119, packed
