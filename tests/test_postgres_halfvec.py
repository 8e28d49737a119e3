"""The exact dense search on PostgreSQL scans half-precision copies, then re-ranks by float.

The corpus is built so that half precision cannot tell its vectors apart: record ``i`` is
``b + i·δ·e0`` with ``δ`` far below a float16 step, so dozens of records share one
``halfvec`` and the half-precision order alone is wrong. Rounding is monotone, so the true
nearest 48 lie within the nearest few hundred by ``halfvec``: after the float re-rank the
store's top 48 must equal an exact float ranking computed here. The negative control shows
the corpus does bite: the ``halfvec`` ranking alone differs from the exact one.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from langchain_core.embeddings import Embeddings

from mnemon_langgraph.store import PostgresStore
from mnemon_langgraph.store.postgres import PostgresSettings
from mnemon_langgraph.types import Message, SearchFilters

DIM = 16
COUNT = 300
DELTA = 2e-6  # float16 steps near 0.3 are ~2.4e-4: ~120 records per halfvec value
TOP = 48
SERVER = PostgresSettings(client_cache_mb=0)  # the server's half-precision scan is what is tested


def _base() -> np.ndarray:
    return np.random.default_rng(7).uniform(0.2, 0.4, DIM).astype(np.float32)


def _record_vector(i: int) -> np.ndarray:
    v = _base().copy()
    v[0] = np.float32(0.3 + i * DELTA)
    return v


def _query_vector() -> np.ndarray:
    q = -_base()
    q[0] = 5.0  # cosine distance to record i falls strictly as i (its v[0]) grows
    return q


class _Planted(Embeddings):
    """``rec<i>`` texts get :func:`_record_vector`; anything else the query vector."""

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self._one(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self._one(text)

    @staticmethod
    def _one(text: str) -> list[float]:
        m = re.search(r"rec(\d+)", text)
        vec = _record_vector(int(m.group(1))) if m else _query_vector()
        return [float(x) for x in vec]


def _name(text: str) -> str:
    """``rec<i>`` of a record text (the store prefixes the speaker)."""
    m = re.search(r"rec\d+", text)
    assert m is not None, text
    return m.group(0)


def _exact_order(ids: list[str]) -> list[str]:
    q = _query_vector().astype(np.float64)
    dist = {}
    for rid in ids:
        v = _record_vector(int(rid.removeprefix("rec"))).astype(np.float64)
        dist[rid] = 1 - float(v @ q) / (np.linalg.norm(v) * np.linalg.norm(q))
    return sorted(ids, key=lambda r: dist[r])


def test_halfvec_scan_with_float_rerank_equals_exact_top_k(postgres_url: str) -> None:
    """Top 48 by the store = exact float order; by halfvec alone it is not (control)."""
    msgs = [Message(f"rec{i}", "A", id=f"rec{i}") for i in range(COUNT)]
    with PostgresStore(postgres_url, _Planted(), settings=SERVER) as pg:
        pg.ingest(("h",), msgs, origin="test", pack=False)
        by_text = {r.text: r.id for r in pg.records(("h",))}
        assert len(by_text) == COUNT
        got = pg.dense_ranking("query", namespace=("h",), k=TOP, exact=True)
        half = pg._run(
            pg._fetch(
                "SELECT r.text FROM mnemon_halfvecs h JOIN mnemon_records r "
                "ON r.id = h.record_id ORDER BY h.embedding <=> %s::vector::halfvec, r.seq "
                "LIMIT %s",
                (str([float(x) for x in _query_vector()]), TOP),
            )
        )
    texts = {rid: _name(text) for text, rid in by_text.items()}
    want = _exact_order([f"rec{i}" for i in range(COUNT)])[:TOP]
    assert [texts[rid] for rid, _ in got] == want
    assert len(set(want)) == TOP and want[0] == f"rec{COUNT - 1}"
    # Negative control: half precision ties ~120 records, so its own order is not exact.
    assert len(half) == TOP and [_name(t) for (t,) in half] != want


def test_filtered_exact_search_scans_halfvecs_and_equals_the_exact_order(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A session filter joins the records to the halfvec scan; the float re-rank still
    gives the exact order among the filtered records (more of them than are re-ranked)."""
    import mnemon_langgraph.store.postgres._dense as pg_module

    count = 1500  # 500 in session 2: more than the 400 the search re-ranks
    msgs = [Message(f"rec{i}", "A", id=f"rec{i}", session=1 + i % 3) for i in range(count)]
    calls: list[tuple[str, str]] = []  # (filter conditions, the SQL that ran)
    real = pg_module.exact_dense_sql

    def spy(where: str, half: bool) -> str:
        calls.append((where, real(where, half)))
        return calls[-1][1]

    monkeypatch.setattr(pg_module, "exact_dense_sql", spy)
    with PostgresStore(postgres_url, _Planted(), settings=SERVER) as pg:
        pg.ingest(("f",), msgs, origin="test", pack=False)
        hits = pg.search(
            "query", namespace=("f",), k=TOP, filters=SearchFilters(session_from=2, session_to=2)
        )
    assert calls and all("r.session" in w and "mnemon_halfvecs" in sql for w, sql in calls)
    want = _exact_order([f"rec{i}" for i in range(count) if i % 3 == 1])[:TOP]
    assert [_name(h.record.text) for h in hits] == want
    assert all(h.record.session == 2 for h in hits) and want[0] == f"rec{count - 2}"
