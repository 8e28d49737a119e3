"""Search in the client: a cached copy of a namespace's vectors (and BM25 index).

An exact scan in the server reads every vector of the namespace at every search (pgvector
has no exact search below linear, and its HNSW index over every namespace loses recall on
a namespace's filtered searches: docs/results/search-scaling.md), so a read of a long
history spent most of its time in the server. Namespaces from
``settings.client_scan_from`` records (every one, by default) are instead searched in this
process, by the embedded backend's own exact flat index
(:class:`~mnemon_langgraph.search._vectors.VectorIndex`: FAISS inner product on unit
vectors, with its int8 pre-scan and proven rounding bound), from a copy of the namespace's
vectors kept in memory, least recently used first out, within ``settings.client_cache_mb``.

From ``settings.client_ann_from`` records (or ``exact_below`` if smaller; with
``settings.client_ann``) the same copy is that index's approximate kind, as in the
embedded backend past its ``hnsw_threshold`` (FAISS HNSW over the float vectors,
``efSearch`` by size): pgvector's HNSW in the server cost many times more per search for
the same recall, and the exact scan of 94,000 vectors doubled a long history's read
(docs/results). The copy then holds the float vectors and the graph's links instead of the
int8 codes (:func:`bytes_per_record`), so its namespace must fit ``client_cache_mb``; one
that does not is searched in the server as before, and so are the searches made while its
copy is built.

Kept in step without a schema change, from what every write already maintains in the same
transaction: ``mnemon_namespaces.docs`` (live records) and the records' ``seq`` (a
namespace's numbers commit in increasing order: writers hold its advisory lock, and a
record's vector, session and date never change). Each search reads ``docs`` and the largest
``seq`` in one statement (one snapshot); a copy holding exactly those is current. Otherwise
the copy is brought up to date in one ``REPEATABLE READ`` snapshot: the rows above its
largest ``seq`` are added, and when the count then differs from ``docs`` (records were
deleted) the live ``seq`` numbers are read and the missing ones removed. A copy that still
does not match (a record without a vector) is dropped and the server scans.

A namespace's first copy, an update of more than one batch of new rows and one after
deletions load on a connection of its own, off the search's path: the searches meanwhile
scan in the server, so no search waits for a large namespace's vectors to arrive.

With ``lexical`` (``settings.client_bm25``) a copy also holds the namespace's BM25 index,
the embedded backend's own (:class:`~mnemon_langgraph.search._bm25.BM25Index`, built from
the records' text as they arrive with their vectors, the same tokenizer and formula as the
server's query), so a search of a copied namespace ranks both sides in this process: the
server's BM25 query scored every record holding a query word, a few milliseconds of server
CPU each even at a thousand records, twenty-odd times a read (docs/results/search-scaling.md).
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
from collections import OrderedDict
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from mnemon_langgraph.search._bm25 import BM25Index, date_to_epoch
from mnemon_langgraph.search._vectors import VectorIndex, normalize_rows
from mnemon_langgraph.store.postgres._rows import NO_DATE
from mnemon_langgraph.types import SearchFilters

__all__ = ["NAMESPACE_STATE_SQL", "NamespaceVectors", "VectorCache"]

logger = logging.getLogger(__name__)

_STATE_SQL = (
    "SELECT n.docs, (SELECT max(r.seq) FROM mnemon_records r WHERE r.nsid = n.nsid) "
    "FROM mnemon_namespaces n WHERE n.nsid = %s"
)
NAMESPACE_STATE_SQL = (
    "SELECT n.nsid, n.docs, (SELECT max(r.seq) FROM mnemon_records r WHERE r.nsid = n.nsid) "
    "FROM mnemon_namespaces n WHERE n.namespace = %s"
)
"""A namespace's id, live records and largest ``seq`` by its key, in one statement: what a
search needs to know before it ranks on a copy (:meth:`VectorCache.current`'s ``state``)."""
_ROWS_SQL = (
    "SELECT r.seq, r.id, r.session, r.date_epoch, v.embedding{text} FROM mnemon_records r "
    "JOIN mnemon_vectors v ON v.record_id = r.id WHERE r.nsid = %s AND r.seq > %s "
    "ORDER BY r.seq"
)
_BATCH = 4096  # rows fetched and added at a time
_ANN_INLINE = 64  # new rows an approximate copy adds on the search path (a graph insert
# costs far more than a flat one); more are added off it
_PER_RECORD_BYTES = 200  # seq, session, date, the id and its dict entry, roughly
LEXICAL_BYTES = 700
"""Client memory per record of a copy's BM25 index, about: its postings (8 bytes each, some
60 distinct words a 600-character record), the one-byte rows of common words and the
record's own fields."""


def bytes_per_record(dim: int, approximate: bool, hnsw_m: int = 32, lexical: bool = False) -> int:
    """Client memory per record of a copy, about: the float vectors and their int8 copy
    (exact), or the float vectors and the HNSW graph's links (``2 × hnsw_m`` neighbours
    on the base layer, a little more above it), the record's fields, and with ``lexical``
    its share of the BM25 index (:data:`LEXICAL_BYTES`)."""
    graph = hnsw_m * 2 * 4 + 16 if approximate else dim
    return dim * 4 + graph + _PER_RECORD_BYTES + (LEXICAL_BYTES if lexical else 0)


@dataclass
class NamespaceVectors:
    """One namespace's vectors in the client: the exact index and each record's fields,
    and with ``lexical`` its BM25 index over the same records.

    ``seqs`` ascending; ``ids``, ``sessions`` and ``dates`` parallel to it.
    """

    index: VectorIndex
    lexical: BM25Index | None = None
    seqs: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    ids: list[str] = field(default_factory=list)
    sessions: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    dates: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    max_seq: int = 0

    @property
    def count(self) -> int:
        return len(self.seqs)

    def holds(self, docs: int, top: int) -> bool:
        """Whether the copy is the namespace whose snapshot has ``docs`` live records, the
        largest ``seq`` being ``top``: a record added since would have a larger ``seq``
        than any the copy saw, so equal counts and largest numbers mean equal sets."""
        last = int(self.seqs[-1]) if self.count else 0
        return self.count == docs and last == top

    @property
    def approximate(self) -> bool:
        """Whether the index is the approximate kind (past its ``hnsw_threshold``)."""
        return self.index.kind != "flat"

    def nbytes(self) -> int:
        """Memory held, about (:func:`bytes_per_record`)."""
        lexical = self.lexical is not None
        per = bytes_per_record(self.index.dim, self.approximate, self.index.hnsw_m, lexical)
        return self.count * per

    def add(self, rows: list[tuple[Any, ...]]) -> None:
        """Append ``(seq, id, session, date_epoch, embedding[, text])`` rows, ``seq``
        ascending (the text when the copy has a BM25 index)."""
        self.extend([columns(rows)])

    def extend(self, parts: list[Columns]) -> None:
        """Append rows given as :func:`columns`, in order, to the index at once: an
        approximate index is built or grown in one bulk addition (every core), not batch by
        batch."""
        parts = [p for p in parts if len(p[0])]
        if not parts:
            return
        seqs = np.concatenate([p[0] for p in parts])
        self.index.add(seqs, np.concatenate([p[4] for p in parts]))
        if self.lexical is not None:
            ids = [rid for p in parts for rid in p[1]]
            texts = [t for p in parts for t in p[5]]
            sessions = np.concatenate([p[2] for p in parts]).tolist()
            dates = np.concatenate([p[3] for p in parts]).tolist()
            # many rows (a first load): their postings join the index in one merge
            bulk = len(texts) > _BATCH
            self.lexical.add(seqs.tolist(), ids, texts, sessions, dates, bulk=bulk)
        self.seqs = np.concatenate([self.seqs, seqs])
        self.ids += [rid for p in parts for rid in p[1]]
        self.sessions = np.concatenate([self.sessions, *(p[2] for p in parts)])
        self.dates = np.concatenate([self.dates, *(p[3] for p in parts)])
        self.max_seq = max(self.max_seq, int(seqs[-1]))

    def keep(self, live: np.ndarray) -> None:
        """Remove every record whose ``seq`` is not in ``live``."""
        alive = np.isin(self.seqs, live)
        if alive.all():
            return
        self.index.remove(self.seqs[~alive].tolist())
        if self.lexical is not None:
            self.lexical.remove(self.seqs[~alive].tolist())
        self.seqs, self.sessions, self.dates = (
            self.seqs[alive],
            self.sessions[alive],
            self.dates[alive],
        )
        self.ids = [rid for rid, ok in zip(self.ids, alive, strict=True) if ok]

    def allowed(self, filters: SearchFilters | None) -> np.ndarray | None:
        """The ``seq`` numbers passing ``filters`` (the SQL bounds of ``filter_sql``);
        ``None`` when every record passes."""
        if filters is None:
            return None
        mask = np.ones(self.count, dtype=bool)
        if filters.session_from is not None:
            mask &= self.sessions >= int(filters.session_from)
        if filters.session_to is not None:
            mask &= self.sessions <= int(filters.session_to)
        if filters.date_from is not None or filters.date_to is not None:
            mask &= self.dates != NO_DATE
            if filters.date_from is not None:
                mask &= self.dates >= date_to_epoch(filters.date_from)
            if filters.date_to is not None:
                mask &= self.dates <= date_to_epoch(filters.date_to)
        return None if mask.all() else self.seqs[mask]  # all pass: the unfiltered scan

    def rank(
        self, query: np.ndarray, k: int, filters: SearchFilters | None
    ) -> list[tuple[int, str, float]]:
        """The exact top ``k``: ``(seq, id, cosine distance)``, nearest first, ties by seq."""
        q = normalize_rows(np.asarray(query, np.float32).reshape(1, -1))[0]
        seqs, scores = self.index.search(q, k, allowed=self.allowed(filters))
        order = np.lexsort((seqs, -scores))
        at = np.searchsorted(self.seqs, seqs)
        return [(int(seqs[i]), self.ids[at[i]], float(1.0 - scores[i])) for i in order]

    def lexical_rank(
        self, query: str, k: int, filters: SearchFilters | None
    ) -> list[tuple[int, str, float]]:
        """The BM25 top ``k`` (the copy has a BM25 index): ``(seq, id, score)``, best first,
        ties by seq, records holding no query word left out: the server query's ranking."""
        assert self.lexical is not None  # callers check
        mask = self.lexical.filter_mask(filters)
        seqs, scores = self.lexical.search(query, int(k), mask=mask)
        at = np.searchsorted(self.seqs, seqs)
        return [(int(s), self.ids[a], float(v)) for s, a, v in zip(seqs, at, scores, strict=True)]


Columns = tuple[np.ndarray, list[str], np.ndarray, np.ndarray, np.ndarray, list[str]]
"""``(seqs, ids, sessions, dates, unit vectors, texts)`` of some rows (``texts`` empty when
the rows came without them)."""


def columns(rows: list[tuple[Any, ...]]) -> Columns:
    """``(seq, id, session, date_epoch, embedding[, text])`` rows as arrays
    (:data:`Columns`)."""
    if not rows:
        empty = np.zeros(0, np.int64)
        return empty, [], empty, empty, np.zeros((0, 0), np.float32), []
    seqs = np.fromiter((int(r[0]) for r in rows), np.int64, len(rows))
    vecs = np.stack([np.asarray(_floats(r[4]), np.float32) for r in rows])
    sessions = np.array([r[2] for r in rows], np.int64)
    dates = np.array([r[3] for r in rows], np.int64)
    texts = [str(r[5]) for r in rows] if len(rows[0]) > 5 else []
    return seqs, [str(r[1]) for r in rows], sessions, dates, normalize_rows(vecs), texts


def _exiting(exc: BaseException) -> bool:
    """Whether ``exc`` is a thread pool refusing work because the interpreter is exiting: a
    store never closed is closed by an exit hook that runs after Python has shut the thread
    pools down, so a load under way then fails this way (``concurrent.futures`` gives no
    other sign of it)."""
    return isinstance(exc, RuntimeError) and "after" in str(exc) and "shutdown" in str(exc)


def _floats(value: Any) -> Any:
    return value.to_numpy() if hasattr(value, "to_numpy") else value


class VectorCache:
    """Copies of large namespaces' vectors, kept in step with the database (see the module).

    Every method runs on the engine's event-loop thread; a lock per namespace keeps two
    searches from updating one copy at once.

    Args:
        budget_bytes: Most memory the copies hold together; a namespace larger than it is
            never copied (its searches scan in the server).
        connect: Opens a connection of its own (copies then load off the search path).
        approximate_from: Records from which a copy is the approximate index (``None``:
            always exact).
        lexical: Copies also hold the namespace's BM25 index (see the module).
        spawn: Starts a load as a background task (the engine's :meth:`spawn`, which
            cancels it when the engine closes); default a task of the running loop.
    """

    def __init__(
        self,
        budget_bytes: int,
        connect: Callable[[], Any] | None = None,
        approximate_from: int | None = None,
        lexical: bool = False,
        spawn: Callable[[Coroutine[Any, Any, Any]], asyncio.Task[Any]] | None = None,
    ) -> None:
        self._spawn = spawn
        self.budget = int(budget_bytes)
        self._connect = connect
        self.approximate_from = approximate_from
        self.lexical = lexical
        self._copies: OrderedDict[int, NamespaceVectors] = OrderedDict()
        self._locks: dict[int, asyncio.Lock] = {}
        self._refused: dict[int, tuple[int, int]] = {}
        self._loading: dict[int, asyncio.Task[None]] = {}

    def share(self, nsid: int, filters: SearchFilters | None) -> float:
        """The fraction of the namespace's records ``filters`` pass, by its copy as it is
        (not brought up to date: an estimate); ``1.0`` without filters or a copy."""
        copy = self._copies.get(nsid)
        if filters is None or copy is None or not copy.count:
            return 1.0
        allowed = copy.allowed(filters)
        return 1.0 if allowed is None else len(allowed) / copy.count

    def holds(self, nsid: int) -> bool:
        """Whether a copy of the namespace is held (as it is: maybe not current)."""
        return nsid in self._copies

    def fits(self, docs: int, dim: int, lexical: bool = False) -> bool:
        """Whether a namespace of ``docs`` records could be copied at all (with ``lexical``:
        with its BM25 index)."""
        per = bytes_per_record(dim, self.approximates(docs), lexical=lexical)
        return docs * per <= self.budget

    def with_lexical(self, docs: int, dim: int) -> bool:
        """Whether a copy of a namespace of ``docs`` records holds its BM25 index: when the
        store asks for it and the budget holds both; a namespace that fits only without it
        is copied with its vectors alone (BM25 then runs in the server)."""
        return self.lexical and self.fits(docs, dim, lexical=True)

    def approximates(self, docs: int) -> bool:
        """Whether a copy of a namespace of ``docs`` records is the approximate index."""
        return self.approximate_from is not None and docs >= self.approximate_from

    async def current(
        self, conn: Any, nsid: int, dim: int, state: tuple[int, int] | None = None
    ) -> NamespaceVectors | None:
        """The namespace's copy, current as of this call (``None``: scan in the server).

        ``state``: the namespace's live records and largest ``seq``, read by the caller
        in one statement (:data:`NAMESPACE_STATE_SQL`); else read here."""
        if state is None:
            cur = await conn.execute(_STATE_SQL, (nsid,))
            row = await cur.fetchone()
            if row is None:
                self._copies.pop(nsid, None)
                return None
            state = int(row[0]), int(row[1] or 0)
        docs, top = state
        copy = self._copies.get(nsid)
        if copy is not None and copy.holds(docs, top):
            self._copies.move_to_end(nsid)
            return copy
        if not self.fits(docs, dim) or self._refused.get(nsid) == (docs, top):
            self._copies.pop(nsid, None)
            return None
        added = docs - copy.count if copy is not None else -1
        inline = _ANN_INLINE if self.approximates(docs) else _BATCH
        if self._connect is not None and not 0 < added <= inline:
            # a first copy, many new records, or deletions (the int8 copy is rebuilt): off
            # the search path, the server searching until the copy is in
            self._load_later(nsid, dim, docs, top)
            return None
        return await self._update(conn, nsid, dim, docs, top)

    async def load(
        self, conn: Any, nsid: int, dim: int, state: tuple[int, int]
    ) -> NamespaceVectors | None:
        """:meth:`current`, waiting for the load it starts in the background (or one under
        way) instead of leaving the search to the server; ``None`` when the namespace
        cannot be held."""
        copy = await self.current(conn, nsid, dim, state)
        while copy is None and nsid in self._loading:  # until the loads catch up
            await asyncio.gather(self._loading[nsid], return_exceptions=True)
            copy = await self.current(conn, nsid, dim)
        return copy

    def _load_later(self, nsid: int, dim: int, docs: int, top: int) -> None:
        """Make or update the copy on a connection of its own, off the search's path: a
        large namespace's first load reads all of its vectors."""
        if nsid in self._loading or self._connect is None:
            return
        connect = self._connect

        async def load() -> None:
            try:
                async with connect() as conn:
                    await self._update(conn, nsid, dim, docs, top)
            except Exception as exc:  # the searches go on scanning in the server
                if _exiting(exc):
                    return  # the interpreter is exiting: nothing is lost, nothing to say
                logger.warning("mnemon: copying namespace %s's vectors failed: %s", nsid, exc)
            finally:
                self._loading.pop(nsid, None)

        if self._spawn is not None:
            self._loading[nsid] = self._spawn(load())
            return
        # a fresh context: not the caller's (it may hold a connection in a transaction)
        loop = asyncio.get_running_loop()
        self._loading[nsid] = loop.create_task(load(), context=contextvars.Context())

    async def settle(self) -> None:
        """Wait for the copies being loaded (benchmarks and tests)."""
        while self._loading:
            await asyncio.gather(*self._loading.values(), return_exceptions=True)

    async def close(self) -> None:
        """Stop the loads under way (the store is closing)."""
        tasks = list(self._loading.values())
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self.clear()

    async def _update(
        self, conn: Any, nsid: int, dim: int, docs: int, top: int
    ) -> NamespaceVectors | None:
        """The copy brought up to date on ``conn`` and kept (``None``: it cannot be)."""
        lock = self._locks.setdefault(nsid, asyncio.Lock())
        async with lock:
            try:
                copy = await self._refresh(conn, nsid, dim, self._copies.pop(nsid, None))
            except BaseException:
                self._copies.pop(nsid, None)  # a copy half updated is never used
                raise
            if copy is None:  # not every record has a vector: not copied until it changes
                self._refused[nsid] = (docs, top)
                return None
            self._copies[nsid] = copy
            self._evict()
            return copy if nsid in self._copies else None

    async def _refresh(
        self, conn: Any, nsid: int, dim: int, copy: NamespaceVectors | None
    ) -> NamespaceVectors | None:
        """``copy`` brought up to date in one snapshot (a new one when ``None``)."""
        async with conn.transaction():
            await conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            cur = await conn.execute(_STATE_SQL, (nsid,))
            row = await cur.fetchone()
            if row is None:
                return None
            docs = int(row[0])
            if copy is None or copy.index.dim != dim:
                ann_from = self.approximate_from
                copy = NamespaceVectors(
                    VectorIndex(dim, hnsw_threshold=ann_from or 2**62),
                    BM25Index() if self.with_lexical(docs, dim) else None,
                )
            elif copy.lexical is not None and not self.with_lexical(docs, dim):
                copy.lexical = None  # grown past what the budget holds with it
            # a server-side cursor read in batches; an exact copy adds them one by one (the
            # rows never sit in memory all at once), an approximate one (or one about to
            # become it) at once in a worker thread: a graph is built on every core, not
            # batch by batch on the engine's loop
            # (a copy with a BM25 index too: its postings are merged once, at the end)
            bulk = self.approximates(docs) or copy.lexical is not None
            pending: list[Columns] = []
            async with conn.cursor(name="mnemon_vector_copy", binary=True) as cur:
                text = ", r.text" if copy.lexical is not None else ""
                await cur.execute(_ROWS_SQL.format(text=text), (nsid, copy.max_seq))
                while rows := await cur.fetchmany(_BATCH):
                    if bulk:
                        pending.append(columns(rows))
                    else:
                        copy.add(rows)
            if pending:
                await asyncio.to_thread(copy.extend, pending)
            if copy.count != docs:  # records were deleted: keep the live ones
                cur = await conn.execute(
                    "SELECT seq FROM mnemon_records WHERE nsid = %s AND seq <= %s",
                    (nsid, copy.max_seq),
                )
                live = np.array([int(r[0]) for r in await cur.fetchall()], np.int64)
                if copy.approximate:  # tombstones, or the graph rebuilt without them
                    await asyncio.to_thread(copy.keep, live)
                else:
                    copy.keep(live)
        copy.index.prepare()  # an exact copy's int8 copy, else built by the next search
        return copy if copy.count == docs else None

    def _evict(self) -> None:
        """Drop the least recently used copies until the rest fit the budget."""
        total = sum(c.nbytes() for c in self._copies.values())
        while self._copies and total > self.budget:
            _, dropped = self._copies.popitem(last=False)
            total -= dropped.nbytes()

    def clear(self) -> None:
        """Forget every copy."""
        self._copies.clear()
        self._refused.clear()
