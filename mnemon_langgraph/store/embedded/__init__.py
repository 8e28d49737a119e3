"""The embedded backend: one SQLite journal file plus per-namespace index folders.

The default, one machine. :class:`EmbeddedStore` (:mod:`._store`) implements the hooks of
:class:`~mnemon_langgraph.store.base.MnemonStore` over the journal
(:mod:`mnemon_langgraph.store.embedded._journal`) and the per-namespace BM25 and vector indexes
(:mod:`mnemon_langgraph.store.embedded._index`). The journal's parts: the SQLite file
(:mod:`._journal_file`), its tables (:mod:`._schema`) and audited deletion (:mod:`._deletion`).
The consolidated index lives in the same file (:mod:`._items`, its tables in
:mod:`._item_schema`; ``store.item_store()``), as do the ``BaseStore``'s key-value items
(:mod:`._kv_items`; ``store.kv()``). The package names the classes a user meets:
:class:`EmbeddedStore`, :class:`EmbeddedItemStore` and :class:`EmbeddedKVItems`.
"""

from __future__ import annotations

from mnemon_langgraph.loaders.files import load_messages  # its old address here, kept
from mnemon_langgraph.store.embedded._items import EmbeddedItemStore
from mnemon_langgraph.store.embedded._kv_items import EmbeddedKVItems
from mnemon_langgraph.store.embedded._store import EmbeddedStore

__all__ = ["EmbeddedItemStore", "EmbeddedKVItems", "EmbeddedStore", "load_messages"]
