"""The PostgreSQL backend's key-value items (:mod:`mnemon_langgraph.store.kv_items`): two
tables of the store's schema (version 6; the TTL columns since version 7), on the store's
engine (its pool, on its loop)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from mnemon_langgraph.records.schema import namespace_key, ns_from_key
from mnemon_langgraph.store.kv_items import (
    EXPIRE_ACTION,
    KV_COLUMNS,
    KVAudit,
    KVRow,
    KVWrite,
    audit_entry,
    audit_rows,
    keys_by_namespace,
    kv_params,
    kv_row,
    kv_upsert,
    prefix_of,
)
from mnemon_langgraph.store.postgres._engine import PostgresEngine
from mnemon_langgraph.types import Namespace

__all__ = ["PostgresKVItems"]

_LIVE = "(expires_at IS NULL OR expires_at > %s)"
"""The SQL condition of an item not expired by the parameter (a ``timestamptz``)."""


class PostgresKVItems:
    """Key-value items in the store's database (``store.kv()`` of a PostgreSQL store).

    Every query is a coroutine run on the engine's loop (``submit``: any caller's loop
    awaits it without blocking). Closing is the store's: :meth:`close` does nothing.

    Args:
        engine: The store's engine.
    """

    def __init__(self, engine: PostgresEngine) -> None:
        self.engine = engine

    async def get(self, namespace: Namespace, key: str, now: datetime) -> KVRow | None:
        rows = await self.engine.submit(
            self.engine.read(
                f"SELECT {KV_COLUMNS} FROM mnemon_kv_items WHERE namespace = %s AND key = %s "
                f"AND {_LIVE}",
                (namespace_key(namespace), key, now),
            )
        )
        return kv_row(rows[0]) if rows else None

    async def write(
        self, writes: Sequence[KVWrite], *, actor: str, now: datetime | None = None
    ) -> None:
        await self.engine.submit(self._write(writes, actor, now or datetime.now(UTC)))

    def write_here(
        self, writes: Sequence[KVWrite], *, actor: str, now: datetime | None = None
    ) -> None:
        """:meth:`write` from a sync caller, waiting (inside the engine's transaction this
        thread holds, if any: ``store.transaction()``)."""
        self.engine.run(self._write(writes, actor, now or datetime.now(UTC)))

    async def _write(self, writes: Sequence[KVWrite], actor: str, now: datetime) -> None:
        deleted: dict[tuple[str, str], bool] = {}
        async with self.engine.connection() as conn, conn.transaction():
            for w in writes:
                ns = namespace_key(w.namespace)
                if w.value is None:
                    cur = await conn.execute(
                        "DELETE FROM mnemon_kv_items WHERE namespace = %s AND key = %s",
                        (ns, w.key),
                    )
                    deleted[(ns, w.key)] = deleted.get((ns, w.key), False) or cur.rowcount > 0
                    continue
                await conn.execute(kv_upsert("%s", w), kv_params(ns, w, now))
                deleted[(ns, w.key)] = False
            for ns, keys in audit_rows(writes, deleted).items():
                await conn.execute(
                    "INSERT INTO mnemon_kv_audit(at, actor, action, ns, keys, count) "
                    "VALUES (%s, %s, 'delete_items', %s, %s, %s)",
                    (now, actor, ns, json.dumps(keys), len(keys)),
                )

    async def under(self, prefix: Namespace, now: datetime | None) -> list[KVRow]:
        sql = f"SELECT {KV_COLUMNS} FROM mnemon_kv_items WHERE true"
        params: tuple[Any, ...] = ()
        if prefix:
            exact, starts = prefix_of(prefix)
            sql += " AND (namespace = %s OR starts_with(namespace, %s))"
            params = (exact, starts)
        if now is not None:
            sql += f" AND {_LIVE}"
            params += (now,)
        rows = await self.engine.submit(self.engine.read(sql + " ORDER BY namespace, key", params))
        return [kv_row(r) for r in rows]

    async def namespaces(self, now: datetime) -> list[Namespace]:
        rows = await self.engine.submit(
            self.engine.read(
                f"SELECT DISTINCT namespace FROM mnemon_kv_items WHERE {_LIVE}", (now,)
            )
        )
        return sorted(ns_from_key(r[0]) for r in rows)

    async def refresh(self, rows: Sequence[KVRow], now: datetime) -> None:
        timed = [r for r in rows if r.ttl_minutes is not None]
        if timed:  # nothing to refresh: no write for a plain read
            await self.engine.submit(self._refresh(timed, now))

    async def _refresh(self, rows: Sequence[KVRow], now: datetime) -> None:
        async with self.engine.connection() as conn, conn.transaction():
            for r in rows:
                await conn.execute(
                    "UPDATE mnemon_kv_items SET expires_at = %s WHERE namespace = %s "
                    "AND key = %s AND ttl_minutes IS NOT NULL AND expires_at > %s",
                    (
                        now + timedelta(minutes=r.ttl_minutes or 0),
                        namespace_key(r.namespace),
                        r.key,
                        now,
                    ),
                )

    async def sweep(self, now: datetime, actor: str) -> int:
        return await self.engine.submit(self._sweep(now, actor))

    async def _sweep(self, now: datetime, actor: str) -> int:
        async with self.engine.connection() as conn:
            async with conn.transaction():
                cur = await conn.execute(
                    "DELETE FROM mnemon_kv_items WHERE expires_at IS NOT NULL "
                    "AND expires_at <= %s RETURNING namespace, key",
                    (now,),
                )
                gone = await cur.fetchall()
                for ns, keys in keys_by_namespace(gone).items():
                    await conn.execute(
                        "INSERT INTO mnemon_kv_audit(at, actor, action, ns, keys, count) "
                        "VALUES (%s, %s, %s, %s, %s, %s)",
                        (now, actor, EXPIRE_ACTION, ns, json.dumps(keys), len(keys)),
                    )
            if gone:
                await conn.execute("VACUUM mnemon_kv_items")  # no dead tuples keep the values
        return len(gone)

    async def erase(self, namespace: Namespace, *, actor: str) -> int:
        return await self.engine.submit(self._erase(namespace, actor))

    async def _erase(self, namespace: Namespace, actor: str) -> int:
        ns = namespace_key(namespace)
        async with self.engine.connection() as conn:
            async with conn.transaction():
                cur = await conn.execute("DELETE FROM mnemon_kv_items WHERE namespace = %s", (ns,))
                count = int(cur.rowcount)
                # the audit trail is append-only: earlier rows (keys, no values) stay
                await conn.execute(
                    "INSERT INTO mnemon_kv_audit(at, actor, action, ns, keys, count) "
                    "VALUES (%s, %s, 'erase_namespace', %s, '[]', %s)",
                    (datetime.now(UTC), actor, ns, count),
                )
            await conn.execute("VACUUM mnemon_kv_items")  # erased values leave no dead tuples
        return count

    async def audit_log(self, namespace: Namespace | None) -> list[KVAudit]:
        sql = "SELECT id, at, actor, action, ns, keys, count FROM mnemon_kv_audit"
        params: tuple[Any, ...] = ()
        if namespace is not None:
            sql += " WHERE ns = %s"
            params = (namespace_key(namespace),)
        rows = await self.engine.submit(self.engine.read(sql + " ORDER BY id", params))
        return [audit_entry(r) for r in rows]

    def close(self) -> None:
        """Nothing to close: the pool and the loop are the store's (closed with it)."""
