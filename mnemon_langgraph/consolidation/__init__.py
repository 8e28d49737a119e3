"""Consolidation: fold the journal, batch by batch, into an index that links to records.

The job is a LangGraph graph (:func:`create_consolidation_graph`) run as a batch job from
Python or ``mnemon consolidate``, over a store of either backend
(``create_consolidation_graph(store=MnemonStore(...), model=...)``). Each backend keeps the
index beside its records through its item store (``store.item_store()``: a
:class:`EmbeddedItemStore` in the journal's own SQLite file, a :class:`PostgresItemStore` in
the database; each lives in its backend's folder and is named here too), which the job
writes through the :class:`~mnemon_langgraph.items.ItemStore` protocol and the read path
takes as its ``ItemSource``.
"""

from __future__ import annotations

from mnemon_langgraph.consolidation.fold import FoldOutput
from mnemon_langgraph.consolidation.graph import (
    BatchReport,
    ConsolidationReport,
    create_consolidation_graph,
    item_store_for,
)
from mnemon_langgraph.consolidation.settings import ConsolidationSettings
from mnemon_langgraph.errors import deprecated_names
from mnemon_langgraph.items import ItemStore, ItemUpdate
from mnemon_langgraph.store._internal.item_rows import FailureRow, IndexStatus
from mnemon_langgraph.store.embedded._items import EmbeddedItemStore
from mnemon_langgraph.store.postgres._items import PostgresItemStore

__getattr__ = deprecated_names(__name__, {"SQLiteItemStore": "EmbeddedItemStore"})

__all__ = [
    "BatchReport",
    "ConsolidationReport",
    "ConsolidationSettings",
    "EmbeddedItemStore",
    "FailureRow",
    "FoldOutput",
    "IndexStatus",
    "ItemStore",
    "ItemUpdate",
    "PostgresItemStore",
    "create_consolidation_graph",
    "item_store_for",
]
