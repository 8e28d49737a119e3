"""Key-value items: what both backends keep for LangGraph's ``BaseStore`` (not the index).

:class:`~mnemon_langgraph.integrations.basestore.MnemonBaseStore` keeps ``put`` / ``get`` /
``delete`` items (a LangMem memory, a profile) in the store's own database, beside the
records, in two tables of the backend's schema (created by its migrations, versioned with
the journal's or the PostgreSQL schema):

* ``mnemon_kv_items(namespace, key, value, text, vectors, dim, fields, created_at,
  updated_at, expires_at, ttl_minutes)``: the value as JSON, its indexed text (for BM25),
  the unit vectors of its indexed texts (``float32``, ``n × dim``) and, for an item put
  with a TTL, when it expires and the TTL a read refreshes it by (LangGraph's TTL; both
  ``NULL`` for an item that never expires). Every read passes the caller's *now* and its
  SQL leaves out the items expired by then; :meth:`KVItems.sweep` deletes them.
  ``namespace`` holds the stored form of a namespace
  (:func:`~mnemon_langgraph.records.schema.namespace_key`, a JSON array), so the
  store's ``erase_namespace`` (which erases every table with a ``namespace`` column) erases
  them too.
* ``mnemon_kv_audit(id, at, actor, action, ns, keys, count)``: one row per deletion (keys
  and counts, never values); append-only, like the records' audit.

"Key-value items" are not the consolidated *index items* (timelines, values, instructions:
``store.item_store()``). Each backend has one :class:`KVItems` on its own connection or
pool: :class:`~mnemon_langgraph.store.embedded._kv_items.EmbeddedKVItems` (the journal's
SQLite file) and :class:`~mnemon_langgraph.store.postgres._kv_items.PostgresKVItems` (the
store's engine); ``store.kv()`` gives it. This module holds what the two share: the row
and write types and the SQL both speak.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Literal, Protocol

import numpy as np

from mnemon_langgraph.records.schema import namespace_key, ns_from_key
from mnemon_langgraph.types import Namespace

__all__ = [
    "EXPIRE_ACTION",
    "KV_COLUMNS",
    "RETENTION_ACTION",
    "IndexSpec",
    "KVAudit",
    "KVItems",
    "KVRow",
    "KVWrite",
    "audit_entry",
    "audit_rows",
    "expires_after",
    "expiry_stamp",
    "keys_by_namespace",
    "kv_params",
    "kv_row",
    "kv_upsert",
    "prefix_of",
]

IndexSpec = Literal[False] | Sequence[str]
"""What of a value is indexed: ``False`` (nothing) or LangGraph field paths (``["$"]``: all)."""


@dataclass(frozen=True, slots=True)
class KVRow:
    """One stored key-value item, as the tables hold it.

    Attributes:
        namespace: Its namespace.
        key: Its key.
        value: The value as put.
        text: The indexed text (BM25), empty when the item is not searchable.
        vectors: Unit vectors of its indexed texts (``n × dim``), ``None`` when not indexed.
        created_at: First put (UTC).
        updated_at: Last put (UTC).
        fields: What was indexed (``False`` or field paths), so a copy can re-index it.
        expires_at: When the item expires (UTC), ``None`` if never.
        ttl_minutes: Its TTL in minutes (what a refreshing read adds to *now*), ``None``
            if it never expires.
    """

    namespace: Namespace
    key: str
    value: dict[str, Any]
    text: str
    vectors: np.ndarray | None
    created_at: datetime
    updated_at: datetime
    fields: IndexSpec = ("$",)
    expires_at: datetime | None = None
    ttl_minutes: float | None = None


@dataclass(frozen=True, slots=True)
class KVWrite:
    """One put (``value`` is the JSON text) or delete (``value is None``) of an item.

    ``fields`` is the JSON of the index spec the texts came from; ``stamp`` (a restore)
    sets both times instead of keeping ``created_at`` and taking now as ``updated_at``.
    ``ttl`` (minutes) makes the item expire that long after the write (``None``: never);
    ``expires`` (a restore) sets the expiry instead.
    """

    namespace: Namespace
    key: str
    value: str | None
    text: str = ""
    vectors: np.ndarray | None = None
    fields: str = '["$"]'
    stamp: tuple[datetime, datetime] | None = None
    ttl: float | None = None
    expires: datetime | None = None


@dataclass(frozen=True, slots=True)
class KVAudit:
    """One audited deletion of key-value items.

    Attributes:
        id: Audit row id (grows with every deletion).
        at: When (UTC).
        actor: Who asked (``"basestore"`` for ``delete``, the caller's actor for an erase
            or a sweep: ``"ttl"`` for the BaseStore's sweeper).
        action: ``delete_items``, ``erase_namespace``, ``expire_items`` (a TTL sweep) or
            ``apply_retention`` (a retention run, ``store.apply_retention``).
        namespace: The namespace.
        count: Items deleted.
        keys: Keys of the deleted items (empty for an erase; a sweep and a retention run
            name them).
    """

    id: int
    at: datetime
    actor: str
    action: str
    namespace: Namespace
    count: int
    keys: tuple[str, ...] = ()


class KVItems(Protocol):
    """A backend's key-value items (``store.kv()``), all async (the BaseStore's one core).

    Every read takes ``now`` and leaves out the items expired by then, in its SQL (an item
    whose ``expires_at`` is ``now`` or earlier is expired). :meth:`sweep` is what the
    store's hooks of its checked ``sweep_expired_items`` run (``store/_internal/boundary.py``; the
    embedded one calls its sync ``sweep_sync``); nothing else should call it.
    """

    async def get(self, namespace: Namespace, key: str, now: datetime) -> KVRow | None: ...

    async def write(
        self, writes: Sequence[KVWrite], *, actor: str, now: datetime | None = None
    ) -> None:
        """Apply ``writes`` in one transaction (``now``: the write's time, default the
        wall clock; a TTL counts from it)."""
        ...

    def write_here(
        self, writes: Sequence[KVWrite], *, actor: str, now: datetime | None = None
    ) -> None:
        """:meth:`write` from the calling thread, waiting: so it joins a
        ``store.transaction()`` that thread holds."""
        ...

    async def under(self, prefix: Namespace, now: datetime | None) -> list[KVRow]:
        """Items under ``prefix`` not expired by ``now`` (``None``: all stored rows)."""
        ...

    async def namespaces(self, now: datetime) -> list[Namespace]: ...

    async def refresh(self, rows: Sequence[KVRow], now: datetime) -> None:
        """Move the expiry of ``rows`` that have a TTL (and have not expired by ``now``)
        to ``now`` plus their TTL (LangGraph's ``refresh_ttl``)."""
        ...

    async def sweep(self, now: datetime, actor: str) -> int:
        """Delete every item expired by ``now``, with one ``expire_items`` audit row per
        namespace (keys, never values), leaving no residue (erase's guarantee); how many."""
        ...

    async def erase(self, namespace: Namespace, *, actor: str) -> int: ...

    async def audit_log(self, namespace: Namespace | None) -> list[KVAudit]: ...

    def close(self) -> None: ...


def _blob(vectors: np.ndarray | None) -> tuple[bytes | None, int]:
    if vectors is None or not len(vectors):
        return None, 0
    arr = np.ascontiguousarray(vectors, dtype=np.float32)
    return arr.tobytes(), int(arr.shape[1])


def _vectors(blob: bytes | memoryview | None, dim: int | None) -> np.ndarray | None:
    if blob is None or not dim:
        return None
    return np.frombuffer(bytes(blob), dtype=np.float32).reshape(-1, int(dim))


def prefix_of(prefix: Namespace) -> tuple[str, str]:
    """``(exact, starts)``: a namespace is under ``prefix`` if its key equals ``exact`` or
    starts with ``starts`` — the JSON key up to a ``,`` that only a segment boundary has."""
    exact = namespace_key(prefix)
    return exact, exact[:-1] + ","


def audit_rows(writes: Sequence[KVWrite], deleted: dict[tuple[str, str], bool]) -> dict[str, list]:
    """The deleted keys of ``writes`` by stored namespace (one audit row each)."""
    by_ns: dict[str, list[str]] = {}
    for w in writes:
        ns = namespace_key(w.namespace)
        if w.value is None and deleted.get((ns, w.key)):
            by_ns.setdefault(ns, []).append(w.key)
    return by_ns


KV_COLUMNS = (
    "namespace, key, value, text, vectors, dim, created_at, updated_at, fields, "
    "expires_at, ttl_minutes"
)

EXPIRE_ACTION = "expire_items"
"""The audit action of a TTL sweep's deletions."""

RETENTION_ACTION = "apply_retention"
"""The audit action of the key-value items a retention run removes (``store.apply_retention``:
the records' audit row has the same action)."""


def keys_by_namespace(pairs: Sequence[tuple[str, str]]) -> dict[str, list[str]]:
    """``(stored namespace, key)`` pairs as sorted keys per stored namespace, namespaces in
    order: one audit row each (a sweep's, a retention run's)."""
    by_ns: dict[str, list[str]] = {}
    for ns, key in pairs:
        by_ns.setdefault(ns, []).append(key)
    return {ns: sorted(by_ns[ns]) for ns in sorted(by_ns)}


def kv_upsert(mark: str, w: KVWrite) -> str:
    """The upsert of ``w`` (``mark``: the driver's placeholder); a restore sets both times.

    A put replaces the item's TTL as LangGraph's stores do: its expiry is counted from this
    write, and a put without a TTL makes the item one that never expires."""
    marks = ", ".join([mark] * 11)
    times = "created_at = excluded.created_at, " if w.stamp is not None else ""
    return (
        f"INSERT INTO mnemon_kv_items({KV_COLUMNS}) VALUES ({marks}) "
        "ON CONFLICT (namespace, key) DO UPDATE SET value = excluded.value, "
        "text = excluded.text, vectors = excluded.vectors, dim = excluded.dim, "
        f"fields = excluded.fields, {times}updated_at = excluded.updated_at, "
        "expires_at = excluded.expires_at, ttl_minutes = excluded.ttl_minutes"
    )


def expires_after(now: datetime, ttl_minutes: float | None) -> datetime | None:
    """When an item written or refreshed at ``now`` with ``ttl_minutes`` expires."""
    return None if ttl_minutes is None else now + timedelta(minutes=ttl_minutes)


def expiry_stamp(when: datetime) -> str:
    """``when`` as the embedded backend stores times: ISO 8601 in UTC, always with
    microseconds, so that stored expiries compare as text in SQL in time order."""
    return when.astimezone(UTC).isoformat(timespec="microseconds")


def kv_params(ns: str, w: KVWrite, now: datetime) -> tuple[Any, ...]:
    """The upsert's parameters (``ns``: the stored namespace)."""
    blob, dim = _blob(w.vectors)
    created, updated = w.stamp if w.stamp is not None else (now, now)
    expires = w.expires if w.expires is not None else expires_after(now, w.ttl)
    return (ns, w.key, w.value, w.text, blob, dim, created, updated, w.fields, expires, w.ttl)


def kv_row(r: Sequence[Any]) -> KVRow:
    """A row of ``SELECT`` :data:`KV_COLUMNS` as a :class:`KVRow`."""
    created, updated, expires = r[6], r[7], r[9]
    return KVRow(
        namespace=ns_from_key(r[0]),
        key=r[1],
        value=json.loads(r[2]),
        text=r[3],
        vectors=_vectors(r[4], r[5]),
        created_at=_utc(created),
        updated_at=_utc(updated),
        fields=json.loads(r[8]) or False,
        expires_at=None if expires is None else _utc(expires),
        ttl_minutes=None if r[10] is None else float(r[10]),
    )


def _utc(value: datetime | str) -> datetime:
    return (value if isinstance(value, datetime) else datetime.fromisoformat(value)).astimezone(UTC)


def audit_entry(r: Sequence[Any]) -> KVAudit:
    """A row of ``mnemon_kv_audit`` (``id, at, actor, action, ns, keys, count``)."""
    at = r[1] if isinstance(r[1], datetime) else datetime.fromisoformat(r[1])
    return KVAudit(
        id=int(r[0]),
        at=at.astimezone(UTC),
        actor=r[2],
        action=r[3],
        namespace=ns_from_key(r[4]),
        count=int(r[6]),
        keys=tuple(json.loads(r[5])),
    )
