"""The seam between "the store" and "a backend": :class:`StoreBackend` and :class:`MnemonStore`.

Every surface (read graph, consolidation, retriever, integrations, CLI, eval, benches) needs
the same few things from a store; :class:`StoreBackend` names them, so a surface never
reaches into one backend's internals (the SQLite journal, the index folders, a connection
pool). Two implementations sit beside this module:

* :class:`~mnemon_langgraph.store.embedded.EmbeddedStore`: one SQLite journal file plus
  per-namespace index folders (the default, one machine).
* :class:`~mnemon_langgraph.store.postgres.PostgresStore`: everything in PostgreSQL
  (pgvector, BM25 computed in SQL), shared by any number of processes on any number of hosts.

:class:`MnemonStore` is the one public class: ``MnemonStore("memory.db")`` builds an
``EmbeddedStore``, ``MnemonStore("postgresql://…")`` a ``PostgresStore``. Both subclass it,
so ``isinstance(store, MnemonStore)`` holds for either, and the code both need (embedding
with its checks, the input checks, file ingest) lives here once.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, NoReturn, Protocol, runtime_checkable

import numpy as np
from langchain_core.embeddings import Embeddings

from mnemon_langgraph.errors import InputError, ModelCallError
from mnemon_langgraph.search.vectors import normalize_rows
from mnemon_langgraph.storage.chunking import chunk_messages
from mnemon_langgraph.storage.content_caches import register_content_cache
from mnemon_langgraph.store.query_vectors import SingleFlightCache
from mnemon_langgraph.types import (
    Message,
    Namespace,
    Record,
    SearchFilters,
    SearchHit,
    as_naive_utc,
    normalize_namespace,
)

if TYPE_CHECKING:
    from mnemon_langgraph.storage.schema import AuditEntry

__all__ = ["IngestResult", "MnemonStore", "StoreBackend", "is_postgres_url"]


def _abstract(store: object) -> NoReturn:
    # A call, not ``...``: the protocol's members then count as implemented defaults, so
    # ``MnemonStore`` can subclass the protocol explicitly (and be instantiated, choosing
    # a backend in ``__new__``) while every backend still overrides each member.
    raise NotImplementedError(f"{type(store).__name__} does not implement this")


_EMBED_BATCH = 64
QUERY_VECTORS_KEPT = 256
"""Query vectors a store keeps (least recently used out). A read-path turn asks the store
for about nine searches and 40% of them repeat a text it already embedded this turn (the
latest message, a planned search paged again in a later round; measured on LoCoMo dev
turns), each an embedding-model call; a user's next turn repeats few. 0 keeps none."""
_URL_PREFIXES = ("postgresql://", "postgres://", "postgresql+psycopg://")


def is_postgres_url(target: object) -> bool:
    """Whether ``target`` names a PostgreSQL server (a ``postgresql://`` URL) and not a file."""
    return isinstance(target, str) and target.startswith(_URL_PREFIXES)


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


