"""``MnemonStore``: the journal, an embedder and per-namespace hybrid indexes in one object.

The store is the write path (messages → records → journal → indexes, paper §4.1) and a
:class:`~mnemon_langgraph.types.SearchSource` for the read path. It is thread-safe: the read
graph calls :meth:`MnemonStore.search` concurrently from many threads.

Example:
    >>> from mnemon_langgraph.store import MnemonStore
    >>> from mnemon_langgraph.types import Message
    >>> with MnemonStore("memory.db") as store:                       # doctest: +SKIP
    ...     store.ingest(("users", "ada"), [Message("I moved to Lyon", "Ada")], source="chat")
    ...     hits = store.search("where does Ada live?", namespace=("users", "ada"), k=5)
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import os
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from langchain_core.embeddings import Embeddings

from mnemon_langgraph.errors import InputError, JournalReadOnlyError
from mnemon_langgraph.search.embeddings import default_embeddings, embedding_identity
from mnemon_langgraph.search.hybrid import (
    CANDIDATE_DEPTH,
    NamespaceIndex,
    all_index_folders,
    index_folder,
)
from mnemon_langgraph.storage.chunking import (
    DEFAULT_MAX_CHARS,
    check_record_chars,
    derive_message_id,
)
from mnemon_langgraph.storage.content_caches import forgets_cached_content
from mnemon_langgraph.storage.journal import Journal
from mnemon_langgraph.storage.schema import AuditEntry
from mnemon_langgraph.store.base import IngestResult, MnemonStore, check_unicode
from mnemon_langgraph.types import (
    Message,
    Namespace,
    Record,
    SearchFilters,
    SearchHit,
    check_count,
    normalize_namespace,
)

__all__ = ["EmbeddedStore", "load_messages"]

logger = logging.getLogger(__name__)


class EmbeddedStore(MnemonStore):
    """Journal + embedder + hybrid indexes (the embedded backend). Implements ``SearchSource``.

    Built by ``MnemonStore(path)``; see :class:`~mnemon_langgraph.store.base.StoreBackend`.

    Args:
        path: The SQLite journal file (created if missing). Indexes live in
            ``<path>.indexes/``.
        embeddings: Any LangChain ``Embeddings``; default :func:`default_embeddings` (the
            offline MiniLM model, or a fake when ``MNEMON_EMBEDDINGS=fake``).
        candidate_depth: Records each retriever feeds into fusion (see :mod:`.search`).
        vector_settings: Extra :class:`~mnemon_langgraph.search.vectors.VectorIndex` settings
            (``hnsw_threshold``, ``hnsw_m``, ``ef_search`` …).
        journal: An already open journal to use instead of opening ``path``.
        record_chars: Most characters of a record this store writes (default 600, the
            paper's; :data:`~mnemon_langgraph.storage.chunking.DEFAULT_MAX_CHARS`). Records
            already stored keep their size.

    Raises:
        EmbeddingMismatchError: The journal holds vectors of another model or dimension.
        ConfigurationError: ``record_chars`` is out of range.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        embeddings: Embeddings | None = None,
        *,
        candidate_depth: int = CANDIDATE_DEPTH,
        vector_settings: dict[str, Any] | None = None,
        journal: Journal | None = None,
        record_chars: int = DEFAULT_MAX_CHARS,
    ) -> None:
        self.record_chars = check_record_chars(record_chars)
        self.path = Path(path)
        self._owns_journal = journal is None
        self.journal = journal if journal is not None else _open_journal(self.path)
        if embeddings is None:  # an old journal keeps the MiniLM variant it was written with
            recorded = self.journal.embedding_model()
            embeddings = default_embeddings(recorded[0] if recorded else None)
        self.embeddings = embeddings
        self.model_name, self.dimension = embedding_identity(self.embeddings)
        self.journal.ensure_embedding_model(self.model_name, self.dimension)
        self.candidate_depth = candidate_depth
        self.vector_settings = dict(vector_settings or {})
        self._indexes: dict[Namespace, NamespaceIndex] = {}
        self._lock = threading.Lock()
        self._closed = False

    def close(self) -> None:
        """Save unsaved index changes and close the journal (if the store opened it)."""
        if self._closed:
            return
        with self._lock:
            indexes = list(self._indexes.values())
        for index in indexes:
            index.flush()
        self._closed = True
        if self._owns_journal:
            self.journal.close()

    def flush(self) -> None:
        """Write index checkpoints for every namespace with unsaved additions."""
        with self._lock:
            indexes = list(self._indexes.values())
        for index in indexes:
            index.flush()

    # -- indexes ---------------------------------------------------------------------------

    def index(self, namespace: str | Sequence[str]) -> NamespaceIndex:
        """The (lazily loaded) indexes of ``namespace``."""
        ns = normalize_namespace(namespace)
        with self._lock:
            index = self._indexes.get(ns)
            if index is None:
                index = NamespaceIndex(
                    self.journal,
                    ns,
                    index_folder(self.path, ns),
                    self.dimension,
                    candidate_depth=self.candidate_depth,
                    vector_settings=self.vector_settings,
                )
                self._indexes[ns] = index
        return index

    # -- writing ---------------------------------------------------------------------------

    def ingest(
        self,
        namespace: str | Sequence[str],
        messages: Iterable[Message],
        *,
        source: str,
        pack: bool = True,
        progress: Callable[[int, int], None] | None = None,
    ) -> IngestResult:
        """Write messages to the journal as records and index them.

        Messages already stored (same id in this namespace) are skipped; a message without
        an id gets a deterministic one (:func:`~.chunking.derive_message_id`),
        so ingesting the same input twice writes nothing the second time. Records and their
        vectors are appended in one journal transaction; the indexes are then brought up to
        date incrementally.

        Args:
            namespace: Where the records go.
            messages: Messages in conversation order.
            source: Source name (file name, ``"chat"`` …); part of record ids.
            pack: Let short consecutive turns share a record (``False``: one per record).
            progress: Called as ``progress(records_embedded, records_total)`` after each
                embedding batch.

        Returns:
            What was written.
        """
        ns = normalize_namespace(namespace)
        given = list(messages)
        check_unicode(ns, source, given)
        with_ids = [
            m
            if m.id is not None
            else dataclasses.replace(m, id=derive_message_id(m, source=source, index=i))
            for i, m in enumerate(given)
        ]
        known = self.journal.known_message_ids(ns, [m.id for m in with_ids if m.id])
        fresh = [m for m in with_ids if m.id not in known]
        if not fresh:
            return IngestResult(0, 0, len(given))
        sessions = {m.session if m.session is not None else 1 for m in fresh}
        first_positions = {s: self.journal.next_position(ns, s) for s in sessions}
        records = self._records_of(fresh, ns, source, pack=pack, first_positions=first_positions)
        vectors = self._embed([r.text for r in records], progress)
        index = self.index(ns)
        with index.lock:
            written = self.journal.append(ns, records, vectors)
            index.sync()
        return IngestResult(
            records_written=len(written),
            messages_written=len({mid for r in written for mid in r.message_ids}),
            # Messages of records another process stored first were skipped too.
            messages_skipped=len(given) - len({mid for r in written for mid in r.message_ids}),
            record_ids=tuple(r.id for r in written),
        )

    async def aingest(
        self,
        namespace: str | Sequence[str],
        messages: Iterable[Message],
        *,
        source: str,
        pack: bool = True,
    ) -> IngestResult:
        """Async :meth:`ingest` (runs in a worker thread)."""
        return await asyncio.to_thread(
            self.ingest, namespace, list(messages), source=source, pack=pack
        )

    @forgets_cached_content
    def delete_records(
        self,
        namespace: str | Sequence[str],
        ids: Sequence[str],
        *,
        actor: str = "api",
        reason: str = "",
    ) -> list[str]:
        """Delete records from the journal and both indexes; returns the ids deleted."""
        ns = normalize_namespace(namespace)
        index = self.index(ns)
        with index.lock:
            index.sync()
            deleted = self.journal.delete_records(ns, ids, actor=actor, reason=reason)
            if deleted:
                index.remove(deleted)
        return deleted

    @forgets_cached_content
    def delete_messages(
        self,
        namespace: str | Sequence[str],
        message_ids: Sequence[str],
        *,
        actor: str = "api",
        reason: str = "",
        source: str = "reingest",
    ) -> tuple[list[str], IngestResult]:
        """Delete messages: every record holding them goes, the other messages come back.

        The records that held any part of the messages are deleted from the journal and the
        indexes; the *other* messages of those records are written again (re-chunked and
        re-embedded) under ``source``, so nothing but the named messages is lost. The
        deletion, its audit row and the re-written records (with their vectors) are one
        journal transaction: if embedding the survivors fails, or the process dies, nothing
        is deleted.

        Returns:
            ``(deleted_record_ids, result_of_rewriting_the_survivors)``.

        Raises:
            ModelCallError: The embedder failed on the survivors (nothing was deleted).
        """
        ns = normalize_namespace(namespace)
        index = self.index(ns)
        produced: list[Record] = []

        def replace(survivors: list[Message]) -> tuple[list[Record], np.ndarray]:
            # Runs inside the deletion's transaction: positions are read on this thread's
            # connection, so they already see the old records deleted.
            sessions = {m.session if m.session is not None else 1 for m in survivors}
            first = {s: self.journal.next_position(ns, s) for s in sessions}
            records = self._records_of(survivors, ns, source, first_positions=first)
            produced[:] = records
            return records, self._embed([r.text for r in records], None)

        with index.lock:
            index.sync()
            deleted, survivors = self.journal.delete_messages(
                ns, message_ids, actor=actor, reason=reason, replace=replace
            )
            if deleted:
                index.remove(deleted)  # also catches up with the records written above
        if not survivors:
            return deleted, IngestResult(0, 0, 0)
        written = self.journal.get_records(ns, [r.id for r in produced])
        return deleted, IngestResult(
            records_written=len(written),
            messages_written=len({mid for r in written for mid in r.message_ids}),
            messages_skipped=0,
            record_ids=tuple(r.id for r in written),
        )

    @forgets_cached_content
    def erase_namespace(self, namespace: str | Sequence[str], *, actor: str = "api") -> int:
        """Erase a namespace from the journal and delete its index folder; returns the count."""
        ns = normalize_namespace(namespace)
        index = self.index(ns)
        extra = all_index_folders(self.path, ns)[1:]
        with index.lock:
            # Index files first (derived; an EraseError here leaves the rows, so the erase
            # can be rerun), then the rows, then the files again in case another process
            # saved them meanwhile: no interruption leaves erased words on disk.
            index.erase_files(extra)
            count = self.journal.erase_namespace(ns, actor=actor)
            index.erase_files(extra)
        return count

    # -- reading ---------------------------------------------------------------------------

    def get_records(self, namespace: str | Sequence[str], ids: Sequence[str]) -> list[Record]:
        """Records of ``namespace`` by id, in the order of ``ids`` (unknown ids skipped)."""
        return self.journal.get_records(normalize_namespace(namespace), list(ids))

    def match_record_ids(
        self, namespace: str | Sequence[str], prefix: str, limit: int = 2
    ) -> list[str]:
        """Ids of ``namespace``'s records that start with ``prefix`` (at most ``limit``)."""
        return self.journal.match_record_ids(normalize_namespace(namespace), prefix, limit)

    def term_statistics(
        self, namespace: str | Sequence[str], terms: Sequence[str]
    ) -> tuple[int, dict[str, int]]:
        """Live records of ``namespace`` and how many hold each term (its BM25 index's counts)."""
        return self.index(normalize_namespace(namespace)).term_statistics(terms)

    def stored_vectors(
        self, namespace: str | Sequence[str], ids: Sequence[str]
    ) -> dict[str, np.ndarray]:
        """The journal's stored (unit) vectors of these records, by id (read path evidence)."""
        return self.journal.get_vectors(normalize_namespace(namespace), list(ids))

    def records(
        self, namespace: str | Sequence[str], *, after_seq: int = 0, limit: int | None = None
    ) -> Iterator[Record]:
        """Records of ``namespace`` with ``seq > after_seq``, in seq order (paged reads)."""
        return self.journal.records(namespace, after_seq=after_seq, limit=limit)

    def known_message_ids(self, namespace: str | Sequence[str], ids: Iterable[str]) -> set[str]:
        """The subset of ``ids`` already stored in ``namespace``."""
        return self.journal.known_message_ids(namespace, ids)

    def max_seq(self, namespace: str | Sequence[str]) -> int:
        """Highest seq of ``namespace`` (``0`` when empty)."""
        return self.journal.max_seq(namespace)

    def count(self, namespace: str | Sequence[str]) -> int:
        """Number of records in ``namespace``."""
        return self.journal.count(namespace)

    def namespaces(self) -> list[Namespace]:
        """Every namespace that holds at least one record, sorted."""
        return self.journal.namespaces()

    def audit_log(self, namespace: str | Sequence[str] | None = None) -> list[AuditEntry]:
        """Audited deletions, oldest first, of one namespace or of all."""
        return self.journal.audit_log(namespace)

    def search(
        self,
        query: str,
        *,
        namespace: Namespace | str | Sequence[str],
        k: int = 20,
        offset: int = 0,
        filters: SearchFilters | None = None,
    ) -> list[SearchHit]:
        """Hybrid search (BM25 + dense, RRF k=60) within one namespace.

        Args:
            query: Free text.
            namespace: Only records of this namespace are ever returned.
            k: Page size.
            offset: Fused rank of the first hit returned.
            filters: Date and session bounds (inclusive), applied inside the ranking.

        Returns:
            Hits ``offset .. offset + k`` of the fused ranking, with their 0-based fused
            rank, fused score, BM25 rank and dense rank.
        """
        ns = normalize_namespace(namespace)
        _check_query(query, k, offset)
        if k <= 0:
            return []
        query_vector = self.query_vector(query)
        ranked = self.index(ns).fused_ranking(
            query, query_vector, k=k, offset=offset, filters=filters
        )
        records = {r.id: r for r in self.journal.get_records(ns, [x.record_id for x in ranked])}
        hits = []
        for x in ranked:
            record = records.get(x.record_id)
            if record is None or tuple(record.namespace) != ns:
                continue  # deleted between ranking and fetching
            hits.append(
                SearchHit(
                    record=record,
                    rank=x.rank,
                    score=x.score,
                    bm25_rank=x.bm25_rank,
                    dense_rank=x.dense_rank,
                )
            )
        return hits

    async def asearch(
        self,
        query: str,
        *,
        namespace: Namespace | str | Sequence[str],
        k: int = 20,
        offset: int = 0,
        filters: SearchFilters | None = None,
    ) -> list[SearchHit]:
        """Async :meth:`search` (runs in a worker thread)."""
        return await asyncio.to_thread(
            self.search, query, namespace=namespace, k=k, offset=offset, filters=filters
        )

    def stats(self, namespace: str | Sequence[str] | None = None) -> dict[str, Any]:
        """Counts for one namespace or for the whole journal.

        Returns:
            ``{"path", "embedding_model", "dimension", "namespaces": [{"namespace",
            "records", "max_seq", "generation", "indexed", "vector_index"}, …]}``.
        """
        spaces = (
            [normalize_namespace(namespace)] if namespace is not None else self.journal.namespaces()
        )
        rows = []
        for ns in spaces:
            index = self.index(ns)
            index.sync()
            rows.append(
                {
                    "namespace": list(ns),
                    "records": self.journal.count(ns),
                    "max_seq": self.journal.max_seq(ns),
                    "generation": self.journal.generation(ns),
                    "indexed": len(index.bm25),
                    "vectors": len(index.vectors),
                    "vector_index": index.vectors.kind,
                }
            )
        return {
            "path": str(self.path),
            "embedding_model": self.model_name,
            "dimension": self.dimension,
            "namespaces": rows,
        }


