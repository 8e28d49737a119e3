"""Schema of the consolidated index: its tables in the journal's SQLite file.

See :mod:`mnemon_langgraph.store.embedded._items` for how the tables are used. The
``item_links_orphan`` trigger deletes an item whose last link went (its records were
deleted, by ``ON DELETE CASCADE``) and writes an audit row for it into the journal's
``audit`` table, inside the deleting transaction.
"""

from __future__ import annotations

import sqlite3

__all__ = ["ITEM_COLUMNS", "SCHEMA_SQL", "SCHEMA_VERSION", "split_sql"]

SCHEMA_VERSION = 1
"""Version of the consolidation tables, kept in ``consolidation_meta``."""

ITEM_COLUMNS = "id, namespace, kind, text, topic, subject, attribute, value, date, contradicts, seq"


SCHEMA_SQL = """
CREATE TABLE IF NOT EXISTS consolidation_meta (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS items (
    id TEXT PRIMARY KEY,
    namespace TEXT NOT NULL,
    kind TEXT NOT NULL CHECK (kind IN ('event', 'value', 'instruction')),
    text TEXT NOT NULL,
    topic TEXT,
    subject TEXT,
    attribute TEXT,
    value TEXT,
    group_key TEXT NOT NULL,
    date TEXT,
    contradicts INTEGER NOT NULL DEFAULT 0,
    seq INTEGER NOT NULL,
    embedding BLOB,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS items_by_kind ON items (namespace, kind, seq);
CREATE INDEX IF NOT EXISTS items_by_group ON items (namespace, group_key, seq);
CREATE TABLE IF NOT EXISTS item_links (
    item_id TEXT NOT NULL REFERENCES items (id) ON DELETE CASCADE,
    record_id TEXT NOT NULL REFERENCES records (id) ON DELETE CASCADE,
    PRIMARY KEY (item_id, record_id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS item_links_by_record ON item_links (record_id);
CREATE TABLE IF NOT EXISTS consolidation_state (
    namespace TEXT PRIMARY KEY,
    watermark INTEGER NOT NULL DEFAULT 0,
    batches INTEGER NOT NULL DEFAULT 0,
    items_added INTEGER NOT NULL DEFAULT 0,
    items_updated INTEGER NOT NULL DEFAULT 0,
    model_calls INTEGER NOT NULL DEFAULT 0,
    input_tokens INTEGER NOT NULL DEFAULT 0,
    output_tokens INTEGER NOT NULL DEFAULT 0,
    updated_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS consolidation_failures (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    namespace TEXT NOT NULL,
    batch_start_seq INTEGER NOT NULL,
    batch_end_seq INTEGER NOT NULL,
    error TEXT NOT NULL,
    attempts INTEGER NOT NULL,
    at TEXT NOT NULL,
    skipped INTEGER NOT NULL DEFAULT 0,
    resolved INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS consolidation_failures_by_batch
    ON consolidation_failures (namespace, batch_start_seq);
CREATE TRIGGER IF NOT EXISTS item_links_orphan AFTER DELETE ON item_links
WHEN NOT EXISTS (SELECT 1 FROM item_links WHERE item_id = OLD.item_id)
 AND EXISTS (SELECT 1 FROM items WHERE id = OLD.item_id)
BEGIN
    INSERT INTO audit (at, actor, action, namespace, count, record_ids, message_ids, reason)
    SELECT strftime('%Y-%m-%dT%H:%M:%f+00:00', 'now'), 'consolidation', 'delete_item',
           namespace, 1, json_array(OLD.record_id), '[]',
           'index item ' || OLD.item_id || ' lost its last linked record'
    FROM items WHERE id = OLD.item_id;
    DELETE FROM items WHERE id = OLD.item_id;
END;
"""


def split_sql(script: str) -> list[str]:
    """Split the schema script into statements (triggers keep their inner ``;``)."""
    statements: list[str] = []
    buf: list[str] = []
    for line in script.strip().splitlines():
        buf.append(line)
        joined = "\n".join(buf).strip()
        if sqlite3.complete_statement(joined):
            statements.append(joined)
            buf = []
    if "\n".join(buf).strip():
        statements.append("\n".join(buf).strip())
    return statements
