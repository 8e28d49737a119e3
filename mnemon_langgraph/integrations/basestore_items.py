"""Deprecated: the key-value items moved into the backends (``store.kv()``).

Kept for one release: importing it warns. The types live in
:mod:`mnemon_langgraph.store.kv_items`; the tables are part of each backend's schema, on
its connection or pool (:mod:`mnemon_langgraph.store.embedded._kv_items`,
:mod:`mnemon_langgraph.store.postgres._kv_items`); see ``docs/migration.md``.
"""

from __future__ import annotations

import warnings

from mnemon_langgraph.store.embedded._kv_items import EmbeddedKVItems as SQLiteItems
from mnemon_langgraph.store.kv_items import KVAudit as ItemAudit
from mnemon_langgraph.store.kv_items import KVItems as ItemTable
from mnemon_langgraph.store.kv_items import KVWrite as Write
from mnemon_langgraph.store.postgres._kv_items import PostgresKVItems as PostgresItems

__all__ = ["ItemAudit", "ItemTable", "PostgresItems", "SQLiteItems", "Write"]

warnings.warn(
    "mnemon_langgraph.integrations.basestore_items is deprecated: the key-value items are "
    "the store's (store.kv(); types in mnemon_langgraph.store.kv_items). SQLiteItems and "
    "PostgresItems now take the journal / the engine (use store.kv()). See docs/migration.md.",
    DeprecationWarning,
    stacklevel=2,
)
