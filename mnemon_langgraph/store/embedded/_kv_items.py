"""The embedded backend's key-value items (:mod:`mnemon_langgraph.store.kv_items`): two
tables of the journal's SQLite file (schema version 2; the TTL columns since version 3),
on the journal's connections and write transactions (``secure_delete``,
``synchronous=FULL``, WAL checkpoint after a deletion, as for records)."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from mnemon_langgraph.records.schema import namespace_key, ns_from_key
from mnemon_langgraph.store.kv_items import (
    EXPIRE_ACTION,
    KV_COLUMNS,
    KVAudit,
    KVRow,
    KVWrite,
    audit_entry,
    audit_rows,
    expiry_stamp,
    keys_by_namespace,
    kv_params,
    kv_row,
    kv_upsert,
    prefix_of,
)
from mnemon_langgraph.types import Namespace

if TYPE_CHECKING:
    from mnemon_langgraph.store.embedded._journal import Journal

__all__ = ["EmbeddedKVItems"]

_LIVE = "(expires_at IS NULL OR expires_at > ?)"
"""The SQL condition of an item not expired by the parameter (a stored expiry text)."""

_V2_COLUMNS = KV_COLUMNS.replace("expires_at, ttl_minutes", "NULL, NULL")
_V2_LIVE = "(? IS NOT NULL)"
"""The same for a version-2 journal opened read-only (it cannot be migrated): its items
have no TTL columns, so none expires."""


class EmbeddedKVItems:
    """Key-value items in the journal's file (``store.kv()`` of an embedded store).

    The async methods run the blocking SQLite work in a worker thread (the async rule of
    ``docs/design.md``). Closing is the journal's: :meth:`close` does nothing.

    Args:
        journal: The store's journal.
    """

    def __init__(self, journal: Journal) -> None:
        self.journal = journal
        self.path = journal.path
        self._sql: tuple[str, str] | None = None

    def _columns(self) -> tuple[str, str]:
        """``(columns, live condition)`` for this journal's item table: version 3's, or
        version 2's when the journal is read-only and older (only read-only opens read it)."""
        if self._sql is None:
            self._sql = KV_COLUMNS, _LIVE
            if getattr(self.journal, "read_only", False):
                names = {r[1] for r in self.journal._read("PRAGMA table_info(mnemon_kv_items)")}
                if "expires_at" not in names:
                    self._sql = _V2_COLUMNS, _V2_LIVE
        return self._sql

    # -- sync work (the journal's connection of the calling thread) ------------------------

    def _write_in(
        self, conn: sqlite3.Connection, writes: Sequence[KVWrite], actor: str, now: datetime
    ) -> bool:
        deleted: dict[tuple[str, str], bool] = {}
        for w in writes:
            ns = namespace_key(w.namespace)
            if w.value is None:
                cur = conn.execute(
                    "DELETE FROM mnemon_kv_items WHERE namespace = ? AND key = ?", (ns, w.key)
                )
                deleted[(ns, w.key)] = deleted.get((ns, w.key), False) or cur.rowcount > 0
                continue
            stamped = kv_params(ns, w, now)
            conn.execute(kv_upsert("?", w), tuple(_iso(v) for v in stamped))
            deleted[(ns, w.key)] = False  # a put after a delete in one batch: not deleted
        for ns, keys in audit_rows(writes, deleted).items():
            conn.execute(
                "INSERT INTO mnemon_kv_audit(at, actor, action, ns, keys, count) "
                "VALUES (?, ?, 'delete_items', ?, ?, ?)",
                (now.isoformat(), actor, ns, json.dumps(keys), len(keys)),
            )
        return any(deleted.values())

    def _write(self, writes: Sequence[KVWrite], actor: str, now: datetime) -> None:
        outer = self.journal.in_transaction()
        with self.journal.transaction() as conn:
            removed = self._write_in(conn, writes, actor, now)
        if removed and not outer:  # a caller's transaction: nothing is committed yet
            self.journal.checkpoint()  # a deleted value leaves neither the WAL nor a free page

    def _get(self, namespace: Namespace, key: str, now: datetime) -> KVRow | None:
        columns, live = self._columns()
        rows = self.journal._read(
            f"SELECT {columns} FROM mnemon_kv_items WHERE namespace = ? AND key = ? AND {live}",
            (namespace_key(namespace), key, expiry_stamp(now)),
        )
        return kv_row(rows[0]) if rows else None

    def _under(self, prefix: Namespace, now: datetime | None) -> list[KVRow]:
        """The items under ``prefix`` not expired by ``now`` (``None``: every stored row,
        expired or not: what an erase must reach)."""
        columns, live = self._columns()
        sql = f"SELECT {columns} FROM mnemon_kv_items WHERE 1 = 1"
        params: tuple[Any, ...] = ()
        if prefix:
            exact, starts = prefix_of(prefix)
            sql += " AND (namespace = ? OR substr(namespace, 1, ?) = ?)"
            params = (exact, len(starts), starts)
        if now is not None:
            sql += f" AND {live}"
            params += (expiry_stamp(now),)
        return [kv_row(r) for r in self.journal._read(sql + " ORDER BY namespace, key", params)]

    def _namespaces(self, now: datetime) -> list[Namespace]:
        rows = self.journal._read(
            f"SELECT DISTINCT namespace FROM mnemon_kv_items WHERE {self._columns()[1]}",
            (expiry_stamp(now),),
        )
        return sorted(ns_from_key(r[0]) for r in rows)

    def _refresh(self, rows: Sequence[KVRow], now: datetime) -> None:
        timed = [r for r in rows if r.ttl_minutes is not None]
        if not timed:
            return  # nothing to refresh: no write transaction for a plain read
        stamp = expiry_stamp(now)
        with self.journal.transaction() as conn:
            for r in timed:
                until = now + timedelta(minutes=r.ttl_minutes or 0)
                conn.execute(
                    "UPDATE mnemon_kv_items SET expires_at = ? WHERE namespace = ? AND key = ? "
                    "AND ttl_minutes IS NOT NULL AND expires_at > ?",
                    (expiry_stamp(until), namespace_key(r.namespace), r.key, stamp),
                )

    def sweep_sync(self, now: datetime, actor: str) -> int:
        """Delete the items expired by ``now`` (the store's sync sweep hook), audited per
        namespace; the WAL is checkpointed after, as for an erase."""
        with self.journal.transaction() as conn:
            gone = conn.execute(
                "DELETE FROM mnemon_kv_items WHERE expires_at IS NOT NULL AND expires_at <= ? "
                "RETURNING namespace, key",
                (expiry_stamp(now),),
            ).fetchall()
            for ns, keys in keys_by_namespace(gone).items():
                names = json.dumps(keys)
                row = (now.isoformat(), actor, EXPIRE_ACTION, ns, names, len(keys))
                conn.execute(
                    "INSERT INTO mnemon_kv_audit(at, actor, action, ns, keys, count) "
                    "VALUES (?, ?, ?, ?, ?, ?)",
                    row,
                )
        if gone:
            self.journal.checkpoint()  # an expired value leaves neither the WAL nor a free page
        return len(gone)

    def _erase(self, namespace: Namespace, actor: str) -> int:
        ns = namespace_key(namespace)
        with self.journal.transaction() as conn:
            count = conn.execute("DELETE FROM mnemon_kv_items WHERE namespace = ?", (ns,)).rowcount
            # the audit trail is append-only: earlier rows (keys, counts, no values) stay
            conn.execute(
                "INSERT INTO mnemon_kv_audit(at, actor, action, ns, keys, count) "
                "VALUES (?, ?, 'erase_namespace', ?, '[]', ?)",
                (datetime.now(UTC).isoformat(), actor, ns, count),
            )
        self.journal.checkpoint()
        return int(count)

    def _audit(self, namespace: Namespace | None) -> list[KVAudit]:
        sql = "SELECT id, at, actor, action, ns, keys, count FROM mnemon_kv_audit"
        params: tuple[Any, ...] = ()
        if namespace is not None:
            sql += " WHERE ns = ?"
            params = (namespace_key(namespace),)
        return [audit_entry(r) for r in self.journal._read(sql + " ORDER BY id", params)]

    # -- the async face (sqlite3 blocks: a worker thread) -------------------------------------

    async def get(self, namespace: Namespace, key: str, now: datetime) -> KVRow | None:
        return await asyncio.to_thread(self._get, namespace, key, now)

    async def write(
        self, writes: Sequence[KVWrite], *, actor: str, now: datetime | None = None
    ) -> None:
        await asyncio.to_thread(self._write, writes, actor, now or datetime.now(UTC))

    def write_here(
        self, writes: Sequence[KVWrite], *, actor: str, now: datetime | None = None
    ) -> None:
        """:meth:`write` on the calling thread's connection (inside its transaction, if
        one is open: ``store.transaction()``)."""
        self._write(writes, actor, now or datetime.now(UTC))

    async def under(self, prefix: Namespace, now: datetime | None) -> list[KVRow]:
        return await asyncio.to_thread(self._under, prefix, now)

    async def namespaces(self, now: datetime) -> list[Namespace]:
        return await asyncio.to_thread(self._namespaces, now)

    async def refresh(self, rows: Sequence[KVRow], now: datetime) -> None:
        await asyncio.to_thread(self._refresh, rows, now)

    async def sweep(self, now: datetime, actor: str) -> int:
        return await asyncio.to_thread(self.sweep_sync, now, actor)

    async def erase(self, namespace: Namespace, *, actor: str) -> int:
        return await asyncio.to_thread(self._erase, namespace, actor)

    async def audit_log(self, namespace: Namespace | None) -> list[KVAudit]:
        return await asyncio.to_thread(self._audit, namespace)

    def close(self) -> None:
        """Nothing to close: the connections are the journal's (closed with the store)."""


def _iso(value: Any) -> Any:
    # one fixed-width form for every stored time, so expiries compare as text in SQL
    return expiry_stamp(value) if isinstance(value, datetime) else value
