"""The seam between "the store" and "a backend": :class:`StoreBackend` and :class:`MnemonStore`.

Every surface (read graph, consolidation, retriever, integrations, CLI, eval, benches) needs
the same few things from a store; :class:`StoreBackend` names them (write side and read
side), so a surface never reaches into one backend's internals (the SQLite journal, the
index folders, a connection pool). Two implementations sit beside this module:

* :class:`~mnemon_langgraph.store.embedded.EmbeddedStore`: one SQLite journal file plus
  per-namespace index folders (the default, one machine).
* :class:`~mnemon_langgraph.store.postgres.PostgresStore`: everything in PostgreSQL
  (pgvector, BM25 computed in SQL), shared by any number of processes on any number of hosts.

:class:`MnemonStore` is the one public class and the base of both: ``MnemonStore("memory.db")``
builds an ``EmbeddedStore``, ``MnemonStore("postgresql://…")`` a ``PostgresStore``
(:func:`backend_class`). Its public methods check their arguments and run the behaviour
both backends share (the ingest preamble, the result counts, embedding, file ingest, the
per-user API) once, then call one small hook of the backend, so the two cannot drift.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol, TypedDict, runtime_checkable

import numpy as np
from langchain_core.embeddings import Embeddings

from mnemon_langgraph.errors import InputError
from mnemon_langgraph.records._chunking import chunk_messages
from mnemon_langgraph.store._internal.async_face import AsyncFace
from mnemon_langgraph.store._internal.boundary import (
    AUDIT_LOG,
    COUNT,
    DELETE_MESSAGES,
    DELETE_RECORDS,
    ERASE_NAMESPACE,
    GET_RECORDS,
    HOLDS_NAMESPACE,
    INGEST,
    KNOWN_MESSAGE_IDS,
    MATCH_RECORD_IDS,
    MAX_SEQ_OF,
    NAMESPACES,
    SEARCH,
    SESSION_RECORDS,
    STATS,
    STORED_VECTORS,
    TERM_STATISTICS,
    WARM,
    acall,
    call,
    checked_records,
)
from mnemon_langgraph.store._internal.contract import (
    MAX_PAGE,
    MAX_SEQ,
    IngestBatch,
    IngestResult,
    check_bounded,
    check_ids,
    check_ingest,
    check_search,
    check_text,
    check_unicode,
    check_watermark,
    fresh_messages,
    sessions_of,
    written_result,
)
from mnemon_langgraph.store._internal.embedding_face import EmbeddingFace
from mnemon_langgraph.store._internal.hooks import BackendHooks, abstract_hook
from mnemon_langgraph.store._internal.retention_face import RetentionFace
from mnemon_langgraph.store._internal.users import PerUserAPI
from mnemon_langgraph.types import (
    NOT_GIVEN,
    Message,
    Namespace,
    Record,
    SearchFilters,
    SearchHit,
)

if TYPE_CHECKING:
    from contextlib import AbstractContextManager
    from typing import Self

    from typing_extensions import Unpack

    from mnemon_langgraph.items import ItemStore
    from mnemon_langgraph.records.schema import AuditEntry
    from mnemon_langgraph.store.embedded._journal import Journal
    from mnemon_langgraph.store.kv_items import KVItems
    from mnemon_langgraph.store.postgres._settings import PostgresSettings

__all__ = [
    "MAX_PAGE",
    "MAX_SEQ",
    "IngestBatch",
    "IngestResult",
    "MnemonStore",
    "StoreBackend",
    "StoreOptions",
    "backend_class",
    "check_bounded",
    "check_ids",
    "check_ingest",
    "check_search",
    "check_text",
    "check_unicode",
    "check_watermark",
    "fresh_messages",
    "is_postgres_url",
    "sessions_of",
    "written_result",
]


_abstract = abstract_hook


_URL_PREFIXES = ("postgresql://", "postgres://", "postgresql+psycopg://")


def is_postgres_url(target: object) -> bool:
    """Whether ``target`` names a PostgreSQL server (a ``postgresql://`` URL) and not a file."""
    return isinstance(target, str) and target.startswith(_URL_PREFIXES)


_BACKENDS: dict[str, Callable[[], type[MnemonStore]]] = {}
"""The backend classes by kind (``"embedded"``, ``"postgres"``), each as a loader, registered
by the ``mnemon_langgraph.store`` package (:func:`register_backend`), which Python imports
before this module. This module never imports a backend: they build on it."""


def register_backend(kind: str, load: Callable[[], type[MnemonStore]]) -> None:
    """Name the loader of the backend class of ``kind`` (the ``store`` package does)."""
    _BACKENDS[kind] = load


def backend_class(target: object) -> type[MnemonStore]:
    """The backend class for ``target``: a ``postgresql://`` URL or a journal path."""
    if is_postgres_url(target):
        return _BACKENDS["postgres"]()
    if not isinstance(target, str | os.PathLike):
        raise TypeError(
            f"MnemonStore needs a journal path or a postgresql:// URL, got {type(target).__name__}"
        )
    return _BACKENDS["embedded"]()


@runtime_checkable
class StoreBackend(Protocol):
    """What every surface may use of a store, whatever holds the data.

    Writes (:meth:`ingest`, deletions, :meth:`erase_namespace`) are atomic and idempotent;
    reads never return a record of another namespace. ``seq`` numbers grow with every
    record written to a namespace, so ``records(ns, after_seq=w)`` is a watermark read.
    Every argument is checked before anything is read or written, the same on every
    backend: a bad one raises :class:`~mnemon_langgraph.errors.InputError` (or
    :class:`~mnemon_langgraph.errors.NamespaceError`), never a driver's error.
    """

    embeddings: Embeddings
    model_name: str
    dimension: int

    # -- write side ---------------------------------------------------------------------

    def ingest(
        self,
        namespace: str | Sequence[str],
        messages: Iterable[Message],
        *,
        origin: str = NOT_GIVEN,
        pack: bool = True,
        progress: Callable[[int, int], None] | None = None,
        source: str = NOT_GIVEN,
    ) -> IngestResult: ...

    async def aingest(
        self,
        namespace: str | Sequence[str],
        messages: Iterable[Message],
        *,
        origin: str = NOT_GIVEN,
        pack: bool = True,
        source: str = NOT_GIVEN,
    ) -> IngestResult: ...

    def ingest_file(
        self,
        path: str | os.PathLike[str],
        *,
        namespace: str | Sequence[str],
        format: str = "auto",
        pack: bool = True,
        progress: Callable[[int, int], None] | None = None,
    ) -> IngestResult: ...

    def delete_records(
        self,
        namespace: str | Sequence[str],
        ids: Sequence[str],
        *,
        actor: str = "api",
        reason: str = "",
    ) -> list[str]: ...

    def delete_messages(
        self,
        namespace: str | Sequence[str],
        message_ids: Sequence[str],
        *,
        actor: str = "api",
        reason: str = "",
        origin: str = "reingest",
        source: str = NOT_GIVEN,
    ) -> tuple[list[str], IngestResult]: ...

    def erase_namespace(self, namespace: str | Sequence[str], *, actor: str = "api") -> int: ...

    def flush(self) -> None: ...

    def close(self) -> None: ...

    # -- read side ----------------------------------------------------------------------

    def search(
        self,
        query: str,
        *,
        namespace: Namespace | str | Sequence[str],
        k: int = 20,
        offset: int = 0,
        filters: SearchFilters | None = None,
    ) -> list[SearchHit]: ...

    async def asearch(
        self,
        query: str,
        *,
        namespace: Namespace | str | Sequence[str],
        k: int = 20,
        offset: int = 0,
        filters: SearchFilters | None = None,
    ) -> list[SearchHit]: ...

    def get_records(self, namespace: str | Sequence[str], ids: Sequence[str]) -> list[Record]: ...

    def match_record_ids(
        self, namespace: str | Sequence[str], prefix: str, limit: int = 2
    ) -> list[str]: ...

    def stored_vectors(
        self, namespace: str | Sequence[str], ids: Sequence[str]
    ) -> dict[str, np.ndarray]: ...

    def term_statistics(
        self, namespace: str | Sequence[str], terms: Sequence[str]
    ) -> tuple[int, dict[str, int]]: ...

    def records(
        self,
        namespace: str | Sequence[str],
        *,
        after_seq: int = 0,
        limit: int | None = None,
        filters: SearchFilters | None = None,
    ) -> Iterator[Record]: ...

    def session_records(
        self,
        namespace: str | Sequence[str],
        session: int,
        *,
        start: int = 0,
        stop: int | None = None,
        filters: SearchFilters | None = None,
    ) -> list[Record]: ...

    def known_message_ids(self, namespace: str | Sequence[str], ids: Iterable[str]) -> set[str]: ...

    def max_seq(self, namespace: str | Sequence[str]) -> int: ...

    def count(self, namespace: str | Sequence[str]) -> int: ...

    def namespaces(self) -> list[Namespace]: ...

    def holds_namespace(self, namespace: str | Sequence[str]) -> bool: ...

    def audit_log(self, namespace: str | Sequence[str] | None = None) -> list[AuditEntry]: ...

    def stats(self, namespace: str | Sequence[str] | None = None) -> dict[str, Any]: ...

    # -- consolidated items ---------------------------------------------------------------

    def item_store(self, embeddings: Embeddings | None = None) -> ItemStore:
        """The store of consolidated items (timelines, value histories, instructions) kept
        in the same database, written by the consolidation graph and read by the View."""
        ...

    # -- key-value items --------------------------------------------------------------------

    def kv(self) -> KVItems:
        """The key-value items of LangGraph's ``BaseStore`` (``MnemonBaseStore``) kept in
        the same database, on the same connection or pool."""
        ...


class StoreOptions(TypedDict, total=False):
    """The keyword settings of :class:`MnemonStore` (each backend takes its own subset;
    one it does not know is a ``TypeError``, as for any constructor)."""

    candidate_depth: int
    record_chars: int
    # embedded only
    vector_settings: dict[str, Any] | None
    journal: Journal | None
    # PostgreSQL only
    exact_below: int
    ef_search: int | None
    pool_size: int
    setup: bool
    settings: PostgresSettings


class MnemonStore(PerUserAPI, AsyncFace, EmbeddingFace, RetentionFace, BackendHooks):
    """The store: ``MnemonStore(path_or_url, embeddings, **settings)``.

    A file path (or ``journal=``) gives the embedded SQLite backend; a ``postgresql://``
    URL gives the PostgreSQL backend (needs the ``[postgres]`` extra). Settings not known
    to the chosen backend raise ``TypeError`` as for any constructor.

    The base class of both backends and the one place their shared behaviour lives: every
    public method checks its arguments here (:func:`check_ingest` …), normalises the
    namespace and then calls one small hook of the backend (``_write_messages``,
    ``_search``, ``_get_records`` …); the ingest preamble, the result counts, file ingest,
    embedding and the per-user API are written once. It satisfies :class:`StoreBackend`.
    """

    embeddings: Embeddings
    model_name: str
    dimension: int
    record_chars: int

    def __new__(
        cls,
        target: str | os.PathLike[str],
        embeddings: Embeddings | None = None,
        **options: Unpack[StoreOptions],
    ) -> MnemonStore:
        # ``MnemonStore(...)`` chooses the backend by its target; Python then calls the
        # chosen class's ``__init__`` with the same arguments, once. A backend class
        # called directly (``EmbeddedStore(path)``) is built as itself.
        if cls is MnemonStore:
            return object.__new__(backend_class(target))
        return object.__new__(cls)

    @classmethod
    def open(
        cls,
        target: str | os.PathLike[str],
        embeddings: Embeddings | None = None,
        **options: Unpack[StoreOptions],
    ) -> MnemonStore:
        """Same as ``MnemonStore(target, embeddings, **options)``."""
        return MnemonStore(target, embeddings, **options)

    def kv(self) -> KVItems:
        """The key-value items beside the records (what ``MnemonBaseStore`` puts and gets;
        not the consolidated index of :meth:`item_store`): two tables of the backend's
        schema, on its connection or pool (``store/embedded/_kv_items.py``,
        ``store/postgres/_kv_items.py``)."""
        return _abstract(self)

    def transaction(self) -> AbstractContextManager[None]:
        """A write transaction the writes of this thread join: they commit together at the
        block's end, or none does (docs/design.md, "The store's vocabulary")."""
        return _abstract(self)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def item_store(self, embeddings: Embeddings | None = None) -> ItemStore:
        """The consolidated index beside the records (``embeddings``: default the store's).

        Each backend gives its own, from its folder (``store/embedded/_items.py``,
        ``store/postgres/_items.py``)."""
        return _abstract(self)

    # =======================================================================================
    # The public contract: one-line facades over store/_internal/boundary.py's operations (checks
    # once, shared with the async twins of store/_internal/async_face.py), each calling one backend
    # hook.
    # =======================================================================================

    def ingest(
        self,
        namespace: str | Sequence[str],
        messages: Iterable[Message],
        *,
        origin: str = NOT_GIVEN,
        pack: bool = True,
        progress: Callable[[int, int], None] | None = None,
        source: str = NOT_GIVEN,
    ) -> IngestResult:
        """Write messages as records and index them, idempotently.

        Messages already stored (same id in this namespace) are skipped; a message without
        an id gets a deterministic one (:func:`~.chunking.derive_message_id`), so ingesting
        the same input twice writes nothing the second time. Records, their vectors and
        their index entries are written in one transaction.

        Args:
            namespace: Where the records go.
            messages: :class:`~mnemon_langgraph.types.Message` objects in conversation order.
            origin: The ingest label (file name, ``"chat"`` …); part of record ids.
            pack: Let short consecutive turns share a record (``False``: one per record).
            progress: Called as ``progress(records_embedded, records_total)`` after each
                embedding batch.
            source: Deprecated name of ``origin`` (warns; one release).

        Returns:
            What was written.

        Raises:
            InputError: ``messages`` is not a list of ``Message``, a bad ``origin`` or
                text that cannot be stored (lone surrogates, NUL).
            ModelCallError: The embedder failed (nothing was written).
        """
        return call(
            self,
            INGEST,
            namespace,
            messages,
            origin=origin,
            pack=pack,
            progress=progress,
            source=source,
        )

    async def aingest(
        self,
        namespace: str | Sequence[str],
        messages: Iterable[Message],
        *,
        origin: str = NOT_GIVEN,
        pack: bool = True,
        source: str = NOT_GIVEN,
    ) -> IngestResult:
        """Async :meth:`ingest` (same checks; the caller's loop is never blocked)."""
        return await acall(
            self, INGEST, namespace, messages, origin=origin, pack=pack, source=source
        )

    def search(
        self,
        query: str,
        *,
        namespace: Namespace | str | Sequence[str],
        k: int = 20,
        offset: int = 0,
        filters: SearchFilters | None = None,
    ) -> list[SearchHit]:
        """Hybrid search (BM25 + dense, fused by reciprocal rank) within one namespace.

        Args:
            query: Free text (valid Unicode).
            namespace: Only records of this namespace are ever returned.
            k: Page size, ``0`` .. :data:`MAX_PAGE`.
            offset: Fused rank of the first hit returned, ``0`` .. :data:`MAX_PAGE`.
            filters: Date and session bounds (inclusive), applied inside the ranking.

        Returns:
            Hits ``offset .. offset + k`` of the fused ranking, with their 0-based fused
            rank, fused score, BM25 rank and dense rank.

        Raises:
            InputError: A query that is not valid text, a bad ``k``, ``offset`` or
                ``filters``.
            ModelCallError: The embedder failed on the query.
        """
        return call(self, SEARCH, query, namespace=namespace, k=k, offset=offset, filters=filters)

    async def asearch(
        self,
        query: str,
        *,
        namespace: Namespace | str | Sequence[str],
        k: int = 20,
        offset: int = 0,
        filters: SearchFilters | None = None,
    ) -> list[SearchHit]:
        """Async :meth:`search` (same checks)."""
        return await acall(
            self, SEARCH, query, namespace=namespace, k=k, offset=offset, filters=filters
        )

    def get_records(self, namespace: str | Sequence[str], ids: Sequence[str]) -> list[Record]:
        """Records of ``namespace`` by id, in the order of ``ids`` (unknown ids skipped;
        one string is one id)."""
        return call(self, GET_RECORDS, namespace, ids)

    def match_record_ids(
        self, namespace: str | Sequence[str], prefix: str, limit: int = 2
    ) -> list[str]:
        """Ids of ``namespace``'s records that start with ``prefix`` (at most ``limit``).

        The View shows ids shortened; this finds the record again. ``prefix`` is matched
        literally (no wildcard).
        """
        return call(self, MATCH_RECORD_IDS, namespace, prefix, limit)

    def stored_vectors(
        self, namespace: str | Sequence[str], ids: Sequence[str]
    ) -> dict[str, np.ndarray]:
        """The stored (unit) vectors of these records, by id (the read path's evidence)."""
        return call(self, STORED_VECTORS, namespace, ids)

    def term_statistics(
        self, namespace: str | Sequence[str], terms: Sequence[str]
    ) -> tuple[int, dict[str, int]]:
        """Live records of ``namespace`` and how many hold each term (the counts BM25
        search uses)."""
        return call(self, TERM_STATISTICS, namespace, terms)

    def records(
        self,
        namespace: str | Sequence[str],
        *,
        after_seq: int = 0,
        limit: int | None = None,
        filters: SearchFilters | None = None,
    ) -> Iterator[Record]:
        """Records of ``namespace`` with ``seq > after_seq``, in seq order (paged reads).

        A negative ``after_seq`` reads from the first record (``max_seq(ns) - 1`` of an
        empty namespace is a valid watermark). ``filters`` (date and session bounds,
        inclusive, as in :meth:`search`) are applied in the backend's query, so a page of
        dated records is read without reading the others into Python.

        Raises:
            InputError: ``after_seq`` is not an integer of at most ``2**63 - 1``,
                ``limit`` not one in ``0 .. 2**63 - 1``, or ``filters`` not a
                ``SearchFilters`` (checked at the call, before the first record is read).
        """
        return self._records(
            *checked_records(namespace, after_seq=after_seq, limit=limit, filters=filters)
        )

    def session_records(
        self,
        namespace: str | Sequence[str],
        session: int,
        *,
        start: int = 0,
        stop: int | None = None,
        filters: SearchFilters | None = None,
    ) -> list[Record]:
        """Records of ``session`` in ``namespace`` with ``start <= position < stop``
        (``stop`` ``None``: to the session's end), in position order; with ``filters``, only
        those inside its bounds (an as-of View reads with ``date_to``, in the read's SQL).

        Positions number a session's records from 0 in the order they were written, across
        ingests (:meth:`ingest` continues a session where it stopped), whatever other
        namespaces wrote in between: the read path finds the user's turn before a reply
        and the turn that opens a session by position (``read.questions``).

        Raises:
            InputError: ``session``, ``start`` or ``stop`` is not an integer in
                ``0 .. 2**63 - 1``.
        """
        return call(
            self, SESSION_RECORDS, namespace, session, start=start, stop=stop, filters=filters
        )

    def known_message_ids(self, namespace: str | Sequence[str], ids: Iterable[str]) -> set[str]:
        """The subset of ``ids`` already stored in ``namespace``."""
        return call(self, KNOWN_MESSAGE_IDS, namespace, ids)

    def max_seq(self, namespace: str | Sequence[str]) -> int:
        """Highest seq of ``namespace`` (``0`` when empty)."""
        return call(self, MAX_SEQ_OF, namespace)

    def count(self, namespace: str | Sequence[str]) -> int:
        """Number of records in ``namespace``."""
        return call(self, COUNT, namespace)

    def holds_namespace(self, namespace: str | Sequence[str]) -> bool:
        """Whether anything of ``namespace`` is stored (records, items, state; audit rows
        do not count): what :meth:`erase_namespace` would remove."""
        return call(self, HOLDS_NAMESPACE, namespace)

    def warm(self, namespace: str | Sequence[str]) -> bool:
        """Load what searching ``namespace`` needs into this process, and wait for it.

        A store loads a namespace's search structures when it is first searched, and a
        large one's in the background: the embedded backend finishes a due conversion to
        the approximate vector index, PostgreSQL builds its client copy of the vectors
        and BM25 index while the server answers. A deployment calls this before taking
        traffic, and a benchmark before timing, so every search meets the structures the
        store settles on (nothing else changes: searches answer the same either way, up to
        the approximate index's ordering).

        Returns whether the namespace's searches now rank in this process: ``False`` for
        a namespace without records, and on PostgreSQL for one its client copies cannot
        hold (``PostgresSettings.client_cache_mb``), which the server ranks.
        """
        return call(self, WARM, namespace)

    def audit_log(self, namespace: str | Sequence[str] | None = None) -> list[AuditEntry]:
        """Audited deletions, oldest first, of one namespace or of all."""
        return call(self, AUDIT_LOG, namespace)

    def stats(self, namespace: str | Sequence[str] | None = None) -> dict[str, Any]:
        """Counts for one namespace or for the whole store.

        Returns:
            ``{"path", "embedding_model", "dimension", "namespaces": [{"namespace",
            "records", "max_seq", "generation", "indexed", "vectors", "vector_index"}, …]}``
            (PostgreSQL adds ``schema_version`` and ``tables``).
        """
        return call(self, STATS, namespace)

    def delete_records(
        self,
        namespace: str | Sequence[str],
        ids: Sequence[str],
        *,
        actor: str = "api",
        reason: str = "",
    ) -> list[str]:
        """Delete records (their vectors, messages and index entries go with them) in one
        transaction with their audit row; returns the ids deleted (one string is one id)."""
        return call(self, DELETE_RECORDS, namespace, ids, actor=actor, reason=reason)

    def delete_messages(
        self,
        namespace: str | Sequence[str],
        message_ids: Sequence[str],
        *,
        actor: str = "api",
        reason: str = "",
        origin: str = "reingest",
        source: str = NOT_GIVEN,
    ) -> tuple[list[str], IngestResult]:
        """Delete messages: every record holding them goes, the other messages come back.

        The records that held any part of the messages are deleted; the *other* messages
        of those records are written again (re-chunked and re-embedded) under the ingest
        label ``origin`` (default ``"reingest"``; ``source`` is its deprecated old name),
        so nothing but the named messages is lost. The deletion, its audit row and the
        re-written records are one transaction: if embedding the survivors fails, or the
        process dies, nothing is deleted.

        Returns:
            ``(deleted_record_ids, result_of_rewriting_the_survivors)``.

        Raises:
            ModelCallError: The embedder failed on the survivors (nothing was deleted).
        """
        return call(
            self,
            DELETE_MESSAGES,
            namespace,
            message_ids,
            actor=actor,
            reason=reason,
            origin=origin,
            source=source,
        )

    def erase_namespace(self, namespace: str | Sequence[str], *, actor: str = "api") -> int:
        """Erase every row of the namespace in every table, with one audit row (who, when,
        which namespace, how many records); returns the number of records erased."""
        return call(self, ERASE_NAMESPACE, namespace, actor=actor)

    # the backend hooks these methods call: store/_internal/hooks.py (BackendHooks)

    def namespaces(self) -> list[Namespace]:
        """Every namespace that holds at least one record, sorted."""
        return call(self, NAMESPACES)

    def flush(self) -> None:
        """Write whatever the backend keeps unsaved (nothing on PostgreSQL)."""
        _abstract(self)

    def close(self) -> None:
        """Release the backend (files, pool); closing twice is harmless."""
        _abstract(self)

    # -- records (shared: both backends cut messages into records the same way) ----------

    def _records_of(
        self,
        messages: Sequence[Message],
        ns: Namespace,
        source: str,
        *,
        pack: bool = True,
        first_positions: Mapping[int, int] | None = None,
    ) -> list[Record]:
        """The records this store writes for ``messages`` (its ``record_chars``)."""
        return chunk_messages(
            messages,
            namespace=ns,
            origin=source,
            max_chars=self.record_chars,
            pack=pack,
            first_positions=first_positions,
        )

    # -- shared write helpers ---------------------------------------------------------------

    def ingest_file(
        self,
        path: str | os.PathLike[str],
        *,
        namespace: str | Sequence[str],
        format: str = "auto",
        pack: bool = True,
        progress: Callable[[int, int], None] | None = None,
    ) -> IngestResult:
        """Ingest a LoCoMo JSON, JSONL or transcript file (see :func:`load_messages`).

        A LoCoMo file's QA pairs, summaries and observations are never ingested.

        Args:
            path: The file.
            namespace: Where the records go.
            format: ``auto``, ``locomo``, ``jsonl`` or ``transcript``.
            pack: See ``ingest``.
            progress: See ``ingest``.
        """
        from mnemon_langgraph.loaders.files import load_messages

        if not isinstance(path, str | os.PathLike):
            raise InputError(f"path must be a file path, got {type(path).__name__}")
        messages_by_origin = load_messages(path, format=format)
        total = IngestResult(0, 0, 0)
        for origin, messages in messages_by_origin:
            result = self.ingest(namespace, messages, origin=origin, pack=pack, progress=progress)
            total = IngestResult(
                total.records_written + result.records_written,
                total.messages_written + result.messages_written,
                total.messages_skipped + result.messages_skipped,
                total.record_ids + result.record_ids,
            )
        return total
