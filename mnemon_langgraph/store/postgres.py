"""``PostgresStore``: the whole store in PostgreSQL (pgvector, BM25 in SQL), shared by many hosts.

Built by ``MnemonStore("postgresql://…")`` or, in the style of
``langgraph-checkpoint-postgres``, by :meth:`PostgresStore.from_conn_string` (a context
manager) and :meth:`PostgresStore.afrom_conn_string` (its async twin). Nothing is kept on
local disk: records, messages, vectors, BM25 statistics, index items, consolidation state,
the audit trail, the schema version and the embedding model identity are all rows.

**One async core.** Every operation is one coroutine using psycopg's async API over a
``psycopg_pool.AsyncConnectionPool``. The pool lives on one event loop in a daemon thread
owned by the store; sync methods submit the coroutine there and wait, async methods submit
it and ``await`` without blocking the caller's loop. So sync and async paths are the same
code and the pool is never used from two loops (which psycopg forbids).

**Writes.** An ingest takes a transaction-level advisory lock on its namespace, inserts with
``ON CONFLICT DO NOTHING`` (record ids and message ids are unique), and updates the
namespace's BM25 statistics in the same transaction. The lock makes ``seq`` numbers of one
namespace commit in order, so a watermark reader (consolidation) never skips a record that
commits late; two hosts ingesting the same messages write them once.

**Search.** BM25 in SQL (:mod:`.postgres_bm25`) and pgvector cosine search, fused in Python
by the same :func:`~mnemon_langgraph.search.fusion.rrf_fuse` as the embedded backend. Dense
search is exact (a sequential scan of the namespace's vectors) below ``exact_below``
records and uses the HNSW index with ``hnsw.iterative_scan = relaxed_order`` above, so a
namespace filter keeps recall (the index scan continues until enough rows of the namespace
were found).

**Erase** deletes every row of the namespace in every table in one transaction with its
audit row, then ``VACUUM``\\ s the touched tables so dead tuples holding the text are
reclaimed. WAL segments, replicas and backups can still hold it: see the README.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import math
import re
import threading
from collections.abc import AsyncIterator, Callable, Coroutine, Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager
from datetime import UTC
from typing import Any, TypeVar

import numpy as np
from langchain_core.embeddings import Embeddings

from mnemon_langgraph.errors import ConfigurationError, MissingDependencyError
from mnemon_langgraph.search.embeddings import default_embeddings, embedding_identity
from mnemon_langgraph.search.fusion import RRF_K, rrf_fuse
from mnemon_langgraph.search.hybrid import CANDIDATE_DEPTH, date_to_epoch
from mnemon_langgraph.storage.chunking import (
    DEFAULT_MAX_CHARS,
    check_record_chars,
)
from mnemon_langgraph.storage.schema import AuditEntry, namespace_key, ns_from_key, rebuild_messages
from mnemon_langgraph.store.base import MnemonStore, check_search, fresh_messages, sessions_of
from mnemon_langgraph.store.postgres_bm25 import (
    DEEPEN_MARGIN,
    DELTA_SQL,
    FIRST_PARTS,
    FULL_BELOW_POSTINGS,
    IMPACT_SLACK,
    LOOKUP_SQL,
    PACK_GROWTH,
    PACK_MIN,
    PACK_PART,
    PARTS_SQL,
    CorpusStats,
    PackPart,
    TermRead,
    TermStats,
    bm25_sql,
    candidate_bounds,
    cut_bound,
    decode_array,
    idf,
    impact,
    impact_scale,
    namespaced,
    needs_pack,
    pack_parts,
    plan_depths,
    reaches,
    reaching,
    record_bounds,
    term_bound,
    term_counts,
)
from mnemon_langgraph.store.postgres_bm25 import lexical_terms as _terms
from mnemon_langgraph.store.postgres_schema import TABLES, setup_schema, stored_version
from mnemon_langgraph.types import (
    Message,
    Namespace,
    Record,
    SearchFilters,
    SearchHit,
    normalize_namespace,
)

__all__ = ["EF_SEARCH_BY_SIZE", "EF_SEARCH_LARGE", "EXACT_BELOW", "PostgresStore", "ef_search_for"]

T = TypeVar("T")

EXACT_BELOW = 150_000
"""Namespaces with fewer records are searched exactly (recall 1). Measured (``bench
backend``, 2 shared cores, 384-d word-mix vectors): an exact scan costs about 1.4 ms per
1,000 vectors (12 ms at 10k, 141 ms at 100k). HNSW with pgvector's default graph
(``m = 16``) tops out at recall@48 0.94 at 100k even at the largest ``ef_search`` (1,000);
the denser ``m = 32, ef_construction = 128`` reaches 0.99 there in 123 ms, but makes every
insert ~3.6× slower (see :data:`~.postgres_schema.HNSW_M`). Exact search up to 150k records
(≤ ~210 ms) meets the 0.98 goal for a 100k namespace at no cost to ingest; above it HNSW,
whose cost grows sub-linearly while the exact scan's grows linearly (README)."""

EF_SEARCH_BY_SIZE: tuple[tuple[int, int], ...] = ((10_000, 400),)
"""``(namespace records up to, hnsw.ef_search)``; larger namespaces use :data:`EF_SEARCH_LARGE`.

Measured with ``mnemon bench backend`` (recall@48 against exact search, word-mix stand-in
vectors, ``m = 16, ef_construction = 64``, iterative scan ``relaxed_order``): for one
namespace, recall 0.65 / 0.80 / 0.91 / 0.97 at ef_search 48 / 100 / 200 / 400 with 10k
records and 0.65 / 0.71 / 0.82 / 0.88 / 0.94 at 48 / 100 / 200 / 400 / 1000 with 100k; a
namespace holding 1% of the table had recall 1.00 at every value. Only namespaces of
:data:`EXACT_BELOW` records or more use HNSW, so they get :data:`EF_SEARCH_LARGE`; the 10k
entry serves stores opened with a smaller ``exact_below``.
"""

EF_SEARCH_LARGE = 200
"""``hnsw.ef_search`` past :data:`EF_SEARCH_BY_SIZE` (in practice: namespaces of
:data:`EXACT_BELOW` records or more). Measured on real text (1M MiniLM passage vectors, one
namespace, ``bench backend --corpus``): recall@48 0.986 / 0.995 / 0.997 / 0.999 at
ef_search 100 / 200 / 400 / 1000 (9 / 21 / 27 / 56 ms); 200 keeps the 0.98 goal with a
margin at a third of 1,000's time (re-checked by ``docs/results/pg_bm25_1m.py parts``).
Was 1,000 (the most pgvector accepts) while the only figures were the word-mix stand-in
vectors', which reach 0.98 nowhere at 100k (0.82 at 200, 0.94 at 1,000): a corpus whose
vectors are as unclustered as those would lose recall here; pass ``ef_search=`` to the
store to trade latency back for it."""
HALF_RERANK = 200
"""How many nearest neighbours by the half-precision copy the exact search re-ranks by the
float vectors (at least ``4 × k``). Measured at 100k word-mix vectors: 48 re-ranked already
give recall@48 0.9995 (min 0.979 over 40 queries), 200 give 1.0000 (min 1.0) for the same
60 ms; halfvec rounding (~1e-3 relative) only reorders near-ties, which the re-rank undoes."""

EF_SEARCH_MAX = 1000  # pgvector rejects a larger hnsw.ef_search
SPARE_WAIT_S = 0.002  # the longest a search waits for a second connection (then: one)


def ef_search_for(docs: int) -> int:
    """``hnsw.ef_search`` for a namespace of ``docs`` records (:data:`EF_SEARCH_BY_SIZE`)."""
    for limit, ef in EF_SEARCH_BY_SIZE:
        if docs <= limit:
            return ef
    return EF_SEARCH_LARGE


NO_DATE = int(np.iinfo(np.int64).min)
_NS_LOCK = 0x4D4E  # first key of the per-namespace advisory lock
_LOG = logging.getLogger(__name__)
_NO_LENGTH = 2**31 - 1  # min_len of a removal: LEAST keeps the stored value
_RECORD_SQL = (
    "SELECT id, seq, source, session, date, position, speakers, message_ids, roles, text "
    "FROM mnemon_records"
)


_URL_PASSWORD = re.compile(r"(://[^:@/\s]*):[^/\s]*@")
_QUERY_PASSWORD = re.compile(r"([?&][^=&#\s]*password=)[^&#\s]*", re.IGNORECASE)


