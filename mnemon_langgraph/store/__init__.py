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
from mnemon_langgraph.store.base import IngestResult, MnemonStore, StoreBackend, is_postgres_url
from mnemon_langgraph.store.embedded import EmbeddedStore

if TYPE_CHECKING:
    from mnemon_langgraph.store.postgres import PostgresStore

__all__ = [
    "EmbeddedStore",
    "IngestResult",
    "MnemonStore",
    "PostgresStore",
    "StoreBackend",
    "is_postgres_url",
    "load_messages",
]


def __getattr__(name: str) -> Any:
    # Lazy: the default install has no psycopg; only a PostgreSQL URL imports it.
    if name == "PostgresStore":
        from mnemon_langgraph.store.postgres import PostgresStore

        return PostgresStore
    raise AttributeError(name)
