"""The async face of every store: an ``a``-twin of each public method, with the same checks.

A twin is a one-line facade over the same
:class:`~mnemon_langgraph.store._internal.boundary.Operation` as the sync method (one checker,
:mod:`~mnemon_langgraph.store._internal.boundary`), then awaits the backend's async hook. The
default hooks here run the sync hook in a worker thread (the embedded backend: SQLite and the index
files block); the PostgreSQL backend overrides each with its native async core, where the
sync method is the thin facade (it waits for the same coroutine on the store's loop).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Iterable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

import numpy as np

from mnemon_langgraph.errors import warn_deprecated
from mnemon_langgraph.store._internal.boundary import (
    AUDIT_LOG,
    COUNT,
    DELETE_MESSAGES,
    DELETE_RECORDS,
    ERASE_NAMESPACE,
    GET_RECORDS,
    HOLDS_NAMESPACE,
    KNOWN_MESSAGE_IDS,
    MATCH_RECORD_IDS,
    MAX_SEQ_OF,
    NAMESPACES,
    SESSION_RECORDS,
    STATS,
    STORED_VECTORS,
    SWEEP_EXPIRED_ITEMS,
    TERM_STATISTICS,
    WARM,
    acall,
    checked_records,
)
from mnemon_langgraph.store._internal.contract import RECORD_PAGE
from mnemon_langgraph.types import (
    NOT_GIVEN,
    Message,
    Namespace,
    Record,
    SearchFilters,
    normalize_namespace,
    origin_label,
)

if TYPE_CHECKING:
    from mnemon_langgraph.records.schema import AuditEntry
    from mnemon_langgraph.store._internal.contract import IngestResult

__all__ = ["AsyncFace"]

# ``self`` is a MnemonStore (this mixin is one of its bases, so it cannot import it); a
# Protocol of the hooks it calls would only repeat their typed definitions in base.py.
_Store = Any


class AsyncFace:
    """``aget_records``, ``arecords``, ``adelete_records`` …: the async twins of a store."""

    # -- one-line twins of store/_internal/boundary.py's operations (the sync methods' checks) -----

    async def aget_records(
        self: _Store, namespace: str | Sequence[str], ids: Sequence[str]
    ) -> list[Record]:
        """Async :meth:`~mnemon_langgraph.store.base.MnemonStore.get_records`."""
        return await acall(self, GET_RECORDS, namespace, ids)

    async def amatch_record_ids(
        self: _Store, namespace: str | Sequence[str], prefix: str, limit: int = 2
    ) -> list[str]:
        """Async :meth:`~mnemon_langgraph.store.base.MnemonStore.match_record_ids`."""
        return await acall(self, MATCH_RECORD_IDS, namespace, prefix, limit)

    async def astored_vectors(
        self: _Store, namespace: str | Sequence[str], ids: Sequence[str]
    ) -> dict[str, np.ndarray]:
        """Async :meth:`~mnemon_langgraph.store.base.MnemonStore.stored_vectors`."""
        return await acall(self, STORED_VECTORS, namespace, ids)

    async def aterm_statistics(
        self: _Store, namespace: str | Sequence[str], terms: Sequence[str]
    ) -> tuple[int, dict[str, int]]:
        """Async :meth:`~mnemon_langgraph.store.base.MnemonStore.term_statistics`."""
        return await acall(self, TERM_STATISTICS, namespace, terms)

    async def asession_records(
        self: _Store,
        namespace: str | Sequence[str],
        session: int,
        *,
        start: int = 0,
        stop: int | None = None,
        filters: SearchFilters | None = None,
    ) -> list[Record]:
        """Async :meth:`~mnemon_langgraph.store.base.MnemonStore.session_records`."""
        return await acall(
            self, SESSION_RECORDS, namespace, session, start=start, stop=stop, filters=filters
        )

    async def arecords(
        self: _Store,
        namespace: str | Sequence[str],
        *,
        after_seq: int = 0,
        limit: int | None = None,
        filters: SearchFilters | None = None,
    ) -> AsyncIterator[Record]:
        """Async :meth:`~mnemon_langgraph.store.base.MnemonStore.records`: an async iterator
        reading pages of a thousand records (arguments checked at the first step)."""
        ns, last, left, bounds = checked_records(
            namespace, after_seq=after_seq, limit=limit, filters=filters
        )
        while left is None or left > 0:
            size = RECORD_PAGE if left is None else min(RECORD_PAGE, left)
            page = await self._apage(ns, last, size, bounds)
            for record in page:
                yield record
            if len(page) < size:
                return
            last = page[-1].seq
            if left is not None:
                left -= len(page)

    async def aknown_message_ids(
        self: _Store, namespace: str | Sequence[str], ids: Iterable[str]
    ) -> set[str]:
        """Async :meth:`~mnemon_langgraph.store.base.MnemonStore.known_message_ids`."""
        return await acall(self, KNOWN_MESSAGE_IDS, namespace, ids)

    async def amax_seq(self: _Store, namespace: str | Sequence[str]) -> int:
        """Async :meth:`~mnemon_langgraph.store.base.MnemonStore.max_seq`."""
        return await acall(self, MAX_SEQ_OF, namespace)

    async def acount(self: _Store, namespace: str | Sequence[str]) -> int:
        """Async :meth:`~mnemon_langgraph.store.base.MnemonStore.count`."""
        return await acall(self, COUNT, namespace)

    async def anamespaces(self: _Store) -> list[Namespace]:
        """Async :meth:`~mnemon_langgraph.store.base.MnemonStore.namespaces`."""
        return await acall(self, NAMESPACES)

    async def aholds_namespace(self: _Store, namespace: str | Sequence[str]) -> bool:
        """Async :meth:`~mnemon_langgraph.store.base.MnemonStore.holds_namespace`."""
        return await acall(self, HOLDS_NAMESPACE, namespace)

    async def awarm(self: _Store, namespace: str | Sequence[str]) -> bool:
        """Async :meth:`~mnemon_langgraph.store.base.MnemonStore.warm`."""
        return await acall(self, WARM, namespace)

    async def aaudit_log(
        self: _Store, namespace: str | Sequence[str] | None = None
    ) -> list[AuditEntry]:
        """Async :meth:`~mnemon_langgraph.store.base.MnemonStore.audit_log`."""
        return await acall(self, AUDIT_LOG, namespace)

    async def astats(self: _Store, namespace: str | Sequence[str] | None = None) -> dict[str, Any]:
        """Async :meth:`~mnemon_langgraph.store.base.MnemonStore.stats`."""
        return await acall(self, STATS, namespace)

    async def adelete_records(
        self: _Store,
        namespace: str | Sequence[str],
        ids: Sequence[str],
        *,
        actor: str = "api",
        reason: str = "",
    ) -> list[str]:
        """Async :meth:`~mnemon_langgraph.store.base.MnemonStore.delete_records`."""
        return await acall(self, DELETE_RECORDS, namespace, ids, actor=actor, reason=reason)

    async def adelete_messages(
        self: _Store,
        namespace: str | Sequence[str],
        message_ids: Sequence[str],
        *,
        actor: str = "api",
        reason: str = "",
        origin: str = "reingest",
        source: str = NOT_GIVEN,
    ) -> tuple[list[str], IngestResult]:
        """Async :meth:`~mnemon_langgraph.store.base.MnemonStore.delete_messages`."""
        return await acall(
            self,
            DELETE_MESSAGES,
            namespace,
            message_ids,
            actor=actor,
            reason=reason,
            origin=origin,
            source=source,
        )

    async def aerase_namespace(
        self: _Store, namespace: str | Sequence[str], *, actor: str = "api"
    ) -> int:
        """Async :meth:`~mnemon_langgraph.store.base.MnemonStore.erase_namespace`."""
        return await acall(self, ERASE_NAMESPACE, namespace, actor=actor)

    async def asweep_expired_items(
        self: _Store, *, now: datetime | None = None, actor: str = "ttl"
    ) -> int:
        """Async :meth:`~mnemon_langgraph.store.base.MnemonStore.sweep_expired_items`."""
        return await acall(self, SWEEP_EXPIRED_ITEMS, now=now, actor=actor)

    async def aingest_file(
        self: _Store,
        path: str | os.PathLike[str],
        *,
        namespace: str | Sequence[str],
        format: str = "auto",
        pack: bool = True,
    ) -> IngestResult:
        """Async :meth:`~mnemon_langgraph.store.base.MnemonStore.ingest_file` (reading
        the file blocks, so the whole call runs in a worker thread)."""
        return await asyncio.to_thread(
            self.ingest_file, path, namespace=namespace, format=format, pack=pack
        )

    # -- the per-user API (composed of the async calls above: native on PostgreSQL) --------

    async def aadd_messages(
        self: _Store,
        user: str | Sequence[str],
        messages: Sequence[Any],
        *,
        origin: str = "api",
        now: datetime | None = None,
        source: str = NOT_GIVEN,
    ) -> IngestResult:
        """Async :meth:`~mnemon_langgraph.store._internal.users.PerUserAPI.add_messages`."""
        from mnemon_langgraph.store._internal.users import alast_record, dated_after, user_messages

        label = origin_label(origin, source, where="aadd_messages", default="api")
        ns, given = user_messages(user, messages)
        last = await alast_record(self, ns)
        return await self.aingest(ns, dated_after(last, given, now=now), origin=label)

    async def alist_records(
        self: _Store, user: str | Sequence[str], *, limit: int | None = None
    ) -> list[Record]:
        """Deprecated: ``[r async for r in store.arecords(user, limit=limit)]``; warns."""
        warn_deprecated("MnemonStore.alist_records", "MnemonStore.arecords")
        return [r async for r in self.arecords(normalize_namespace(user), limit=limit)]

    async def alist_messages(
        self: _Store, user: str | Sequence[str], *, limit: int | None = None
    ) -> list[Message]:
        """Async :meth:`~mnemon_langgraph.store._internal.users.PerUserAPI.list_messages`."""
        from mnemon_langgraph.store._internal.users import check_limit, messages_of

        check_limit(limit)
        return messages_of([r async for r in self.arecords(normalize_namespace(user))], limit)

    async def adelete(
        self: _Store,
        user: str | Sequence[str],
        record_ids: Sequence[str],
        *,
        reason: str = "",
    ) -> list[str]:
        """Deprecated: ``await store.adelete_records(user, record_ids, reason=reason)``;
        warns (its audit rows keep the actor ``api.delete``)."""
        warn_deprecated("MnemonStore.adelete", "MnemonStore.adelete_records")
        return await self.adelete_records(user, record_ids, actor="api.delete", reason=reason)

    async def aexport(self: _Store, user: str | Sequence[str]) -> str:
        """Async :meth:`~mnemon_langgraph.store._internal.users.PerUserAPI.export`."""
        from mnemon_langgraph.store._internal.users import consolidated_items, export_json

        ns = normalize_namespace(user)
        records = [r async for r in self.arecords(ns)]
        audit = await self.aaudit_log(ns)
        # The item stores have one (sync) face; reading them blocks, so a worker thread.
        items = await asyncio.to_thread(consolidated_items, self, ns)
        return export_json(ns, records, audit, items)

    # -- default async hooks: the sync hook in a worker thread ------------------------------

    async def _aget_records(self: _Store, ns: Namespace, ids: tuple[str, ...]) -> list[Record]:
        return await asyncio.to_thread(self._get_records, ns, ids)

    async def _amatch_record_ids(self: _Store, ns: Namespace, prefix: str, limit: int) -> list[str]:
        return await asyncio.to_thread(self._match_record_ids, ns, prefix, limit)

    async def _astored_vectors(
        self: _Store, ns: Namespace, ids: tuple[str, ...]
    ) -> dict[str, np.ndarray]:
        return await asyncio.to_thread(self._stored_vectors, ns, ids)

    async def _aterm_statistics(
        self: _Store, ns: Namespace, terms: tuple[str, ...]
    ) -> tuple[int, dict[str, int]]:
        return await asyncio.to_thread(self._term_statistics, ns, terms)

    async def _apage(
        self: _Store, ns: Namespace, after: int, size: int, filters: SearchFilters | None = None
    ) -> list[Record]:
        return await asyncio.to_thread(lambda: list(self._records(ns, after, size, filters)))

    async def _asession_records(
        self: _Store,
        ns: Namespace,
        session: int,
        start: int,
        stop: int,
        filters: SearchFilters | None = None,
    ) -> list[Record]:
        return await asyncio.to_thread(self._session_records, ns, session, start, stop, filters)

    async def _aknown_message_ids(self: _Store, ns: Namespace, ids: tuple[str, ...]) -> set[str]:
        return await asyncio.to_thread(self._known_message_ids, ns, ids)

    async def _amax_seq(self: _Store, ns: Namespace) -> int:
        return await asyncio.to_thread(self._max_seq, ns)

    async def _acount(self: _Store, ns: Namespace) -> int:
        return await asyncio.to_thread(self._count, ns)

    async def _anamespaces(self: _Store) -> list[Namespace]:
        return await asyncio.to_thread(self._namespaces)

    async def _aholds_namespace(self: _Store, ns: Namespace) -> bool:
        return await asyncio.to_thread(self._holds_namespace, ns)

    async def _awarm(self: _Store, ns: Namespace) -> bool:
        return await asyncio.to_thread(self._warm, ns)

    async def _aaudit_log(self: _Store, ns: Namespace | None) -> list[AuditEntry]:
        return await asyncio.to_thread(self._audit_log, ns)

    async def _astats(self: _Store, ns: Namespace | None) -> dict[str, Any]:
        return await asyncio.to_thread(self._stats, ns)

    async def _adelete_records(
        self: _Store, ns: Namespace, ids: tuple[str, ...], actor: str, reason: str
    ) -> list[str]:
        return await asyncio.to_thread(self._delete_records, ns, ids, actor, reason)

    async def _adelete_messages(
        self: _Store, ns: Namespace, ids: tuple[str, ...], actor: str, reason: str, source: str
    ) -> tuple[list[str], list[Record]]:
        return await asyncio.to_thread(self._delete_messages, ns, ids, actor, reason, source)

    async def _aerase_namespace(self: _Store, ns: Namespace, actor: str) -> int:
        return await asyncio.to_thread(self._erase_namespace, ns, actor)

    async def _asweep_expired_items(self: _Store, now: datetime, actor: str) -> int:
        return await asyncio.to_thread(self._sweep_expired_items, now, actor)
