"""Dense search on PostgreSQL: cosine distance, exact or through an HNSW index.

A namespace the client's copy holds (:mod:`._vector_cache`: from
``settings.client_scan_from`` records, every one by default, within
``settings.client_cache_mb``) is searched in this process: an exact scan of the copy below
``settings.client_ann_from`` records, the embedded backend's approximate index (FAISS HNSW)
from there (with ``settings.client_ann``). Otherwise, and while a copy loads, in the server:
exact below ``settings.exact_below`` records (a sequential scan of the namespace's vectors,
via the half-precision copy and a re-rank by the float vectors), from there pgvector's HNSW
index with ``hnsw.iterative_scan = relaxed_order``, so a namespace filter keeps recall (the
index scan continues until enough rows of the namespace were found). The index is partial:
it holds the namespaces flagged ``ann`` (``_schema.HNSW_INDEX_SQL``), which a write flags at
its ``exact_below``; a namespace not flagged (a reader with a smaller ``exact_below``) is
scanned exactly.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any

import numpy as np

from mnemon_langgraph.store.postgres._rows import filter_sql
from mnemon_langgraph.store.postgres._settings import (
    HALF_RERANK,
    PGVECTOR_EF_SEARCH_MAX,
    PostgresSettings,
    pgvector_ef_search_for,
)
from mnemon_langgraph.store.postgres._vector_cache import NamespaceVectors, VectorCache
from mnemon_langgraph.types import SearchFilters

__all__ = ["DenseSearch", "exact_dense_sql"]


def exact_dense_sql(where: str, half: bool) -> str:
    """SQL of the exact dense search: ``(seq, id, cosine distance)``, nearest first.

    ``"+ 0"`` keeps the planner off the HNSW index. With ``half`` (the default path), the
    nearest ``%(n)s`` by the half-precision copy (``mnemon_halfvecs``, half the bytes to
    read) are re-ranked by exact cosine on the float vectors, so the final order is the
    float one (see :data:`HALF_RERANK`; docs/results/postgres-history.md); filters (conditions on
    the records) join the records to that narrow scan. Without ``half`` the float vectors
    are scanned.

    The re-ranked rows' ``seq`` (the tie-break) is a correlated subquery, one primary-key
    lookup per row, not a join: psycopg prepares a statement after five runs and
    PostgreSQL's generic plan for it hash-joined the whole records table, about twice as
    slow (docs/results/postgres-history.md).
    """
    if where and not half:
        return (
            "SELECT r.seq, r.id, v.embedding <=> %(q)s FROM mnemon_vectors v "
            "JOIN mnemon_records r "
            f"ON r.id = v.record_id WHERE v.nsid = %(nsid)s {where} "
            "ORDER BY (v.embedding <=> %(q)s) + 0, r.seq LIMIT %(k)s"
        )
    if half:  # filters (conditions on r) join the records to the narrow scan
        join = "JOIN mnemon_records r ON r.id = h.record_id " if where else ""
        return (
            f"WITH h AS MATERIALIZED (SELECT h.record_id FROM mnemon_halfvecs h {join}"
            f"WHERE h.nsid = %(nsid)s {where} ORDER BY (h.embedding <=> %(q)s::halfvec) + 0 "
            "LIMIT %(n)s), c AS MATERIALIZED (SELECT v.record_id, v.embedding <=> %(q)s "
            "AS d FROM h JOIN mnemon_vectors v ON v.record_id = h.record_id) "
            "SELECT (SELECT r.seq FROM mnemon_records r WHERE r.id = c.record_id) AS seq, "
            "c.record_id, c.d FROM c ORDER BY c.d, seq LIMIT %(k)s"
        )
    return (  # the vectors ranked alone, only the top k joined
        "WITH c AS MATERIALIZED (SELECT record_id, (embedding <=> %(q)s) + 0 AS d "
        "FROM mnemon_vectors WHERE nsid = %(nsid)s ORDER BY d LIMIT %(k)s) "
        "SELECT r.seq, r.id, c.d FROM c JOIN mnemon_records r ON r.id = c.record_id "
        "ORDER BY c.d, r.seq"
    )


async def _indexed(conn: Any, nsid: int) -> bool:
    """Whether the namespace's vectors are in the (partial) HNSW index: flagged ``ann``
    (schema version 9; a writer flags it at its ``exact_below``)."""
    cur = await conn.execute("SELECT ann FROM mnemon_namespaces WHERE nsid = %s", (nsid,))
    row = await cur.fetchone()
    return bool(row and row[0])


class DenseSearch:
    """The dense ranking of one namespace: ``(seq, id, cosine distance)``, nearest first."""

    def __init__(
        self,
        settings: PostgresSettings,
        connect: Callable[[], Any] | None = None,
        spawn: Callable[[Coroutine[Any, Any, Any]], asyncio.Task[Any]] | None = None,
    ) -> None:
        self.settings = settings
        # the copy is the embedded backend's approximate index from the size that backend
        # switches (client_ann_from), or from exact_below if smaller
        ann_from = (
            min(settings.exact_below, settings.client_ann_from) if settings.client_ann else None
        )
        self.cache = VectorCache(
            settings.client_cache_mb * 2**20, connect, ann_from, settings.client_bm25, spawn
        )

    def _copied(self, docs: int, dim: int, exact: bool) -> bool:
        """Whether a namespace of ``docs`` records is searched on a client copy."""
        settings = self.settings
        copied = exact or self.cache.approximates(docs)  # else pgvector's HNSW
        return copied and docs >= settings.client_scan_from and self.cache.fits(docs, dim)

    async def held_copy(
        self, conn: Any, nsid: int, state: tuple[int, int], dim: int
    ) -> NamespaceVectors | None:
        """The namespace's client copy, current, when one is already held (``None``: search
        as :meth:`rank` does, which loads one). ``state``: its live records and largest
        ``seq`` (one snapshot)."""
        exact = state[0] < self.settings.exact_below
        if not self.cache.holds(nsid) or not self._copied(state[0], dim, exact):
            return None
        return await self.cache.current(conn, nsid, dim, state)

    async def warm(self, conn: Any, nsid: int, state: tuple[int, int], dim: int) -> bool:
        """Load the namespace's copy on ``conn`` if searches would use one, waiting for a
        load under way; whether a current copy is held (``False``: the server ranks)."""
        exact = state[0] < self.settings.exact_below
        if not self._copied(state[0], dim, exact):
            return False
        return await self.cache.load(conn, nsid, dim, state) is not None

    async def rank(
        self,
        conn: Any,
        nsid: int,
        docs: int,
        qv: np.ndarray,
        k: int,
        filters: SearchFilters | None,
        exact: bool | None = None,
    ) -> list[tuple[int, str, float]]:
        """The ``k`` nearest vectors, exact or HNSW by the namespace's size (``docs``)."""
        settings = self.settings
        asked = exact is not None  # an exact ranking asked for is never the approximate copy's
        exact = bool(exact) if asked else docs < settings.exact_below
        if self._copied(docs, qv.size, exact):
            copy = await self.cache.current(conn, nsid, qv.size)
            if copy is not None and not (asked and copy.approximate == exact):
                return copy.rank(qv, int(k), filters)
        params: dict[str, Any] = {"nsid": nsid, "q": qv.reshape(-1).astype(np.float32), "k": int(k)}
        where = filter_sql(filters, params)
        if not exact and not await _indexed(conn, nsid):
            exact = True  # its vectors are not in the HNSW index yet: the exact scan
        if exact:
            if settings.half_scan:
                params["n"] = max(HALF_RERANK, 4 * int(k))
            cur = await conn.execute(exact_dense_sql(where, settings.half_scan), params)
            return [(int(s), rid, float(d)) for s, rid, d in await cur.fetchall()]
        async with conn.transaction():
            ef = (
                settings.ef_search
                if settings.ef_search is not None
                else pgvector_ef_search_for(docs)
            )
            ef = min(max(ef, int(k)), PGVECTOR_EF_SEARCH_MAX)
            await conn.execute(f"SET LOCAL hnsw.ef_search = {ef}")
            await conn.execute("SET LOCAL hnsw.iterative_scan = relaxed_order")
            sql = (
                "WITH c AS MATERIALIZED (SELECT r.seq, r.id, v.embedding <=> %(q)s AS d "
                "FROM mnemon_vectors v JOIN mnemon_records r ON r.id = v.record_id "
                f"WHERE v.nsid = %(nsid)s AND v.ann {where} ORDER BY v.embedding <=> %(q)s "
                "LIMIT %(k)s) SELECT seq, id, d FROM c ORDER BY d, seq"
            )
            cur = await conn.execute(sql, params)
            return [(int(s), rid, float(d)) for s, rid, d in await cur.fetchall()]