def redact(url: str) -> str:
    """``url`` (or a text naming one) without its passwords, for output and error messages.

    The one redaction of the package (the CLI uses it for every ``--db`` it prints): the
    password of a URL's userinfo and of any ``…password=`` query parameter (``password``,
    ``sslpassword``) become ``***``. Text without ``://`` (a journal's file path) is returned
    as is. Only the standard library is used, so redacting never needs psycopg.
    """
    if "://" not in url:
        return url
    return _QUERY_PASSWORD.sub(r"\1***", _URL_PASSWORD.sub(r"\1:***@", url))


def _row_to_record(row: Sequence[Any], ns: Namespace) -> Record:
    rid, seq, source, session, date, position, speakers, mids, roles, text = row
    return Record(
        id=rid,
        namespace=ns,
        session=session,
        date=date,
        position=position,
        speakers=tuple(speakers),
        message_ids=tuple(mids),
        text=text,
        source=source,
        seq=seq,
        roles=tuple(roles),
    )


def _merge_top(
    top: list[tuple[int, str, float]], rows: list[tuple[int, str, float]], k: int
) -> list[tuple[int, str, float]]:
    """The best ``k`` of two rankings of ``(seq, id, score)`` (a record in both counts once:
    the same snapshot gives it the same score), by score and then older first."""
    merged = {row[0]: row for row in top}
    for row in rows:
        merged.setdefault(row[0], row)
    return sorted(merged.values(), key=lambda r: (-r[2], r[0]))[:k]


def _filter_sql(filters: SearchFilters | None, params: dict[str, Any]) -> str:
    """SQL conditions on ``r`` for ``filters`` (inclusive bounds, as the embedded mask)."""
    if filters is None:
        return ""
    out = []
    if filters.session_from is not None:
        out.append("r.session >= %(s_from)s")
        params["s_from"] = int(filters.session_from)
    if filters.session_to is not None:
        out.append("r.session <= %(s_to)s")
        params["s_to"] = int(filters.session_to)
    if filters.date_from is not None or filters.date_to is not None:
        out.append(f"r.date_epoch <> {NO_DATE}")
        if filters.date_from is not None:
            out.append("r.date_epoch >= %(d_from)s")
            params["d_from"] = date_to_epoch(filters.date_from)
        if filters.date_to is not None:
            out.append("r.date_epoch <= %(d_to)s")
            params["d_to"] = date_to_epoch(filters.date_to)
    return "".join(f" AND {c}" for c in out)


def _exact_dense_sql(where: str, half: bool) -> str:
    """SQL of the exact dense search: ``(seq, id, cosine distance)``, nearest first.

    ``"+ 0"`` keeps the planner off the HNSW index. With ``half`` (the default path), the
    nearest ``%(n)s`` by the half-precision copy (``mnemon_halfvecs``, half the bytes to
    read) are re-ranked by exact cosine on the float vectors, so the final order is the
    float one (recall@48 1.0 at 100k; see :data:`HALF_RERANK`); filters (conditions on
    the records) join the records to that narrow scan. Without ``half`` the float vectors
    are scanned.

    The re-ranked rows' ``seq`` (the tie-break) is a correlated subquery, one primary-key
    lookup per row, not a join: psycopg prepares a statement after five runs and
    PostgreSQL's generic plan for it hash-joined the whole records table (measured at 10k
    records, top 100 of 400: 22 ms against 8–11 ms, same rows).
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


class _LoopThread:
    """An event loop in a daemon thread: where the store's async core and its pool live."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        if threading.current_thread() is self.thread:
            coro.close()
            raise RuntimeError("a sync PostgresStore method was called from its own loop")
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result()

    async def submit(self, coro: Coroutine[Any, Any, T]) -> T:
        return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(coro, self.loop))

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=10)
        if not self.thread.is_alive():
            self.loop.close()


def _import_driver() -> tuple[Any, Any, Any]:
    try:
        import psycopg
        import psycopg_pool
        from pgvector.psycopg import register_vector_async
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise MissingDependencyError(
            "a postgresql:// store", exc.name or "psycopg", "postgres"
        ) from exc
    return psycopg, psycopg_pool, register_vector_async


class _NoEmbeddings(Embeddings):
    """The embedder of a maintenance-only store: declares no model and refuses to embed."""

    model_name = "none (maintenance)"
    dimension = 0

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        raise ConfigurationError("this store was opened for maintenance, without an embedder")

    def embed_query(self, text: str) -> list[float]:
        raise ConfigurationError("this store was opened for maintenance, without an embedder")


