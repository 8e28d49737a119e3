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
import json
import logging
import os
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
from langchain_core.embeddings import Embeddings

from mnemon_langgraph.errors import InputError, JournalReadOnlyError, ModelCallError
from mnemon_langgraph.search.embeddings import default_embeddings, embedding_identity
from mnemon_langgraph.search.hybrid import (
    CANDIDATE_DEPTH,
    NamespaceIndex,
    all_index_folders,
    index_folder,
)
from mnemon_langgraph.search.vectors import normalize_rows
from mnemon_langgraph.storage.chunking import chunk_messages, derive_message_id
from mnemon_langgraph.storage.journal import Journal
from mnemon_langgraph.types import (
    Message,
    Namespace,
    Record,
    SearchFilters,
    SearchHit,
    as_naive_utc,
    check_count,
    normalize_namespace,
)

__all__ = ["IngestResult", "MnemonStore", "load_messages"]

_EMBED_BATCH = 64

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class IngestResult:
    """What an ingest wrote.

    Attributes:
        records_written: Records appended to the journal.
        messages_written: Messages that went into those records.
        messages_skipped: Messages already in the journal (same id), left alone.
        record_ids: Ids of the records written, in order.
    """

    records_written: int
    messages_written: int
    messages_skipped: int
    record_ids: tuple[str, ...] = field(default=())


