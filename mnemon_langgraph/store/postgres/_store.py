"""``PostgresStore``: the facade of the PostgreSQL backend (see the package docstring).

It holds the parts (engine, reads, writes, packs, searches) and implements the hooks of
:class:`~mnemon_langgraph.store.base.MnemonStore`, each one coroutine of a part run on the
engine's loop: sync hooks wait for it, async hooks ``await`` it.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import AsyncIterator, Callable, Coroutine, Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager
from datetime import datetime, timedelta
from typing import Any, TypeVar

import numpy as np
from langchain_core.embeddings import Embeddings

from mnemon_langgraph.errors import ConfigurationError, warn_deprecated
from mnemon_langgraph.records._chunking import DEFAULT_MAX_CHARS, check_record_chars
from mnemon_langgraph.records.schema import AuditEntry, namespace_key, ns_from_key
from mnemon_langgraph.search._fusion import CANDIDATE_DEPTH
from mnemon_langgraph.search.embeddings import default_embeddings, embedding_identity
from mnemon_langgraph.store._internal.contract import RECORD_PAGE
from mnemon_langgraph.store._internal.retention import RetentionReceipt
from mnemon_langgraph.store.base import MnemonStore, check_search
from mnemon_langgraph.store.postgres._bm25 import BM25Query
from mnemon_langgraph.store.postgres._dense import DenseSearch
from mnemon_langgraph.store.postgres._engine import PostgresEngine
from mnemon_langgraph.store.postgres._items import PostgresItemStore
from mnemon_langgraph.store.postgres._kv_items import PostgresKVItems
from mnemon_langgraph.store.postgres._packs import Packs
from mnemon_langgraph.store.postgres._reads import Reads
from mnemon_langgraph.store.postgres._retention import Retention
from mnemon_langgraph.store.postgres._schema import setup_schema, stored_version
from mnemon_langgraph.store.postgres._search import HybridSearch
from mnemon_langgraph.store.postgres._settings import PostgresSettings
from mnemon_langgraph.store.postgres._stats import store_stats
from mnemon_langgraph.store.postgres._writes import Writes
from mnemon_langgraph.types import Message, Namespace, Record, SearchFilters, SearchHit

__all__ = ["PostgresStore"]

T = TypeVar("T")


class _NoEmbeddings(Embeddings):
    """The embedder of a maintenance-only store: declares no model and refuses to embed."""

    model_name = "none (maintenance)"
    dimension = 0

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        raise ConfigurationError("this store was opened for maintenance, without an embedder")

    def embed_query(self, text: str) -> list[float]:
        raise ConfigurationError("this store was opened for maintenance, without an embedder")


class PostgresStore(MnemonStore):
    """The store on PostgreSQL (see the package docstring).

    Args:
        url: A ``postgresql://`` connection string.
        embeddings: Any LangChain ``Embeddings``; default :func:`default_embeddings`.
        candidate_depth: Records each retriever feeds into fusion.
        exact_below: Shorthand for ``settings.exact_below`` (namespaces with fewer records
            use exact dense search).
        ef_search: Shorthand for ``settings.ef_search`` (``hnsw.ef_search`` of HNSW
            searches; ``None`` chooses it by the namespace's size).
        pool_size: Most connections this process opens.
        setup: Create or migrate the schema on open (``False``: call :meth:`setup`).
        record_chars: Most characters of a record this store writes (default 600, the
            paper's; :data:`~mnemon_langgraph.records._chunking.DEFAULT_MAX_CHARS`). Records
            already stored keep their size.
        settings: How it searches and packs (:class:`PostgresSettings`; the defaults are
            production's).

    Raises:
        MissingDependencyError: psycopg / psycopg_pool / pgvector are not installed.
        ConfigurationError: The server cannot be reached, or a setting is out of range.
        EmbeddingMismatchError: The database holds vectors of another model or dimension.
        SchemaVersionError: The database was set up by a newer version of this package.
    """

    def __init__(
        self,
        url: str,
        embeddings: Embeddings | None = None,
        *,
        candidate_depth: int = CANDIDATE_DEPTH,
        exact_below: int | None = None,
        ef_search: int | None = None,
        pool_size: int = 8,
        setup: bool = True,
        record_chars: int = DEFAULT_MAX_CHARS,
        settings: PostgresSettings | None = None,
    ) -> None:
        self.record_chars = check_record_chars(record_chars)
        settings = settings if settings is not None else PostgresSettings()
        if exact_below is not None:
            settings = dataclasses.replace(settings, exact_below=exact_below)
        if ef_search is not None:
            settings = dataclasses.replace(settings, ef_search=ef_search)
        self.engine = PostgresEngine(url, pool_size=pool_size)
        self._owns_engine = True
        self.url = url
        self.path = self.engine.path
        self.embeddings = embeddings if embeddings is not None else default_embeddings()
        self.model_name, self.dimension = embedding_identity(self.embeddings)
        self.candidate_depth = candidate_depth
        self._build(settings)
        try:
            if setup:
                self.setup()
            self.engine.run(self.engine.open_pool())
        except BaseException:
            self.engine.stop()
            raise

    def _build(self, settings: PostgresSettings) -> None:
        """The parts of the store for ``settings`` (over the one engine)."""
        self.settings = settings
        self.packs = Packs(self.engine, settings)
        self.reads = Reads(self.engine)
        self.writes = Writes(
            self.engine, self.packs, self.reads, self._records_of, self._embed, settings.exact_below
        )
        self.retention = Retention(self.writes)
        self.bm25 = BM25Query(settings)
        # copies load off the search path, as tasks the engine cancels when it closes
        self.dense = DenseSearch(settings, self.engine.connection, self.engine.spawn)
        self.searches = HybridSearch(
            self.engine, self.reads, self.bm25, self.dense, self.query_vector, self.candidate_depth
        )

    def with_settings(self, **changes: Any) -> PostgresStore:
        """A store over the same pool and loop with some :class:`PostgresSettings` changed.

        For benchmarks and tests comparing settings on the same data: this store is not
        changed, and closing the sibling leaves the pool to this store.
        """
        sibling = object.__new__(PostgresStore)
        sibling.__dict__.update(self.__dict__)
        sibling._owns_engine = False
        sibling._build(dataclasses.replace(self.settings, **changes))
        return sibling

    # -- lifecycle ----------------------------------------------------------------------

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
        return self.engine.run(self._setup())

    async def asetup(self) -> int:
        """Async :meth:`setup`."""
        return await self.engine.submit(self._setup())

    async def _setup(self) -> int:
        conn = await self.engine.connect()
        try:
            before = await stored_version(conn)
            await conn.rollback()  # the read above opened a transaction
            version = await setup_schema(conn, self.model_name, self.dimension)
            if 0 < before < 8:  # packs (before 5) and frames (before 8) from the postings
                await conn.set_autocommit(True)
                cur = await conn.execute(
                    "SELECT nsid, namespace FROM mnemon_namespaces ORDER BY nsid"
                )
                for nsid, key in await cur.fetchall():
                    await self.packs.refresh_on(conn, ns_from_key(key), int(nsid), None)
                if before < 5:  # postings filled or re-indexed: mark pages visible
                    await conn.execute("VACUUM (ANALYZE) mnemon_postings")
            return version
        finally:
            await conn.close()

    def close(self) -> None:
        """Close the pool and stop the store's loop thread (a sibling leaves them open)."""
        if not self.engine.closed:
            self.engine.run(self.dense.cache.close())  # vector copies being loaded
        if self._owns_engine:
            self.engine.close()

    def flush(self) -> None:
        """Nothing to flush: every write is committed when its method returns."""

    # -- the item store, which keeps its own tables in this database ------------------------

    def item_store(self, embeddings: Embeddings | None = None) -> PostgresItemStore:
        """The consolidated index in this database (``embeddings``: default the store's)."""
        return PostgresItemStore(self, embeddings)

    def kv(self) -> PostgresKVItems:
        """The key-value items in this database, on the store's pool and loop."""
        return PostgresKVItems(self.engine)

    def transaction(self) -> Any:
        """One database transaction the writes of this thread join (see
        :meth:`MnemonStore.transaction <mnemon_langgraph.store.MnemonStore.transaction>`;
        :meth:`PostgresEngine.transaction <.engine.PostgresEngine.transaction>`)."""
        return self.engine.transaction()

    # -- what the item store uses of this store (:class:`._items.ItemHost`), private ---------

    def _run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run a coroutine of this store's async core and wait for it (sync callers)."""
        return self.engine.run(coro)

    def _connection(self) -> Any:
        """``async with store._connection() as conn``: a pooled async connection
        (autocommit; open ``conn.transaction()`` to write). Only inside coroutines given to
        :meth:`_run`."""
        return self.engine.connection()

    async def _fetch(self, sql: str, params: Any = None) -> list[Any]:
        """All rows of one read query."""
        return await self.engine.read(sql, params)

    @staticmethod
    def _key(namespace: str | Sequence[str]) -> str:
        """The stored form of a namespace (``mnemon_namespaces.namespace``)."""
        return namespace_key(namespace)

    async def _namespace_id(self, conn: Any, ns: Namespace, *, create: bool = False) -> Any:
        """The ``nsid`` of ``ns`` (``None`` if unknown and not ``create``)."""
        return await self.engine.nsid(conn, ns, create=create)

    # the public names of these internals, deprecated for one release (docs/migration.md)

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Deprecated: internal (``_run``); warns."""
        warn_deprecated("PostgresStore.run", "PostgresStore.engine.run")
        return self._run(coro)

    def connection(self) -> Any:
        """Deprecated: internal (``_connection``); warns."""
        warn_deprecated("PostgresStore.connection", "PostgresStore.engine.connection")
        return self._connection()

    async def fetch(self, sql: str, params: Any = None) -> list[Any]:
        """Deprecated: internal (``_fetch``); warns."""
        warn_deprecated("PostgresStore.fetch", "PostgresStore.engine.read")
        return await self._fetch(sql, params)

    @staticmethod
    def key(namespace: str | Sequence[str]) -> str:
        """Deprecated: ``records.schema.namespace_key``; warns."""
        warn_deprecated("PostgresStore.key", "mnemon_langgraph.records.schema.namespace_key")
        return namespace_key(namespace)

    async def namespace_id(self, conn: Any, ns: Namespace, *, create: bool = False) -> Any:
        """Deprecated: internal (``_namespace_id``); warns."""
        warn_deprecated("PostgresStore.namespace_id", "PostgresStore.engine.nsid")
        return await self._namespace_id(conn, ns, create=create)

    # -- writes (hooks of MnemonStore: arguments already checked) ----------------------------

    def _write_messages(
        self,
        ns: Namespace,
        messages: list[Message],
        source: str,
        pack: bool,
        progress: Callable[[int, int], None] | None,
    ) -> list[Record]:
        return self.engine.run(self.writes.ingest(ns, messages, source, pack, progress))

    async def _awrite_messages(
        self,
        ns: Namespace,
        messages: list[Message],
        source: str,
        pack: bool,
        progress: Callable[[int, int], None] | None,
    ) -> list[Record]:
        return await self.engine.submit(self.writes.ingest(ns, messages, source, pack, progress))

    def _delete_records(
        self, ns: Namespace, ids: tuple[str, ...], actor: str, reason: str
    ) -> list[str]:
        return self.engine.run(self.writes.delete_records(ns, ids, actor, reason))

    def _delete_messages(
        self, ns: Namespace, ids: tuple[str, ...], actor: str, reason: str, source: str
    ) -> tuple[list[str], list[Record]]:
        return self.engine.run(self.writes.delete_messages(ns, ids, actor, reason, source))

    def _erase_namespace(self, ns: Namespace, actor: str) -> int:
        return self.engine.run(self.writes.erase(ns, actor))

    def _apply_retention(
        self, ns: Namespace, age: timedelta, keep: int | None, dry: bool, actor: str, now: datetime
    ) -> RetentionReceipt:
        return self.engine.run(self.retention.apply(ns, (age, keep), now, dry, actor))

    async def _aapply_retention(
        self, ns: Namespace, age: timedelta, keep: int | None, dry: bool, actor: str, now: datetime
    ) -> RetentionReceipt:
        return await self.engine.submit(self.retention.apply(ns, (age, keep), now, dry, actor))

    def _hold(self, ns: Namespace, actor: str, reason: str) -> bool:
        return self.engine.run(self.retention.set_hold(ns, actor, reason, True))

    async def _ahold(self, ns: Namespace, actor: str, reason: str) -> bool:
        return await self.engine.submit(self.retention.set_hold(ns, actor, reason, True))

    def _release(self, ns: Namespace, actor: str, reason: str) -> bool:
        return self.engine.run(self.retention.set_hold(ns, actor, reason, False))

    async def _arelease(self, ns: Namespace, actor: str, reason: str) -> bool:
        return await self.engine.submit(self.retention.set_hold(ns, actor, reason, False))

    def _held_namespaces(self) -> list[Namespace]:
        return self.engine.run(self.retention.held())

    async def _aheld_namespaces(self) -> list[Namespace]:
        return await self.engine.submit(self.retention.held())

    def _sweep_expired_items(self, now: datetime, actor: str) -> int:
        return self.engine.run(self.kv()._sweep(now, actor))

    # -- reads (hooks) ------------------------------------------------------------------

    def _known_message_ids(self, ns: Namespace, ids: tuple[str, ...]) -> set[str]:
        return self.engine.run(self.reads.known(ns, ids))

    def _holds_namespace(self, ns: Namespace) -> bool:
        return self.engine.run(self.reads.holds(ns))

    def _warm(self, ns: Namespace) -> bool:
        return self.engine.run(self.searches.warm(ns, self.dimension))

    def _get_records(self, ns: Namespace, ids: tuple[str, ...]) -> list[Record]:
        return self.engine.run(self.reads.get(ns, ids))

    def _match_record_ids(self, ns: Namespace, prefix: str, limit: int) -> list[str]:
        return self.engine.run(self.reads.match(ns, prefix, limit))

    def _stored_vectors(self, ns: Namespace, ids: tuple[str, ...]) -> dict[str, np.ndarray]:
        return self.engine.run(self.reads.vectors(ns, ids))

    def _term_statistics(self, ns: Namespace, terms: tuple[str, ...]) -> tuple[int, dict[str, int]]:
        return self.engine.run(self.reads.term_statistics(ns, terms))

    def _records(
        self, ns: Namespace, after_seq: int, limit: int | None, filters: SearchFilters | None = None
    ) -> Iterator[Record]:
        last, left = after_seq, limit
        while left is None or left > 0:
            size = RECORD_PAGE if left is None else min(RECORD_PAGE, left)
            page = self.engine.run(self.reads.page(ns, last, size, filters))
            yield from page
            if len(page) < size:
                return
            last = page[-1].seq
            if left is not None:
                left -= len(page)

    def _session_records(
        self, ns: Namespace, session: int, start: int, stop: int, filters: SearchFilters | None
    ) -> list[Record]:
        return self.engine.run(self.reads.session(ns, session, start, stop, filters))

    def _max_seq(self, ns: Namespace) -> int:
        return self.engine.run(self.reads.max_seq(ns))

    def _count(self, ns: Namespace) -> int:
        return self.engine.run(self.reads.count(ns))

    def _namespaces(self) -> list[Namespace]:
        return self.engine.run(self.reads.namespaces())

    def _audit_log(self, ns: Namespace | None) -> list[AuditEntry]:
        return self.engine.run(self.reads.audit_log(ns))

    def _stats(self, ns: Namespace | None) -> dict[str, Any]:
        return self.engine.run(
            store_stats(
                self.engine,
                ns,
                exact_below=self.settings.exact_below,
                model_name=self.model_name,
                dimension=self.dimension,
            )
        )

    # -- the async face's hooks, native: the same coroutines, awaited (the loop not blocked)

    async def _aget_records(self, ns: Namespace, ids: tuple[str, ...]) -> list[Record]:
        return await self.engine.submit(self.reads.get(ns, ids))

    async def _amatch_record_ids(self, ns: Namespace, prefix: str, limit: int) -> list[str]:
        return await self.engine.submit(self.reads.match(ns, prefix, limit))

    async def _astored_vectors(self, ns: Namespace, ids: tuple[str, ...]) -> dict[str, np.ndarray]:
        return await self.engine.submit(self.reads.vectors(ns, ids))

    async def _aterm_statistics(
        self, ns: Namespace, terms: tuple[str, ...]
    ) -> tuple[int, dict[str, int]]:
        return await self.engine.submit(self.reads.term_statistics(ns, terms))

    async def _apage(
        self, ns: Namespace, after: int, size: int, filters: SearchFilters | None = None
    ) -> list[Record]:
        return await self.engine.submit(self.reads.page(ns, after, size, filters))

    async def _asession_records(
        self,
        ns: Namespace,
        session: int,
        start: int,
        stop: int,
        filters: SearchFilters | None = None,
    ) -> list[Record]:
        return await self.engine.submit(self.reads.session(ns, session, start, stop, filters))

    async def _aknown_message_ids(self, ns: Namespace, ids: tuple[str, ...]) -> set[str]:
        return await self.engine.submit(self.reads.known(ns, ids))

    async def _amax_seq(self, ns: Namespace) -> int:
        return await self.engine.submit(self.reads.max_seq(ns))

    async def _acount(self, ns: Namespace) -> int:
        return await self.engine.submit(self.reads.count(ns))

    async def _anamespaces(self) -> list[Namespace]:
        return await self.engine.submit(self.reads.namespaces())

    async def _aholds_namespace(self, ns: Namespace) -> bool:
        return await self.engine.submit(self.reads.holds(ns))

    async def _awarm(self, ns: Namespace) -> bool:
        return await self.engine.submit(self.searches.warm(ns, self.dimension))

    async def _aaudit_log(self, ns: Namespace | None) -> list[AuditEntry]:
        return await self.engine.submit(self.reads.audit_log(ns))

    async def _astats(self, ns: Namespace | None) -> dict[str, Any]:
        return await self.engine.submit(
            store_stats(
                self.engine,
                ns,
                exact_below=self.settings.exact_below,
                model_name=self.model_name,
                dimension=self.dimension,
            )
        )

    async def _adelete_records(
        self, ns: Namespace, ids: tuple[str, ...], actor: str, reason: str
    ) -> list[str]:
        return await self.engine.submit(self.writes.delete_records(ns, ids, actor, reason))

    async def _adelete_messages(
        self, ns: Namespace, ids: tuple[str, ...], actor: str, reason: str, source: str
    ) -> tuple[list[str], list[Record]]:
        return await self.engine.submit(self.writes.delete_messages(ns, ids, actor, reason, source))

    async def _aerase_namespace(self, ns: Namespace, actor: str) -> int:
        return await self.engine.submit(self.writes.erase(ns, actor))

    async def _asweep_expired_items(self, now: datetime, actor: str) -> int:
        return await self.kv().sweep(now, actor)

    # -- searches (hooks, and each ranking alone) -----------------------------------------

    def _search(
        self, query: str, ns: Namespace, k: int, offset: int, filters: SearchFilters | None
    ) -> list[SearchHit]:
        return self.engine.run(self.searches.hybrid(query, ns, k, offset, filters))

    async def _asearch(
        self, query: str, ns: Namespace, k: int, offset: int, filters: SearchFilters | None
    ) -> list[SearchHit]:
        return await self.engine.submit(self.searches.hybrid(query, ns, k, offset, filters))

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
        return self.engine.run(self.searches.lexical(ns, query, k, filters))

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
                ``None``: as :meth:`search` chooses (by ``settings.exact_below``). The
                benchmark compares the two to measure recall.
        """
        ns = check_search(query, namespace, k, 0, None)
        return self.engine.run(self.searches.dense_only(query, ns, k, exact))
