"""The store: one public class, :class:`MnemonStore`, over two backends.

``MnemonStore("memory.db")`` is the embedded default (one SQLite journal and index folders);
``MnemonStore("postgresql://…")`` or :meth:`PostgresStore.from_conn_string` keeps everything in
PostgreSQL. The protocol every surface relies on is
:class:`~mnemon_langgraph.store.base.StoreBackend`.

Example:
    >>> from mnemon_langgraph.store import MnemonStore
    >>> from mnemon_langgraph.types import Message
    >>> with MnemonStore("memory.db") as store:                       # doctest: +SKIP
    ...     store.ingest(("users", "ada"), [Message("I moved to Lyon", "Ada")], origin="chat")
    ...     hits = store.search("where does Ada live?", namespace=("users", "ada"), k=5)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mnemon_langgraph.loaders.files import load_messages
from mnemon_langgraph.store._internal.retention import RetentionReceipt
from mnemon_langgraph.store.base import (
    IngestResult,
    MnemonStore,
    StoreBackend,
    is_postgres_url,
    register_backend,
)
from mnemon_langgraph.store.embedded import EmbeddedStore

if TYPE_CHECKING:
    from mnemon_langgraph.store.postgres import PostgresStore

__all__ = [
    "EmbeddedStore",
    "IngestResult",
    "MnemonStore",
    "PostgresStore",
    "RetentionReceipt",
    "StoreBackend",
    "is_postgres_url",
    "load_messages",
]


def _postgres_store() -> type[MnemonStore]:
    # Lazy: the default install has no psycopg; only a PostgreSQL URL imports it.
    from mnemon_langgraph.store.postgres import PostgresStore

    return PostgresStore


# ``MnemonStore(target)`` picks its backend here: store/base.py never imports the backends
# (they build on it), so the package, which imports both sides, tells it their classes.
register_backend("embedded", lambda: EmbeddedStore)
register_backend("postgres", _postgres_store)


def __getattr__(name: str) -> Any:
    if name == "PostgresStore":
        return _postgres_store()
    raise AttributeError(name)
