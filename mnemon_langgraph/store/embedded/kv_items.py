"""The embedded backend's key-value items (:mod:`mnemon_langgraph.store.kv_items`): two
tables of the journal's SQLite file (schema version 2), on the journal's connections and
write transactions (``secure_delete``, ``synchronous=FULL``, WAL checkpoint after a
deletion, as for records)."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from mnemon_langgraph.records.schema import namespace_key, ns_from_key
from mnemon_langgraph.store.kv_items import (
    KV_COLUMNS,
    KVAudit,
    KVRow,
    KVWrite,
    audit_entry,
    audit_rows,
    kv_params,
    kv_row,
    kv_upsert,
    prefix_of,
)
from mnemon_langgraph.types import Namespace

if TYPE_CHECKING:
    from mnemon_langgraph.store.embedded.journal import Journal

__all__ = ["EmbeddedKVItems"]


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

    # -- sync work (the journal's connection of the calling thread) ------------------------

    def _write_in(self, conn: sqlite3.Connection, writes: Sequence[KVWrite], actor: str) -> bool:
        now = datetime.now(UTC)
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

    def _write(self, writes: Sequence[KVWrite], actor: str) -> None:
        outer = self.journal.in_transaction()
        with self.journal.transaction() as conn:
            removed = self._write_in(conn, writes, actor)
        if removed and not outer:  # a caller's transaction: nothing is committed yet
            self.journal.checkpoint()  # a deleted value leaves neither the WAL nor a free page

    def _get(self, namespace: Namespace, key: str) -> KVRow | None:
        rows = self.journal._read(
            f"SELECT {KV_COLUMNS} FROM mnemon_kv_items WHERE namespace = ? AND key = ?",
            (namespace_key(namespace), key),
        )
        return kv_row(rows[0]) if rows else None

    def _under(self, prefix: Namespace) -> list[KVRow]:
        sql = f"SELECT {KV_COLUMNS} FROM mnemon_kv_items"
        params: tuple[Any, ...] = ()
        if prefix:
            exact, starts = prefix_of(prefix)
            sql += " WHERE namespace = ? OR substr(namespace, 1, ?) = ?"
            params = (exact, len(starts), starts)
        return [kv_row(r) for r in self.journal._read(sql + " ORDER BY namespace, key", params)]

    def _namespaces(self) -> list[Namespace]:
        rows = self.journal._read("SELECT DISTINCT namespace FROM mnemon_kv_items")
        return sorted(ns_from_key(r[0]) for r in rows)

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

    async def get(self, namespace: Namespace, key: str) -> KVRow | None:
        return await asyncio.to_thread(self._get, namespace, key)

    async def write(self, writes: Sequence[KVWrite], *, actor: str) -> None:
        await asyncio.to_thread(self._write, writes, actor)

    def write_here(self, writes: Sequence[KVWrite], *, actor: str) -> None:
        """:meth:`write` on the calling thread's connection (inside its transaction, if
        one is open: ``store.transaction()``)."""
        self._write(writes, actor)

    async def under(self, prefix: Namespace) -> list[KVRow]:
        return await asyncio.to_thread(self._under, prefix)

    async def namespaces(self) -> list[Namespace]:
        return await asyncio.to_thread(self._namespaces)

    async def erase(self, namespace: Namespace, *, actor: str) -> int:
        return await asyncio.to_thread(self._erase, namespace, actor)

    async def audit_log(self, namespace: Namespace | None) -> list[KVAudit]:
        return await asyncio.to_thread(self._audit, namespace)

    def close(self) -> None:
        """Nothing to close: the connections are the journal's (closed with the store)."""


def _iso(value: Any) -> Any:
    return value.isoformat() if isinstance(value, datetime) else value
