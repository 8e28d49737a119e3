"""Retention on the embedded backend: one journal transaction, one audit row, then a scrub.

What goes and how it is chosen is :mod:`mnemon_langgraph.store._internal.retention` (shared with
PostgreSQL); this module reads and writes the journal's tables. The run is one ``BEGIN
IMMEDIATE`` transaction (a SIGKILL leaves the namespace as before or as after: the commit
is atomic in the WAL), with ``secure_delete`` on (every connection of the journal), followed
by the WAL checkpoint an erase ends with. The index files are the store's hook's: it unlinks
the namespace's checkpoints before the transaction (they hold the words of what goes) and
drops the removed records from the in-memory indexes after it.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from mnemon_langgraph.records.schema import ns_to_key
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
from mnemon_langgraph.store.embedded._deletion import Deletions
from mnemon_langgraph.store.embedded._schema import chunks, now_iso
from mnemon_langgraph.store.kv_items import RETENTION_ACTION, keys_by_namespace, prefix_of
from mnemon_langgraph.types import Namespace, as_naive_utc

if TYPE_CHECKING:
    from mnemon_langgraph.store.embedded._journal import Journal

__all__ = ["apply_retention", "held_namespaces", "set_hold"]


def _tables(conn: sqlite3.Connection) -> set[str]:
    return {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


def _count_in(conn: sqlite3.Connection, sql: str, ids: Sequence[str]) -> int:
    total = 0
    for part in chunks(list(ids)):
        marks = ",".join("?" * len(part))
        total += int(conn.execute(sql.format(marks=marks), list(part)).fetchone()[0])
    return total


def _rows_in(conn: sqlite3.Connection, sql: str, ids: Sequence[str], *extra: str) -> list[tuple]:
    out: list[tuple] = []
    for part in chunks(list(ids)):
        marks = ",".join("?" * len(part))
        out.extend(conn.execute(sql.format(marks=marks), [*part, *extra]).fetchall())
    return out


def _stubs(conn: sqlite3.Connection, key: str) -> list[RecordStub]:
    rows = conn.execute(
        "SELECT id, seq, date, message_ids FROM records WHERE namespace = ?", (key,)
    ).fetchall()
    return [
        RecordStub(
            rid, int(seq), as_naive_utc(datetime.fromisoformat(date)) if date else None,
            tuple(json.loads(mids)),
        )
        for rid, seq, date, mids in rows
    ]  # fmt: skip


def _plan_items(conn: sqlite3.Connection, key: str, removed: set[str]) -> list[ItemChange]:
    if "items" not in _tables(conn) or not removed:
        return []
    linked = _rows_in(
        conn, "SELECT DISTINCT item_id FROM item_links WHERE record_id IN ({marks})", list(removed)
    )
    item_ids = sorted({r[0] for r in linked})
    rows = _rows_in(
        conn,
        "SELECT id, text, value, topic, subject, attribute FROM items "
        "WHERE id IN ({marks}) AND namespace = ?",
        item_ids,
        key,
    )
    links: dict[str, set[str]] = {}
    for item_id, record_id in _rows_in(
        conn, "SELECT item_id, record_id FROM item_links WHERE item_id IN ({marks})", item_ids
    ):
        links.setdefault(item_id, set()).add(record_id)
    wanted = sorted({r for ids in links.values() for r in ids})
    texts = dict(_rows_in(conn, "SELECT id, text FROM records WHERE id IN ({marks})", wanted))
    items = {r[0]: (r[1], r[2:], links.get(r[0], set())) for r in rows}
    return plan_items(items, removed, texts)


def _failures(conn: sqlite3.Connection, key: str, removed: list[RecordStub]) -> list[int]:
    if "consolidation_failures" not in _tables(conn) or not removed:
        return []
    rows = conn.execute(
        "SELECT id, batch_start_seq, batch_end_seq FROM consolidation_failures "
        "WHERE namespace = ? AND error <> ?",
        (key, REDACTED_ERROR),
    ).fetchall()
    return failures_touching([FailureRow(*r) for r in rows], removed)


def _kv_keys(conn: sqlite3.Connection, ns: Namespace, cutoff: datetime) -> list[tuple[str, str]]:
    exact, starts = prefix_of(ns)
    rows = conn.execute(
        "SELECT namespace, key, updated_at FROM mnemon_kv_items "
        "WHERE namespace = ? OR substr(namespace, 1, ?) = ?",
        (exact, len(starts), starts),
    ).fetchall()
    return sorted((n, k) for n, k, at in rows if _utc(at) < cutoff)


def _utc(value: str) -> datetime:
    at = datetime.fromisoformat(value)
    return at.replace(tzinfo=UTC) if at.tzinfo is None else at.astimezone(UTC)


def _plan(
    conn: sqlite3.Connection, ns: Namespace, cutoff: datetime, keep: int | None
) -> RetentionPlan:
    key = ns_to_key(ns)
    removed, undated, kept = choose_records(_stubs(conn, key), as_naive_utc(cutoff), keep)  # type: ignore[arg-type]
    ids = [r.id for r in removed]
    return RetentionPlan(
        records=removed,
        undated_kept=undated,
        kept_by_keep_last=kept,
        items=_plan_items(conn, key, set(ids)),
        kv_keys=_kv_keys(conn, ns, cutoff),
        failures=_failures(conn, key, removed),
        messages=_count_in(conn, "SELECT COUNT(*) FROM messages WHERE record_id IN ({marks})", ids),
        vectors=_count_in(conn, "SELECT COUNT(*) FROM vectors WHERE record_id IN ({marks})", ids),
    )


def _kv_audit(conn: sqlite3.Connection, kv_keys: Sequence[tuple[str, str]], actor: str) -> None:
    """The BaseStore's own audit (``MnemonBaseStore.audit_log``) of the key-value items this
    run removes: one row per stored namespace, keys and counts, never values (a TTL sweep's
    shape), in the run's transaction."""
    at = datetime.now(UTC).isoformat()
    for ns_key, keys in keys_by_namespace(kv_keys).items():
        conn.execute(
            "INSERT INTO mnemon_kv_audit(at, actor, action, ns, keys, count) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            (at, actor, RETENTION_ACTION, ns_key, json.dumps(keys), len(keys)),
        )


