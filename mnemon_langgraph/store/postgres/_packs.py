"""BM25 packs on PostgreSQL: each common term's postings sorted by impact, in parts.

A pack lets a query read a term's best postings as a few rows (:mod:`._bm25`). Packs are
derived data, rewritten under the namespace's write lock when enough postings were added
(:func:`~._impact.needs_pack`) and kept exact by deletes (:meth:`Packs.unpack`).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from mnemon_langgraph.store.postgres._engine import PostgresEngine
from mnemon_langgraph.store.postgres._frames import Frames
from mnemon_langgraph.store.postgres._impact import (
    PACK_GROWTH,
    PackPart,
    decode_array,
    needs_pack,
    pack_parts,
)
from mnemon_langgraph.store.postgres._settings import PostgresSettings
from mnemon_langgraph.types import Namespace

__all__ = ["Packs"]

_LOG = logging.getLogger(__name__)


class Packs:
    """Writes, repacks and unpacks the BM25 packs of a store's database."""

    def __init__(self, engine: PostgresEngine, settings: PostgresSettings) -> None:
        self.engine = engine
        self.settings = settings
        self.frames = Frames(engine, settings)

    @classmethod
    async def unpack(cls, conn: Any, term: str, seqs: np.ndarray, impacts: np.ndarray) -> None:
        """Take deleted records' postings (``seqs``, with their ``impacts``) out of the
        parts of ``term``'s pack that hold them (caller's transaction). A posting of impact
        ``x`` lies in a part whose lowest impact is at most ``x`` and whose predecessor's is
        at least ``x``; those parts are read and rewritten first, and the others only if a
        posting was not found there (float text rounding cannot leave one behind). Their
        ``low`` stays: still an upper bound of every later part's impacts."""
        cur = await conn.execute(
            "SELECT part, low FROM mnemon_packs WHERE term = %s ORDER BY part", (term,)
        )
        lows = await cur.fetchall()
        above = [math.inf] + [float(low) for _, low in lows[:-1]]
        likely = [
            part
            for (part, low), high in zip(lows, above, strict=True)
            if np.any((impacts >= float(low) - 1e-7) & (impacts <= high + 1e-7))
        ]
        removed = await cls.drop_from_parts(conn, term, likely, seqs)
        if removed < len(seqs):
            tried = set(likely)
            rest = [part for part, _ in lows if part not in tried]
            removed += await cls.drop_from_parts(conn, term, rest, seqs)
        if removed:
            await conn.execute(
                "UPDATE mnemon_terms SET packed = packed - %s WHERE term = %s", (removed, term)
            )

    @staticmethod
    async def drop_from_parts(conn: Any, term: str, parts: list[int], seqs: np.ndarray) -> int:
        """Rewrite those of ``parts`` holding any of ``seqs`` without them; how many went."""
        if not parts:
            return 0
        cur = await conn.execute(
            "SELECT part, low, last, seqs, imps FROM mnemon_packs WHERE term = %s "
            "AND part = ANY(%s) FOR UPDATE",
            (term, parts),
        )
        removed = 0
        for part, low, last, raw_seqs, raw_imps in await cur.fetchall():
            old = PackPart.from_row(low, last, raw_seqs, raw_imps)
            keep = ~np.isin(old.seqs, seqs)
            if keep.all():
                continue
            removed += int((~keep).sum())
            n, _, _, b_seqs, b_imps = PackPart(
                old.seqs[keep], old.impacts[keep], old.low, old.last
            ).row()
            await conn.execute(
                "UPDATE mnemon_packs SET n = %s, seqs = %s, imps = %s WHERE term = %s "
                "AND part = %s",
                (n, b_seqs, b_imps, term, part),
            )
        return removed

    async def refresh(self, ns: Namespace, nsid: int, terms: Sequence[str] | None) -> None:
        """(Re)pack the terms of ``terms`` (``None``: every term of the namespace) that
        :func:`~._impact.needs_pack` says are due (:meth:`refresh_on`).

        Packs are derived data: a pack that is not refreshed only leaves more postings to
        read from the index, never a wrong ranking. So a failure here is logged and the
        next write of the namespace tries again; the write that triggered it stands.
        """
        if terms is not None and not terms:
            return
        try:
            async with self.engine.connection() as conn:
                await self.refresh_on(conn, ns, nsid, terms)
        except self.engine.error as exc:
            _LOG.warning("packing BM25 postings of namespace %s failed: %s", nsid, exc)

    async def refresh_on(
        self, conn: Any, ns: Namespace, nsid: int, terms: Sequence[str] | None
    ) -> None:
        """:meth:`refresh` on an autocommit connection: each due term in a
        transaction of its own under the namespace's write lock, so no writer of the
        namespace holds an uncommitted ``seq`` below the pack's ``upto`` and no delete
        runs meanwhile; then the namespace's frame, if due (:meth:`~._frames.Frames.refresh_on`)."""
        where = "term = ANY(%(terms)s)" if terms is not None else "nsid = %(nsid)s"
        # needs_pack as a filter (integer division on both sides), so only the due terms'
        # rows come back; each is checked again by needs_pack itself once the lock is held
        cur = await conn.execute(
            f"SELECT term FROM mnemon_terms WHERE {where} AND df > %(min)s AND df - packed > "
            f"GREATEST(%(min)s, packed / {PACK_GROWTH}) ORDER BY term",
            {"terms": list(terms or ()), "nsid": nsid, "min": self.settings.bm25_pack_min},
        )
        for (term,) in await cur.fetchall():
            async with conn.transaction():
                await self.engine.lock_namespace(conn, ns)
                got = await conn.execute(
                    "SELECT df, packed FROM mnemon_terms WHERE term = %s", (term,)
                )
                row = await got.fetchone()  # another writer may have packed it meanwhile
                if row is not None and needs_pack(
                    int(row[0]), int(row[1]), self.settings.bm25_pack_min
                ):
                    await self.pack(conn, nsid, term)
        await self.frames.refresh_on(conn, ns, nsid)

    async def pack(self, conn: Any, nsid: int, term: str) -> None:
        """Rewrite ``term``'s pack from all its postings (caller's transaction, locked; the
        caller checked that the term is due, so it has postings)."""
        cur = await conn.execute(
            "SELECT array_send(array_agg(seq)), array_send(array_agg(impact)), max(seq) "
            "FROM mnemon_postings WHERE term = %s",
            (term,),
        )
        row = await cur.fetchone()
        assert row is not None and row[2] is not None  # an aggregate: one row; due: postings
        await conn.execute("DELETE FROM mnemon_packs WHERE term = %s", (term,))
        seqs = decode_array(row[0], ">i8").astype(np.int64)
        parts = pack_parts(seqs, decode_array(row[1], ">f4"), self.settings.bm25_pack_part)
        await conn.cursor().executemany(
            "INSERT INTO mnemon_packs(term, part, nsid, n, low, last, seqs, imps) "
            "VALUES (%s, %s, %s, %s, %s, %s, %s, %s)",
            [(term, i, nsid, *p.row()) for i, p in enumerate(parts)],
        )
        await conn.execute(
            "UPDATE mnemon_terms SET packed = %s, upto = %s WHERE term = %s",
            (len(seqs), int(row[2]), term),
        )
