"""The key-value items live in the backends: on the store's own connection or pool, in its
versioned schema, and a database written by the old code (the BaseStore's own tables) opens
with its items kept, on both backends."""

from __future__ import annotations

import sqlite3
import warnings
from datetime import UTC, datetime
from pathlib import Path

import pytest
from _reliability_common import fake_embeddings

from mnemon_langgraph import MnemonBaseStore, MnemonStore
from mnemon_langgraph.errors import JournalReadOnlyError
from mnemon_langgraph.store.embedded._journal import Journal
from mnemon_langgraph.store.embedded._kv_items import EmbeddedKVItems
from mnemon_langgraph.store.embedded._schema import SCHEMA_VERSION as JOURNAL_VERSION
from mnemon_langgraph.store.postgres._schema import SCHEMA_VERSION as PG_VERSION

# The old code path's SQL, verbatim (integrations/basestore_items.py before the move).
OLD_SQLITE_SCHEMA = """
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
CREATE INDEX IF NOT EXISTS mnemon_kv_audit_ns ON mnemon_kv_audit(ns, id)
"""
OLD_PG_SCHEMA = (
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
OLD_INSERT = (
    "INSERT INTO mnemon_kv_items(namespace, key, value, text, vectors, dim, created_at, "
    "updated_at, fields) VALUES ({m}, {m}, {m}, {m}, NULL, 0, {m}, {m}, {m})"
)
STAMP = datetime(2025, 5, 1, 12, 0, tzinfo=UTC)
OLD_ROW = ('["memories","ada"]', "likes", '{"food": "pears"}', "pears", STAMP, STAMP, '["$"]')


def _old_journal(path: Path) -> None:
    """A journal as the previous release left it: schema version 1, and the key-value
    tables the BaseStore created itself, holding one item."""
    with Journal(path):
        pass
    conn = sqlite3.connect(path)
    conn.execute("DROP TABLE mnemon_kv_items")
    conn.execute("DROP TABLE mnemon_kv_audit")
    conn.execute("UPDATE meta SET value = '1' WHERE key = 'schema_version'")
    conn.executescript(OLD_SQLITE_SCHEMA)
    row = [v.isoformat() if isinstance(v, datetime) else v for v in OLD_ROW]
    conn.execute(OLD_INSERT.format(m="?"), row)
    conn.commit()
    conn.close()


def test_an_old_journal_migrates_and_keeps_its_key_value_items(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    _old_journal(path)
    with MnemonStore(path, fake_embeddings()) as store, MnemonBaseStore(store) as base:
        assert store.journal.schema_version() == JOURNAL_VERSION
        item = base.get(("memories", "ada"), "likes")
        assert item is not None and item.value == {"food": "pears"}
        assert item.created_at == STAMP
        base.put(("memories", "ada"), "dislikes", {"food": "figs"})
        assert [i.key for i in base.search(("memories",))] == ["dislikes", "likes"]


def test_an_old_journal_opened_read_only_says_it_needs_its_migration(tmp_path: Path) -> None:
    """Version 2 also renames the records' label column, which every read names: a read-only
    open of version 1 is refused with the versions and the reason, and one writable open
    migrates it, after which read-only opens read it."""
    path = tmp_path / "old.db"
    _old_journal(path)
    with pytest.raises(
        JournalReadOnlyError, match=rf"schema upgrade \(1 → {JOURNAL_VERSION}\).*read-only"
    ):
        Journal(path, read_only=True)
    Journal(path).close()
    with Journal(path, read_only=True) as journal:
        assert journal.schema_version() == JOURNAL_VERSION
        assert journal.count(("memories", "ada")) == 0


def test_key_value_items_use_the_journals_connection_not_their_own(tmp_path: Path) -> None:
    with MnemonStore(tmp_path / "m.db", fake_embeddings()) as store:
        kv = store.kv()
        assert isinstance(kv, EmbeddedKVItems) and kv.journal is store.journal
        assert store.journal.schema_version() == JOURNAL_VERSION
        tables = {r[0] for r in store.journal._read("SELECT name FROM sqlite_master")}
        assert {"mnemon_kv_items", "mnemon_kv_audit"} <= tables  # the schema's, at open


def test_an_old_postgres_database_keeps_its_key_value_items(postgres_url: str) -> None:
    import psycopg

    from mnemon_langgraph.store.postgres._kv_items import PostgresKVItems

    with MnemonStore(postgres_url, fake_embeddings()):
        pass
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute("DROP TABLE mnemon_kv_items")
        conn.execute("DROP TABLE mnemon_kv_audit")
        conn.execute("UPDATE mnemon_meta SET value = '5' WHERE key = 'schema_version'")
        for statement in OLD_PG_SCHEMA:
            conn.execute(statement)
        conn.execute(OLD_INSERT.format(m="%s"), OLD_ROW)
    with MnemonStore(postgres_url, fake_embeddings()) as store:
        assert isinstance(store.kv(), PostgresKVItems) and store.kv().engine is store.engine
        with MnemonBaseStore(store) as base:
            item = base.get(("memories", "ada"), "likes")
            assert item is not None and item.value == {"food": "pears"}
            assert item.created_at == STAMP
    with psycopg.connect(postgres_url) as conn:
        version = conn.execute("SELECT value FROM mnemon_meta WHERE key = 'schema_version'")
        assert version.fetchone() == (str(PG_VERSION),)


def test_the_old_module_warns_and_names_the_new_types() -> None:
    import importlib
    import sys

    sys.modules.pop("mnemon_langgraph.integrations.basestore_items", None)
    with pytest.warns(DeprecationWarning, match="store.kv"):
        old = importlib.import_module("mnemon_langgraph.integrations.basestore_items")
    from mnemon_langgraph.store.kv_items import KVAudit, KVWrite

    assert old.Write is KVWrite and old.ItemAudit is KVAudit
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        from mnemon_langgraph.integrations.basestore import ItemAudit  # no warning there
    assert ItemAudit is KVAudit


def test_the_index_item_store_has_its_backends_name_and_the_old_one_warns() -> None:
    """``SQLiteItemStore`` (the consolidated index) sat beside ``SQLiteItems`` (key-value
    items); it is ``EmbeddedItemStore`` now, as ``EmbeddedStore`` / ``PostgresItemStore``."""
    import mnemon_langgraph
    import mnemon_langgraph.store.embedded._items as items
    from mnemon_langgraph import consolidation

    for module in (mnemon_langgraph, consolidation, items):
        with pytest.warns(DeprecationWarning, match="EmbeddedItemStore"):
            assert module.SQLiteItemStore is items.EmbeddedItemStore
    assert mnemon_langgraph.EmbeddedItemStore is items.EmbeddedItemStore


# -- schema step 3 / 7: the key-value items' TTL columns ------------------------------------

FAR = datetime(2999, 1, 1, tzinfo=UTC)


def test_a_version_2_journal_gains_the_ttl_columns_and_its_items_never_expire(
    tmp_path: Path,
) -> None:
    path = tmp_path / "v2.db"
    with MnemonStore(path, fake_embeddings()) as store, MnemonBaseStore(store) as base:
        base.put(("memories", "ada"), "likes", {"food": "pears"})
    conn = sqlite3.connect(path)  # back to version 2: the item tables without TTL columns
    conn.execute("DROP INDEX mnemon_kv_items_expiry")
    conn.execute("ALTER TABLE mnemon_kv_items DROP COLUMN expires_at")
    conn.execute("ALTER TABLE mnemon_kv_items DROP COLUMN ttl_minutes")
    conn.execute("UPDATE meta SET value = '2' WHERE key = 'schema_version'")
    conn.commit()
    conn.close()
    # read-only, version 2 is read as it is (it cannot be migrated): its items never expire
    read_only = Journal(path, read_only=True)
    with (
        MnemonStore(path, fake_embeddings(), journal=read_only) as store,
        MnemonBaseStore(store, clock=lambda: FAR) as base,
    ):
        assert store.journal.schema_version() == 2
        assert [i.key for i in base.search(("memories",))] == ["likes"]
        assert base.list_namespaces() == [("memories", "ada")]
        assert [r["key"] for r in base.export_items(("memories", "ada"))] == ["likes"]
    with (
        MnemonStore(path, fake_embeddings()) as store,
        MnemonBaseStore(store, clock=lambda: FAR) as base,
    ):
        assert store.journal.schema_version() == JOURNAL_VERSION == 3
        assert base.sweep_ttl() == 0  # a stored item has no expiry
        item = base.get(("memories", "ada"), "likes")
        assert item is not None and item.value == {"food": "pears"}
        base.put(("memories", "ada"), "brief", {"food": "figs"}, ttl=5)
    conn = sqlite3.connect(path)
    rows = conn.execute("SELECT key, expires_at, ttl_minutes FROM mnemon_kv_items ORDER BY key")
    assert [(k, e is None, t) for k, e, t in rows] == [("brief", False, 5.0), ("likes", True, None)]
    conn.close()


def test_a_version_6_postgres_database_gains_the_ttl_columns(postgres_url: str) -> None:
    import psycopg

    with MnemonStore(postgres_url, fake_embeddings()) as store, MnemonBaseStore(store) as base:
        base.put(("memories", "ada"), "likes", {"food": "pears"})
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute("ALTER TABLE mnemon_kv_items DROP COLUMN expires_at")
        conn.execute("ALTER TABLE mnemon_kv_items DROP COLUMN ttl_minutes")
        conn.execute("UPDATE mnemon_meta SET value = '6' WHERE key = 'schema_version'")
    with (
        MnemonStore(postgres_url, fake_embeddings()) as store,
        MnemonBaseStore(store, clock=lambda: FAR) as base,
    ):
        assert base.sweep_ttl() == 0
        item = base.get(("memories", "ada"), "likes")
        assert item is not None and item.value == {"food": "pears"}
        base.put(("memories", "ada"), "brief", {"food": "figs"}, ttl=5)
    with psycopg.connect(postgres_url) as conn:
        version = conn.execute("SELECT value FROM mnemon_meta WHERE key = 'schema_version'")
        assert version.fetchone() == (str(PG_VERSION),)
        rows = conn.execute(
            "SELECT key, expires_at IS NULL, ttl_minutes FROM mnemon_kv_items ORDER BY key"
        ).fetchall()
    assert rows == [("brief", False, 5.0), ("likes", True, None)]