@runtime_checkable
class StoreBackend(Protocol):
    """What every surface may use of a store, whatever holds the data.

    Writes (:meth:`ingest`, deletions, :meth:`erase_namespace`) are atomic and idempotent;
    reads never return a record of another namespace. ``seq`` numbers grow with every
    record written to a namespace, so ``records(ns, after_seq=w)`` is a watermark read.
    """

    embeddings: Embeddings
    model_name: str
    dimension: int

    def ingest(
        self,
        namespace: str | Sequence[str],
        messages: Iterable[Message],
        *,
        source: str,
        pack: bool = True,
        progress: Callable[[int, int], None] | None = None,
    ) -> IngestResult:
        return _abstract(self)

    async def aingest(
        self,
        namespace: str | Sequence[str],
        messages: Iterable[Message],
        *,
        source: str,
        pack: bool = True,
    ) -> IngestResult:
        return _abstract(self)

    def ingest_file(
        self,
        path: str | os.PathLike[str],
        *,
        namespace: str | Sequence[str],
        format: str = "auto",
        pack: bool = True,
        progress: Callable[[int, int], None] | None = None,
    ) -> IngestResult:
        return _abstract(self)

    def search(
        self,
        query: str,
        *,
        namespace: Namespace | str | Sequence[str],
        k: int = 20,
        offset: int = 0,
        filters: SearchFilters | None = None,
    ) -> list[SearchHit]:
        return _abstract(self)

    async def asearch(
        self,
        query: str,
        *,
        namespace: Namespace | str | Sequence[str],
        k: int = 20,
        offset: int = 0,
        filters: SearchFilters | None = None,
    ) -> list[SearchHit]:
        return _abstract(self)

    def get_records(self, namespace: str | Sequence[str], ids: Sequence[str]) -> list[Record]:
        return _abstract(self)

    def match_record_ids(
        self, namespace: str | Sequence[str], prefix: str, limit: int = 2
    ) -> list[str]:
        return _abstract(self)

    def stored_vectors(
        self, namespace: str | Sequence[str], ids: Sequence[str]
    ) -> dict[str, np.ndarray]:
        return _abstract(self)

    def records(
        self, namespace: str | Sequence[str], *, after_seq: int = 0, limit: int | None = None
    ) -> Iterator[Record]:
        return _abstract(self)

    def known_message_ids(self, namespace: str | Sequence[str], ids: Iterable[str]) -> set[str]:
        return _abstract(self)

    def max_seq(self, namespace: str | Sequence[str]) -> int:
        return _abstract(self)

    def count(self, namespace: str | Sequence[str]) -> int:
        return _abstract(self)

    def namespaces(self) -> list[Namespace]:
        return _abstract(self)

    def delete_records(
        self,
        namespace: str | Sequence[str],
        ids: Sequence[str],
        *,
        actor: str = "api",
        reason: str = "",
    ) -> list[str]:
        return _abstract(self)

    def delete_messages(
        self,
        namespace: str | Sequence[str],
        message_ids: Sequence[str],
        *,
        actor: str = "api",
        reason: str = "",
        source: str = "reingest",
    ) -> tuple[list[str], IngestResult]:
        return _abstract(self)

    def erase_namespace(self, namespace: str | Sequence[str], *, actor: str = "api") -> int:
        return _abstract(self)

    def audit_log(self, namespace: str | Sequence[str] | None = None) -> list[AuditEntry]:
        return _abstract(self)

    def stats(self, namespace: str | Sequence[str] | None = None) -> dict[str, Any]:
        return _abstract(self)

    def flush(self) -> None:
        _abstract(self)

    def close(self) -> None:
        _abstract(self)


