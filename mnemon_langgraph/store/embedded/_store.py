"""``MnemonStore``: the journal, an embedder and per-namespace hybrid indexes in one object.

The store is the write path (messages → records → journal → indexes, paper §4.1) and a
:class:`~mnemon_langgraph.types.SearchSource` for the read path. It is thread-safe: the read
graph calls :meth:`MnemonStore.search` concurrently from many threads.

Example:
    >>> from mnemon_langgraph.store import MnemonStore
    >>> from mnemon_langgraph.types import Message
    >>> with MnemonStore("memory.db") as store:                       # doctest: +SKIP
    ...     store.ingest(("users", "ada"), [Message("I moved to Lyon", "Ada")], origin="chat")
    ...     hits = store.search("where does Ada live?", namespace=("users", "ada"), k=5)
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import os
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
from langchain_core.embeddings import Embeddings

import mnemon_langgraph.store.embedded._retention as retention
from mnemon_langgraph.errors import JournalReadOnlyError
from mnemon_langgraph.records._chunking import DEFAULT_MAX_CHARS, check_record_chars
from mnemon_langgraph.records.schema import AuditEntry
from mnemon_langgraph.search._fusion import CANDIDATE_DEPTH
from mnemon_langgraph.search.embeddings import default_embeddings, embedding_identity
from mnemon_langgraph.store._internal.contract import fresh_messages, sessions_of
from mnemon_langgraph.store._internal.retention import RetentionReceipt
from mnemon_langgraph.store._internal.settle import reuse_vectors
from mnemon_langgraph.store.base import MnemonStore
from mnemon_langgraph.store.embedded._index import (
    NamespaceIndex,
    all_index_folders,
    index_folder,
)
from mnemon_langgraph.store.embedded._items import EmbeddedItemStore
from mnemon_langgraph.store.embedded._journal import Journal
from mnemon_langgraph.store.embedded._kv_items import EmbeddedKVItems
from mnemon_langgraph.types import (
    Message,
    Namespace,
    Record,
    SearchFilters,
    SearchHit,
    normalize_namespace,
)

__all__ = ["EmbeddedStore"]

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
        vector_settings: Extra :class:`~mnemon_langgraph.search._vectors.VectorIndex` settings
            (``hnsw_threshold``, ``hnsw_m``, ``ef_search`` …).
        journal: An already open journal to use instead of opening ``path``.
        record_chars: Most characters of a record this store writes (default 600, the
            paper's; :data:`~mnemon_langgraph.records._chunking.DEFAULT_MAX_CHARS`). Records
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

    def item_store(self, embeddings: Embeddings | None = None) -> EmbeddedItemStore:
        """The consolidated index in the journal's own file (``embeddings``: default the
        store's)."""
        return EmbeddedItemStore.of_store(self, embeddings)

    def kv(self) -> EmbeddedKVItems:
        """The key-value items in the journal's own file, on its connections."""
        return EmbeddedKVItems(self.journal)

    @contextlib.contextmanager
    def transaction(self) -> Iterator[None]:
        """The journal's write transaction on this thread's connection, which the writes of
        this thread join as savepoints (see :meth:`MnemonStore.transaction
        <mnemon_langgraph.store.MnemonStore.transaction>`). The indexes see what it wrote
        after the commit: each catches up with the journal when it is next used."""
        with self.journal.transaction():
            yield

    # -- indexes ---------------------------------------------------------------------------

    def index(self, namespace: str | Sequence[str]) -> NamespaceIndex:
        """The (lazily loaded) indexes of ``namespace``."""
        return self._index(normalize_namespace(namespace))

    def _index(self, ns: Namespace) -> NamespaceIndex:
        """:meth:`index` of a namespace checked at the boundary (the hooks')."""
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

    # -- writing (hooks of MnemonStore: arguments already checked) ---------------------------

    def _write_messages(
        self,
        ns: Namespace,
        messages: list[Message],
        source: str,
        pack: bool,
        progress: Callable[[int, int], None] | None,
    ) -> list[Record]:
        """Append the records of the messages not stored yet, with their vectors, in one
        journal transaction; the indexes are then brought up to date incrementally.

        Drafted and embedded first, then decided again inside the write transaction
        (``BEGIN IMMEDIATE``: no other writer of the journal in between), see
        :mod:`~mnemon_langgraph.store._internal.settle`.
        """
        ids = [m.id for m in messages if m.id]
        fresh = fresh_messages(messages, self.journal.known_message_ids(ns, ids))
        if not fresh:
            return []
        first = {s: self.journal.next_position(ns, s) for s in sessions_of(fresh)}
        drafted = self._records_of(fresh, ns, source, pack=pack, first_positions=first)
        vectors = self._embed([r.text for r in drafted], progress)
        index = self._index(ns)
        outer = self.journal.in_transaction()  # a caller's transaction: commits later
        with index.lock:
            with self.journal.transaction():  # reads below run on its connection
                fresh = fresh_messages(messages, self.journal.known_message_ids(ns, ids))
                written: list[Record] = []
                if fresh:
                    first = {s: self.journal.next_position(ns, s) for s in sessions_of(fresh)}
                    records = self._records_of(fresh, ns, source, pack=pack, first_positions=first)
                    rows = reuse_vectors(records, drafted, vectors, lambda t: self._embed(t, None))
                    written = self.journal.append(ns, records, rows)
            if not outer:  # uncommitted rows never enter the index (a rollback drops them)
                index.sync()
        return written

    def _delete_records(
        self, ns: Namespace, ids: tuple[str, ...], actor: str, reason: str
    ) -> list[str]:
        index = self._index(ns)
        with index.lock:
            index.sync()
            deleted = self.journal.delete_records(ns, ids, actor=actor, reason=reason)
            if deleted:
                index.remove(deleted)
        return deleted

    def _delete_messages(
        self, ns: Namespace, ids: tuple[str, ...], actor: str, reason: str, source: str
    ) -> tuple[list[str], list[Record]]:
        index = self._index(ns)
        produced: list[Record] = []

        def replace(
            survivors: list[Message], first: Mapping[int, int]
        ) -> tuple[list[Record], np.ndarray]:
            # Runs inside the deletion's transaction, once per run of deleted records:
            # ``first`` is the place of the records the survivors replace.
            records = self._records_of(survivors, ns, source, first_positions=first)
            produced.extend(records)
            return records, self._embed([r.text for r in records], None)

        with index.lock:
            index.sync()
            deleted, survivors = self.journal.delete_messages(
                ns, ids, actor=actor, reason=reason, replace=replace
            )
            if deleted:
                index.remove(deleted)  # also catches up with the records written above
        if not survivors:
            return deleted, []
        return deleted, self.journal.get_records(ns, [r.id for r in produced])

    def _erase_namespace(self, ns: Namespace, actor: str) -> int:
        """Erase the namespace from the journal and delete its index folders."""
        index = self._index(ns)
        extra = all_index_folders(self.path, ns)[1:]
        with index.lock:
            # Index files first (derived; an EraseError here leaves the rows, so the erase
            # can be rerun), then the rows, then the files again in case another process
            # saved them meanwhile: no interruption leaves erased words on disk.
            index.erase_files(extra)
            count = self.journal.erase_namespace(ns, actor=actor)
            index.erase_files(extra)
        return count

    def _apply_retention(
        self, ns: Namespace, age: timedelta, keep: int | None, dry: bool, actor: str, now: datetime
    ) -> RetentionReceipt:
        """One journal transaction (:mod:`._retention`); the removed records leave the index
        as a deletion's do (the checkpoint files are unlinked, rewritten at the next save)."""
        index = self._index(ns)
        with index.lock:
            index.sync()
            if not dry:  # a run that removes nothing leaves the index files alone
                probe = retention.apply_retention(
                    self.journal, ns, (age, keep), now, dry_run=True, actor=actor
                )
                if probe.held or not any(probe.counts.values()):
                    return dataclasses.replace(probe, dry_run=False)
                # Saved checkpoints hold the words of what goes: unlinked first (derived
                # data, rebuilt from the journal), so a kill after the commit leaves none.
                index.drop_checkpoints()
            receipt = retention.apply_retention(
                self.journal, ns, (age, keep), now, dry_run=dry, actor=actor
            )
            if receipt.record_ids and not receipt.dry_run:
                index.remove(list(receipt.record_ids))
        return receipt

    def _hold(self, ns: Namespace, actor: str, reason: str) -> bool:
        return retention.set_hold(self.journal, ns, actor, reason, held=True)

    def _release(self, ns: Namespace, actor: str, reason: str) -> bool:
        return retention.set_hold(self.journal, ns, actor, reason, held=False)

    def _held_namespaces(self) -> list[Namespace]:
        return retention.held_namespaces(self.journal)

    def _sweep_expired_items(self, now: datetime, actor: str) -> int:
        return self.kv().sweep_sync(now, actor)

    # -- reading (hooks) ---------------------------------------------------------------------

    def _get_records(self, ns: Namespace, ids: tuple[str, ...]) -> list[Record]:
        return self.journal.get_records(ns, ids)

    def _match_record_ids(self, ns: Namespace, prefix: str, limit: int) -> list[str]:
        return self.journal.match_record_ids(ns, prefix, limit)

    def _term_statistics(self, ns: Namespace, terms: tuple[str, ...]) -> tuple[int, dict[str, int]]:
        return self._index(ns).term_statistics(terms)

    def _stored_vectors(self, ns: Namespace, ids: tuple[str, ...]) -> dict[str, np.ndarray]:
        return self.journal.get_vectors(ns, ids)

    def _records(
        self, ns: Namespace, after_seq: int, limit: int | None, filters: SearchFilters | None = None
    ) -> Iterator[Record]:
        return self.journal.records(ns, after_seq=after_seq, limit=limit, filters=filters)

    def _session_records(
        self, ns: Namespace, session: int, start: int, stop: int, filters: SearchFilters | None
    ) -> list[Record]:
        return self.journal.session_records(ns, session, start, stop, filters)

    def _known_message_ids(self, ns: Namespace, ids: tuple[str, ...]) -> set[str]:
        return self.journal.known_message_ids(ns, ids)

    def _max_seq(self, ns: Namespace) -> int:
        return self.journal.max_seq(ns)

    def _count(self, ns: Namespace) -> int:
        return self.journal.count(ns)

    def _holds_namespace(self, ns: Namespace) -> bool:
        """A row of any table but the audit, or an index folder left behind."""
        if self.journal.holds_namespace(ns):
            return True
        return any(f.exists() or f.is_symlink() for f in all_index_folders(self.path, ns))

    def _warm(self, ns: Namespace) -> bool:
        if not self.journal.count(ns):
            return False
        return self._index(ns).settle()

    def _namespaces(self) -> list[Namespace]:
        return self.journal.namespaces()

    def _audit_log(self, ns: Namespace | None) -> list[AuditEntry]:
        return self.journal.audit_log(ns)

    def _search(
        self, query: str, ns: Namespace, k: int, offset: int, filters: SearchFilters | None
    ) -> list[SearchHit]:
        query_vector = self.query_vector(query)
        ranked = self._index(ns).fused_ranking(
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

    def _stats(self, ns: Namespace | None) -> dict[str, Any]:
        spaces = [ns] if ns is not None else self.journal.namespaces()
        rows = []
        for one in spaces:
            index = self._index(one)
            index.sync()
            rows.append(
                {
                    "namespace": list(one),
                    "records": self.journal.count(one),
                    "max_seq": self.journal.max_seq(one),
                    "generation": self.journal.generation(one),
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