def _apply(conn: sqlite3.Connection, plan: RetentionPlan, key: str, actor: str) -> dict[str, int]:
    """Remove what ``plan`` says (caller's transaction); rows removed per table."""
    gone = [c.id for c in plan.items if c.text is None]
    trimmed = [c for c in plan.items if c.text is not None]
    ids = [r.id for r in plan.records]
    links = 0
    if plan.items:
        sql = "SELECT COUNT(*) FROM item_links WHERE record_id IN ({marks})"
        links = _count_in(conn, sql, ids)
    # Items first: their links go with them, so the orphan trigger audits no "delete_item"
    # for what this run removes (its one audit row says it).
    for part in chunks(gone):
        conn.execute(f"DELETE FROM items WHERE id IN ({','.join('?' * len(part))})", list(part))
    stamp = now_iso()
    for change in trimmed:  # the old embedding encodes the cut text: dropped with it
        conn.execute(
            "UPDATE items SET text = ?, embedding = NULL, updated_at = ? WHERE id = ?",
            (change.text, stamp, change.id),
        )
    if plan.failures:  # the model's message may quote the batch: the row stays, redacted
        conn.executemany(
            "UPDATE consolidation_failures SET error = ? WHERE id = ?",
            [(REDACTED_ERROR, i) for i in plan.failures],
        )
    for ns_key, item_key in plan.kv_keys:
        conn.execute(
            "DELETE FROM mnemon_kv_items WHERE namespace = ? AND key = ?", (ns_key, item_key)
        )
    _kv_audit(conn, plan.kv_keys, actor)
    # delete_records' deletion: messages, vectors and item links cascade
    deleted = Deletions._delete_ids(conn, key, ids)
    return {
        "records": len(deleted),
        "messages": plan.messages,
        "vectors": plan.vectors,
        "items": len(gone),
        "items_updated": len(trimmed),
        "item_links": links,
        "mnemon_kv_items": len(plan.kv_keys),
        "consolidation_failures_redacted": len(plan.failures),
    }


def _audit(
    conn: sqlite3.Connection,
    receipt: RetentionReceipt,
    tables: dict[str, int],
    actor: str,
    key: str,
) -> None:
    """The run's one audit row (the transaction's last statement): ids and counts, no text."""
    conn.execute(
        "INSERT INTO audit(at, actor, action, namespace, count, record_ids, message_ids, "
        "reason) VALUES (?, ?, 'apply_retention', ?, ?, ?, ?, ?)",
        (
            now_iso(), actor, key, receipt.records, json.dumps(list(receipt.record_ids)),
            json.dumps(list(receipt.message_ids)), audit_reason(receipt, tables),
        ),
    )  # fmt: skip


def apply_retention(
    journal: Journal,
    ns: Namespace,
    policy: tuple[timedelta, int | None],
    now: datetime,
    *,
    dry_run: bool,
    actor: str,
) -> RetentionReceipt:
    """Apply the policy to ``ns`` in one transaction (see the module docstring)."""
    key = ns_to_key(ns)
    cutoff = now - policy[0]
    with journal.transaction() as conn:
        held = conn.execute("SELECT 1 FROM retention_holds WHERE ns = ?", (key,)).fetchone()
        if held:
            return RetentionReceipt(ns, policy[0], policy[1], cutoff, dry_run=dry_run, held=True)
        plan = _plan(conn, ns, cutoff, policy[1])
        receipt = RetentionReceipt.of_plan(
            plan, namespace=ns, policy=policy, cutoff=cutoff, dry_run=dry_run
        )
        if dry_run or not any(receipt.counts.values()):
            return receipt
        _audit(conn, receipt, _apply(conn, plan, key, actor), actor, key)
    journal.checkpoint()
    return receipt


def set_hold(journal: Journal, ns: Namespace, actor: str, reason: str, *, held: bool) -> bool:
    """Place (``held``) or lift a legal hold, with its audit row; whether it changed."""
    key = ns_to_key(ns)
    with journal.transaction() as conn:
        present = bool(
            conn.execute("SELECT 1 FROM retention_holds WHERE ns = ?", (key,)).fetchone()
        )
        if present == held:
            return False
        if held:
            conn.execute(
                "INSERT INTO retention_holds(ns, at, actor, reason) VALUES (?, ?, ?, ?)",
                (key, now_iso(), actor, reason),
            )
        else:
            conn.execute("DELETE FROM retention_holds WHERE ns = ?", (key,))
        conn.execute(
            "INSERT INTO audit(at, actor, action, namespace, count, reason) "
            "VALUES (?, ?, ?, ?, 0, ?)",
            (now_iso(), actor, "hold" if held else "release", key, reason),
        )
    return True


def held_namespaces(journal: Journal) -> list[Namespace]:
    """Every namespace under a legal hold, sorted."""
    from mnemon_langgraph.records.schema import ns_from_key

    rows = journal._read("SELECT ns FROM retention_holds ORDER BY ns")
    return sorted(ns_from_key(r[0]) for r in rows)