class MnemonStore(StoreBackend):
    """The store: ``MnemonStore(path_or_url, embeddings, **settings)``.

    A file path (or ``journal=``) gives the embedded SQLite backend; a ``postgresql://``
    URL gives the PostgreSQL backend (needs the ``[postgres]`` extra). Settings not known
    to the chosen backend raise ``TypeError`` as for any constructor.

    Implements :class:`StoreBackend` through the two subclasses; this class holds the
    code they share.
    """

    embeddings: Embeddings
    model_name: str
    dimension: int
    record_chars: int

    def __new__(cls, *args: Any, **kwargs: Any) -> MnemonStore:
        # Python calls the chosen subclass's ``__init__`` with the same arguments, once.
        if cls is MnemonStore:
            target = args[0] if args else kwargs.get("path", kwargs.get("url"))
            if is_postgres_url(target):
                from mnemon_langgraph.store.postgres import PostgresStore

                return super().__new__(PostgresStore)
            from mnemon_langgraph.store.embedded import EmbeddedStore

            return super().__new__(EmbeddedStore)
        return super().__new__(cls)

    @classmethod
    def open(cls, target: Any, embeddings: Embeddings | None = None, **kwargs: Any) -> MnemonStore:
        """Same as ``MnemonStore(target, embeddings, **kwargs)``."""
        return cls(target, embeddings, **kwargs)

    def __enter__(self) -> MnemonStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

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
            source=source,
            max_chars=self.record_chars,
            pack=pack,
            first_positions=first_positions,
        )

    # -- embedding (shared: both backends store vectors normalised the same way) ----------

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

    def query_vector(self, query: str) -> np.ndarray:
        """The unit vector of ``query`` as :meth:`search` embeds it (read-only, cached).

        Kept for the :data:`QUERY_VECTORS_KEPT` most recent texts (a failed call is not
        kept). The parallel searches of a turn ask from several threads at once, often for
        the same text, and the read path's evidence asks again for the texts it compares
        with the stored record vectors:
        :class:`~mnemon_langgraph.store.query_vectors.SingleFlightCache` embeds each once
        for all of them.

        Raises:
            ModelCallError: The embedder failed or returned an unusable vector.
        """
        cache = self.__dict__.get("_query_vectors")
        if cache is None:
            fresh = SingleFlightCache(self._embed_query_uncached, QUERY_VECTORS_KEPT)
            cache = self.__dict__.setdefault("_query_vectors", fresh)
            if cache is fresh:  # a deletion empties it (a query may quote deleted text)
                register_content_cache(fresh.clear)
        vec: np.ndarray = cache(query)
        return vec

    def _embed_query_uncached(self, query: str) -> np.ndarray:
        try:
            vec = np.asarray(self.embeddings.embed_query(query), dtype=np.float32)
        except Exception as exc:
            raise ModelCallError(f"embedding model failed on the query: {exc}") from exc
        if vec.shape != (self.dimension,) or not np.isfinite(vec).all():
            raise ModelCallError(
                f"embedding model returned an unusable query vector (shape {vec.shape}, "
                f"expected ({self.dimension},), finite values)"
            )
        unit = normalize_rows(vec)
        unit.setflags(write=False)  # shared by every caller of the cache
        return unit

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
        from mnemon_langgraph.store.embedded import load_messages

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

    # =======================================================================================
    # Plain per-user API, for application code that is not an agent (mem0-style). Built on
    # the protocol's methods (ingest, delete_records, records, max_seq, audit_log), so it
    # works the same on either backend.
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
        last = next(iter(self.records(ns, after_seq=self.max_seq(ns) - 1)), None)
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
        return list(self.records(normalize_namespace(user), limit=limit))

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
        records = [_record_json(r) for r in self.records(ns)]
        audit = [_jsonable(dataclasses.asdict(e)) for e in self.audit_log(ns)]
        return json.dumps(
            {"namespace": list(ns), "records": records, "audit": audit},
            ensure_ascii=False,
            indent=2,
        )


def check_unicode(namespace: Namespace, source: str, messages: Sequence[Message]) -> None:
    """Raise :class:`InputError` for text that cannot be stored: lone surrogates, NUL.

    Lone surrogates come from ``json.loads`` of ``"\\ud800"`` escapes or badly decoded input;
    the database, the embedder and the hashers would otherwise fail on them with a bare
    ``UnicodeEncodeError`` halfway through an ingest. NUL (U+0000, e.g. in binary tool
    output) is valid Unicode, but PostgreSQL's ``text`` cannot hold it; both backends refuse
    it here, before anything is written, so the same input behaves the same on either (and
    a namespace part may not hold it either, :func:`~mnemon_langgraph.types.normalize_namespace`).
    """

    def check(value: object, what: str) -> None:
        if isinstance(value, str):
            try:
                value.encode("utf-8")
            except UnicodeEncodeError as exc:
                raise InputError(
                    f"{what} is not valid Unicode (a lone surrogate at position {exc.start})"
                ) from None
            if "\x00" in value:
                raise InputError(
                    f"{what} contains a NUL character (U+0000) at position "
                    f"{value.index(chr(0))}; remove or escape it (PostgreSQL cannot store it)"
                )

    for part in namespace:
        check(part, f"namespace part {part!r}")
    check(source, "source")
    for i, m in enumerate(messages):
        for name in ("text", "speaker", "id"):
            check(getattr(m, name, None), f"message {i} ({name})")


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
