"""The store's one checked boundary: every operation's arguments are checked here, once.

Each public operation of :class:`~mnemon_langgraph.store.base.MnemonStore` is one
:class:`Operation` of :data:`OPERATIONS`: a checker that turns the caller's arguments into
the backend hook's (a namespace becomes a :data:`~mnemon_langgraph.types.Namespace` tuple,
ids a de-duplicated tuple of strings, counts and dates are bounded), and the name of that
hook. The sync method and its async twin are one-line facades over the same operation
(``self._call(GET_RECORDS, namespace, ids)`` / ``await self._acall(GET_RECORDS, …)``), so
the two faces cannot check differently. Below this module, hooks, the SQLite ``Journal``
and the PostgreSQL parts take only checked arguments and never check again.

Adding an operation: write its checker and :class:`Operation` here, the two one-line
facades in ``store/base.py`` / ``store/_internal/async_face.py``, its abstract hook in
``store/_internal/hooks.py``, one hook per backend
(``store/embedded/_store.py``, ``store/postgres/_store.py``; the default async hook runs the
sync one in a worker thread), and its case in ``tests/test_store_conformance.py``
(``docs/design.md``, "Adding a store operation").
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from mnemon_langgraph.errors import InputError
from mnemon_langgraph.records._content_caches import forget_cached_content
from mnemon_langgraph.records.schema import namespace_key
from mnemon_langgraph.store._internal.contract import (
    MAX_NAMESPACE_BYTES,
    MAX_SEQ,
    IngestResult,
    check_bounded,
    check_erasable,
    check_filters,
    check_ids,
    check_ingest,
    check_positions,
    check_prefix,
    check_search,
    check_text,
    check_watermark,
    written_result,
)
from mnemon_langgraph.store._internal.retention import check_keep_last, check_now, check_older_than
from mnemon_langgraph.types import (
    NOT_GIVEN,
    Namespace,
    SearchFilters,
    normalize_namespace,
    origin_label,
)

__all__ = [
    "APPLY_RETENTION",
    "AUDIT_LOG",
    "COUNT",
    "DELETE_MESSAGES",
    "DELETE_RECORDS",
    "ERASE_NAMESPACE",
    "GET_RECORDS",
    "HELD_NAMESPACES",
    "HOLD",
    "HOLDS_NAMESPACE",
    "INGEST",
    "KNOWN_MESSAGE_IDS",
    "MATCH_RECORD_IDS",
    "MAX_SEQ_OF",
    "NAMESPACES",
    "OPERATIONS",
    "RELEASE",
    "SEARCH",
    "SESSION_RECORDS",
    "STATS",
    "STORED_VECTORS",
    "SWEEP_EXPIRED_ITEMS",
    "TERM_STATISTICS",
    "WARM",
    "Checked",
    "Operation",
    "acall",
    "call",
    "checked_records",
]


class _Unset:
    """The marker of a :class:`Checked` whose result the hook computes."""

    def __repr__(self) -> str:
        return "CALL_HOOK"


CALL_HOOK: Any = _Unset()


@dataclass(frozen=True, slots=True)
class Checked:
    """One call's arguments after the boundary.

    Attributes:
        args: The hook's positional arguments (checked and normalised).
        result: The call's result when the boundary already knows it (``k=0``, no ids):
            the hook is then not called.
        finish: Turns the hook's result into the public one (ingest's counts).
        guard: A check that needs the store (it is called with it before the hook; raises
            to refuse): the rare one that reads stored data, run in a worker thread on the
            async face.
    """

    args: tuple[Any, ...] = ()
    result: Any = CALL_HOOK
    finish: Callable[[Any], Any] | None = None
    guard: Callable[[Any], object] | None = None


@dataclass(frozen=True, slots=True)
class Operation:
    """A store operation: its checker and the backend hook it calls.

    Attributes:
        name: The public method (``"get_records"``; the async twin adds an ``a``).
        check: The one checker of its arguments (the public method's signature).
        hook: The sync hook (``"_get_records"``); the async hook is ``"_a" + name``
            without the underscore (``"_aget_records"``).
        deletes: A deletion: the content caches are emptied when it ends (also when it
            raises: a failed deletion may have removed some rows).
    """

    name: str
    check: Callable[..., Checked]
    hook: str
    deletes: bool = False

    @property
    def async_hook(self) -> str:
        return "_a" + self.hook.lstrip("_")


def _namespace_or_all(namespace: object) -> Namespace | None:
    return None if namespace is None else normalize_namespace(namespace)  # type: ignore[arg-type]


def _ns(namespace: object) -> Namespace:
    return normalize_namespace(namespace)  # type: ignore[arg-type]


def _checked_ingest(
    namespace: object,
    messages: object,
    *,
    origin: Any = NOT_GIVEN,
    pack: object = True,
    progress: object = None,
    source: Any = NOT_GIVEN,
) -> Checked:
    label = origin_label(origin, source, where="ingest")
    ns, batch = check_ingest(namespace, messages, label, pack, progress)
    return Checked((ns, batch.messages, label, pack, progress), finish=batch.result)


def _checked_search(
    query: object,
    *,
    namespace: object,
    k: object = 20,
    offset: object = 0,
    filters: object = None,
) -> Checked:
    ns = check_search(query, namespace, k, offset, filters)
    if k == 0:
        return Checked(result=[])
    return Checked((query, ns, k, offset, filters))


def _checked_get_records(namespace: object, ids: object) -> Checked:
    return Checked((_ns(namespace), check_ids(ids)))


def _checked_match_record_ids(namespace: object, prefix: object, limit: object = 2) -> Checked:
    ns = _ns(namespace)
    if not check_prefix(prefix, limit):
        return Checked(result=[])
    return Checked((ns, prefix, limit))


def _checked_term_statistics(namespace: object, terms: object) -> Checked:
    return Checked((_ns(namespace), check_ids(terms, "terms")))


def checked_records(
    namespace: object, *, after_seq: object = 0, limit: object = None, filters: object = None
) -> tuple[Namespace, int, int | None, SearchFilters | None]:
    """The checked arguments of ``records`` / ``arecords`` (an iterator on each face, so
    not an :class:`Operation`): ``(namespace, watermark, limit, filters)``."""
    ns, after = _ns(namespace), check_watermark(after_seq)
    left = None if limit is None else check_bounded(limit, "limit", MAX_SEQ)
    return ns, after, left, check_filters(filters)


def _checked_session_records(
    namespace: object,
    session: object,
    *,
    start: object = 0,
    stop: object = None,
    filters: object = None,
) -> Checked:
    ns, number = _ns(namespace), check_bounded(session, "session", MAX_SEQ)
    return Checked((ns, number, *check_positions(start, stop), check_filters(filters)))


def _checked_namespace(namespace: object) -> Checked:
    return Checked((_ns(namespace),))


def _checked_optional_namespace(namespace: object = None) -> Checked:
    return Checked((_namespace_or_all(namespace),))


def _checked_nothing() -> Checked:
    return Checked()


def _checked_delete_records(
    namespace: object, ids: object, *, actor: object = "api", reason: object = ""
) -> Checked:
    ns, wanted = _ns(namespace), check_ids(ids)
    check_text(actor, "actor")
    check_text(reason, "reason")
    return Checked((ns, wanted, actor, reason)) if wanted else Checked(result=[])


def _checked_delete_messages(
    namespace: object,
    message_ids: object,
    *,
    actor: object = "api",
    reason: object = "",
    origin: Any = "reingest",
    source: Any = NOT_GIVEN,
) -> Checked:
    label = origin_label(origin, source, where="delete_messages", default="reingest")
    ns, wanted = _ns(namespace), check_ids(message_ids, "message_ids")
    for value, what in ((actor, "actor"), (reason, "reason"), (label, "origin")):
        check_text(value, what)
    if not wanted:
        return Checked(result=([], IngestResult(0, 0, 0)))
    return Checked((ns, wanted, actor, reason, label), finish=_deleted_and_written)


def _deleted_and_written(result: tuple[list[str], Any]) -> tuple[list[str], IngestResult]:
    deleted, written = result
    return deleted, written_result(written)


def _checked_erase_namespace(namespace: object, *, actor: object = "api") -> Checked:
    ns = _ns(namespace)
    check_text(actor, "actor")
    if len(namespace_key(ns).encode("utf-8")) <= MAX_NAMESPACE_BYTES:
        return Checked((ns, actor))
    # too long to store now: erasable only if an older version stored something there
    return Checked((ns, actor), guard=lambda store: check_erasable(ns, store._holds_namespace))


def _checked_apply_retention(
    namespace: object,
    *,
    older_than: object,
    keep_last: object = None,
    dry_run: object = False,
    actor: object = "api",
    now: object = None,
) -> Checked:
    ns = _ns(namespace)
    age, keep = check_older_than(older_than), check_keep_last(keep_last)
    check_text(actor, "actor")
    return Checked((ns, age, keep, bool(dry_run), actor, check_now(now)))


def _checked_hold(namespace: object, *, actor: object = "api", reason: object = "") -> Checked:
    ns = _ns(namespace)
    check_text(actor, "actor")
    check_text(reason, "reason")
    return Checked((ns, actor, reason))


def _checked_sweep(*, now: object = None, actor: object = "ttl") -> Checked:
    check_text(actor, "actor")
    if now is None:
        return Checked((datetime.now(UTC), actor))
    if not isinstance(now, datetime) or now.tzinfo is None or now.utcoffset() is None:
        raise InputError(f"now must be a timezone-aware datetime, got {now!r}")
    return Checked((now.astimezone(UTC), actor))


INGEST = Operation("ingest", _checked_ingest, "_write_messages")
SEARCH = Operation("search", _checked_search, "_search")
GET_RECORDS = Operation("get_records", _checked_get_records, "_get_records")
MATCH_RECORD_IDS = Operation("match_record_ids", _checked_match_record_ids, "_match_record_ids")
STORED_VECTORS = Operation("stored_vectors", _checked_get_records, "_stored_vectors")
TERM_STATISTICS = Operation("term_statistics", _checked_term_statistics, "_term_statistics")
SESSION_RECORDS = Operation("session_records", _checked_session_records, "_session_records")
KNOWN_MESSAGE_IDS = Operation("known_message_ids", _checked_get_records, "_known_message_ids")
MAX_SEQ_OF = Operation("max_seq", _checked_namespace, "_max_seq")
COUNT = Operation("count", _checked_namespace, "_count")
NAMESPACES = Operation("namespaces", _checked_nothing, "_namespaces")
HOLDS_NAMESPACE = Operation("holds_namespace", _checked_namespace, "_holds_namespace")
WARM = Operation("warm", _checked_namespace, "_warm")
AUDIT_LOG = Operation("audit_log", _checked_optional_namespace, "_audit_log")
STATS = Operation("stats", _checked_optional_namespace, "_stats")
DELETE_RECORDS = Operation(
    "delete_records", _checked_delete_records, "_delete_records", deletes=True
)
DELETE_MESSAGES = Operation(
    "delete_messages", _checked_delete_messages, "_delete_messages", deletes=True
)
ERASE_NAMESPACE = Operation(
    "erase_namespace", _checked_erase_namespace, "_erase_namespace", deletes=True
)
APPLY_RETENTION = Operation(
    "apply_retention", _checked_apply_retention, "_apply_retention", deletes=True
)
HOLD = Operation("hold", _checked_hold, "_hold")
RELEASE = Operation("release", _checked_hold, "_release")
HELD_NAMESPACES = Operation("held_namespaces", _checked_nothing, "_held_namespaces")
# not ``deletes``: key-value items are not record content (nothing of them is cached)
SWEEP_EXPIRED_ITEMS = Operation("sweep_expired_items", _checked_sweep, "_sweep_expired_items")

OPERATIONS: tuple[Operation, ...] = (
    INGEST,
    SEARCH,
    GET_RECORDS,
    MATCH_RECORD_IDS,
    STORED_VECTORS,
    TERM_STATISTICS,
    SESSION_RECORDS,
    KNOWN_MESSAGE_IDS,
    MAX_SEQ_OF,
    COUNT,
    NAMESPACES,
    HOLDS_NAMESPACE,
    WARM,
    AUDIT_LOG,
    STATS,
    DELETE_RECORDS,
    DELETE_MESSAGES,
    ERASE_NAMESPACE,
    APPLY_RETENTION,
    HOLD,
    RELEASE,
    HELD_NAMESPACES,
    SWEEP_EXPIRED_ITEMS,
)
"""Every checked operation of the store (``records`` / ``arecords`` use
:func:`checked_records`: an iterator on each face)."""


def call(store: Any, op: Operation, *args: Any, **kwargs: Any) -> Any:
    """``op`` on the sync face: check the arguments, then call ``store``'s sync hook."""
    checked = op.check(*args, **kwargs)
    if checked.result is not CALL_HOOK:
        return checked.result
    if checked.guard is not None:
        checked.guard(store)
    try:
        out = getattr(store, op.hook)(*checked.args)
    finally:
        if op.deletes:
            forget_cached_content()
    return out if checked.finish is None else checked.finish(out)


async def acall(store: Any, op: Operation, *args: Any, **kwargs: Any) -> Any:
    """``op`` on the async face: the same checks, then ``store``'s async hook awaited."""
    checked = op.check(*args, **kwargs)
    if checked.result is not CALL_HOOK:
        return checked.result
    if checked.guard is not None:
        await asyncio.to_thread(checked.guard, store)
    try:
        out = await getattr(store, op.async_hook)(*checked.args)
    finally:
        if op.deletes:
            forget_cached_content()
    return out if checked.finish is None else checked.finish(out)