class PostgresStore(MnemonStore):
    """The store on PostgreSQL (see the module docstring).

    Args:
        url: A ``postgresql://`` connection string.
        embeddings: Any LangChain ``Embeddings``; default :func:`default_embeddings`.
        candidate_depth: Records each retriever feeds into fusion.
        exact_below: Namespaces with fewer records use exact dense search.
        ef_search: ``hnsw.ef_search`` for HNSW searches; ``None`` (default) chooses it by
            the namespace's size (:func:`ef_search_for`).
        pool_size: Most connections this process opens.
        setup: Create or migrate the schema on open (``False``: call :meth:`setup`).
        record_chars: Most characters of a record this store writes (default 600, the
            paper's; :data:`~mnemon_langgraph.storage.chunking.DEFAULT_MAX_CHARS`). Records
            already stored keep their size.

    Raises:
        MissingDependencyError: psycopg / psycopg_pool / pgvector are not installed.
        ConfigurationError: The server cannot be reached, or ``record_chars`` is out of range.
        EmbeddingMismatchError: The database holds vectors of another model or dimension.
        SchemaVersionError: The database was set up by a newer version of this package.
    """

    def __init__(
        self,
        url: str,
        embeddings: Embeddings | None = None,
        *,
        candidate_depth: int = CANDIDATE_DEPTH,
        exact_below: int = EXACT_BELOW,
        ef_search: int | None = None,
        pool_size: int = 8,
        setup: bool = True,
        record_chars: int = DEFAULT_MAX_CHARS,
    ) -> None:
        self.record_chars = check_record_chars(record_chars)
        self._psycopg, pool_mod, self._register_vector = _import_driver()
        self.url = url
        self.path = redact(url)
        self.embeddings = embeddings if embeddings is not None else default_embeddings()
        self.model_name, self.dimension = embedding_identity(self.embeddings)
        self.candidate_depth = candidate_depth
        self.exact_below = int(exact_below)
        self.ef_search = None if ef_search is None else int(ef_search)
        self.bm25_prune = True  # the bench turns it off to measure what pruning saves
        self.half_scan = True  # exact search via mnemon_halfvecs; the bench compares both
        self.bm25_full_below = FULL_BELOW_POSTINGS
        self.bm25_first_parts = FIRST_PARTS
        self.bm25_pack_part = PACK_PART  # postings per part of the packs this store writes
        self.bm25_pack_min = PACK_MIN  # terms with more postings get a pack
        self._loop = _LoopThread()
        self._closed = False
        self._pool_cls = pool_mod.AsyncConnectionPool
        self._pool_timeout = pool_mod.PoolTimeout
        self._pool_size = max(1, int(pool_size))
        self._pool: Any = None
        try:
            if setup:
                self.setup()
            self._loop.run(self._open_pool())
        except BaseException:
            self._loop.stop()
            raise

    # -- lifecycle ----------------------------------------------------------------------------

    @classmethod
    @contextmanager
    def from_conn_string(
        cls, url: str, embeddings: Embeddings | None = None, **kwargs: Any
    ) -> Iterator[PostgresStore]:
        """A store on ``url``, closed on exit (like ``PostgresSaver.from_conn_string``)."""
        store = cls(url, embeddings, **kwargs)
        try:
            yield store
        finally:
            store.close()

    @classmethod
    @asynccontextmanager
    async def afrom_conn_string(
        cls, url: str, embeddings: Embeddings | None = None, **kwargs: Any
    ) -> AsyncIterator[PostgresStore]:
        """Async :meth:`from_conn_string`: opening and closing do not block the caller's loop."""
        store = await asyncio.to_thread(cls, url, embeddings, **kwargs)
        try:
            yield store
        finally:
            await asyncio.to_thread(store.close)

    @classmethod
    def for_maintenance(cls, url: str, **kwargs: Any) -> PostgresStore:
        """Open ``url`` without an embedder and without setup: erase, stats, audit, reads.

        ``mnemon erase`` and ``mnemon stats`` use it so they work whatever model wrote the
        vectors (and load none). Ingest and search raise :class:`ConfigurationError`.
        """
        return cls(url, _NoEmbeddings(), setup=False, **kwargs)

    def setup(self) -> int:
        """Create or migrate the schema; record the version and embedding model identity."""
        return self._loop.run(self._setup())

    async def asetup(self) -> int:
        """Async :meth:`setup`."""
        return await self._loop.submit(self._setup())

    async def _connect(self, *, autocommit: bool = False) -> Any:
        try:
            return await self._psycopg.AsyncConnection.connect(self.url, autocommit=autocommit)
        except self._psycopg.OperationalError as exc:
            raise ConfigurationError(
                f"cannot connect to PostgreSQL at {self.path}: {exc}".strip()
            ) from exc

    async def _setup(self) -> int:
        conn = await self._connect()
        try:
            before = await stored_version(conn)
            await conn.rollback()  # the read above opened a transaction
            version = await setup_schema(conn, self.model_name, self.dimension)
            if 0 < before < 5:  # postings filled or re-indexed: pack them, mark pages visible
                await conn.set_autocommit(True)
                cur = await conn.execute(
                    "SELECT nsid, namespace FROM mnemon_namespaces ORDER BY nsid"
                )
                for nsid, key in await cur.fetchall():
                    await self._refresh_on(conn, ns_from_key(key), int(nsid), None)
                await conn.execute("VACUUM (ANALYZE) mnemon_postings")
            return version
        finally:
            await conn.close()

    async def _open_pool(self) -> None:
        async def configure(conn: Any) -> None:
            await self._register_vector(conn)
            await conn.set_autocommit(True)  # reads need no transaction; writes open one

        self._pool = self._pool_cls(
            self.url, min_size=1, max_size=self._pool_size, open=False, configure=configure
        )
        try:
            await self._pool.open(wait=True, timeout=30)
        except Exception as exc:
            raise ConfigurationError(f"cannot open a pool to {self.path}: {exc}") from exc

    def close(self) -> None:
        """Close the pool and stop the store's loop thread."""
        if self._closed:
            return
        self._closed = True
        if self._pool is not None:
            self._loop.run(self._pool.close())
        self._loop.stop()

    def flush(self) -> None:
        """Nothing to flush: every write is committed when its method returns."""

    # -- for components keeping their own tables in this database (the item store) --------

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run a coroutine of this store's async core and wait for it (sync callers)."""
        return self._loop.run(coro)

    def connection(self) -> Any:
        """``async with store.connection() as conn``: a pooled async connection (autocommit;
        open ``conn.transaction()`` to write). Only inside coroutines given to :meth:`run`."""
        return self._pool.connection()

    async def fetch(self, sql: str, params: Any = None) -> list[Any]:
        """All rows of one read query."""
        return await self._read(sql, params)

    @staticmethod
    def key(namespace: str | Sequence[str]) -> str:
        """The stored form of a namespace (``mnemon_namespaces.namespace``)."""
        return namespace_key(namespace)

    async def namespace_id(self, conn: Any, ns: Namespace, *, create: bool = False) -> Any:
        """The ``nsid`` of ``ns`` (``None`` if unknown and not ``create``)."""
        return await self._nsid(conn, ns, create=create)

    # -- namespace ids and locks ---------------------------------------------------------------

    async def _nsid(self, conn: Any, ns: Namespace, *, create: bool = False) -> int | None:
        key = namespace_key(ns)
        if create:
            await conn.execute(
                "INSERT INTO mnemon_namespaces(namespace) VALUES (%s) "
                "ON CONFLICT (namespace) DO NOTHING",
                (key,),
            )
        cur = await conn.execute("SELECT nsid FROM mnemon_namespaces WHERE namespace = %s", (key,))
        row = await cur.fetchone()
        return None if row is None else int(row[0])

    @staticmethod
    async def _lock_namespace(conn: Any, ns: Namespace) -> None:
        """Serialise writers of one namespace until the transaction ends (any host)."""
        await conn.execute(
            "SELECT pg_advisory_xact_lock(%s, hashtext(%s))", (_NS_LOCK, namespace_key(ns))
        )

    # -- writing ------------------------------------------------------------------------------

    def _write_messages(
        self,
        ns: Namespace,
        messages: list[Message],
        source: str,
        pack: bool,
        progress: Callable[[int, int], None] | None,
    ) -> list[Record]:
        return self._loop.run(self._ingest(ns, messages, source, pack, progress))

    async def _awrite_messages(
        self, ns: Namespace, messages: list[Message], source: str, pack: bool
    ) -> list[Record]:
        return await self._loop.submit(self._ingest(ns, messages, source, pack, None))

    async def _ingest(
        self,
        ns: Namespace,
        messages: list[Message],
        source: str,
        pack: bool,
        progress: Callable[[int, int], None] | None,
    ) -> list[Record]:
        known = await self._known(ns, [m.id for m in messages if m.id])
        fresh = fresh_messages(messages, known)
        if not fresh:
            return []
        first = {s: await self._next_position(ns, s) for s in sessions_of(fresh)}
        records = self._records_of(fresh, ns, source, pack=pack, first_positions=first)
        vectors = await asyncio.to_thread(self._embed, [r.text for r in records], progress)
        async with self._pool.connection() as conn, conn.transaction():
            await self._lock_namespace(conn, ns)
            nsid = await self._nsid(conn, ns, create=True)
            assert nsid is not None
            written, terms = await self._write(conn, nsid, records, vectors)
        await self._refresh_packs(ns, nsid, terms)
        return written

    async def _write(
        self, conn: Any, nsid: int, records: Sequence[Record], vectors: np.ndarray
    ) -> tuple[list[Record], list[str]]:
        """Insert records, their message ids, vectors and BM25 statistics (caller's tx).

        Returns the records written and the terms they hold (whose packs may be due,
        :meth:`_refresh_packs`)."""
        rows, order, lexical = self._record_rows(nsid, records)
        written: list[Record] = []
        cur = conn.cursor()
        await cur.executemany(
            "INSERT INTO mnemon_records (id, seq, nsid, source, session, date, date_epoch, "
            "position, speakers, message_ids, roles, text, terms, tfs, length) VALUES "
            "(%s, nextval('mnemon_record_seq'), %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, "
            "%s, %s) ON CONFLICT (id) DO NOTHING RETURNING seq",
            rows,
            returning=True,
        )
        inserted: list[tuple[int, int]] = []  # (index into rows, seq)
        for j in range(len(rows)):
            got = await cur.fetchone()
            if got is not None:
                inserted.append((j, int(got[0])))
            if not cur.nextset():
                break
        if not inserted:
            return written, []
        df: dict[str, int] = {}
        bounds: dict[str, tuple[float, int]] = {}  # term -> (max tf, min length)
        total_len = 0
        msg_rows, vec_rows = [], []
        for j, seq in inserted:
            rec = records[order[j]]
            written.append(dataclasses.replace(rec, seq=seq))
            msg_rows += [(nsid, mid, rec.id) for mid in dict.fromkeys(rec.message_ids)]
            vec_rows.append((rec.id, nsid, vectors[order[j]]))
            terms, tfs, length = lexical[j]
            for term, tf in zip(terms, tfs, strict=True):
                df[term] = df.get(term, 0) + 1
                high, low = bounds.get(term, (tf, length))
                bounds[term] = (max(high, tf), min(low, length))
            total_len += length
        await cur.executemany(
            "INSERT INTO mnemon_messages(nsid, message_id, record_id) VALUES (%s, %s, %s) "
            "ON CONFLICT DO NOTHING",
            msg_rows,
        )
        await cur.executemany(  # + the half-precision copy the exact search scans (v3)
            "WITH v AS (INSERT INTO mnemon_vectors(record_id, nsid, embedding) VALUES "
            "(%s, %s, %s) RETURNING record_id, nsid, embedding) INSERT INTO mnemon_halfvecs"
            "(record_id, nsid, embedding) SELECT record_id, nsid, embedding::halfvec FROM v",
            vec_rows,
        )
        await self._adjust_stats(conn, nsid, df, len(inserted), total_len, bounds)
        await self._write_postings(conn, nsid, [(seq, lexical[j]) for j, seq in inserted])
        return written, sorted(df)

    @staticmethod
    def _record_rows(
        nsid: int, records: Sequence[Record]
    ) -> tuple[list[tuple[Any, ...]], list[int], list[tuple[list[str], list[float], int]]]:
        """``mnemon_records`` rows of the records (first of each id), their indexes into
        ``records`` and their ``(terms, tfs, length)``."""
        rows: list[tuple[Any, ...]] = []
        order: list[int] = []
        lexical: list[tuple[list[str], list[float], int]] = []
        seen: set[str] = set()
        for i, rec in enumerate(records):
            if rec.id in seen:
                continue
            seen.add(rec.id)
            terms, tfs, length = term_counts(nsid, rec.text)
            lists = [json.dumps(list(x)) for x in (rec.speakers, rec.message_ids, rec.roles)]
            rows.append(
                (
                    rec.id,
                    nsid,
                    rec.source,
                    int(rec.session),
                    rec.date,
                    date_to_epoch(rec.date),
                    int(rec.position),
                    *lists,
                    rec.text,
                    terms,
                    tfs,
                    length,
                )
            )
            order.append(i)
            lexical.append((terms, tfs, length))
        return rows, order, lexical

    @staticmethod
    async def _write_postings(
        conn: Any, nsid: int, rows: Sequence[tuple[int, tuple[list[str], list[float], int]]]
    ) -> None:
        """One ``mnemon_postings`` row per (record, distinct term), with its impact at the
        namespace's reference average length (:func:`~.postgres_bm25.impact`; the first
        write holding a term sets it, after the statistics were updated). Caller's transaction;
        the rows go with their record (``ON DELETE CASCADE`` on ``seq``)."""
        if not any(lexical[0] for _, lexical in rows):
            return
        cur = await conn.execute(  # total_len > 0 here: these records hold terms
            "UPDATE mnemon_namespaces SET ref_avgdl = COALESCE(ref_avgdl, "
            "total_len::float8 / docs) WHERE nsid = %s RETURNING ref_avgdl",
            (nsid,),
        )
        got = await cur.fetchone()
        ref = float(got[0])
        seqs: list[int] = []
        terms: list[str] = []
        impacts: list[float] = []
        tfs: list[float] = []
        lengths: list[int] = []
        for seq, (record_terms, record_tfs, length) in rows:
            seqs += [seq] * len(record_terms)
            terms += record_terms
            impacts += [impact(tf, length, ref) for tf in record_tfs]
            tfs += record_tfs
            lengths += [length] * len(record_terms)
        await conn.execute(
            "INSERT INTO mnemon_postings(seq, term, impact, tf, len) SELECT * FROM "
            "unnest(%s::bigint[], %s::text[], %s::real[], %s::real[], %s::int[])",
            (seqs, terms, impacts, tfs, lengths),
        )

    @staticmethod
    async def _adjust_stats(
        conn: Any,
        nsid: int,
        df: dict[str, int],
        docs: int,
        total_len: int,
        bounds: dict[str, tuple[float, int]] | None = None,
    ) -> None:
        """Add (or, with negative counts, remove) documents to the namespace's BM25 stats.

        ``bounds`` (term -> (max tf, min length) of the added records) raise the terms'
        ``max_tf`` / lower their ``min_len``; removals leave both, which stay upper bounds
        of a term's contribution (:func:`~.postgres_bm25.term_bound`).
        """
        terms = sorted(df)  # one lock order for every writer
        bounds = bounds or {}
        high = [bounds[t][0] if t in bounds else 0.0 for t in terms]
        low = [bounds[t][1] if t in bounds else _NO_LENGTH for t in terms]
        await conn.execute(
            "INSERT INTO mnemon_terms(term, nsid, df, max_tf, min_len) "
            "SELECT t, %s, d, h, l FROM unnest(%s::text[], %s::int[], %s::real[], %s::int[]) "
            "AS x(t, d, h, l) ORDER BY t "
            "ON CONFLICT (term) DO UPDATE SET df = mnemon_terms.df + excluded.df, "
            "max_tf = GREATEST(mnemon_terms.max_tf, excluded.max_tf), "
            "min_len = LEAST(mnemon_terms.min_len, excluded.min_len)",
            (nsid, terms, [df[t] for t in terms], high, low),
        )
        if any(df[t] < 0 for t in terms):
            await conn.execute(
                "DELETE FROM mnemon_terms WHERE term = ANY(%s) AND df <= 0", (terms,)
            )
        await conn.execute(
            "UPDATE mnemon_namespaces SET docs = docs + %s, total_len = total_len + %s "
            "WHERE nsid = %s",
            (docs, total_len, nsid),
        )

    async def _audit(
        self,
        conn: Any,
        *,
        actor: str,
        action: str,
        ns: Namespace,
        count: int,
        record_ids: Sequence[str] = (),
        message_ids: Sequence[str] = (),
        reason: str = "",
    ) -> None:
        await conn.execute(
            "INSERT INTO mnemon_audit(actor, action, namespace, count, record_ids, "
            "message_ids, reason) VALUES (%s, %s, %s, %s, %s, %s, %s)",
            (
                str(actor),
                action,
                namespace_key(ns),
                int(count),
                json.dumps(list(record_ids)),
                json.dumps(list(message_ids)),
                str(reason),
            ),
        )

    async def _delete_ids(self, conn: Any, nsid: int, ids: Sequence[str]) -> list[str]:
        """Delete records by id (caller's transaction, namespace locked): their rows, the
        rows that cascade, their BM25 statistics and their postings in the packs."""
        unique = list(dict.fromkeys(ids))
        cur = await conn.execute(  # before the cascade takes the postings: what packs hold
            "SELECT p.term, array_agg(p.seq), array_agg(p.impact) FROM mnemon_records r "
            "JOIN mnemon_postings p ON p.seq = r.seq JOIN mnemon_terms t ON t.term = p.term "
            "WHERE r.nsid = %s AND r.id = ANY(%s) AND t.packed > 0 AND p.seq <= t.upto "
            "GROUP BY p.term",
            (nsid, unique),
        )
        packed = await cur.fetchall()
        cur = await conn.execute(
            "DELETE FROM mnemon_records WHERE nsid = %s AND id = ANY(%s) "
            "RETURNING id, seq, terms, length",
            (nsid, unique),
        )
        rows = sorted(await cur.fetchall(), key=lambda r: r[1])
        df: dict[str, int] = {}
        for row in rows:
            for term in row[2]:
                df[term] = df.get(term, 0) - 1
        for term, seqs, impacts in packed:
            await self._unpack(conn, term, np.array(seqs, np.int64), np.array(impacts))
        if rows:
            await self._adjust_stats(conn, nsid, df, -len(rows), -sum(r[3] for r in rows))
            await conn.execute(  # a term no record holds any more keeps no pack either
                "DELETE FROM mnemon_packs p WHERE p.term = ANY(%s) AND NOT EXISTS "
                "(SELECT 1 FROM mnemon_terms t WHERE t.term = p.term)",
                (sorted(df),),
            )
        return [r[0] for r in rows]

    # -- packs (postgres_bm25, "Impact postings") ----------------------------------------------

    @classmethod
    async def _unpack(cls, conn: Any, term: str, seqs: np.ndarray, impacts: np.ndarray) -> None:
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
        removed = await cls._drop_from_parts(conn, term, likely, seqs)
        if removed < len(seqs):
            tried = set(likely)
            rest = [part for part, _ in lows if part not in tried]
            removed += await cls._drop_from_parts(conn, term, rest, seqs)
        if removed:
            await conn.execute(
                "UPDATE mnemon_terms SET packed = packed - %s WHERE term = %s", (removed, term)
            )

    @staticmethod
    async def _drop_from_parts(conn: Any, term: str, parts: list[int], seqs: np.ndarray) -> int:
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

    async def _refresh_packs(self, ns: Namespace, nsid: int, terms: Sequence[str] | None) -> None:
        """(Re)pack the terms of ``terms`` (``None``: every term of the namespace) that
        :func:`~.postgres_bm25.needs_pack` says are due (:meth:`_refresh_on`).

        Packs are derived data: a pack that is not refreshed only leaves more postings to
        read from the index, never a wrong ranking. So a failure here is logged and the
        next write of the namespace tries again; the write that triggered it stands.
        """
        if terms is not None and not terms:
            return
        try:
            async with self._pool.connection() as conn:
                await self._refresh_on(conn, ns, nsid, terms)
        except self._psycopg.Error as exc:
            _LOG.warning("packing BM25 postings of namespace %s failed: %s", nsid, exc)

    async def _refresh_on(
        self, conn: Any, ns: Namespace, nsid: int, terms: Sequence[str] | None
    ) -> None:
        """:meth:`_refresh_packs` on an autocommit connection: each due term in a
        transaction of its own under the namespace's write lock, so no writer of the
        namespace holds an uncommitted ``seq`` below the pack's ``upto`` and no delete
        runs meanwhile."""
        where = "term = ANY(%(terms)s)" if terms is not None else "nsid = %(nsid)s"
        # needs_pack as a filter (integer division on both sides), so only the due terms'
        # rows come back; each is checked again by needs_pack itself once the lock is held
        cur = await conn.execute(
            f"SELECT term FROM mnemon_terms WHERE {where} AND df > %(min)s AND df - packed > "
            f"GREATEST(%(min)s, packed / {PACK_GROWTH}) ORDER BY term",
            {"terms": list(terms or ()), "nsid": nsid, "min": self.bm25_pack_min},
        )
        for (term,) in await cur.fetchall():
            async with conn.transaction():
                await self._lock_namespace(conn, ns)
                got = await conn.execute(
                    "SELECT df, packed FROM mnemon_terms WHERE term = %s", (term,)
                )
                row = await got.fetchone()  # another writer may have packed it meanwhile
                if row is not None and needs_pack(int(row[0]), int(row[1]), self.bm25_pack_min):
                    await self._pack(conn, nsid, term)

    async def _pack(self, conn: Any, nsid: int, term: str) -> None:
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
        parts = pack_parts(seqs, decode_array(row[1], ">f4"), self.bm25_pack_part)
        await conn.cursor().executemany(
            "INSERT INTO mnemon_packs(term, part, nsid, n, low, last, seqs, imps) "
            "VALUES (%s, %s, %s, %s, %s, %s, %s, %s)",
            [(term, i, nsid, *p.row()) for i, p in enumerate(parts)],
        )
        await conn.execute(
            "UPDATE mnemon_terms SET packed = %s, upto = %s WHERE term = %s",
            (len(seqs), int(row[2]), term),
        )

    def _delete_records(self, ns: Namespace, ids: list[str], actor: str, reason: str) -> list[str]:
        return self._loop.run(self._adelete_records(ns, ids, actor, reason))

    async def _adelete_records(
        self, ns: Namespace, wanted: list[str], actor: str, reason: str
    ) -> list[str]:
        async with self._pool.connection() as conn, conn.transaction():
            await self._lock_namespace(conn, ns)
            nsid = await self._nsid(conn, ns)
            if nsid is None or not wanted:
                return []
            deleted = await self._delete_ids(conn, nsid, wanted)
            if deleted:
                await self._audit(
                    conn,
                    actor=actor,
                    action="delete_records",
                    ns=ns,
                    count=len(deleted),
                    record_ids=deleted,
                    reason=reason,
                )
        return deleted

    def _delete_messages(
        self, ns: Namespace, ids: list[str], actor: str, reason: str, source: str
    ) -> tuple[list[str], list[Record]]:
        return self._loop.run(self._adelete_messages(ns, ids, actor, reason, source))

    async def _holding_records(self, conn: Any, nsid: int, targets: set[str]) -> list[str]:
        """Every record holding part of ``targets``, transitively through shared messages."""
        record_ids: set[str] = set()
        seen, pending = set(targets), list(targets)
        while pending:
            cur = await conn.execute(
                "SELECT DISTINCT m2.record_id, m2.message_id FROM mnemon_messages m1 "
                "JOIN mnemon_messages m2 ON m2.record_id = m1.record_id "
                "WHERE m1.nsid = %s AND m1.message_id = ANY(%s)",
                (nsid, pending),
            )
            pending = []
            for rid, mid in await cur.fetchall():
                record_ids.add(rid)
                if mid not in seen:
                    seen.add(mid)
                    pending.append(mid)
        return sorted(record_ids)

    async def _adelete_messages(
        self, ns: Namespace, message_ids: list[str], actor: str, reason: str, source: str
    ) -> tuple[list[str], list[Record]]:
        targets = set(message_ids)
        async with self._pool.connection() as conn, conn.transaction():
            await self._lock_namespace(conn, ns)
            nsid = await self._nsid(conn, ns)
            if nsid is None:
                return [], []
            ids = await self._holding_records(conn, nsid, targets)
            cur = await conn.execute(_RECORD_SQL + " WHERE id = ANY(%s)", (ids,))
            old = [_row_to_record(r, ns) for r in await cur.fetchall()]
            old.sort(key=lambda r: (r.session, r.position, r.seq))
            survivors = rebuild_messages(old, exclude=targets)
            deleted = await self._delete_ids(conn, nsid, ids)
            if deleted:
                await self._audit(
                    conn,
                    actor=actor,
                    action="delete_messages",
                    ns=ns,
                    count=len(deleted),
                    record_ids=deleted,
                    message_ids=sorted(targets),
                    reason=reason,
                )
            written: list[Record] = []
            if survivors:
                first = {s: await self._next_position(ns, s, conn) for s in sessions_of(survivors)}
                new = self._records_of(survivors, ns, source, first_positions=first)
                vectors = await asyncio.to_thread(self._embed, [r.text for r in new], None)
                written, terms = await self._write(conn, nsid, new, vectors)
        if survivors:
            await self._refresh_packs(ns, nsid, terms)
        return deleted, written

    def _erase_namespace(self, ns: Namespace, actor: str) -> int:
        """One transaction deletes the records (vectors and message rows cascade), the BM25
        statistics, index items and consolidation state, the namespace's earlier audit rows
        and its id, and writes one audit row (who, when, which namespace, how many); then
        the tables are ``VACUUM``\\ ed."""
        return self._loop.run(self._erase(ns, actor))

    async def _erase(self, ns: Namespace, actor: str) -> int:
        key = namespace_key(ns)
        async with self._pool.connection() as conn, conn.transaction():
            await self._lock_namespace(conn, ns)
            nsid = await self._nsid(conn, ns)
            count = 0
            if nsid is not None:
                cur = await conn.execute(
                    "SELECT count(*) FROM mnemon_records WHERE nsid = %s", (nsid,)
                )
                row = await cur.fetchone()
                count = int(row[0]) if row else 0
                for table in await self._nsid_tables(conn):
                    await conn.execute(f"DELETE FROM {table} WHERE nsid = %s", (nsid,))
            await conn.execute("DELETE FROM mnemon_audit WHERE namespace = %s", (key,))
            await conn.execute("DELETE FROM mnemon_namespaces WHERE namespace = %s", (key,))
            await self._audit(conn, actor=actor, action="erase_namespace", ns=ns, count=count)
        await self._vacuum()
        return count

    @staticmethod
    async def _nsid_tables(conn: Any) -> list[str]:
        """Every mnemon table with an ``nsid`` column, records first (so cascades run)."""
        cur = await conn.execute(
            "SELECT table_name FROM information_schema.columns WHERE column_name = 'nsid' "
            "AND table_schema = current_schema() AND table_name LIKE 'mnemon%%' "
            "AND table_name <> 'mnemon_namespaces'"
        )
        names = sorted(r[0] for r in await cur.fetchall())
        names.sort(key=lambda t: t != "mnemon_records")
        return ['"' + n.replace('"', '""') + '"' for n in names]

    async def _vacuum(self) -> None:
        """``VACUUM`` every mnemon table so dead tuples of erased rows are reclaimed now."""
        conn = await self._connect(autocommit=True)
        try:
            cur = await conn.execute(
                "SELECT table_name FROM information_schema.tables WHERE "
                "table_schema = current_schema() AND table_name LIKE 'mnemon%%' "
                "AND table_type = 'BASE TABLE'"
            )
            for (name,) in await cur.fetchall():
                await conn.execute(f'VACUUM "{name}"')
        finally:
            await conn.close()

    # -- reading ------------------------------------------------------------------------------

    async def _read(self, sql: str, params: Any = None) -> list[Any]:
        async with self._pool.connection() as conn:
            cur = await conn.execute(sql, params)
            return list(await cur.fetchall())

    async def _known(self, ns: Namespace, ids: Sequence[str]) -> set[str]:
        rows = await self._read(
            "SELECT DISTINCT m.message_id FROM mnemon_messages m JOIN mnemon_namespaces n "
            "ON n.nsid = m.nsid WHERE n.namespace = %s AND m.message_id = ANY(%s)",
            (namespace_key(ns), list(ids)),
        )
        return {r[0] for r in rows}

    async def _next_position(self, ns: Namespace, session: int, conn: Any = None) -> int:
        sql = (
            "SELECT max(r.position) FROM mnemon_records r JOIN mnemon_namespaces n "
            "ON n.nsid = r.nsid WHERE n.namespace = %s AND r.session = %s"
        )
        params = (namespace_key(ns), int(session))
        if conn is not None:
            cur = await conn.execute(sql, params)
            rows = [await cur.fetchone()]
        else:
            rows = await self._read(sql, params)
        value = rows[0][0] if rows and rows[0] else None
        return 0 if value is None else int(value) + 1

    def _known_message_ids(self, ns: Namespace, ids: list[str]) -> set[str]:
        return self._loop.run(self._known(ns, ids))

    def _holds_namespace(self, ns: Namespace) -> bool:
        return self._loop.run(self._holds(ns))

    async def _holds(self, ns: Namespace) -> bool:
        """A row of ``ns`` in any table but the audit (what an erase removes)."""
        async with self._pool.connection() as conn:
            nsid = await self._nsid(conn, ns)
            if nsid is None:
                return False
            for table in await self._nsid_tables(conn):
                cur = await conn.execute(f"SELECT 1 FROM {table} WHERE nsid = %s LIMIT 1", (nsid,))
                if await cur.fetchone() is not None:
                    return True
        return False

    async def _get(self, ns: Namespace, ids: list[str]) -> list[Record]:
        rows = await self._read(
            _RECORD_SQL + " r WHERE r.nsid = (SELECT nsid FROM mnemon_namespaces "
            "WHERE namespace = %s) AND r.id = ANY(%s)",
            (namespace_key(ns), ids),
        )
        found = {r[0]: _row_to_record(r, ns) for r in rows}
        return [found[i] for i in ids if i in found]

    def _get_records(self, ns: Namespace, ids: list[str]) -> list[Record]:
        return self._loop.run(self._get(ns, ids))

    def _match_record_ids(self, ns: Namespace, prefix: str, limit: int) -> list[str]:
        # ``starts_with`` is literal (no ``LIKE`` wildcard) and independent of the
        # database's collation, which a range over the primary key is not.
        rows = self._loop.run(
            self._read(
                "SELECT r.id FROM mnemon_records r WHERE r.nsid = (SELECT nsid FROM "
                "mnemon_namespaces WHERE namespace = %s) AND starts_with(r.id, %s) "
                "ORDER BY r.id LIMIT %s",
                (namespace_key(ns), prefix, limit),
            )
        )
        return [r[0] for r in rows]

    def _stored_vectors(self, ns: Namespace, ids: list[str]) -> dict[str, np.ndarray]:
        rows = self._loop.run(
            self._read(
                "SELECT v.record_id, v.embedding FROM mnemon_vectors v WHERE v.nsid = "
                "(SELECT nsid FROM mnemon_namespaces WHERE namespace = %s) "
                "AND v.record_id = ANY(%s)",
                (namespace_key(ns), ids),
            )
        )
        # pgvector hands back its Vector type (to_numpy) or, unregistered, a plain sequence
        return {
            r[0]: np.asarray(r[1].to_numpy() if hasattr(r[1], "to_numpy") else r[1], np.float32)
            for r in rows
        }

    def _term_statistics(self, ns: Namespace, terms: list[str]) -> tuple[int, dict[str, int]]:
        """``mnemon_namespaces.docs`` and ``mnemon_terms.df``: the counts search uses."""
        return self._loop.run(self._aterm_statistics(ns, terms))

    async def _aterm_statistics(
        self, ns: Namespace, terms: Sequence[str]
    ) -> tuple[int, dict[str, int]]:
        wanted = list(dict.fromkeys(terms))
        rows = await self._read(
            "SELECT nsid, docs FROM mnemon_namespaces WHERE namespace = %s", (namespace_key(ns),)
        )
        if not rows:
            return 0, dict.fromkeys(wanted, 0)
        nsid, docs = int(rows[0][0]), int(rows[0][1])
        keys = namespaced(nsid, wanted)
        found = await self._read("SELECT term, df FROM mnemon_terms WHERE term = ANY(%s)", (keys,))
        df = {str(r[0]): int(r[1]) for r in found}
        return docs, {t: max(0, df.get(k, 0)) for t, k in zip(wanted, keys, strict=True)}

    async def _page(self, ns: Namespace, after: int, size: int) -> list[Record]:
        rows = await self._read(
            _RECORD_SQL + " r WHERE r.nsid = (SELECT nsid FROM mnemon_namespaces "
            "WHERE namespace = %s) AND r.seq > %s ORDER BY r.seq LIMIT %s",
            (namespace_key(ns), int(after), int(size)),
        )
        return [_row_to_record(r, ns) for r in rows]

    def _records(self, ns: Namespace, after_seq: int, limit: int | None) -> Iterator[Record]:
        last, left = after_seq, limit
        while left is None or left > 0:
            size = 1000 if left is None else min(1000, left)
            page = self._loop.run(self._page(ns, last, size))
            yield from page
            if len(page) < size:
                return
            last = page[-1].seq
            if left is not None:
                left -= len(page)

    async def _scalar(self, sql: str, params: Any = None) -> Any:
        rows = await self._read(sql, params)
        return rows[0][0] if rows else None

    def _max_seq(self, ns: Namespace) -> int:
        value = self._loop.run(
            self._scalar(
                "SELECT max(r.seq) FROM mnemon_records r JOIN mnemon_namespaces n "
                "ON n.nsid = r.nsid WHERE n.namespace = %s",
                (namespace_key(ns),),
            )
        )
        return int(value or 0)

    def _count(self, ns: Namespace) -> int:
        value = self._loop.run(
            self._scalar(
                "SELECT docs FROM mnemon_namespaces WHERE namespace = %s",
                (namespace_key(ns),),
            )
        )
        return int(value or 0)

    def namespaces(self) -> list[Namespace]:
        """Every namespace that holds at least one record, sorted."""
        rows = self._loop.run(self._read("SELECT namespace FROM mnemon_namespaces WHERE docs > 0"))
        return sorted(ns_from_key(r[0]) for r in rows)

    def _audit_log(self, ns: Namespace | None) -> list[AuditEntry]:
        sql = (
            "SELECT id, at, actor, action, namespace, count, record_ids, message_ids, reason "
            "FROM mnemon_audit"
        )
        params: tuple[Any, ...] = ()
        if ns is not None:
            sql += " WHERE namespace = %s"
            params = (namespace_key(ns),)
        rows = self._loop.run(self._read(sql + " ORDER BY id", params))
        return [
            AuditEntry(
                id=r[0],
                at=r[1].astimezone(UTC),
                actor=r[2],
                action=r[3],
                namespace=ns_from_key(r[4]),
                count=r[5],
                record_ids=tuple(r[6]),
                message_ids=tuple(r[7]),
                reason=r[8],
            )
            for r in rows
        ]

    # -- searching ----------------------------------------------------------------------------

    def _search(
        self, query: str, ns: Namespace, k: int, offset: int, filters: SearchFilters | None
    ) -> list[SearchHit]:
        return self._loop.run(self._hybrid(query, ns, k, offset, filters))

    async def _asearch(
        self, query: str, ns: Namespace, k: int, offset: int, filters: SearchFilters | None
    ) -> list[SearchHit]:
        return await self._loop.submit(self._hybrid(query, ns, k, offset, filters))

    async def _hybrid(
        self, query: str, ns: Namespace, k: int, offset: int, filters: SearchFilters | None
    ) -> list[SearchHit]:
        depth = max(self.candidate_depth, offset + k)
        async with self._pool.connection() as conn:
            cur = await conn.execute(
                "SELECT nsid, docs FROM mnemon_namespaces WHERE namespace = %s",
                (namespace_key(ns),),
            )
            row = await cur.fetchone()
            if row is None:
                return []
            nsid, docs = int(row[0]), int(row[1])

            async def dense_on(dconn: Any) -> list[tuple[int, str, float]]:
                qv = await asyncio.to_thread(self.query_vector, query)
                return await self._dense(dconn, nsid, docs, qv, depth, filters)

            async with self._spare_connection() as spare:
                if spare is None:  # the pool is busy: one ranking after the other
                    lexical = await self._bm25(conn, nsid, query, depth, filters)
                    dense = await dense_on(conn)
                else:  # both at once, in two backends (the query embedded meanwhile)
                    lexical, dense = await asyncio.gather(
                        self._bm25(conn, nsid, query, depth, filters), dense_on(spare)
                    )
        fused = rrf_fuse([[s for s, _, _ in lexical], [s for s, _, _ in dense]], k=RRF_K)
        page = fused[offset : offset + k]
        ids_by_seq = {s: rid for s, rid, _ in lexical} | {s: rid for s, rid, _ in dense}
        records = {r.id: r for r in await self._get(ns, [ids_by_seq[f.key] for f in page])}
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

    def lexical_ranking(
        self,
        query: str,
        *,
        namespace: Namespace | str | Sequence[str],
        k: int = CANDIDATE_DEPTH,
        filters: SearchFilters | None = None,
    ) -> list[tuple[str, float]]:
        """The BM25 half of :meth:`search` alone: ``(record_id, score)``, best first.

        For inspection and for checking that the SQL BM25 equals the embedded one.
        """
        ns = check_search(query, namespace, k, 0, filters)
        return self._loop.run(self._lexical(ns, query, k, filters))

    async def _lexical(
        self, ns: Namespace, query: str, k: int, filters: SearchFilters | None
    ) -> list[tuple[str, float]]:
        async with self._pool.connection() as conn:
            nsid = await self._nsid(conn, ns)
            if nsid is None:
                return []
            return [
                (rid, score) for _, rid, score in await self._bm25(conn, nsid, query, k, filters)
            ]

    def dense_ranking(
        self,
        query: str,
        *,
        namespace: Namespace | str | Sequence[str],
        k: int = CANDIDATE_DEPTH,
        exact: bool | None = None,
    ) -> list[tuple[str, float]]:
        """The dense half of :meth:`search` alone: ``(record_id, cosine distance)``, nearest
        first.

        Args:
            query: Free text (embedded like a search query).
            namespace: The namespace.
            k: How many.
            exact: ``True``: exact scan; ``False``: the HNSW index (iterative scan);
                ``None``: as :meth:`search` chooses (by ``exact_below``). The benchmark
                compares the two to measure recall.
        """
        ns = check_search(query, namespace, k, 0, None)
        return self._loop.run(self._dense_only(query, ns, k, exact))

    async def _dense_only(
        self, query: str, ns: Namespace, k: int, exact: bool | None
    ) -> list[tuple[str, float]]:
        qv = await asyncio.to_thread(self.query_vector, query)
        async with self._pool.connection() as conn:
            cur = await conn.execute(
                "SELECT nsid, docs FROM mnemon_namespaces WHERE namespace = %s",
                (namespace_key(ns),),
            )
            row = await cur.fetchone()
            if row is None:
                return []
            ranked = await self._dense(conn, int(row[0]), int(row[1]), qv, k, None, exact)
            return [(rid, d) for _, rid, d in ranked]

    async def _bm25(
        self, conn: Any, nsid: int, query: str, k: int, filters: SearchFilters | None
    ) -> list[tuple[int, str, float]]:
        """``(seq, id, score)`` of the top ``k`` BM25 matches, best first (ties: older).

        With :attr:`bm25_prune`: impact postings read score at a time (:meth:`_impact`),
        unless the query's postings are fewer than :attr:`bm25_full_below` (the one full
        query is cheaper there). Statistics, postings and scores read one snapshot
        (``REPEATABLE READ``), so concurrent writers cannot make the bounds disagree with
        the scores.
        """
        terms = sorted({f"{nsid}:{t}" for t in _terms(query)})
        if not terms or k <= 0:
            return []
        params: dict[str, Any] = {"terms": terms, "cand": terms, "nsid": nsid, "k": int(k)}
        params.update({f"t{i}": t for i, t in enumerate(terms)})
        where = _filter_sql(filters, params)
        if not self.bm25_prune:
            return await self._bm25_rows(conn, bm25_sql(len(terms), where), params)
        # Decide on the autocommit connection first: when the full query is cheap (few
        # postings) it needs no transaction (BEGIN / SET / COMMIT: ~3 ms of ~7 at 10k).
        corpus = await self._term_stats(conn, nsid, terms)
        if sum(s.df for s in corpus.stats.values()) < self.bm25_full_below:
            return await self._bm25_rows(conn, bm25_sql(len(terms), where), params)
        async with conn.transaction():
            await conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            corpus = await self._term_stats(conn, nsid, terms)  # the transaction's snapshot
            return await self._impact(conn, corpus, where, params)

    async def _impact(
        self, conn: Any, corpus: CorpusStats, where: str, params: dict[str, Any]
    ) -> list[tuple[int, str, float]]:
        """Read impact postings in rounds until the exact top ``k`` is proven.

        The first round reads every term's postings that no pack holds (all of a term
        without one) and the first parts of each pack (:meth:`_read_first`); each round
        bounds every record (:func:`candidate_bounds`) and scores the best-bounded
        candidates exactly (:meth:`_complete`). Done when ``theta`` (the ``k``-th exact
        score) is strictly above the bound of every record never named and every candidate
        left unscored; else :func:`plan_depths` deepens the cuts and their parts are read
        (:meth:`_read_parts`).
        """
        k = int(params["k"])
        n_docs, avgdl = corpus.docs, corpus.avgdl
        scale = impact_scale(avgdl, corpus.ref_avgdl)
        live = {t: s for t, s in corpus.stats.items() if s.df > 0}
        weight = {t: idf(n_docs, s.df) for t, s in live.items()}
        caps = {t: term_bound(n_docs, avgdl, s) for t, s in live.items()}
        per_impact = {t: w * scale * (1 + IMPACT_SLACK) for t, w in weight.items()}
        packed = {t: max(s.packed, 1) for t, s in live.items()}  # plan_depths' "df"
        reads = await self._read_first(conn, live)
        exact: dict[int, tuple[str, float] | None] = {}  # seq -> (id, score); None: no match
        while True:
            cuts = {t: cut_bound(weight[t], r, scale, caps[t]) for t, r in reads.items()}
            candidates = candidate_bounds(reads, cuts, per_impact)
            theta = await self._complete(conn, candidates, per_impact, exact, where, params)
            unread = candidates[2]
            if unread == 0 or not reaches(unread, theta):
                break
            depth = plan_depths(reads, packed, per_impact, DEEPEN_MARGIN * theta)
            reads |= await self._read_parts(conn, depth, reads)
        found = [(s, hit[0], hit[1]) for s, hit in exact.items() if hit is not None]
        return sorted(found, key=lambda r: (-r[2], r[0]))[:k]

    async def _read_first(self, conn: Any, live: dict[str, TermStats]) -> dict[str, TermRead]:
        """The first round: each term's postings above its pack's ``upto`` (all of a term
        without a pack: :data:`~.postgres_bm25.DELTA_SQL`), then the first
        :attr:`bm25_first_parts` parts of each pack."""
        terms = sorted(live)
        cur = await conn.execute(
            DELTA_SQL, {"dterms": terms, "dupto": [live[t].upto for t in terms]}
        )
        reads: dict[str, TermRead] = {}
        for term, seqs, imps in await cur.fetchall():
            packed = live[term].packed > 0
            reads[term] = TermRead(
                depth=0,
                seqs=decode_array(seqs, ">i8").astype(np.int64),
                impacts=decode_array(imps, ">f4").astype(np.float32),
                full=not packed,
                low=math.inf,
            )
        first = {t: self.bm25_first_parts * self.bm25_pack_part for t in terms if not reads[t].full}
        return reads | await self._read_parts(conn, first, reads)

    async def _read_parts(
        self, conn: Any, depth: dict[str, int], reads: dict[str, TermRead]
    ) -> dict[str, TermRead]:
        """Each packed term of ``depth`` read on to (at least) that many of its pack's
        postings, by whole parts (:data:`~.postgres_bm25.PARTS_SQL`)."""
        size = max(1, self.bm25_pack_part)
        plan = {
            t: (reads[t].parts, max(reads[t].parts + 1, -(-d // size))) for t, d in depth.items()
        }
        terms = sorted(plan)
        if not terms:
            return {}
        cur = await conn.execute(
            PARTS_SQL,
            {
                "pterms": terms,
                "pfrom": [plan[t][0] for t in terms],
                "pto": [plan[t][1] for t in terms],
            },
        )
        got: dict[str, list[PackPart]] = {t: [] for t in terms}
        for term, low, last, seqs, imps in await cur.fetchall():
            got[term].append(PackPart.from_row(low, last, seqs, imps))
        out = {}
        for term, parts in got.items():
            if parts:
                out[term] = reads[term].extended(parts)
            else:  # the pack is gone (a delete took its last record): nothing more to read
                out[term] = dataclasses.replace(reads[term], full=True)
        return out

    async def _complete(
        self,
        conn: Any,
        candidates: tuple[np.ndarray, np.ndarray, float],
        per_impact: dict[str, float],
        exact: dict[int, tuple[str, float] | None],
        where: str,
        params: dict[str, Any],
    ) -> float:
        """Rule out or score candidates, best bound first, while one left may reach ``theta``.

        A chunk of the candidates whose bound reaches ``theta`` gets its tight bound from
        all its postings of the query's terms (:meth:`_record_bounds`); those still reaching
        ``theta`` are scored on their record rows (:func:`bm25_sql` matching ``seq``: the
        very expression of the full query; a record the filters exclude is kept as
        ``None``). ``theta`` only rises, so a candidate ruled out stays out. Stops early
        when the records never named may still reach ``theta`` (``unread``): the next round
        reads deeper postings anyway. Returns ``theta`` (0 while fewer than ``k`` matches
        are known).
        """
        seqs, bounds, unread = candidates
        k, chunk = int(params["k"]), max(2 * int(params["k"]), 64)
        unseen = np.ones(len(seqs), dtype=bool)
        while True:
            scores = sorted((hit[1] for hit in exact.values() if hit is not None), reverse=True)
            theta = scores[k - 1] if len(scores) >= k else 0.0
            if len(scores) >= k and reaches(unread, theta):
                return theta
            # the unseen candidates that may reach theta, best bound first (a partial sort:
            # at 1M records there are ~10^5 candidates and a few thousand get looked at)
            open_ = np.flatnonzero(unseen & reaching(bounds, theta))
            if not len(open_):
                return theta
            if len(open_) > chunk:
                open_ = open_[np.argpartition(-bounds[open_], chunk - 1)[:chunk]]
            unseen[open_] = False
            batch = np.array([s for s in seqs[open_].tolist() if s not in exact], np.int64)
            tight = await self._record_bounds(conn, batch, per_impact)
            batch = batch[reaching(tight, theta)]
            await self._score_rows(conn, batch.tolist(), exact, where, params)
            chunk *= 2

    @staticmethod
    async def _record_bounds(
        conn: Any, batch: np.ndarray, per_impact: dict[str, float]
    ) -> np.ndarray:
        """Each record's bound from all its postings of the query's terms (:data:`LOOKUP_SQL`,
        :func:`~.postgres_bm25.record_bounds`)."""
        if not len(batch):
            return np.zeros(0)
        terms = sorted(per_impact)
        cur = await conn.execute(LOOKUP_SQL, {"lseqs": batch.tolist(), "lterms": terms})
        row = await cur.fetchone()
        assert row is not None  # an aggregate without GROUP BY: always one row
        return record_bounds(
            decode_array(row[0], ">i8").astype(np.int64),
            decode_array(row[1], ">i4").astype(np.int64),
            decode_array(row[2], ">f4"),
            np.array([per_impact[t] for t in terms]),
            batch,
        )

    async def _score_rows(
        self,
        conn: Any,
        seqs: list[int],
        exact: dict[int, tuple[str, float] | None],
        where: str,
        params: dict[str, Any],
    ) -> None:
        """Exact scores of these records from their rows, into ``exact`` (``None``: the
        filters exclude it)."""
        if not seqs:
            return
        rows = await self._bm25_rows(
            conn,
            bm25_sql(len(params["terms"]), where, "r.seq = ANY(%(seqs)s)"),
            params | {"seqs": seqs, "k": len(seqs)},
        )
        exact.update(dict.fromkeys(seqs))
        exact.update({s: (rid, score) for s, rid, score in rows})

    @staticmethod
    async def _bm25_rows(
        conn: Any, sql: str, params: dict[str, Any]
    ) -> list[tuple[int, str, float]]:
        cur = await conn.execute(sql, params)
        return [(int(s), rid, float(score)) for s, rid, score in await cur.fetchall()]

    @staticmethod
    async def _term_stats(conn: Any, nsid: int, terms: list[str]) -> CorpusStats:
        """The namespace's records, average and reference lengths, per-term statistics."""
        cur = await conn.execute(
            "SELECT n.docs, n.total_len, n.ref_avgdl, t.term, t.df, t.max_tf, t.min_len, "
            "t.packed, t.upto FROM mnemon_namespaces n "
            "LEFT JOIN mnemon_terms t ON t.term = ANY(%s) WHERE n.nsid = %s",
            (terms, nsid),
        )
        rows = await cur.fetchall()
        docs, total = (int(rows[0][0]), int(rows[0][1])) if rows else (0, 0)
        avgdl = total / docs if total > 0 and docs > 0 else 1.0
        ref = float(rows[0][2]) if rows and rows[0][2] is not None else avgdl
        stats = {
            str(t): TermStats(int(df), float(mt), int(ml), int(pk), int(up))
            for _, _, _, t, df, mt, ml, pk, up in rows
            if t is not None
        }
        return CorpusStats(docs, avgdl, ref, stats)

    async def _dense(
        self,
        conn: Any,
        nsid: int,
        docs: int,
        qv: np.ndarray,
        k: int,
        filters: SearchFilters | None,
        exact: bool | None = None,
    ) -> list[tuple[int, str, float]]:
        """``(seq, id, cosine distance)`` of the ``k`` nearest vectors, exact or HNSW by size."""
        params: dict[str, Any] = {"nsid": nsid, "q": qv.reshape(-1).astype(np.float32), "k": int(k)}
        where = _filter_sql(filters, params)
        if exact if exact is not None else docs < self.exact_below:
            if self.half_scan:
                params["n"] = max(HALF_RERANK, 4 * int(k))
            cur = await conn.execute(_exact_dense_sql(where, self.half_scan), params)
            return [(int(s), rid, float(d)) for s, rid, d in await cur.fetchall()]
        async with conn.transaction():
            ef = self.ef_search if self.ef_search is not None else ef_search_for(docs)
            ef = min(max(ef, int(k)), EF_SEARCH_MAX)
            await conn.execute(f"SET LOCAL hnsw.ef_search = {ef}")
            await conn.execute("SET LOCAL hnsw.iterative_scan = relaxed_order")
            sql = (
                "WITH c AS MATERIALIZED (SELECT r.seq, r.id, v.embedding <=> %(q)s AS d "
                "FROM mnemon_vectors v JOIN mnemon_records r ON r.id = v.record_id "
                f"WHERE v.nsid = %(nsid)s {where} ORDER BY v.embedding <=> %(q)s "
                "LIMIT %(k)s) SELECT seq, id, d FROM c ORDER BY d, seq"
            )
            cur = await conn.execute(sql, params)
            return [(int(s), rid, float(d)) for s, rid, d in await cur.fetchall()]

    @asynccontextmanager
    async def _spare_connection(self) -> AsyncIterator[Any]:
        """A second pooled connection if one is free now, else ``None``; never waits longer
        than :data:`SPARE_WAIT_S` (the pool may grow meanwhile).

        The hybrid search runs its two rankings at once only on a spare connection, so a
        busy pool never makes a search queue for a second one. Measured: one search at a
        time, A/B interleaved in one process, p50 24.0 → 16.7 ms at 10k records and
        88.8 → 56.1 ms at 1M; `bench load`, two processes × 8 threads on one server
        (2 cores, 10k records, two rounds each), 0.97–1.27 Views/s per process one ranking
        after the other against 1.29–1.32 with the spare, p95 7.2–12.2 s against 6.8–7.6.
        A search holds its first connection while it asks, so waiting here could deadlock
        a full pool; it does not wait.
        """
        try:
            conn = await self._pool.getconn(timeout=SPARE_WAIT_S)
        except self._pool_timeout:
            yield None
            return
        try:
            yield conn
        finally:
            await self._pool.putconn(conn)

    # -- stats --------------------------------------------------------------------------------

    def _stats(self, ns: Namespace | None) -> dict[str, Any]:
        return self._loop.run(self._astats(ns))

    async def _astats(self, namespace: Namespace | None) -> dict[str, Any]:
        sql = (
            "SELECT n.namespace, n.docs, (SELECT max(seq) FROM mnemon_records r "
            "WHERE r.nsid = n.nsid), (SELECT count(*) FROM mnemon_vectors v "
            "WHERE v.nsid = n.nsid), (SELECT max(id) FROM mnemon_audit a "
            "WHERE a.namespace = n.namespace) FROM mnemon_namespaces n"
        )
        params: tuple[Any, ...] = ()
        if namespace is not None:
            sql += " WHERE n.namespace = %s"
            params = (namespace_key(namespace),)
        else:
            sql += " WHERE n.docs > 0"
        rows = await self._read(sql + " ORDER BY n.namespace", params)
        meta = dict(await self._read("SELECT key, value FROM mnemon_meta"))
        out = [
            {
                "namespace": list(ns_from_key(key)),
                "records": int(docs),
                "max_seq": int(top or 0),
                "generation": int(gen or 0),
                "indexed": int(docs),
                "vectors": int(vecs),
                "vector_index": "exact" if int(docs) < self.exact_below else "hnsw",
            }
            for key, docs, top, vecs, gen in rows
        ]
        if namespace is not None and not out:
            ns = normalize_namespace(namespace)
            out = [
                {
                    "namespace": list(ns),
                    "records": 0,
                    "max_seq": 0,
                    "generation": 0,
                    "indexed": 0,
                    "vectors": 0,
                    "vector_index": "exact",
                }
            ]
        return {
            "path": self.path,
            "embedding_model": meta.get("embedding_model", self.model_name),
            "dimension": int(meta.get("embedding_dim", self.dimension)),
            "schema_version": int(meta.get("schema_version", 0)),
            "namespaces": out,
            "tables": list(TABLES),
        }
