"""The plain per-user API of every store, for application code that is not an agent.

mem0-style calls built only on the :class:`~mnemon_langgraph.store.base.StoreBackend`
contract (``ingest``, ``delete_records``, ``records``, ``max_seq``, ``audit_log``), so they
work the same on either backend. A ``user`` is a namespace: ``"ada"`` is ``("ada",)``;
``("users", "ada")`` works too. :class:`~mnemon_langgraph.store.base.MnemonStore` inherits
it.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Protocol

from mnemon_langgraph.errors import InputError, warn_deprecated
from mnemon_langgraph.types import (
    NOT_GIVEN,
    Message,
    Namespace,
    Record,
    as_naive_utc,
    normalize_namespace,
    origin_label,
)

if TYPE_CHECKING:
    from mnemon_langgraph.items import IndexItem, ItemStore
    from mnemon_langgraph.records.schema import AuditEntry
    from mnemon_langgraph.store._internal.contract import IngestResult

    class StoreBackend(Protocol):
        """What the per-user API calls on its store: a part of
        :class:`~mnemon_langgraph.store.base.StoreBackend`, named here because
        ``store/base.py`` builds on this module (and so is never imported by it)."""

        def ingest(self, *args: Any, **kwargs: Any) -> IngestResult: ...

        def records(self, *args: Any, **kwargs: Any) -> Iterator[Record]: ...

        def delete_records(self, *args: Any, **kwargs: Any) -> list[str]: ...

        def audit_log(self, *args: Any, **kwargs: Any) -> list[AuditEntry]: ...

        def max_seq(self, *args: Any, **kwargs: Any) -> int: ...

        def item_store(self, *args: Any, **kwargs: Any) -> ItemStore: ...


__all__ = [
    "PerUserAPI",
    "alast_record",
    "check_limit",
    "consolidated_items",
    "date_messages",
    "dated_after",
    "export_json",
    "last_record",
    "messages_of",
    "user_messages",
]


def date_messages(
    store: StoreBackend,
    namespace: Namespace,
    messages: Sequence[Message],
    *,
    now: datetime | None = None,
) -> list[Message]:
    """The one date rule of every surface: a message is dated when it was written.

    A message that carries its own timestamp keeps it (and its session); one without is
    dated ``now`` (default: the current time; any time zone, stored as naive UTC) and
    continues the namespace's last session, unless more than
    :data:`~mnemon_langgraph.loaders.messages.DEFAULT_SESSION_GAP` passed since that
    session's last record, when it opens the next one.
    """
    return dated_after(last_record(store, namespace), messages, now=now)


def last_record(store: Any, namespace: Namespace) -> Record | None:
    """The namespace's most recent record (``None`` when it holds none): what the date rule
    continues from."""
    top = store.max_seq(namespace)
    return next(iter(store.records(namespace, after_seq=max(top - 1, 0), limit=1)), None)


async def alast_record(store: Any, namespace: Namespace) -> Record | None:
    """Async :func:`last_record` (the store's async twins)."""
    top = await store.amax_seq(namespace)
    async for record in store.arecords(namespace, after_seq=max(top - 1, 0), limit=1):
        return record
    return None


def dated_after(
    last: Record | None, messages: Sequence[Message], *, now: datetime | None = None
) -> list[Message]:
    """:func:`date_messages` given the namespace's last record (``None``: an empty one).

    The rule without the read, so the sync and the async per-user API share it.
    """
    from mnemon_langgraph.loaders.messages import DEFAULT_SESSION_GAP

    stamp = as_naive_utc(now or datetime.now(UTC))
    assert stamp is not None
    session = last.session if last is not None else 1
    if last is not None and last.date is not None and stamp - last.date > DEFAULT_SESSION_GAP:
        session += 1
    return [
        m if m.timestamp is not None else dataclasses.replace(m, timestamp=stamp, session=session)
        for m in messages
    ]


def user_messages(
    user: str | Sequence[str], messages: Sequence[Any]
) -> tuple[Namespace, list[Message]]:
    """The namespace of ``user`` and ``messages`` as :class:`Message` objects (no I/O).

    Raises:
        InputError: Not a list of messages, a mix of ``Message`` objects and chat messages,
            or a message that cannot be converted (unknown role, no text).
    """
    from langchain_core.messages import convert_to_messages

    from mnemon_langgraph.loaders import messages_from_langchain

    ns = normalize_namespace(user)
    if isinstance(messages, str | bytes | Mapping | Message) or not isinstance(messages, Iterable):
        raise InputError(f"add_messages: pass a list of messages, got {type(messages).__name__}")
    ours = [m for m in messages if isinstance(m, Message)]
    theirs = [m for m in messages if not isinstance(m, Message)]
    if ours and theirs:
        raise InputError("add_messages: pass Message objects or chat messages, not both")
    try:
        return ns, ours or _ids_after_dating(messages_from_langchain, convert_to_messages(theirs))
    except (ValueError, NotImplementedError) as exc:
        raise InputError(f"add_messages: {exc}") from exc


def consolidated_items(store: Any, namespace: Namespace) -> list[IndexItem]:
    """The index items consolidation wrote for ``namespace`` (write order), or none."""
    items = store.item_store()
    try:
        return list(items.all_items(namespace))
    finally:
        items.close()


def check_limit(limit: int | None) -> None:
    """``limit`` is ``None`` or a count (the per-user listings' bound)."""
    from mnemon_langgraph.types import check_count

    if limit is not None:
        check_count(limit, what="limit")


def messages_of(records: Iterable[Record], limit: int | None) -> list[Message]:
    """The messages of ``records`` whole, in conversation order, at most ``limit``."""
    from mnemon_langgraph.records.schema import rebuild_messages

    ordered = sorted(records, key=lambda r: (r.session, r.position, r.seq))
    messages = rebuild_messages(ordered, exclude=set())
    return messages if limit is None else messages[:limit]


def export_json(
    namespace: Namespace,
    records: Iterable[Record],
    audit: Iterable[Any],
    items: Iterable[IndexItem] = (),
) -> str:
    """The per-user export document: the records, the audit trail, then what consolidation
    wrote about the user (``items``, each with the ids of its records; see ``export``)."""
    from mnemon_langgraph.items import item_dict

    return json.dumps(
        {
            "namespace": list(namespace),
            "records": [_record_json(r) for r in records],
            "audit": [_jsonable(dataclasses.asdict(e)) for e in audit],
            "items": [{k: v for k, v in item_dict(i).items() if k != "namespace"} for i in items],
        },
        ensure_ascii=False,
        indent=2,
    )


class PerUserAPI:
    """``add_messages`` / ``list_messages`` / ``export`` over the store contract (a user is a
    namespace); message-level deletion is the store's ``delete_messages(user, ids)``, with ids
    from :meth:`list_messages`. ``list_records`` and ``delete`` are deprecated aliases of
    ``records`` and ``delete_records``."""

    def add_messages(
        self: StoreBackend,
        user: str | Sequence[str],
        messages: Sequence[Any],
        *,
        origin: str = "api",
        now: datetime | None = None,
        source: str = NOT_GIVEN,
    ) -> IngestResult:
        """Write a user's messages (no model call): LangChain messages, ``Message`` objects,
        ``("user", "text")`` tuples or ``{"role": ..., "content": ...}`` dicts.

        The one date rule of every surface: a message is dated when it was written (``now``,
        default the current UTC time) unless it carries its own timestamp; undated messages
        continue the user's last session unless more than four hours passed since it.
        ``origin`` is the ingest label (default ``"api"``; ``source`` is its deprecated old
        name, which warns).

        Returns:
            What was written (messages already stored, by id, are skipped).

        Raises:
            InputError: A message that cannot be converted (unknown role, no text).
        """
        label = origin_label(origin, source, where="add_messages", default="api")
        ns, given = user_messages(user, messages)
        return self.ingest(ns, date_messages(self, ns, given, now=now), origin=label)

    def list_records(
        self: StoreBackend, user: str | Sequence[str], *, limit: int | None = None
    ) -> list[Record]:
        """Deprecated: ``list(store.records(user, limit=limit))`` (one store vocabulary,
        ``docs/design.md``); warns, and goes after one release."""
        warn_deprecated("MnemonStore.list_records", "list(MnemonStore.records(...))")
        return list(self.records(normalize_namespace(user), limit=limit))

    def list_messages(
        self: StoreBackend, user: str | Sequence[str], *, limit: int | None = None
    ) -> list[Message]:
        """A user's messages in conversation order (session, then place), at most ``limit``.

        One entry per message, with the id that ``delete_messages(user, [id])`` takes: a
        record may pack several short messages (and a long message may span records), so a
        caller who thinks in messages deletes by message id, not by record. A message split
        over records comes back whole; its timestamp is its record's date.
        """
        check_limit(limit)
        return messages_of(self.records(normalize_namespace(user)), limit)

    def delete(
        self: StoreBackend,
        user: str | Sequence[str],
        record_ids: Sequence[str],
        *,
        reason: str = "",
    ) -> list[str]:
        """Deprecated: ``store.delete_records(user, record_ids, reason=reason)`` (one store
        vocabulary, ``docs/design.md``); warns, and goes after one release. Its audit rows
        keep the actor ``api.delete``."""
        warn_deprecated("MnemonStore.delete", "MnemonStore.delete_records")
        return self.delete_records(user, record_ids, actor="api.delete", reason=reason)

    def export(self: StoreBackend, user: str | Sequence[str]) -> str:
        """Everything stored for a user as JSON: records, the audit trail, consolidated items.

        For data-access requests: the records with their dates, sessions, speakers and message
        ids, the journal's audit entries for the namespace, and the index items consolidation
        wrote (topic timelines, values, instructions) with the ids of their records.
        Embeddings are not exported (they are derived from the text).
        """
        ns = normalize_namespace(user)
        return export_json(ns, self.records(ns), self.audit_log(ns), consolidated_items(self, ns))


def _ids_after_dating(convert: Any, chat: list[Any]) -> list[Message]:
    """``convert(chat)`` with the ids it derived taken off again (ids given are kept).

    ``messages_from_langchain`` derives an id for a message without one before the message
    is dated; ``ingest`` derives it again once it is, from its time too, so the same words in
    a later call are a new message, and the same call repeated (same ``now``) is not.
    """
    given = [isinstance(getattr(m, "id", None), str) and m.id.strip() for m in chat]
    converted: list[Message] = convert(chat)
    return [
        m if had_id else dataclasses.replace(m, id=None)
        for m, had_id in zip(converted, given, strict=True)
    ]


def _jsonable(value: Any) -> Any:
    """``value`` with datetimes as ISO 8601 and tuples as lists (for :meth:`PerUserAPI.export`)."""
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    return value


def _record_json(record: Record) -> dict[str, Any]:
    return _jsonable(dataclasses.asdict(record))  # type: ignore[no-any-return]
