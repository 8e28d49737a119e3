"""Storage layout of the journal: schema, migrations and row <-> record conversion.

Kept apart from :mod:`mnemon_langgraph.store.embedded.journal` (which re-exports the public
names) so both modules stay small. See that module for what each table is for.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from mnemon_langgraph.errors import InputError
from mnemon_langgraph.types import Message, Namespace, Record, Role, normalize_namespace

__all__ = [
    "MIGRATIONS",
    "RECORD_COLUMNS",
    "SCHEMA_VERSION",
    "AuditEntry",
    "ensure_append_only_audit",
    "namespace_key",
    "rebuild_messages",
    "record_lines",
    "row_to_record",
]


SCHEMA_VERSION = 1
"""Schema version this module writes. A journal with a newer version is refused."""

BATCH = 500  # ids per ``IN (...)`` query, well under SQLite's variable limit


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


# Ordered list of migrations: entry i brings a journal from version i to version i + 1.
# Migrations only add; they never drop data.
MIGRATIONS: list[Callable[[sqlite3.Connection], None]] = [_migrate_to_1]


# --- helpers --------------------------------------------------------------------------


def now_iso() -> str:
    return datetime.now(UTC).isoformat()


def dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def chunks(items: Sequence[str], size: int = BATCH) -> Iterator[Sequence[str]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def id_list(ids: Iterable[str] | str) -> list[str]:
    """Ids as a de-duplicated list; a single string is one id (not its characters)."""
    if isinstance(ids, str):
        return [ids]
    if isinstance(ids, bytes | bytearray) or not isinstance(ids, Iterable):
        raise InputError(
            f"ids must be a list of id strings, got {type(ids).__name__}: {ids!r}"[:200]
        )
    out = list(dict.fromkeys(ids))
    for value in out:
        if not isinstance(value, str):
            raise InputError(f"ids must be strings, got {type(value).__name__}: {value!r}")
    return out


def row_to_record(row: sqlite3.Row | tuple[Any, ...]) -> Record:
    (rid, seq, ns, source, session, date, position, speakers, mids, roles, text) = tuple(row)[:11]
    return Record(
        id=rid,
        namespace=ns_from_key(ns),
        session=session,
        date=datetime.fromisoformat(date) if date else None,
        position=position,
        speakers=tuple(json.loads(speakers)),
        message_ids=tuple(json.loads(mids)),
        text=text,
        source=source,
        seq=seq,
        roles=tuple(json.loads(roles)),
    )


RECORD_COLUMNS = (
    "id, seq, namespace, source, session, date, position, speakers, message_ids, roles, text"
)


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

    Lines, ``message_ids`` and ``roles`` are parallel (see :mod:`~.chunking`).
    """
    out: list[tuple[str, str, str, Role]] = []
    lines = record.text.split("\n")
    for i, line in enumerate(lines):
        mid = record.message_ids[i] if i < len(record.message_ids) else record.message_ids[-1]
        role: Role = record.roles[i] if i < len(record.roles) else "user"
        speaker, text = _split_line(line, record.speakers)
        out.append((mid, speaker, text, role))
    return out


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
        source=rec.source,
        seq=seq,
        roles=tuple(rec.roles),
    )


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
