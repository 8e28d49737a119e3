"""The store's retention operations: ``apply_retention``, legal holds, the TTL sweep, and
their async twins.

One-line facades over :mod:`~mnemon_langgraph.store._internal.boundary`'s operations (a mixin of
:class:`~mnemon_langgraph.store.base.MnemonStore`, kept apart so that class stays small);
the default async hooks run the sync hook in a worker thread (the embedded backend), the
PostgreSQL backend overrides them with its native coroutines. What retention removes and how
is in :mod:`mnemon_langgraph.store._internal.retention`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from mnemon_langgraph.store._internal.boundary import (
    APPLY_RETENTION,
    HELD_NAMESPACES,
    HOLD,
    RELEASE,
    SWEEP_EXPIRED_ITEMS,
    acall,
    call,
)
from mnemon_langgraph.store._internal.hooks import abstract_hook
from mnemon_langgraph.store._internal.retention import RetentionReceipt
from mnemon_langgraph.types import Namespace

__all__ = ["RetentionFace"]

# ``self`` is a MnemonStore (this mixin is one of its bases, so it cannot import it).
_Store = Any


_abstract = abstract_hook


class RetentionFace:
    """``apply_retention`` / ``hold`` / ``release`` / ``held_namespaces`` and their twins,
    and ``sweep_expired_items`` (the key-value items' TTL): what makes data leave on time."""

    def sweep_expired_items(
        self: _Store, *, now: datetime | None = None, actor: str = "ttl"
    ) -> int:
        """Delete the key-value items (``MnemonBaseStore``'s, :meth:`kv`) whose TTL ran out
        by ``now`` (default: the wall clock; a timezone-aware time), leaving no residue, as
        :meth:`erase_namespace` does; one ``expire_items`` audit row per namespace (keys,
        never values). Returns how many items were deleted.

        ``MnemonBaseStore.sweep_ttl`` and its background sweeper call this."""
        return call(self, SWEEP_EXPIRED_ITEMS, now=now, actor=actor)

    def _sweep_expired_items(self, now: datetime, actor: str) -> int:
        _abstract(self)

    def apply_retention(
        self: _Store,
        namespace: str | Sequence[str],
        *,
        older_than: timedelta | str,
        keep_last: int | None = None,
        dry_run: bool = False,
        actor: str = "api",
        now: datetime | None = None,
    ) -> RetentionReceipt:
        """Remove what a retention policy says is past, with the same no-residue guarantee
        as :meth:`erase_namespace`; returns a receipt.

        Records whose conversation date is before ``now - older_than`` go (undated records
        never do; the ``keep_last`` newest dated records stay whatever their age), with
        their message ids, vectors and BM25 statistics; consolidated items linked only to
        them go; items keeping other links lose the removed links and the text quoting
        them, and say so; key-value items under the namespace last written before the
        cut-off go. One transaction, one audit row (ids and counts per table, never text),
        then the SQLite WAL is checkpointed (``secure_delete`` is on) or PostgreSQL
        ``VACUUM``\\ s. A namespace under a legal hold (:meth:`hold`) is skipped.

        Args:
            namespace: The namespace (a user is ``("users", id)``).
            older_than: The age (``timedelta`` or ``"30d"``; units s, m, h, d, w).
            keep_last: Keep the newest N dated records whatever their age.
            dry_run: Count what would go, remove nothing, write no audit row.
            actor: Who runs it (the audit row).
            now: The clock (default: now, UTC; naive is UTC).

        Raises:
            InputError: A bad policy, actor or clock.
        """
        return call(
            self,
            APPLY_RETENTION,
            namespace,
            older_than=older_than,
            keep_last=keep_last,
            dry_run=dry_run,
            actor=actor,
            now=now,
        )

    async def aapply_retention(
        self: _Store,
        namespace: str | Sequence[str],
        *,
        older_than: timedelta | str,
        keep_last: int | None = None,
        dry_run: bool = False,
        actor: str = "api",
        now: datetime | None = None,
    ) -> RetentionReceipt:
        """Async :meth:`apply_retention` (same checks)."""
        return await acall(
            self,
            APPLY_RETENTION,
            namespace,
            older_than=older_than,
            keep_last=keep_last,
            dry_run=dry_run,
            actor=actor,
            now=now,
        )

    def hold(
        self: _Store, namespace: str | Sequence[str], *, actor: str = "api", reason: str = ""
    ) -> bool:
        """Put ``namespace`` under a legal hold: retention skips it until :meth:`release`.

        Audited (``hold``). Returns whether it was not held before."""
        return call(self, HOLD, namespace, actor=actor, reason=reason)

    async def ahold(
        self: _Store, namespace: str | Sequence[str], *, actor: str = "api", reason: str = ""
    ) -> bool:
        """Async :meth:`hold`."""
        return await acall(self, HOLD, namespace, actor=actor, reason=reason)

    def release(
        self: _Store, namespace: str | Sequence[str], *, actor: str = "api", reason: str = ""
    ) -> bool:
        """Lift the legal hold of ``namespace`` (audited, ``release``); whether it was held."""
        return call(self, RELEASE, namespace, actor=actor, reason=reason)

    async def arelease(
        self: _Store, namespace: str | Sequence[str], *, actor: str = "api", reason: str = ""
    ) -> bool:
        """Async :meth:`release`."""
        return await acall(self, RELEASE, namespace, actor=actor, reason=reason)

    def held_namespaces(self: _Store) -> list[Namespace]:
        """Every namespace under a legal hold, sorted."""
        return call(self, HELD_NAMESPACES)

    async def aheld_namespaces(self: _Store) -> list[Namespace]:
        """Async :meth:`held_namespaces`."""
        return await acall(self, HELD_NAMESPACES)

    # -- hooks (arguments checked at the boundary) ------------------------------------------

    def _apply_retention(
        self, ns: Namespace, age: timedelta, keep: int | None, dry: bool, actor: str, now: datetime
    ) -> RetentionReceipt:
        return _abstract(self)

    async def _aapply_retention(
        self, ns: Namespace, age: timedelta, keep: int | None, dry: bool, actor: str, now: datetime
    ) -> RetentionReceipt:
        return await asyncio.to_thread(self._apply_retention, ns, age, keep, dry, actor, now)

    def _hold(self, ns: Namespace, actor: str, reason: str) -> bool:
        return _abstract(self)

    async def _ahold(self, ns: Namespace, actor: str, reason: str) -> bool:
        return await asyncio.to_thread(self._hold, ns, actor, reason)

    def _release(self, ns: Namespace, actor: str, reason: str) -> bool:
        return _abstract(self)

    async def _arelease(self, ns: Namespace, actor: str, reason: str) -> bool:
        return await asyncio.to_thread(self._release, ns, actor, reason)

    def _held_namespaces(self) -> list[Namespace]:
        return _abstract(self)

    async def _aheld_namespaces(self) -> list[Namespace]:
        return await asyncio.to_thread(self._held_namespaces)