def _open_journal(path: Path) -> Journal:
    """Open the journal for writing, or read-only (with one warning) if it cannot be written.

    A journal on a read-only disk or owned by someone else still serves searches and
    Views; every write then raises :class:`JournalReadOnlyError`.
    """
    try:
        return Journal(path)
    except JournalReadOnlyError as exc:
        if not path.is_file():
            raise
        logger.warning("%s; opened read-only: searches work, writes will fail", exc)
        return Journal(path, read_only=True)


def _check_query(query: object, k: object, offset: object) -> None:
    """Raise :class:`InputError` for a query that is not valid text or a bad page."""
    if not isinstance(query, str):
        raise InputError(f"query must be a string, got {type(query).__name__}")
    try:
        query.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InputError(
            f"query is not valid Unicode text (a lone surrogate at position {exc.start})"
        ) from None
    check_count(k, what="k")
    check_count(offset, what="offset")


def load_messages(
    path: str | os.PathLike[str], *, format: str = "auto"
) -> list[tuple[str, list[Message]]]:
    """Messages of a file as ``[(source, messages)]``.

    Args:
        path: A LoCoMo JSON file (one conversation), a JSON list of message objects, a JSONL
            file or a transcript.
        format: ``auto`` (by extension and content), ``locomo``, ``jsonl`` or ``transcript``.

    Raises:
        InputError: Unknown format, malformed input, or a LoCoMo file with several
            conversations (their turn ids collide: ingest each into its own namespace).
    """
    from mnemon_langgraph import sources

    p = Path(path)
    # A file name that is not valid UTF-8 (surrogate-escaped bytes) would be refused as a
    # source name; its bytes are kept readable as \\xNN escapes instead.
    name = os.fsencode(p.name).decode("utf-8", "backslashreplace")
    if format not in _FORMATS:
        raise InputError(f"unknown format {format!r}: use {', '.join(_FORMATS)}")
    fmt = sources.detect_format(p) if format == "auto" else format
    if fmt == "locomo":
        conversations = sources.load_locomo(p)
        if len(conversations) != 1:
            raise InputError(
                f"{p}: holds {len(conversations)} LoCoMo conversations; ingest each into its "
                "own namespace (their turn ids collide)"
            )
        conv = conversations[0]
        return [(conv.source or name, list(conv.messages))]
    if fmt == "jsonl":
        return [(name, list(sources.load_jsonl(p, source=name)))]
    if fmt == "transcript":
        return [(name, list(sources.load_transcript(p, source=name)))]
    return [(name, list(sources.load_any(p)))]


_FORMATS = ("auto", "locomo", "jsonl", "transcript")
