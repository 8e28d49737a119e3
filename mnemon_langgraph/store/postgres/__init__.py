"""The PostgreSQL backend: the whole store in PostgreSQL (pgvector, BM25 in SQL), shared by
any number of processes on any number of hosts.

Built by ``MnemonStore("postgresql://…")`` or, in the style of
``langgraph-checkpoint-postgres``, by :meth:`PostgresStore.from_conn_string` (a context
manager) and :meth:`PostgresStore.afrom_conn_string` (its async twin). Nothing is kept on
local disk: records, messages, vectors, BM25 statistics, index items, consolidation state,
the audit trail, the schema version and the embedding model identity are all rows.

One module per role, under a facade of a few hundred lines (:mod:`._store`):

* :mod:`._engine`: the event-loop thread and the connection pool (the one async core every
  sync and async method runs on), namespace ids and write locks, :func:`redact`;
* :mod:`._settings`: :class:`PostgresSettings`, the frozen tuning given at construction;
* :mod:`._schema`: tables, indexes, migrations, schema version, model identity;
* :mod:`._writes`: ingest, deletions with their audit rows, erase (and ``VACUUM``);
* :mod:`._packs`: the BM25 packs (impact-sorted postings of common terms);
* :mod:`._impact` and :mod:`._bm25`: the BM25 impact-ordered query (its pure rule and bounds,
  and the object that reads postings in rounds until the top ``k`` is proven);
* :mod:`._dense`: pgvector search, exact below ``exact_below`` records, HNSW above;
* :mod:`._search`: the two rankings fused by reciprocal rank;
* :mod:`._reads` and :mod:`._stats`: records, message ids, vectors, counts, the audit;
* :mod:`._items`: the consolidated index (``store.item_store()``), its tables beside the records;
* :mod:`._kv_items`: the ``BaseStore``'s key-value items (``store.kv()``).

The package names the classes a user meets: :class:`PostgresStore`, :class:`PostgresSettings`,
:class:`PostgresItemStore` and :class:`PostgresKVItems`.
"""

from __future__ import annotations

from mnemon_langgraph.errors import deprecated_names
from mnemon_langgraph.store.postgres._engine import redact
from mnemon_langgraph.store.postgres._items import PostgresItemStore
from mnemon_langgraph.store.postgres._kv_items import PostgresKVItems
from mnemon_langgraph.store.postgres._settings import (
    EXACT_BELOW,
    OLD_EF_SEARCH_NAMES,
    PGVECTOR_EF_SEARCH_BY_SIZE,
    PGVECTOR_EF_SEARCH_LARGE,
    PostgresSettings,
    pgvector_ef_search_for,
)
from mnemon_langgraph.store.postgres._store import PostgresStore

__all__ = [
    "EXACT_BELOW",
    "PGVECTOR_EF_SEARCH_BY_SIZE",
    "PGVECTOR_EF_SEARCH_LARGE",
    "PostgresItemStore",
    "PostgresKVItems",
    "PostgresSettings",
    "PostgresStore",
    "pgvector_ef_search_for",
    "redact",
]

__getattr__ = deprecated_names(
    __name__, {k: v for k, v in OLD_EF_SEARCH_NAMES.items() if k != "EF_SEARCH_MAX"}
)
