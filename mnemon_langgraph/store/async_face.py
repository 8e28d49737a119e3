"""The async face of every store: an ``a``-twin of each public method, with the same checks.

A twin checks its arguments exactly as the sync method does (the shared checks of
:mod:`~mnemon_langgraph.store.base`), then awaits the backend's async hook. The default
hooks here run the sync hook in a worker thread (the embedded backend: SQLite and the index
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

from mnemon_langgraph.records.content_caches import forget_cached_content
from mnemon_langgraph.records.schema import namespace_key
from mnemon_langgraph.store.contract import (
    MAX_NAMESPACE_BYTES,
    MAX_SEQ,
    check_bounded,
    check_erasable,
    check_ids,
    check_positions,
    check_prefix,
    check_text,
    check_watermark,
    written_result,
)
from mnemon_langgraph.types import (
    NOT_GIVEN,
    Message,
    Namespace,
    Record,
    normalize_namespace,
    origin_label,
)

if TYPE_CHECKING:
    from mnemon_langgraph.records.schema import AuditEntry
    from mnemon_langgraph.store.contract import IngestResult

__all__ = ["AsyncFace"]

# ``self`` is a MnemonStore (this mixin is one of its bases, so it cannot import it); a
# Protocol of the thirty hooks it calls would only repeat their typed definitions in base.py.
_Store = Any

_PAGE = 1000


class AsyncFace:
    """``aget_records``, ``arecords``, ``adelete_records`` …: the async twins of a store."""

    # -- reads ----------------------------------------------------------------------------

    async def aget_records(
        self: _Store, namespace: str | Sequence[str], ids: Sequence[str]
    ) -> list[Record]:
        """Async :meth:`~mnemon_langgraph.store.base.MnemonStore.get_records`."""
        return await self._aget_records(normalize_namespace(namespace), check_ids(ids))

    async def amatch_record_ids(
        self: _Store, namespace: str | Sequence[str], prefix: str, limit: int = 2
    ) -> list[str]:
        """Async :meth:`~mnemon_langgraph.store.base.MnemonStore.match_record_ids`."""
        ns = normalize_namespace(namespace)
        if not check_prefix(prefix, limit):
            return []
        return await self._amatch_record_ids(ns, prefix, limit)

    async def astored_vectors(
        self: _Store, namespace: str | Sequence[str], ids: Sequence[str]
    ) -> dict[str, np.ndarray]:
        """Async :meth:`~mnemon_langgraph.store.base.MnemonStore.stored_vectors`."""
        return await self._astored_vectors(normalize_namespace(namespace), check_ids(ids))

    async def aterm_statistics(
        self: _Store, namespace: str | Sequence[str], terms: Sequence[str]
    ) -> tuple[int, dict[str, int]]:
        """Async :meth:`~mnemon_langgraph.store.base.MnemonStore.term_statistics`."""
        ns = normalize_namespace(namespace)
        return await self._aterm_statistics(ns, check_ids(terms, "terms"))

    async def asession_records(
        self: _Store,
        namespace: str | Sequence[str],
        session: int,
        *,
        start: int = 0,
        stop: int | None = None,
    ) -> list[Record]:
        """Async :meth:`~mnemon_langgraph.store.base.MnemonStore.session_records`."""
        ns, number = normalize_namespace(namespace), check_bounded(session, "session", MAX_SEQ)
        return await self._asession_records(ns, number, *check_positions(start, stop))

    async def arecords(
        self: _Store,
        namespace: str | Sequence[str],
        *,
        after_seq: int = 0,
        limit: int | None = None,
    ) -> AsyncIterator[Record]:
        """Async :meth:`~mnemon_langgraph.store.base.MnemonStore.records`: an async iterator
        reading pages of a thousand records (arguments checked at the first step)."""
        ns = normalize_namespace(namespace)
        last = check_watermark(after_seq)
        left = None if limit is None else check_bounded(limit, "limit", MAX_SEQ)
        while left is None or left > 0:
            size = _PAGE if left is None else min(_PAGE, left)
            page = await self._apage(ns, last, size)
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
        return await self._aknown_message_ids(normalize_namespace(namespace), check_ids(ids))

    async def amax_seq(self: _Store, namespace: str | Sequence[str]) -> int:
        """Async :meth:`~mnemon_langgraph.store.base.MnemonStore.max_seq`."""
        return await self._amax_seq(normalize_namespace(namespace))

    async def acount(self: _Store, namespace: str | Sequence[str]) -> int:
        """Async :meth:`~mnemon_langgraph.store.base.MnemonStore.count`."""
        return await self._acount(normalize_namespace(namespace))

    async def anamespaces(self: _Store) -> list[Namespace]:
        """Async :meth:`~mnemon_langgraph.store.base.MnemonStore.namespaces`."""
        return await self._anamespaces()

    async def aholds_namespace(self: _Store, namespace: str | Sequence[str]) -> bool:
        """Async :meth:`~mnemon_langgraph.store.base.MnemonStore.holds_namespace`."""
        return await self._aholds_namespace(normalize_namespace(namespace))

    async def aaudit_log(
        self: _Store, namespace: str | Sequence[str] | None = None
    ) -> list[AuditEntry]:
        """Async :meth:`~mnemon_langgraph.store.base.MnemonStore.audit_log`."""
        ns = None if namespace is None else normalize_namespace(namespace)
        return await self._aaudit_log(ns)

    async def astats(self: _Store, namespace: str | Sequence[str] | None = None) -> dict[str, Any]:
        """Async :meth:`~mnemon_langgraph.store.base.MnemonStore.stats`."""
        ns = None if namespace is None else normalize_namespace(namespace)
        return await self._astats(ns)

    # -- writes ---------------------------------------------------------------------------

    async def adelete_records(
        self: _Store,
        namespace: str | Sequence[str],
        ids: Sequence[str],
        *,
        actor: str = "api",
        reason: str = "",
    ) -> list[str]:
        """Async :meth:`~mnemon_langgraph.store.base.MnemonStore.delete_records`."""
        ns, wanted = normalize_namespace(namespace), check_ids(ids)
        check_text(actor, "actor")
        check_text(reason, "reason")
        if not wanted:
            return []
        try:
            return await self._adelete_records(ns, wanted, actor, reason)
        finally:
            forget_cached_content()

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
        label = origin_label(origin, source, where="adelete_messages", default="reingest")
        ns, wanted = normalize_namespace(namespace), check_ids(message_ids, "message_ids")
        for value, what in ((actor, "actor"), (reason, "reason"), (label, "origin")):
            check_text(value, what)
        if not wanted:
            return [], written_result([])
        try:
            deleted, written = await self._adelete_messages(ns, wanted, actor, reason, label)
        finally:
            forget_cached_content()
        return deleted, written_result(written)

    async def aerase_namespace(
        self: _Store, namespace: str | Sequence[str], *, actor: str = "api"
    ) -> int:
        """Async :meth:`~mnemon_langgraph.store.base.MnemonStore.erase_namespace`."""
        ns = normalize_namespace(namespace)
        if len(namespace_key(ns).encode("utf-8")) > MAX_NAMESPACE_BYTES:  # rare: a thread
            ns = await asyncio.to_thread(check_erasable, ns, self._holds_namespace)
        check_text(actor, "actor")
        try:
            return await self._aerase_namespace(ns, actor)
        finally:
            forget_cached_content()

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
        """Async :meth:`~mnemon_langgraph.store.users.PerUserAPI.add_messages`."""
        from mnemon_langgraph.store.users import alast_record, dated_after, user_messages

        label = origin_label(origin, source, where="aadd_messages", default="api")
        ns, given = user_messages(user, messages)
        last = await alast_record(self, ns)
        return await self.aingest(ns, dated_after(last, given, now=now), origin=label)

    async def alist_records(
        self: _Store, user: str | Sequence[str], *, limit: int | None = None
    ) -> list[Record]:
        """Async :meth:`~mnemon_langgraph.store.users.PerUserAPI.list_records`."""
        return [r async for r in self.arecords(normalize_namespace(user), limit=limit)]

    async def alist_messages(
        self: _Store, user: str | Sequence[str], *, limit: int | None = None
    ) -> list[Message]:
        """Async :meth:`~mnemon_langgraph.store.users.PerUserAPI.list_messages`."""
        from mnemon_langgraph.store.users import check_limit, messages_of

        check_limit(limit)
        return messages_of([r async for r in self.arecords(normalize_namespace(user))], limit)

    async def adelete(
        self: _Store,
        user: str | Sequence[str],
        record_ids: Sequence[str],
        *,
        reason: str = "",
    ) -> list[str]:
        """Async :meth:`~mnemon_langgraph.store.users.PerUserAPI.delete`."""
        from mnemon_langgraph.store.users import check_record_ids

        return await self.adelete_records(
            user, check_record_ids(record_ids), actor="api.delete", reason=reason
        )

    async def aexport(self: _Store, user: str | Sequence[str]) -> str:
        """Async :meth:`~mnemon_langgraph.store.users.PerUserAPI.export`."""
        from mnemon_langgraph.store.users import consolidated_items, export_json

        ns = normalize_namespace(user)
        records = [r async for r in self.arecords(ns)]
        audit = await self.aaudit_log(ns)
        # The item stores have one (sync) face; reading them blocks, so a worker thread.
        items = await asyncio.to_thread(consolidated_items, self, ns)
        return export_json(ns, records, audit, items)

    # -- default async hooks: the sync hook in a worker thread ------------------------------

    async def _aget_records(self: _Store, ns: Namespace, ids: list[str]) -> list[Record]:
        return await asyncio.to_thread(self._get_records, ns, ids)

    async def _amatch_record_ids(self: _Store, ns: Namespace, prefix: str, limit: int) -> list[str]:
        return await asyncio.to_thread(self._match_record_ids, ns, prefix, limit)

    async def _astored_vectors(
        self: _Store, ns: Namespace, ids: list[str]
    ) -> dict[str, np.ndarray]:
        return await asyncio.to_thread(self._stored_vectors, ns, ids)

    async def _aterm_statistics(
        self: _Store, ns: Namespace, terms: list[str]
    ) -> tuple[int, dict[str, int]]:
        return await asyncio.to_thread(self._term_statistics, ns, terms)

    async def _apage(self: _Store, ns: Namespace, after: int, size: int) -> list[Record]:
        return await asyncio.to_thread(lambda: list(self._records(ns, after, size)))

    async def _asession_records(
        self: _Store, ns: Namespace, session: int, start: int, stop: int
    ) -> list[Record]:
        return await asyncio.to_thread(self._session_records, ns, session, start, stop)

    async def _aknown_message_ids(self: _Store, ns: Namespace, ids: list[str]) -> set[str]:
        return await asyncio.to_thread(self._known_message_ids, ns, ids)

    async def _amax_seq(self: _Store, ns: Namespace) -> int:
        return await asyncio.to_thread(self._max_seq, ns)

    async def _acount(self: _Store, ns: Namespace) -> int:
        return await asyncio.to_thread(self._count, ns)

    async def _anamespaces(self: _Store) -> list[Namespace]:
        return await asyncio.to_thread(self.namespaces)

    async def _aholds_namespace(self: _Store, ns: Namespace) -> bool:
        return await asyncio.to_thread(self._holds_namespace, ns)

    async def _aaudit_log(self: _Store, ns: Namespace | None) -> list[AuditEntry]:
        return await asyncio.to_thread(self._audit_log, ns)

    async def _astats(self: _Store, ns: Namespace | None) -> dict[str, Any]:
        return await asyncio.to_thread(self._stats, ns)

    async def _adelete_records(
        self: _Store, ns: Namespace, ids: list[str], actor: str, reason: str
    ) -> list[str]:
        return await asyncio.to_thread(self._delete_records, ns, ids, actor, reason)

    async def _adelete_messages(
        self: _Store, ns: Namespace, ids: list[str], actor: str, reason: str, source: str
    ) -> tuple[list[str], list[Record]]:
        return await asyncio.to_thread(self._delete_messages, ns, ids, actor, reason, source)

    async def _aerase_namespace(self: _Store, ns: Namespace, actor: str) -> int:
        return await asyncio.to_thread(self._erase_namespace, ns, actor)
