"""The SQLite journal's tables: schema version, migrations and row <-> record conversion.

Kept apart from :mod:`mnemon_langgraph.store.embedded._journal` (which re-exports the public
names) so both modules stay small. See that module for what each table is for; what the
PostgreSQL backend stores the same way is in :mod:`mnemon_langgraph.records.schema`.
"""

from __future__ import annotations

import functools
import json
import sqlite3
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime
from typing import Any

from mnemon_langgraph.records._content_caches import register_content_cache
from mnemon_langgraph.records.schema import ns_from_key
from mnemon_langgraph.types import Record

__all__ = [
    "AUDIT_TRIGGERS",
    "HOLDS_SQL",
    "KV_ITEMS_SQL",
    "KV_TTL_COLUMNS",
    "MIGRATIONS",
    "READABLE_FROM",
    "RECORD_COLUMNS",
    "SCHEMA_VERSION",
    "chunks",
    "dumps",
    "ensure_append_only_audit",
    "now_iso",
    "replace_seq",
    "row_to_record",
]


SCHEMA_VERSION = 3
"""Schema version this module writes. A journal with a newer version is refused."""

READABLE_FROM = 2
"""The oldest version a read-only open still reads (version 2 renamed the records' ingest
label column, which every record read names, so an older journal must be opened writable
once to migrate)."""

BATCH = 500  # ids per ``IN (...)`` query, well under SQLite's variable limit


# --- schema and migrations ------------------------------------------------------------

_V1 = """
CREATE TABLE IF NOT EXISTS records (
    id TEXT PRIMARY KEY,
    seq INTEGER NOT NULL UNIQUE,
    namespace TEXT NOT NULL,
    source TEXT NOT NULL DEFAULT '',
    session INTEGER NOT NULL,
    date TEXT,
    position INTEGER NOT NULL,
    speakers TEXT NOT NULL,
    message_ids TEXT NOT NULL,
    roles TEXT NOT NULL,
    text TEXT NOT NULL,
    created_at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS records_ns_seq ON records(namespace, seq);
CREATE INDEX IF NOT EXISTS records_ns_session ON records(namespace, session, position);
CREATE TABLE IF NOT EXISTS messages (
    namespace TEXT NOT NULL,
    message_id TEXT NOT NULL,
    record_id TEXT NOT NULL REFERENCES records(id) ON DELETE CASCADE,
    PRIMARY KEY (namespace, message_id, record_id)
);
CREATE INDEX IF NOT EXISTS messages_record ON messages(record_id);
CREATE TABLE IF NOT EXISTS vectors (
    record_id TEXT PRIMARY KEY REFERENCES records(id) ON DELETE CASCADE,
    namespace TEXT NOT NULL,
    vector BLOB NOT NULL
);
CREATE INDEX IF NOT EXISTS vectors_ns ON vectors(namespace);
CREATE TABLE IF NOT EXISTS audit (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    at TEXT NOT NULL,
    actor TEXT NOT NULL,
    action TEXT NOT NULL,
    namespace TEXT NOT NULL,
    count INTEGER NOT NULL,
    record_ids TEXT NOT NULL DEFAULT '[]',
    message_ids TEXT NOT NULL DEFAULT '[]',
    reason TEXT NOT NULL DEFAULT ''
);
CREATE INDEX IF NOT EXISTS audit_ns ON audit(namespace, id);
"""


def _migrate_to_1(conn: sqlite3.Connection) -> None:
    for statement in _V1.split(";"):
        if statement.strip():
            conn.execute(statement)
    conn.execute("INSERT OR IGNORE INTO meta(key, value) VALUES ('last_seq', '0')")


KV_ITEMS_SQL = (
    """CREATE TABLE IF NOT EXISTS mnemon_kv_items (
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
)""",
    """CREATE TABLE IF NOT EXISTS mnemon_kv_audit (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    at TEXT NOT NULL,
    actor TEXT NOT NULL,
    action TEXT NOT NULL,
    ns TEXT NOT NULL,
    keys TEXT NOT NULL DEFAULT '[]',
    count INTEGER NOT NULL
)""",
    "CREATE INDEX IF NOT EXISTS mnemon_kv_audit_ns ON mnemon_kv_audit(ns, id)",
)
"""The key-value items' tables (:mod:`mnemon_langgraph.store.kv_items`), as the BaseStore
created them before they joined the schema: ``IF NOT EXISTS``, so a journal that already
has them (written by that code) keeps its rows."""


AUDIT_TRIGGERS = {
    "audit_no_update": "CREATE TRIGGER IF NOT EXISTS audit_no_update BEFORE UPDATE ON audit "
    "BEGIN SELECT RAISE(ABORT, 'the audit trail is append-only: rows are never changed'); END",
    "audit_no_delete": "CREATE TRIGGER IF NOT EXISTS audit_no_delete BEFORE DELETE ON audit "
    "BEGIN SELECT RAISE(ABORT, 'the audit trail is append-only: rows are never deleted'); END",
}
"""Triggers that make the ``audit`` table append-only in the file itself, so no code path (of
this package or of a later module sharing the journal) can rewrite or delete an audit row."""


