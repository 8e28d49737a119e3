"""Retention on PostgreSQL: one transaction under the namespace's lock, one audit row, VACUUM.

What goes and how it is chosen is :mod:`mnemon_langgraph.store._internal.retention` (shared with the
embedded backend). Records are deleted through :meth:`Writes.delete_ids` (the deletion path
of ``delete_records``: BM25 statistics, postings and packs follow), in the transaction that
also removes and trims the consolidated items and the key-value items and writes the audit
row; a SIGKILL leaves it uncommitted. Afterwards every mnemon table is ``VACUUM``\\ ed, as
after an erase, so dead tuples holding the removed text are reclaimed.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

from mnemon_langgraph.errors import ConfigurationError
from mnemon_langgraph.records.schema import ns_from_key, ns_to_key
from mnemon_langgraph.store._internal.retention import (
    REDACTED_ERROR,
    FailureRow,
    ItemChange,
    RecordStub,
    RetentionPlan,
    RetentionReceipt,
    audit_reason,
    choose_records,
    failures_touching,
    plan_items,
)
from mnemon_langgraph.store.kv_items import RETENTION_ACTION, keys_by_namespace, prefix_of
from mnemon_langgraph.store.postgres._writes import Writes
from mnemon_langgraph.types import Namespace, as_naive_utc

__all__ = ["Retention"]


class Retention:
    """Retention and legal holds of a PostgreSQL store, as coroutines on its engine's loop.

    Args:
        writes: The store's writes (its engine, deletion path, audit and ``VACUUM``).
    """

    def __init__(self, writes: Writes) -> None:
        self.writes = writes
        self.engine = writes.engine

    async def apply(
        self,
        ns: Namespace,
        policy: tuple[timedelta, int | None],
        now: datetime,
        dry_run: bool,
        actor: str,
    ) -> RetentionReceipt:
        """Apply the policy to ``ns`` (see the module docstring)."""
        cutoff = now - policy[0]
        async with self.engine.connection() as conn, conn.transaction():
            await _require_holds(conn)
            await self.engine.lock_namespace(conn, ns)
            cur = await conn.execute(
                "SELECT 1 FROM mnemon_retention_holds WHERE ns = %s", (ns_to_key(ns),)
            )
            if await cur.fetchone():
                return RetentionReceipt(
                    ns, policy[0], policy[1], cutoff, dry_run=dry_run, held=True
                )
            nsid = await self.engine.nsid(conn, ns)
            plan = await self._plan(conn, nsid, ns, cutoff, policy[1])
            receipt = RetentionReceipt.of_plan(
                plan, namespace=ns, policy=policy, cutoff=cutoff, dry_run=dry_run
            )
            if dry_run or not any(receipt.counts.values()):
                return receipt
            tables = await self._apply(conn, nsid, plan)
            await _kv_audit(conn, plan.kv_keys, actor)
            await self.writes.audit(
                conn,
                actor=actor,
                action="apply_retention",
                ns=ns,
                count=receipt.records,
                record_ids=receipt.record_ids,
                message_ids=receipt.message_ids,
                reason=audit_reason(receipt, tables),
            )
        await self.writes.vacuum()
        return receipt

    async def _plan(
        self, conn: Any, nsid: int | None, ns: Namespace, cutoff: datetime, keep: int | None
    ) -> RetentionPlan:
        stubs: list[RecordStub] = []
        if nsid is not None:
            cur = await conn.execute(
                "SELECT id, seq, date, message_ids FROM mnemon_records WHERE nsid = %s", (nsid,)
            )
            stubs = [
                RecordStub(rid, int(seq), as_naive_utc(date), tuple(mids))
                for rid, seq, date, mids in await cur.fetchall()
            ]
        removed, undated, kept = choose_records(stubs, as_naive_utc(cutoff), keep)  # type: ignore[arg-type]
        ids = [r.id for r in removed]
        return RetentionPlan(
            records=removed,
            undated_kept=undated,
            kept_by_keep_last=kept,
            items=await self._plan_items(conn, nsid, ids),
            kv_keys=await self._kv_keys(conn, ns, cutoff),
            failures=await self._failures(conn, nsid, removed),
            messages=await _count(conn, "mnemon_messages", ids),
            vectors=await _count(conn, "mnemon_vectors", ids),
        )

    @staticmethod
    async def _plan_items(conn: Any, nsid: int | None, ids: list[str]) -> list[ItemChange]:
        cur = await conn.execute("SELECT to_regclass('mnemon_items') IS NOT NULL")
        if not ids or nsid is None or not (await cur.fetchone())[0]:
            return []
        cur = await conn.execute(
            "SELECT i.id, i.text, i.value, i.topic, i.subject, i.attribute, "
            "array_agg(l2.record_id) FROM mnemon_items i "
            "JOIN mnemon_item_links l2 ON l2.item_id = i.id WHERE i.nsid = %s AND i.id IN "
            "(SELECT item_id FROM mnemon_item_links WHERE record_id = ANY(%s)) "
            "GROUP BY i.id",
            (nsid, ids),
        )
        items = {r[0]: (r[1], r[2:6], set(r[6])) for r in await cur.fetchall()}
        wanted = sorted({r for _, _, links in items.values() for r in links})
        cur = await conn.execute(
            "SELECT id, text FROM mnemon_records WHERE id = ANY(%s)", (wanted,)
        )
        texts = {r[0]: r[1] for r in await cur.fetchall()}
        return plan_items(items, set(ids), texts)

    @staticmethod
    async def _failures(conn: Any, nsid: int | None, removed: list[RecordStub]) -> list[int]:
        cur = await conn.execute("SELECT to_regclass('mnemon_consolidation_failures') IS NOT NULL")
        if not removed or nsid is None or not (await cur.fetchone())[0]:
            return []
        cur = await conn.execute(
            "SELECT id, batch_start_seq, batch_end_seq FROM mnemon_consolidation_failures "
            "WHERE nsid = %s AND error <> %s",
            (nsid, REDACTED_ERROR),
        )
        rows = [FailureRow(int(a), int(b), int(c)) for a, b, c in await cur.fetchall()]
        return failures_touching(rows, removed)

    @staticmethod
    async def _kv_keys(conn: Any, ns: Namespace, cutoff: datetime) -> list[tuple[str, str]]:
        exact, starts = prefix_of(ns)
        cur = await conn.execute(
            "SELECT namespace, key FROM mnemon_kv_items WHERE (namespace = %s OR "
            "left(namespace, %s) = %s) AND updated_at < %s",
            (exact, len(starts), starts, cutoff.astimezone(UTC)),
        )
        return sorted((r[0], r[1]) for r in await cur.fetchall())

    async def _apply(self, conn: Any, nsid: int | None, plan: RetentionPlan) -> dict[str, int]:
        """Remove what ``plan`` says (caller's transaction); rows removed per table."""
        gone = [c.id for c in plan.items if c.text is None]
        trimmed = [c for c in plan.items if c.text is not None]
        ids = [r.id for r in plan.records]
        links = 0
        if plan.items:
            cur = await conn.execute(
                "SELECT count(*) FROM mnemon_item_links WHERE record_id = ANY(%s)", (ids,)
            )
            links = int((await cur.fetchone())[0])
            # Items first: their links go with them, so the orphan trigger audits no
            # "delete_item" for what this run removes (its one audit row says it).
            await conn.execute("DELETE FROM mnemon_items WHERE id = ANY(%s)", (gone,))
        for change in trimmed:  # the old embedding encodes the cut text: dropped with it
            await conn.execute(
                "UPDATE mnemon_items SET text = %s, embedding = NULL, updated_at = now() "
                "WHERE id = %s",
                (change.text, change.id),
            )
        if plan.failures:
            await conn.execute(
                "UPDATE mnemon_consolidation_failures SET error = %s WHERE id = ANY(%s)",
                (REDACTED_ERROR, plan.failures),
            )
        for ns_key, item_key in plan.kv_keys:
            await conn.execute(
                "DELETE FROM mnemon_kv_items WHERE namespace = %s AND key = %s", (ns_key, item_key)
            )
        deleted = await self.writes.delete_ids(conn, nsid, ids) if ids and nsid is not None else []
        return {
            "mnemon_records": len(deleted),
            "mnemon_messages": plan.messages,
            "mnemon_vectors": plan.vectors,
            "mnemon_items": len(gone),
            "mnemon_items_updated": len(trimmed),
            "mnemon_item_links": links,
            "mnemon_kv_items": len(plan.kv_keys),
            "mnemon_consolidation_failures_redacted": len(plan.failures),
        }

    async def set_hold(self, ns: Namespace, actor: str, reason: str, held: bool) -> bool:
        """Place (``held``) or lift a legal hold, with its audit row; whether it changed."""
        key = ns_to_key(ns)
        async with self.engine.connection() as conn, conn.transaction():
            await _require_holds(conn)
            await self.engine.lock_namespace(conn, ns)
            if held:
                cur = await conn.execute(
                    "INSERT INTO mnemon_retention_holds(ns, actor, reason) VALUES (%s, %s, %s) "
                    "ON CONFLICT (ns) DO NOTHING RETURNING ns",
                    (key, actor, reason),
                )
            else:
                cur = await conn.execute(
                    "DELETE FROM mnemon_retention_holds WHERE ns = %s RETURNING ns", (key,)
                )
            if await cur.fetchone() is None:
                return False
            await self.writes.audit(
                conn, actor=actor, action="hold" if held else "release", ns=ns, count=0,
                reason=reason,
            )  # fmt: skip
        return True

    async def held(self) -> list[Namespace]:
        """Every namespace under a legal hold, sorted."""
        async with self.engine.connection() as conn:
            await _require_holds(conn)
            cur = await conn.execute("SELECT ns FROM mnemon_retention_holds")
            return sorted(ns_from_key(r[0]) for r in await cur.fetchall())


async def _kv_audit(conn: Any, kv_keys: list[tuple[str, str]], actor: str) -> None:
    """The BaseStore's own audit (``MnemonBaseStore.audit_log``) of the key-value items the
    run removes: one row per stored namespace, keys and counts, never values (a TTL sweep's
    shape), in the run's transaction."""
    at = datetime.now(UTC)
    for ns_key, keys in keys_by_namespace(kv_keys).items():
        await conn.execute(
            "INSERT INTO mnemon_kv_audit(at, actor, action, ns, keys, count) "
            "VALUES (%s, %s, %s, %s, %s, %s)",
            (at, actor, RETENTION_ACTION, ns_key, json.dumps(keys), len(keys)),
        )


async def _require_holds(conn: Any) -> None:
    """A clear error for a database set up before retention (schema version 7), which a
    maintenance open (``mnemon retention``) does not migrate."""
    cur = await conn.execute("SELECT to_regclass('mnemon_retention_holds') IS NOT NULL")
    if not (await cur.fetchone())[0]:
        raise ConfigurationError(
            "this database's schema predates retention (version 7): open it once with "
            "MnemonStore(url) (or any app using this version) to migrate it"
        )


async def _count(conn: Any, table: str, ids: list[str]) -> int:
    if not ids:
        return 0
    cur = await conn.execute(f"SELECT count(*) FROM {table} WHERE record_id = ANY(%s)", (ids,))
    return int((await cur.fetchone())[0])