class MnemonStore:
    """Journal + embedder + hybrid indexes. Implements ``SearchSource``.

    Args:
        path: The SQLite journal file (created if missing). Indexes live in
            ``<path>.indexes/``.
        embeddings: Any LangChain ``Embeddings``; default :func:`default_embeddings` (the
            offline MiniLM model, or a fake when ``MNEMON_EMBEDDINGS=fake``).
        candidate_depth: Records each retriever feeds into fusion (see :mod:`.search`).
        vector_settings: Extra :class:`~mnemon_langgraph.search.vectors.VectorIndex` settings
            (``hnsw_threshold``, ``hnsw_m``, ``ef_search`` …).
        journal: An already open journal to use instead of opening ``path``.

    Raises:
        EmbeddingMismatchError: The journal holds vectors of another model or dimension.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        embeddings: Embeddings | None = None,
        *,
        candidate_depth: int = CANDIDATE_DEPTH,
        vector_settings: dict[str, Any] | None = None,
        journal: Journal | None = None,
    ) -> None:
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

    @classmethod
    def open(
        cls, path: str | os.PathLike[str], embeddings: Embeddings | None = None, **kwargs: Any
    ) -> MnemonStore:
        """Same as ``MnemonStore(path, embeddings, **kwargs)``."""
        return cls(path, embeddings, **kwargs)

    def __enter__(self) -> MnemonStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

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

    # -- embedding -------------------------------------------------------------------------

    def _embed(self, texts: list[str], progress: Callable[[int, int], None] | None) -> np.ndarray:
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for start in range(0, len(texts), _EMBED_BATCH):
            chunk = texts[start : start + _EMBED_BATCH]
            try:
                vecs = np.asarray(self.embeddings.embed_documents(chunk), dtype=np.float32)
            except ModelCallError:
                raise
            except Exception as exc:
                raise ModelCallError(f"embedding model failed: {exc}") from exc
            if vecs.shape != (len(chunk), self.dimension):
                raise ModelCallError(
                    f"embedding model returned shape {vecs.shape}, "
                    f"expected ({len(chunk)}, {self.dimension})"
                )
            if not np.isfinite(vecs).all():
                raise ModelCallError("embedding model returned NaN or infinite values")
            out[start : start + len(chunk)] = normalize_rows(vecs)
            if progress is not None:
                progress(start + len(chunk), len(texts))
        return out

    def _embed_query(self, query: str) -> np.ndarray:
        try:
            vec = np.asarray(self.embeddings.embed_query(query), dtype=np.float32)
        except Exception as exc:
            raise ModelCallError(f"embedding model failed on the query: {exc}") from exc
        if vec.shape != (self.dimension,) or not np.isfinite(vec).all():
            raise ModelCallError(
                f"embedding model returned an unusable query vector (shape {vec.shape}, "
                f"expected ({self.dimension},), finite values)"
            )
        return normalize_rows(vec)

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
        _check_unicode(ns, source, given)
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
        records = chunk_messages(
            fresh, namespace=ns, source=source, pack=pack, first_positions=first_positions
        )
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
            pack: See :meth:`ingest`.
            progress: See :meth:`ingest`.
        """
        messages_by_source = load_messages(path, format=format)
        total = IngestResult(0, 0, 0)
        for source, messages in messages_by_source:
            result = self.ingest(namespace, messages, source=source, pack=pack, progress=progress)
            total = IngestResult(
                total.records_written + result.records_written,
                total.messages_written + result.messages_written,
                total.messages_skipped + result.messages_skipped,
                total.record_ids + result.record_ids,
            )
        return total

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
            records = chunk_messages(survivors, namespace=ns, source=source, first_positions=first)
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
        query_vector = self._embed_query(query)
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

    # =======================================================================================
    # Plain per-user API, for application code that is not an agent (mem0-style). Built on
    # the public methods above (ingest, search, delete_records, get_records) and the journal's
    # public reading interface (records, max_seq, audit_log), so it works over any backend.
    # A ``user`` is a namespace: "ada" is ("ada",); ("users", "ada") works too.
    # =======================================================================================

    def add_messages(
        self,
        user: str | Sequence[str],
        messages: Sequence[Any],
        *,
        source: str = "api",
        now: datetime | None = None,
    ) -> IngestResult:
        """Write a user's messages (no model call): LangChain messages, ``Message`` objects,
        ``("user", "text")`` tuples or ``{"role": ..., "content": ...}`` dicts.

        The one date rule of every surface: a message is dated when it was written (``now``,
        default the current UTC time) unless it carries its own timestamp; undated messages
        continue the user's last session unless more than four hours passed since it.

        Returns:
            What was written (messages already stored, by id, are skipped).

        Raises:
            InputError: A message that cannot be converted (unknown role, no text).
        """
        from langchain_core.messages import convert_to_messages

        from mnemon_langgraph.sources import messages_from_langchain
        from mnemon_langgraph.sources.messages import DEFAULT_SESSION_GAP

        ns = normalize_namespace(user)
        ours = [m for m in messages if isinstance(m, Message)]
        theirs = [m for m in messages if not isinstance(m, Message)]
        if ours and theirs:
            raise InputError("add_messages: pass Message objects or chat messages, not both")
        try:
            given = ours or messages_from_langchain(convert_to_messages(theirs))
        except (ValueError, NotImplementedError) as exc:
            raise InputError(f"add_messages: {exc}") from exc
        last = next(iter(self.journal.records(ns, after_seq=self.journal.max_seq(ns) - 1)), None)
        stamp = as_naive_utc(now or datetime.now(UTC))
        session = last.session if last is not None else 1
        if last is not None and last.date and stamp and stamp - last.date > DEFAULT_SESSION_GAP:
            session += 1
        dated = [
            m
            if m.timestamp is not None
            else dataclasses.replace(m, timestamp=stamp, session=session)
            for m in given
        ]
        return self.ingest(ns, dated, source=source)

    def list_records(self, user: str | Sequence[str], *, limit: int | None = None) -> list[Record]:
        """A user's records, oldest first (at most ``limit``)."""
        return list(self.journal.records(normalize_namespace(user), limit=limit))

    def delete(
        self, user: str | Sequence[str], record_ids: Sequence[str], *, reason: str = ""
    ) -> list[str]:
        """Delete a user's records by id (audited, indexes updated); returns the ids deleted.

        Ids of other users' records are never deleted: deletion is scoped to ``user``.
        """
        if isinstance(record_ids, str):
            raise InputError("delete: pass a list of record ids, not one string")
        return self.delete_records(user, record_ids, actor="api.delete", reason=reason)

    def export(self, user: str | Sequence[str]) -> str:
        """Everything stored for a user as JSON (records, then the audit trail of deletions).

        For data-access requests: the records with their dates, sessions, speakers and message
        ids, and the journal's audit entries for the namespace. Embeddings are not exported
        (they are derived from the text).
        """
        ns = normalize_namespace(user)
        records = [_record_json(r) for r in self.journal.records(ns)]
        audit = [_jsonable(dataclasses.asdict(e)) for e in self.journal.audit_log(ns)]
        return json.dumps(
            {"namespace": list(ns), "records": records, "audit": audit},
            ensure_ascii=False,
            indent=2,
        )


def _jsonable(value: Any) -> Any:
    """``value`` with datetimes as ISO 8601 and tuples as lists (for :meth:`MnemonStore.export`)."""
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    return value


def _record_json(record: Record) -> dict[str, Any]:
    return _jsonable(dataclasses.asdict(record))  # type: ignore[no-any-return]


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


def _check_unicode(namespace: Namespace, source: str, messages: Sequence[Message]) -> None:
    """Raise :class:`InputError` for text that cannot be stored as UTF-8 (lone surrogates).

    Such strings come from ``json.loads`` of ``"\\ud800"`` escapes or badly decoded input;
    SQLite, the embedder and the hashers would otherwise fail on them with a bare
    ``UnicodeEncodeError`` halfway through an ingest.
    """

    def check(value: object, what: str) -> None:
        if isinstance(value, str):
            try:
                value.encode("utf-8")
            except UnicodeEncodeError as exc:
                raise InputError(
                    f"{what} is not valid Unicode (a lone surrogate at position {exc.start})"
                ) from None

    for part in namespace:
        check(part, f"namespace part {part!r}")
    check(source, "source")
    for i, m in enumerate(messages):
        for name in ("text", "speaker", "id"):
            check(getattr(m, name, None), f"message {i} ({name})")


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
