"""The key-value items of :class:`~mnemon_langgraph.integrations.basestore.MnemonBaseStore`.

Items live in the store's own database, beside the journal, in two tables this module
creates (idempotently) through the store's public path or URL:

* ``mnemon_kv_items(namespace, key, value, text, vectors, dim, created_at, updated_at)``:
  the value as JSON, its indexed text (for BM25) and the unit vectors of its indexed texts
  (``float32``, ``n × dim``). ``namespace`` holds the journal's stored form of a namespace
  (:func:`~mnemon_langgraph.records.schema.namespace_key`, a JSON array), so on SQLite the
  journal's own ``erase_namespace`` (which erases every table with a ``namespace`` column)
  erases items too.
* ``mnemon_kv_audit(id, at, actor, action, ns, keys, count)``: one row per deletion (keys
  and counts, never values), as the journal audits records; append-only, like the journal's
  (an erase adds its row and leaves the earlier ones).

:class:`SQLiteItems` (the SQLite file, ``secure_delete`` and ``synchronous=FULL`` like the
journal) and :class:`PostgresItems` (psycopg's async pool) offer the same async methods.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sqlite3
import threading
import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol, TypeVar

import numpy as np

from mnemon_langgraph.errors import (
    ConfigurationError,
    JournalError,
    JournalLockedError,
    JournalReadOnlyError,
    MissingDependencyError,
)
from mnemon_langgraph.integrations.basestore_rank import ItemRow
from mnemon_langgraph.records.schema import namespace_key, ns_from_key
from mnemon_langgraph.store.postgres.engine import LoopThread
from mnemon_langgraph.types import Namespace

__all__ = [
    "ItemAudit",
    "ItemTable",
    "PostgresItems",
    "SQLiteItems",
    "Write",
]

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Write:
    """One put (``value`` is the JSON text) or delete (``value is None``) of an item.

    ``fields`` is the JSON of the index spec the texts came from; ``stamp`` (a restore)
    sets both times instead of keeping ``created_at`` and taking now as ``updated_at``.
    """

    namespace: Namespace
    key: str
    value: str | None
    text: str = ""
    vectors: np.ndarray | None = None
    fields: str = '["$"]'
    stamp: tuple[datetime, datetime] | None = None


@dataclass(frozen=True, slots=True)
class ItemAudit:
    """One audited deletion of items.

    Attributes:
        id: Audit row id (grows with every deletion).
        at: When (UTC).
        actor: Who asked (``"basestore"`` for ``delete``, the caller's actor for an erase).
        action: ``delete_items`` or ``erase_namespace``.
        namespace: The namespace.
        count: Items deleted.
        keys: Keys of the deleted items (empty for an erase).
    """

    id: int
    at: datetime
    actor: str
    action: str
    namespace: Namespace
    count: int
    keys: tuple[str, ...] = ()


class ItemTable(Protocol):
    """What the BaseStore needs of an item table (both backends, all async)."""

    async def get(self, namespace: Namespace, key: str) -> ItemRow | None: ...

    async def write(self, writes: Sequence[Write], *, actor: str) -> None: ...

    async def under(self, prefix: Namespace) -> list[ItemRow]: ...

    async def namespaces(self) -> list[Namespace]: ...

    async def erase(self, namespace: Namespace, *, actor: str) -> int: ...

    async def audit_log(self, namespace: Namespace | None) -> list[ItemAudit]: ...

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


def _prefix_of(prefix: Namespace) -> tuple[str, str]:
    """``(exact, starts)``: a namespace is under ``prefix`` if its key equals ``exact`` or
    starts with ``starts`` — the JSON key up to a ``,`` that only a segment boundary has."""
    exact = namespace_key(prefix)
    return exact, exact[:-1] + ","


def _audit_rows(writes: Sequence[Write], deleted: dict[tuple[str, str], bool]) -> dict[str, list]:
    by_ns: dict[str, list[str]] = {}
    for w in writes:
        ns = namespace_key(w.namespace)
        if w.value is None and deleted.get((ns, w.key)):
            by_ns.setdefault(ns, []).append(w.key)
    return by_ns


# --- SQLite -----------------------------------------------------------------------------------

_SQLITE_SCHEMA = """
CREATE TABLE IF NOT EXISTS mnemon_kv_items (
    namespace TEXT NOT NULL,
    key TEXT NOT NULL,
    value TEXT NOT NULL,
    text TEXT NOT NULL DEFAULT '',
    vectors BLOB,
    dim INTEGER NOT NULL DEFAULT 0,
    fields TEXT NOT NULL DEFAULT '["$"]',
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    PRIMARY KEY (namespace, key)
);
CREATE TABLE IF NOT EXISTS mnemon_kv_audit (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    at TEXT NOT NULL,
    actor TEXT NOT NULL,
    action TEXT NOT NULL,
    ns TEXT NOT NULL,
    keys TEXT NOT NULL DEFAULT '[]',
    count INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS mnemon_kv_audit_ns ON mnemon_kv_audit(ns, id);
"""

_COLUMNS = "namespace, key, value, text, vectors, dim, created_at, updated_at, fields"


def _upsert(mark: str, w: Write) -> str:
    """The upsert of ``w`` (``mark``: the driver's placeholder); a restore sets both times."""
    marks = ", ".join([mark] * 9)
    times = "created_at = excluded.created_at, " if w.stamp is not None else ""
    return (
        f"INSERT INTO mnemon_kv_items({_COLUMNS}) VALUES ({marks}) "
        "ON CONFLICT (namespace, key) DO UPDATE SET value = excluded.value, "
        "text = excluded.text, vectors = excluded.vectors, dim = excluded.dim, "
        f"fields = excluded.fields, {times}updated_at = excluded.updated_at"
    )


def _params(ns: str, w: Write, now: datetime) -> tuple[Any, ...]:
    blob, dim = _blob(w.vectors)
    created, updated = w.stamp if w.stamp is not None else (now, now)
    return (ns, w.key, w.value, w.text, blob, dim, created, updated, w.fields)


def _row(r: Sequence[Any]) -> ItemRow:
    created, updated = r[6], r[7]
    return ItemRow(
        namespace=ns_from_key(r[0]),
        key=r[1],
        value=json.loads(r[2]),
        text=r[3],
        vectors=_vectors(r[4], r[5]),
        created_at=_utc(created),
        updated_at=_utc(updated),
        fields=json.loads(r[8]) or False,
    )


def _utc(value: datetime | str) -> datetime:
    return (value if isinstance(value, datetime) else datetime.fromisoformat(value)).astimezone(UTC)


class SQLiteItems:
    """Items in the journal's SQLite file (one connection, serialised by a lock).

    Args:
        path: The journal file (``store.path``).
    """

    def __init__(self, path: Path) -> None:
        if str(path) == ":memory:":
            raise ConfigurationError("MnemonBaseStore needs a journal file, not ':memory:'")
        self.path = Path(path)
        self._lock = threading.Lock()
        try:
            self._conn = sqlite3.connect(
                str(self.path), timeout=5.0, isolation_level=None, check_same_thread=False
            )
            for pragma in ("busy_timeout = 5000", "secure_delete = ON", "synchronous = FULL"):
                self._conn.execute(f"PRAGMA {pragma}")
            self._conn.executescript(_SQLITE_SCHEMA)
        except sqlite3.Error as exc:
            raise self._error(exc, "creating the item tables") from exc

    def _error(self, exc: sqlite3.Error, doing: str) -> JournalError:
        msg = str(exc).lower()
        where = f"items in {self.path}"
        if "locked" in msg or "busy" in msg:
            return JournalLockedError(f"{where}: locked by another writer while {doing}")
        if "readonly" in msg or "read-only" in msg:
            return JournalReadOnlyError(f"{where}: the file is read-only (while {doing})")
        return JournalError(f"{where}: {exc} (while {doing})")

    def _read(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        with self._lock:
            try:
                return self._conn.execute(sql, params).fetchall()
            except sqlite3.Error as exc:
                raise self._error(exc, "reading") from exc

    def _transaction(self, doing: str, body: Any) -> Any:
        with self._lock:
            try:
                self._conn.execute("BEGIN IMMEDIATE")
                try:
                    out = body(self._conn)
                except BaseException:
                    self._conn.execute("ROLLBACK")
                    raise
                self._conn.execute("COMMIT")
                return out
            except sqlite3.Error as exc:
                raise self._error(exc, doing) from exc

    def _write_in(self, conn: sqlite3.Connection, writes: Sequence[Write], actor: str) -> bool:
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
            stamped = _params(ns, w, now)
            conn.execute(_upsert("?", w), tuple(_iso(v) for v in stamped))
            deleted[(ns, w.key)] = False  # a put after a delete in one batch: not deleted
        for ns, keys in _audit_rows(writes, deleted).items():
            conn.execute(
                "INSERT INTO mnemon_kv_audit(at, actor, action, ns, keys, count) "
                "VALUES (?, ?, 'delete_items', ?, ?, ?)",
                (now.isoformat(), actor, ns, json.dumps(keys), len(keys)),
            )
        return any(deleted.values())

    def _write(self, writes: Sequence[Write], actor: str) -> None:
        if self._transaction("writing items", lambda c: self._write_in(c, writes, actor)):
            self._checkpoint()  # a deleted value leaves neither the WAL nor a free page

    def _checkpoint(self) -> None:
        with self._lock, contextlib.suppress(sqlite3.Error):  # best effort, as the journal's
            self._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()

    def _under(self, prefix: Namespace) -> list[ItemRow]:
        sql = f"SELECT {_COLUMNS} FROM mnemon_kv_items"
        params: tuple[Any, ...] = ()
        if prefix:
            exact, starts = _prefix_of(prefix)
            sql += " WHERE namespace = ? OR substr(namespace, 1, ?) = ?"
            params = (exact, len(starts), starts)
        return [_row(r) for r in self._read(sql + " ORDER BY namespace, key", params)]

    def _erase(self, namespace: Namespace, actor: str) -> int:
        ns = namespace_key(namespace)

        def body(conn: sqlite3.Connection) -> int:
            count = conn.execute("DELETE FROM mnemon_kv_items WHERE namespace = ?", (ns,)).rowcount
            # the audit trail is append-only: earlier rows (keys, counts, no values) stay
            conn.execute(
                "INSERT INTO mnemon_kv_audit(at, actor, action, ns, keys, count) "
                "VALUES (?, ?, 'erase_namespace', ?, '[]', ?)",
                (datetime.now(UTC).isoformat(), actor, ns, count),
            )
            return int(count)

        count: int = self._transaction("erasing a namespace", body)
        self._checkpoint()
        return count

    def _audit(self, namespace: Namespace | None) -> list[ItemAudit]:
        sql = "SELECT id, at, actor, action, ns, keys, count FROM mnemon_kv_audit"
        params: tuple[Any, ...] = ()
        if namespace is not None:
            sql += " WHERE ns = ?"
            params = (namespace_key(namespace),)
        return [_audit_entry(r) for r in self._read(sql + " ORDER BY id", params)]

    # -- the async face (sqlite3 blocks: a worker thread) -------------------------------------

    async def get(self, namespace: Namespace, key: str) -> ItemRow | None:
        rows = await asyncio.to_thread(
            self._read,
            f"SELECT {_COLUMNS} FROM mnemon_kv_items WHERE namespace = ? AND key = ?",
            (namespace_key(namespace), key),
        )
        return _row(rows[0]) if rows else None

    async def write(self, writes: Sequence[Write], *, actor: str) -> None:
        await asyncio.to_thread(self._write, writes, actor)

    async def under(self, prefix: Namespace) -> list[ItemRow]:
        return await asyncio.to_thread(self._under, prefix)

    async def namespaces(self) -> list[Namespace]:
        rows = await asyncio.to_thread(self._read, "SELECT DISTINCT namespace FROM mnemon_kv_items")
        return sorted(ns_from_key(r[0]) for r in rows)

    async def erase(self, namespace: Namespace, *, actor: str) -> int:
        return await asyncio.to_thread(self._erase, namespace, actor)

    async def audit_log(self, namespace: Namespace | None) -> list[ItemAudit]:
        return await asyncio.to_thread(self._audit, namespace)

    def close(self) -> None:
        with self._lock, contextlib.suppress(sqlite3.Error):
            self._conn.close()


def _iso(value: Any) -> Any:
    return value.isoformat() if isinstance(value, datetime) else value


def _audit_entry(r: Sequence[Any]) -> ItemAudit:
    at = r[1] if isinstance(r[1], datetime) else datetime.fromisoformat(r[1])
    return ItemAudit(
        id=int(r[0]),
        at=at.astimezone(UTC),
        actor=r[2],
        action=r[3],
        namespace=ns_from_key(r[4]),
        count=int(r[6]),
        keys=tuple(json.loads(r[5])),
    )


# --- PostgreSQL -------------------------------------------------------------------------------

_PG_SCHEMA = (
    """CREATE TABLE IF NOT EXISTS mnemon_kv_items (
        namespace text NOT NULL,
        key text NOT NULL,
        value text NOT NULL,
        text text NOT NULL DEFAULT '',
        vectors bytea,
        dim integer NOT NULL DEFAULT 0,
        fields text NOT NULL DEFAULT '["$"]',
        created_at timestamptz NOT NULL,
        updated_at timestamptz NOT NULL,
        PRIMARY KEY (namespace, key)
    )""",
    """CREATE TABLE IF NOT EXISTS mnemon_kv_audit (
        id bigserial PRIMARY KEY,
        at timestamptz NOT NULL,
        actor text NOT NULL,
        action text NOT NULL,
        ns text NOT NULL,
        keys text NOT NULL DEFAULT '[]',
        count integer NOT NULL
    )""",
    "CREATE INDEX IF NOT EXISTS mnemon_kv_audit_ns ON mnemon_kv_audit(ns, id)",
)
_SETUP_LOCK = 0x6B76  # advisory lock key: concurrent first opens create the tables once


class PostgresItems:
    """Items in the store's PostgreSQL database (an async pool on ``loop``).

    Args:
        url: The store's URL (``store.url``).
        loop: The loop thread every query runs on.
    """

    def __init__(self, url: str, loop: LoopThread) -> None:
        try:
            import psycopg_pool
        except ImportError as exc:  # pragma: no cover - depends on the install
            raise MissingDependencyError(
                "MnemonBaseStore on PostgreSQL", "psycopg_pool", "postgres"
            ) from exc
        self._loop = loop
        self._pool = psycopg_pool.AsyncConnectionPool(
            url, min_size=1, max_size=4, open=False, kwargs={"autocommit": True}
        )
        self._url = url
        # closes the pool when these items are closed, collected or at interpreter exit
        # (once): an unclosed pool's worker tasks otherwise die pending with the daemon
        # loop thread, and asyncio prints "Task was destroyed but it is pending!"
        self._finalizer = weakref.finalize(self, _close_pool, loop, self._pool)
        loop.run(self._open())

    async def _open(self) -> None:
        try:
            await self._pool.open(wait=True, timeout=30)
        except Exception as exc:
            raise ConfigurationError(f"MnemonBaseStore cannot reach PostgreSQL: {exc}") from exc
        async with self._pool.connection() as conn, conn.transaction():
            await conn.execute("SELECT pg_advisory_xact_lock(%s)", (_SETUP_LOCK,))
            for statement in _PG_SCHEMA:
                await conn.execute(statement)

    async def _fetch(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        async with self._pool.connection() as conn:
            cur = await conn.execute(sql, params)
            return list(await cur.fetchall())

    async def get(self, namespace: Namespace, key: str) -> ItemRow | None:
        rows = await self._loop.submit(
            self._fetch(
                f"SELECT {_COLUMNS} FROM mnemon_kv_items WHERE namespace = %s AND key = %s",
                (namespace_key(namespace), key),
            )
        )
        return _row(rows[0]) if rows else None

    async def write(self, writes: Sequence[Write], *, actor: str) -> None:
        await self._loop.submit(self._write(writes, actor))

    async def _write(self, writes: Sequence[Write], actor: str) -> None:
        now = datetime.now(UTC)
        deleted: dict[tuple[str, str], bool] = {}
        async with self._pool.connection() as conn, conn.transaction():
            for w in writes:
                ns = namespace_key(w.namespace)
                if w.value is None:
                    cur = await conn.execute(
                        "DELETE FROM mnemon_kv_items WHERE namespace = %s AND key = %s",
                        (ns, w.key),
                    )
                    deleted[(ns, w.key)] = deleted.get((ns, w.key), False) or cur.rowcount > 0
                    continue
                await conn.execute(_upsert("%s", w), _params(ns, w, now))
                deleted[(ns, w.key)] = False
            for ns, keys in _audit_rows(writes, deleted).items():
                await conn.execute(
                    "INSERT INTO mnemon_kv_audit(at, actor, action, ns, keys, count) "
                    "VALUES (%s, %s, 'delete_items', %s, %s, %s)",
                    (now, actor, ns, json.dumps(keys), len(keys)),
                )

    async def under(self, prefix: Namespace) -> list[ItemRow]:
        sql = f"SELECT {_COLUMNS} FROM mnemon_kv_items"
        params: tuple[Any, ...] = ()
        if prefix:
            exact, starts = _prefix_of(prefix)
            sql += " WHERE namespace = %s OR starts_with(namespace, %s)"
            params = (exact, starts)
        rows = await self._loop.submit(self._fetch(sql + " ORDER BY namespace, key", params))
        return [_row(r) for r in rows]

    async def namespaces(self) -> list[Namespace]:
        rows = await self._loop.submit(
            self._fetch("SELECT DISTINCT namespace FROM mnemon_kv_items")
        )
        return sorted(ns_from_key(r[0]) for r in rows)

    async def erase(self, namespace: Namespace, *, actor: str) -> int:
        return await self._loop.submit(self._erase(namespace, actor))

    async def _erase(self, namespace: Namespace, actor: str) -> int:
        ns = namespace_key(namespace)
        async with self._pool.connection() as conn:
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

    async def audit_log(self, namespace: Namespace | None) -> list[ItemAudit]:
        sql = "SELECT id, at, actor, action, ns, keys, count FROM mnemon_kv_audit"
        params: tuple[Any, ...] = ()
        if namespace is not None:
            sql += " WHERE ns = %s"
            params = (namespace_key(namespace),)
        rows = await self._loop.submit(self._fetch(sql + " ORDER BY id", params))
        return [_audit_entry(r) for r in rows]

    def close(self) -> None:
        self._finalizer()


def _close_pool(loop: LoopThread, pool: Any) -> None:
    """Close ``pool`` on ``loop``, waiting at most 20 s (best effort: the server may be
    gone); on the loop's own thread the close is scheduled instead."""
    if not loop.thread.is_alive():
        return
    if threading.current_thread() is loop.thread:
        loop.loop.create_task(pool.close(timeout=10))
        return
    with contextlib.suppress(Exception):
        loop.run(pool.close(timeout=10), timeout=20)
