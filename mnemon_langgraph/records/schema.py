"""What both backends store the same way: namespace keys, audit entries, a record's lines.

The stored form of a namespace (:func:`namespace_key`), one audited deletion
(:class:`AuditEntry`), and splitting a record back into its messages (:func:`record_lines`,
:func:`rebuild_messages`). Each backend's own tables live with it
(:mod:`mnemon_langgraph.store.embedded._schema`, :mod:`mnemon_langgraph.store.postgres._schema`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from mnemon_langgraph.types import Message, Namespace, Record, Role, normalize_namespace

__all__ = [
    "AuditEntry",
    "namespace_key",
    "ns_from_key",
    "ns_to_key",
    "rebuild_messages",
    "record_lines",
]


def namespace_key(namespace: str | Sequence[str]) -> str:
    """The stored form of a namespace: a compact JSON array of its parts.

    Args:
        namespace: A namespace (normalized first).

    Returns:
        For example ``'["users","ada@example.com"]'``.
    """
    return json.dumps(
        list(normalize_namespace(namespace)), ensure_ascii=False, separators=(",", ":")
    )


def ns_to_key(ns: Namespace) -> str:
    """:func:`namespace_key` of a namespace already checked at the store's boundary
    (:mod:`mnemon_langgraph.store._internal.boundary`): no second check, only the stored form.

    Raises:
        TypeError: ``ns`` is not a tuple (a caller below the boundary skipped it).
    """
    if type(ns) is not tuple:
        raise TypeError(f"a checked namespace is a tuple, got {type(ns).__name__}: {ns!r}")
    return json.dumps(list(ns), ensure_ascii=False, separators=(",", ":"))


def ns_from_key(key: str) -> Namespace:
    return tuple(json.loads(key))


@dataclass(frozen=True, slots=True)
class AuditEntry:
    """One audited deletion.

    Attributes:
        id: Audit row id (increases with every deletion).
        at: When it happened (UTC).
        actor: Who asked for it (``"api"``, ``"cli"``, a user id …).
        action: ``delete_records``, ``delete_messages`` or ``erase_namespace``.
        namespace: The namespace it applied to.
        count: Number of records deleted.
        record_ids: Ids of the deleted records (empty for an erase).
        message_ids: Message ids a ``delete_messages`` deleted (ids it was asked for that
            were not stored are left out).
        reason: Free-text reason given by the caller (never record text).
    """

    id: int
    at: datetime
    actor: str
    action: str
    namespace: Namespace
    count: int
    record_ids: tuple[str, ...] = ()
    message_ids: tuple[str, ...] = ()
    reason: str = ""


def _split_line(line: str, speakers: Sequence[str]) -> tuple[str, str]:
    """Split a ``speaker: text`` line, preferring the longest known speaker prefix."""
    for speaker in sorted(speakers, key=len, reverse=True):
        if line.startswith(f"{speaker}: "):
            return speaker, line[len(speaker) + 2 :]
        if line == f"{speaker}:":
            return speaker, ""
    head, sep, tail = line.partition(": ")
    return (head, tail) if sep else ("", line)


def record_lines(record: Record) -> list[tuple[str, str, str, Role]]:
    """``(message_id, speaker, text, role)`` for each line of ``record``.

    Lines, ``message_ids`` and ``roles`` are parallel (see :mod:`~._chunking`).
    """
    out: list[tuple[str, str, str, Role]] = []
    lines = record.text.split("\n")
    for i, line in enumerate(lines):
        mid = record.message_ids[i] if i < len(record.message_ids) else record.message_ids[-1]
        role: Role = record.roles[i] if i < len(record.roles) else "user"
        speaker, text = _split_line(line, record.speakers)
        out.append((mid, speaker, text, role))
    return out


def rebuild_messages(records: Sequence[Record], *, exclude: set[str]) -> list[Message]:
    """Rejoin the messages held by ``records`` (ordered), leaving out ``exclude``."""
    order: list[str] = []
    pieces: dict[str, list[str]] = {}
    meta: dict[str, tuple[str, Role, Record]] = {}
    for rec in records:
        for mid, speaker, text, role in record_lines(rec):
            if mid in exclude:
                continue
            if mid not in pieces:
                order.append(mid)
                pieces[mid] = []
                meta[mid] = (speaker, role, rec)
            pieces[mid].append(text)
    out = []
    for mid in order:
        speaker, role, rec = meta[mid]
        out.append(
            Message(
                text=" ".join(p for p in pieces[mid] if p),
                speaker=speaker,
                role=role,
                id=mid,
                timestamp=rec.date,
                session=rec.session,
            )
        )
    return out
