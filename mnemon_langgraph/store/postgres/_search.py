"""Hybrid search on PostgreSQL: BM25 in SQL and pgvector, fused by reciprocal rank.

The two rankings run at once on two pooled connections when a second one is free now
(:meth:`~._engine.PostgresEngine.spare_connection`), one after the other otherwise, and are
fused in Python by the same :func:`~mnemon_langgraph.search._fusion.rrf_fuse` as the
embedded backend.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import numpy as np

from mnemon_langgraph.records.schema import ns_to_key
from mnemon_langgraph.search._fusion import RRF_K, rrf_fuse
from mnemon_langgraph.store.postgres._bm25 import BM25Query
from mnemon_langgraph.store.postgres._dense import DenseSearch
from mnemon_langgraph.store.postgres._engine import PostgresEngine
from mnemon_langgraph.store.postgres._reads import Reads
from mnemon_langgraph.store.postgres._vector_cache import NAMESPACE_STATE_SQL
from mnemon_langgraph.types import Namespace, SearchFilters, SearchHit

__all__ = ["HybridSearch"]

Ranking = list[tuple[int, str, float]]


class HybridSearch:
    """The searches of a PostgreSQL store (coroutines on its engine).

    Args:
        engine: The store's engine.
        reads: Its reads (records of the page).
        bm25: The lexical ranking.
        dense: The dense ranking.
        query_vector: The store's (cached) query embedder.
        candidate_depth: Records each ranking feeds into fusion.
    """

    def __init__(
        self,
        engine: PostgresEngine,
        reads: Reads,
        bm25: BM25Query,
        dense: DenseSearch,
        query_vector: Callable[[str], np.ndarray],
        candidate_depth: int,
    ) -> None:
        self.engine = engine
        self.reads = reads
        self.bm25 = bm25
        self.dense = dense
        self.query_vector = query_vector
        self.candidate_depth = candidate_depth

    @staticmethod
    async def _namespace_row(conn: Any, ns: Namespace) -> tuple[int, int, int] | None:
        """``(nsid, live records, largest seq)`` of the namespace, one snapshot."""
        cur = await conn.execute(NAMESPACE_STATE_SQL, (ns_to_key(ns),))
        row = await cur.fetchone()
        return None if row is None else (int(row[0]), int(row[1]), int(row[2] or 0))

    async def warm(self, ns: Namespace, dim: int) -> bool:
        """Load the namespace's client copy now and wait for it (the store's ``warm``);
        whether one is held."""
        async with self.engine.connection() as conn:
            found = await self._namespace_row(conn, ns)
            if found is None or not found[1]:
                return False
            nsid, docs, top = found
            return await self.dense.warm(conn, nsid, (docs, top), dim)

    async def _rankings(
        self, query: str, ns: Namespace, depth: int, filters: SearchFilters | None
    ) -> tuple[Ranking, Ranking]:
        async with self.engine.connection() as conn:
            found = await self._namespace_row(conn, ns)
            if found is None:
                return [], []
            nsid, docs, top = found
            known: np.ndarray | None = None  # the query vector, once embedded
            if self.dense.cache.holds(nsid):
                # a copy is held: its rankings in this process, both when it has the BM25
                # index (no ranking query in the server). The query is embedded first:
                # nothing may await between taking the current copy and ranking on it.
                qv = await asyncio.to_thread(self.query_vector, query)
                copy = await self.dense.held_copy(conn, nsid, (docs, top), qv.size)
                if copy is not None:
                    dense = copy.rank(qv, depth, filters)
                    if copy.lexical is not None:
                        return copy.lexical_rank(query, depth, filters), dense
                    share = self.dense.cache.share(nsid, filters)
                    return await self.bm25.top(conn, nsid, query, depth, filters, share), dense
                known = qv

            async def dense_on(dconn: Any) -> Ranking:
                qv = (
                    known
                    if known is not None
                    else await asyncio.to_thread(self.query_vector, query)
                )
                return await self.dense.rank(dconn, nsid, docs, qv, depth, filters)

            share = self.dense.cache.share(nsid, filters)  # what the filters keep, if known
            async with self.engine.spare_connection() as spare:
                if spare is None:  # the pool is busy: one ranking after the other
                    lexical = await self.bm25.top(conn, nsid, query, depth, filters, share)
                    return lexical, await dense_on(conn)
                # both at once, in two backends (the query embedded meanwhile)
                return await asyncio.gather(
                    self.bm25.top(conn, nsid, query, depth, filters, share), dense_on(spare)
                )

    async def hybrid(
        self, query: str, ns: Namespace, k: int, offset: int, filters: SearchFilters | None
    ) -> list[SearchHit]:
        """Hits ``offset .. offset + k`` of the fused ranking (arguments checked)."""
        depth = max(self.candidate_depth, offset + k)
        lexical, dense = await self._rankings(query, ns, depth, filters)
        fused = rrf_fuse([[s for s, _, _ in lexical], [s for s, _, _ in dense]], k=RRF_K)
        page = fused[offset : offset + k]
        ids_by_seq = {s: rid for s, rid, _ in lexical} | {s: rid for s, rid, _ in dense}
        records = {r.id: r for r in await self.reads.get(ns, [ids_by_seq[f.key] for f in page])}
        hits = []
        for i, f in enumerate(page):
            record = records.get(ids_by_seq[f.key])
            if record is None:
                continue  # deleted between ranking and fetching
            hits.append(
                SearchHit(
                    record=record,
                    rank=offset + i,
                    score=f.score,
                    bm25_rank=f.ranks[0],
                    dense_rank=f.ranks[1],
                )
            )
        return hits

    async def lexical(
        self, ns: Namespace, query: str, k: int, filters: SearchFilters | None
    ) -> list[tuple[str, float]]:
        """The BM25 ranking alone: ``(record_id, score)``, best first."""
        async with self.engine.connection() as conn:
            nsid = await self.engine.nsid(conn, ns)
            if nsid is None:
                return []
            ranked = await self.bm25.top(conn, nsid, query, k, filters)
            return [(rid, score) for _, rid, score in ranked]

    async def dense_only(
        self, query: str, ns: Namespace, k: int, exact: bool | None
    ) -> list[tuple[str, float]]:
        """The dense ranking alone: ``(record_id, cosine distance)``, nearest first."""
        qv = await asyncio.to_thread(self.query_vector, query)
        async with self.engine.connection() as conn:
            found = await self._namespace_row(conn, ns)
            if found is None:
                return []
            ranked = await self.dense.rank(conn, found[0], found[1], qv, k, None, exact)
            return [(rid, d) for _, rid, d in ranked]
