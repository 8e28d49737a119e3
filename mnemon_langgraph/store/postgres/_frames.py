"""BM25 frames on PostgreSQL: one byte per record and common term, the bound of
unfiltered queries in large namespaces (schema version 8).

When every word of a query is in most of the namespace's records, the impact rounds of
:mod:`._bm25` cannot prove the top ``k`` early: the bound of a record whose postings were not
read falls slowly, so they read postings in proportion to the namespace. The embedded index
bounds such words from one byte per document (:mod:`mnemon_langgraph.search._bounds`,
WAND's two-level evaluation on upward-quantised impacts); a frame is that route's storage
here:

* ``mnemon_frames`` — per namespace, the records the frame covers: ``n`` of them, every
  record with ``seq <= upto`` when it was built (``docs``: the namespace's live records then);
* ``mnemon_frame_seqs`` — their ``seq`` values in order, in parts of :data:`ROSTER_PART`
  (big-endian ``int8`` in a ``bytea``, ``lo`` and ``hi`` the part's first and last): a
  record's *position* in the frame is its index there;
* ``mnemon_codes`` — per common term (in at least one record in :data:`CODE_SHARE`, and more
  than ``bm25_pack_min``), one byte per position: its impact quantised upward,
  :func:`~mnemon_langgraph.search._bounds.impact_codes` of its postings (``top`` their
  largest impact).

A frame is rebuilt whole (roster and every code row of the namespace, one transaction, under
the namespace's write lock, so no record below ``upto`` is still uncommitted) once the
namespace's live records differ from the frame's ``docs`` by more than ``max(pack_min, docs /
PACK_GROWTH)`` (:func:`frame_due`). The records written since (``seq > upto``) hold the
postings above ``upto``, which a query reads exactly (:data:`~._impact.DELTA_SQL`), as the
rounds read a pack's newer postings. A delete zeroes the deleted records' bytes in the codes
of their terms (:meth:`Frames.forget`: no code row remembers a deleted record's words); its
position stays, naming no record. Derived data: a frame missing or not yet rebuilt only sends
queries to the impact rounds or leaves a looser bound, never a wrong ranking.

A query's words without a code row (rarer ones) are read whole, their packs' parts and their
postings since, and each posting is added to its record's bound at its position: a ``seq`` →
position search in the frame's roster, which :class:`Rosters` keeps in the store's process
(the positions a query scores turn back into ``seq`` values there too). So a real question,
common words mixed with rarer ones, is bounded from the frame as a query of common words is.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

import numpy as np

from mnemon_langgraph.search._bounds import impact_codes, sample_level
from mnemon_langgraph.store.postgres._engine import PostgresEngine
from mnemon_langgraph.store.postgres._impact import PACK_GROWTH, decode_array
from mnemon_langgraph.store.postgres._settings import PostgresSettings
from mnemon_langgraph.types import Namespace

__all__ = [
    "CODES_SQL",
    "CODE_SHARE",
    "FRAME_FROM",
    "ROSTER_CACHE_MB",
    "ROSTER_PART",
    "ROSTER_SQL",
    "Frames",
    "Rosters",
    "best_positions",
    "frame_due",
]


CODE_SHARE = 16
"""A term gets a code row when it is in at least one record of this many (the embedded
index's ``_DENSE_SHARE``)."""

ROSTER_PART = 4_096
"""Record ``seq`` values per row of ``mnemon_frame_seqs``: a delete reads the parts
holding its records."""

LEVEL_SAMPLE = 2
"""Records scored exactly per result wanted to find the threshold (the embedded index scores
4, cheaply in memory; here each is a record row read by the scoring statement, and the
threshold of 2 per result left few records to score after it on the narrow corpus:
docs/results/search-scaling.md)."""

FRAME_FROM = 4 * LEVEL_SAMPLE
"""Postings per result wanted from which an unfiltered query of a namespace with a frame is
bounded from the frame even below ``bm25_full_below``: the full query reads the record row of
every posting (scattered rows of a large namespace, each with its terms array), the frame
about ``LEVEL_SAMPLE`` rows per result wanted and then those whose bound reaches the
threshold."""

SAMPLE_SIZE = 32_768
"""Bounds read to place that level (:func:`~._bounds.sample_level`)."""

CODES_SQL = "SELECT term, top, codes FROM mnemon_codes WHERE term = ANY(%s)"
"""The query terms' code rows (read in binary: the ``bytea`` as bytes)."""

ROSTER_SQL = "SELECT seqs FROM mnemon_frame_seqs WHERE nsid = %s ORDER BY part"
"""A frame's roster, part by part (read in binary: the ``bytea`` as bytes)."""

ROSTER_CACHE_MB = 64
"""Most memory (MiB) the rosters a store keeps in its process hold together (eight bytes a
record), least recently used dropped first; a frame larger than that is read at each query."""


def frame_due(docs: int, frame_docs: int | None, pack_min: int, frame_min: int) -> bool:
    """Whether a namespace of ``docs`` live records gets its frame (re)built: it has at
    least ``frame_min`` records and no frame, or its records changed by more than
    ``max(pack_min, frame_docs / PACK_GROWTH)`` since the frame."""
    if docs < frame_min:
        return False
    if frame_docs is None:
        return True
    return abs(docs - frame_docs) > max(pack_min, frame_docs // PACK_GROWTH)


def best_positions(bounds: np.ndarray, tail: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The frame positions and tail indexes whose bounds lie above a level that about
    ``LEVEL_SAMPLE · k`` of the frame's reach (at least ``k`` bounds in all, unless fewer
    are above zero). ``bounds``: each frame position's upper bound; ``tail``: those of the
    records written since the frame. A zero bound (no query word) is never picked."""
    want = int(LEVEL_SAMPLE * k)
    level = max(_LEAST, sample_level(bounds, want, SAMPLE_SIZE))
    pos = np.flatnonzero(bounds >= level)
    idx = np.flatnonzero(tail >= level)
    if len(pos) + len(idx) < k:  # the sample guessed too high: the exact level
        rank = min(len(bounds), want)
        exact = float(np.partition(bounds, len(bounds) - rank)[len(bounds) - rank]) if rank else 0
        pos = np.flatnonzero(bounds >= max(_LEAST, exact))
        idx = np.flatnonzero(tail > 0)
    return pos, idx


_LEAST = float(np.finfo(np.float64).tiny)
"""The least level :func:`best_positions` picks at: above a zero bound."""


class Rosters:
    """The frames' rosters (every position's ``seq``), kept in the store's process.

    A query bounding its rarer words from the frame places their postings at their records'
    positions (a ``seq`` → position search) and turns the positions it scores back into
    ``seq`` values; both need the roster. One is read once per frame: ``(nsid, n, upto)``
    names a frame's roster, since ``seq`` values only grow and are never reused (a frame
    rebuilt with the same ``upto`` after deletes alone covers fewer records). At most
    :data:`ROSTER_CACHE_MB` are kept, least recently used dropped first.
    """

    def __init__(self, budget_mb: int = ROSTER_CACHE_MB) -> None:
        self.budget = budget_mb << 20
        self._held: OrderedDict[tuple[int, int, int], np.ndarray] = OrderedDict()

    async def get(self, conn: Any, nsid: int, frame: tuple[int, int]) -> np.ndarray | None:
        """The roster of the namespace's frame ``(n, upto)``, read with ``conn`` (the
        query's snapshot) when not kept; ``None`` if the rows read are not that frame's."""
        key = (nsid, *frame)
        held = self._held.get(key)
        if held is not None:
            self._held.move_to_end(key)
            return held
        cur = await conn.execute(ROSTER_SQL, (nsid,), binary=True)
        raw = b"".join(bytes(row[0]) for row in await cur.fetchall())
        roster = np.frombuffer(raw, dtype=">i8").astype(np.int64)
        if len(roster) != frame[0] or not len(roster) or int(roster[-1]) != frame[1]:
            return None
        for old in [k for k in self._held if k[0] == nsid]:  # the namespace's older frames
            del self._held[old]
        if roster.nbytes <= self.budget:
            self._held[key] = roster
            while sum(r.nbytes for r in self._held.values()) > self.budget:
                self._held.popitem(last=False)
        return roster


class Frames:
    """Builds, refreshes and trims the BM25 frames of a store's database."""

    def __init__(self, engine: PostgresEngine, settings: PostgresSettings) -> None:
        self.engine = engine
        self.settings = settings

    async def refresh_on(self, conn: Any, ns: Namespace, nsid: int) -> None:
        """Rebuild the namespace's frame when :func:`frame_due` says so (autocommit
        ``conn``; the rebuild in a transaction of its own under the namespace's lock)."""
        if not await self._due(conn, nsid):
            return
        async with conn.transaction():
            await self.engine.lock_namespace(conn, ns)
            if await self._due(conn, nsid):  # another writer may have built it meanwhile
                await self.build(conn, nsid)

    async def _due(self, conn: Any, nsid: int) -> bool:
        cur = await conn.execute(
            "SELECT n.docs, f.docs FROM mnemon_namespaces n LEFT JOIN mnemon_frames f "
            "ON f.nsid = n.nsid WHERE n.nsid = %s",
            (nsid,),
        )
        row = await cur.fetchone()
        if row is None:
            return False
        frame_docs = None if row[1] is None else int(row[1])
        settings = self.settings
        return frame_due(int(row[0]), frame_docs, settings.bm25_pack_min, settings.bm25_frame_min)

    async def build(self, conn: Any, nsid: int) -> None:
        """Write the namespace's frame from its records and postings (caller's
        transaction, namespace locked): the roster, then a code row per common term."""
        cur = await conn.execute(
            "SELECT array_send(array_agg(seq ORDER BY seq)) FROM mnemon_records WHERE nsid = %s",
            (nsid,),
            binary=True,
        )
        row = await cur.fetchone()
        roster = decode_array(row[0] if row else None, ">i8").astype(np.int64)
        for table in ("mnemon_codes", "mnemon_frame_seqs", "mnemon_frames"):
            await conn.execute(f"DELETE FROM {table} WHERE nsid = %s", (nsid,))
        n = len(roster)
        if not n:
            return
        parts = [
            (nsid, i // ROSTER_PART, int(chunk[0]), int(chunk[-1]), chunk.astype(">i8").tobytes())
            for i in range(0, n, ROSTER_PART)
            for chunk in [roster[i : i + ROSTER_PART]]
        ]
        await conn.cursor().executemany(
            "INSERT INTO mnemon_frame_seqs(nsid, part, lo, hi, seqs) VALUES (%s, %s, %s, %s, %s)",
            parts,
        )
        cur = await conn.execute(
            "SELECT term FROM mnemon_terms WHERE nsid = %s AND df > %s AND df * %s >= %s "
            "ORDER BY term",
            (nsid, self.settings.bm25_pack_min, CODE_SHARE, n),
        )
        for (term,) in await cur.fetchall():
            await self._code_row(conn, nsid, term, roster)
        await conn.execute(
            "INSERT INTO mnemon_frames(nsid, n, upto, docs) VALUES (%s, %s, %s, %s)",
            (nsid, n, int(roster[-1]), n),
        )

    @staticmethod
    async def _code_row(conn: Any, nsid: int, term: str, roster: np.ndarray) -> None:
        """One term's codes over the roster's positions, from all its postings."""
        cur = await conn.execute(
            "SELECT array_send(array_agg(seq)), array_send(array_agg(impact)) "
            "FROM mnemon_postings WHERE term = %s",
            (term,),
            binary=True,
        )
        row = await cur.fetchone()
        assert row is not None  # an aggregate: one row
        seqs = decode_array(row[0], ">i8").astype(np.int64)
        impacts = decode_array(row[1], ">f4").astype(np.float32)
        if not len(seqs):
            return
        pos = np.minimum(np.searchsorted(roster, seqs), len(roster) - 1)
        if np.any(roster[pos] != seqs):  # cannot happen under the namespace's lock
            raise RuntimeError(f"postings of {term!r} outside the namespace's records")
        codes, top = impact_codes(pos, impacts, len(roster))
        await conn.execute(
            "INSERT INTO mnemon_codes(term, nsid, top, codes) VALUES (%s, %s, %s, %s)",
            (term, nsid, top, codes.tobytes()),
        )

    @staticmethod
    async def forget(conn: Any, nsid: int, rows: list[tuple[Any, ...]]) -> None:
        """Zero deleted records' bytes in the code rows of their terms (caller's
        transaction, namespace locked). ``rows``: ``(id, seq, terms, …)`` as deleted."""
        cur = await conn.execute("SELECT upto FROM mnemon_frames WHERE nsid = %s", (nsid,))
        frame = await cur.fetchone()
        gone = [r for r in rows if frame is not None and int(r[1]) <= int(frame[0])]
        if not gone:
            return
        seqs = np.array(sorted(int(r[1]) for r in gone), np.int64)
        cur = await conn.execute(
            "SELECT part, seqs FROM mnemon_frame_seqs WHERE nsid = %(nsid)s AND EXISTS "
            "(SELECT 1 FROM unnest(%(seqs)s::bigint[]) s(x) WHERE s.x BETWEEN lo AND hi)",
            {"nsid": nsid, "seqs": seqs.tolist()},
        )
        positions = []
        for part, raw in await cur.fetchall():
            roster = np.frombuffer(bytes(raw), dtype=">i8").astype(np.int64)
            at = np.minimum(np.searchsorted(roster, seqs), len(roster) - 1)
            hit = roster[at] == seqs
            positions.append(int(part) * ROSTER_PART + at[hit])
        pos = np.concatenate(positions) if positions else np.zeros(0, np.int64)
        terms = sorted({t for r in gone for t in r[2]})
        cur = await conn.execute(
            "SELECT term, codes FROM mnemon_codes WHERE term = ANY(%s) FOR UPDATE", (terms,)
        )
        for term, raw in await cur.fetchall():
            codes = np.frombuffer(bytes(raw), dtype=np.uint8).copy()
            inside = pos[pos < len(codes)]
            if np.any(codes[inside]):
                codes[inside] = 0
                await conn.execute(
                    "UPDATE mnemon_codes SET codes = %s WHERE term = %s", (codes.tobytes(), term)
                )
