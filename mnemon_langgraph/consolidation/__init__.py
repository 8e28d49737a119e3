"""Consolidation: fold the journal, batch by batch, into an index that links to records.

The job is a LangGraph graph (:func:`create_consolidation_graph`) run as a batch job from
Python or ``mnemon consolidate``; the index is kept by :class:`SQLiteItemStore` in the
journal's own SQLite file, which the read path takes as its ``ItemSource``.
"""

from __future__ import annotations

from mnemon_langgraph.consolidation.batching import Batch, BatchRecord, cut_batch, trim_record
from mnemon_langgraph.consolidation.fold import (
    SYSTEM_PROMPT,
    EventOut,
    FoldOutput,
    InstructionOut,
    ItemUpdateOut,
    ValueOut,
)
from mnemon_langgraph.consolidation.graph import (
    BatchReport,
    ConsolidationGraphState,
    ConsolidationReport,
    create_consolidation_graph,
    item_store_for,
)
from mnemon_langgraph.consolidation.itemstore import (
    FailureRow,
    IndexStatus,
    ItemUpdate,
    SQLiteItemStore,
)
from mnemon_langgraph.consolidation.pg_itemstore import PostgresItemStore
from mnemon_langgraph.consolidation.settings import ConsolidationSettings

__all__ = [
    "SYSTEM_PROMPT",
    "Batch",
    "BatchRecord",
    "BatchReport",
    "ConsolidationGraphState",
    "ConsolidationReport",
    "ConsolidationSettings",
    "EventOut",
    "FailureRow",
    "FoldOutput",
    "IndexStatus",
    "InstructionOut",
    "ItemUpdate",
    "ItemUpdateOut",
    "PostgresItemStore",
    "SQLiteItemStore",
    "ValueOut",
    "create_consolidation_graph",
    "cut_batch",
    "item_store_for",
    "trim_record",
]