def ensure_append_only_audit(conn: sqlite3.Connection) -> bool:
    """Create the :data:`AUDIT_TRIGGERS` that are missing (caller's write transaction).

    Run on every writable open rather than as a numbered migration: the triggers add no
    data and change no stored row, and a journal written before them gets them on its next
    open. Returns whether any was created.
    """
    present = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'")}
    missing = [sql for name, sql in AUDIT_TRIGGERS.items() if name not in present]
    for sql in missing:
        conn.execute(sql)
    return bool(missing)


def _migrate_to_2(conn: sqlite3.Connection) -> None:
    """The key-value items' tables join the schema (:data:`KV_ITEMS_SQL`), and the ingest
    label's column takes the label's name: ``source`` → ``origin`` (the indexes follow the
    column; every stored label is kept as it is). Safe to run again, as every step."""
    for statement in KV_ITEMS_SQL:
        conn.execute(statement)
    columns = {row[1] for row in conn.execute("PRAGMA table_info(records)")}
    if "source" in columns:
        conn.execute("ALTER TABLE records RENAME COLUMN source TO origin")


HOLDS_SQL = """CREATE TABLE IF NOT EXISTS retention_holds (
    ns TEXT PRIMARY KEY,
    at TEXT NOT NULL,
    actor TEXT NOT NULL,
    reason TEXT NOT NULL DEFAULT ''
)"""
"""Legal holds (``store.hold``): a held namespace is skipped by retention. The column is
``ns``, not ``namespace``, so an erase (which empties every table with a ``namespace``
column) does not lift a hold, and a hold alone does not make a namespace "held data"."""


def _retention_holds_to_3(conn: sqlite3.Connection) -> None:
    """Version 3, retention's part: the legal holds' table (:data:`HOLDS_SQL`)."""
    conn.execute(HOLDS_SQL)


KV_TTL_COLUMNS = (("expires_at", "TEXT"), ("ttl_minutes", "REAL"))
"""The key-value items' TTL columns (version 3): when the item expires (UTC, ISO 8601 with
microseconds, so expiries compare as text) and its TTL in minutes; ``NULL``: never."""


def _migrate_kv_ttl(conn: sqlite3.Connection) -> None:
    """Version 3, the key-value items' part: the TTL columns of ``mnemon_kv_items`` and an
    index for the sweep. Every stored item keeps its row and never expires (both columns
    ``NULL``). Safe to run again."""
    columns = {row[1] for row in conn.execute("PRAGMA table_info(mnemon_kv_items)")}
    for name, kind in KV_TTL_COLUMNS:
        if name not in columns:
            conn.execute(f"ALTER TABLE mnemon_kv_items ADD COLUMN {name} {kind}")
    conn.execute(
        "CREATE INDEX IF NOT EXISTS mnemon_kv_items_expiry ON mnemon_kv_items(expires_at) "
        "WHERE expires_at IS NOT NULL"
    )


def _migrate_to_3(conn: sqlite3.Connection) -> None:
    """Version 3: the legal holds of retention (:func:`_retention_holds_to_3`) and the
    key-value items' TTL (:func:`_migrate_kv_ttl`). Each part is its own function; safe to
    run again."""
    _retention_holds_to_3(conn)
    _migrate_kv_ttl(conn)


# Ordered list of migrations: entry i brings a journal from version i to version i + 1.
# Migrations only add or rename; they never drop data.
MIGRATIONS: list[Callable[[sqlite3.Connection], None]] = [
    _migrate_to_1,
    _migrate_to_2,
    _migrate_to_3,
]


# --- helpers --------------------------------------------------------------------------


def now_iso() -> str:
    return datetime.now(UTC).isoformat()


def dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def chunks(items: Sequence[str], size: int = BATCH) -> Iterator[Sequence[str]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def row_to_record(row: sqlite3.Row | tuple[Any, ...]) -> Record:
    (rid, seq, ns, origin, session, date, position, speakers, mids, roles, text) = tuple(row)[:11]
    return Record(
        id=rid,
        namespace=_namespace(ns),
        session=session,
        date=datetime.fromisoformat(date) if date else None,
        position=position,
        speakers=_names(speakers),
        message_ids=tuple(json.loads(mids)),
        text=text,
        origin=origin,
        seq=seq,
        roles=_names(roles),
    )


# A search reads hundreds of records whose namespace, speakers and roles repeat a few values:
# each stored form is parsed once (the results are tuples, shared safely).
@functools.lru_cache(maxsize=256)
def _namespace(key: str) -> tuple[str, ...]:
    return ns_from_key(key)


@functools.lru_cache(maxsize=4096)
def _names(stored: str) -> tuple[Any, ...]:
    return tuple(json.loads(stored))


# speaker names are the records' words: a deletion forgets them (and the namespaces) too
register_content_cache(_namespace.cache_clear)
register_content_cache(_names.cache_clear)


RECORD_COLUMNS = (
    "id, seq, namespace, origin, session, date, position, speakers, message_ids, roles, text"
)


def replace_seq(rec: Record, seq: int) -> Record:
    return Record(
        id=rec.id,
        namespace=tuple(rec.namespace),
        session=rec.session,
        date=rec.date,
        position=rec.position,
        speakers=tuple(rec.speakers),
        message_ids=tuple(rec.message_ids),
        text=rec.text,
        origin=rec.origin,
        seq=seq,
        roles=tuple(rec.roles),
    )
