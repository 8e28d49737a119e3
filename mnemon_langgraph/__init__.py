"""mnemon-langgraph: long-term memory for LangGraph and LangChain agents.

Conversations are kept as raw, dated records in a journal; at each user turn a read
graph (System 2 plans, System 1 judges, rules with budgets) builds a small View for the
unchanged main agent; a batch job consolidates the history into an index of topic
timelines, value histories and standing instructions that link back to the records.
After the Mnemon paper ("Raw Records, Fast Judgments, Slow Thoughts").

Every public name is importable from here; imports are lazy, so ``import
mnemon_langgraph`` loads no model, index or heavy dependency.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

if TYPE_CHECKING:
    from mnemon_langgraph.consolidation import (
        ConsolidationReport,
        ConsolidationSettings,
        SQLiteItemStore,
        create_consolidation_graph,
    )
    from mnemon_langgraph.errors import (
        ConfigurationError,
        EmbeddingMismatchError,
        InputError,
        JournalError,
        JournalLockedError,
        JournalReadOnlyError,
        MissingDependencyError,
        MnemonError,
        ModelCallError,
        NamespaceError,
        RuntimeMnemonError,
        SchemaVersionError,
        SetupError,
    )
    from mnemon_langgraph.integrations import (
        MnemonChatMessageHistory,
        MnemonMemory,
        MnemonMiddleware,
        add_memory,
        memory_nodes,
    )
    from mnemon_langgraph.integrations.retriever import MnemonRetriever
    from mnemon_langgraph.items import IndexItem, ItemSource
    from mnemon_langgraph.judges import (
        ChatDecisionModel,
        JevDecisionModel,
        LocalDecisionModel,
        ScriptedDecisionModel,
    )
    from mnemon_langgraph.read import (
        ChatPlanner,
        ReadContext,
        ReadSettings,
        RulePlanner,
        View,
        create_read_graph,
        explain,
    )
    from mnemon_langgraph.search.embeddings import MiniLMEmbeddings
    from mnemon_langgraph.storage.journal import Journal
    from mnemon_langgraph.store import IngestResult, MnemonStore
    from mnemon_langgraph.types import (
        Message,
        Namespace,
        Record,
        SearchFilters,
        SearchHit,
        SearchSource,
    )

# public name -> module that defines it
_WHERE: dict[str, str] = {
    # storage and search
    "Journal": "storage.journal",
    "MnemonStore": "store",
    "IngestResult": "store",
    "MiniLMEmbeddings": "search.embeddings",
    "MnemonRetriever": "integrations.retriever",
    "Message": "types",
    "Namespace": "types",
    "Record": "types",
    "SearchFilters": "types",
    "SearchHit": "types",
    "SearchSource": "types",
    # read path
    "create_read_graph": "read",
    "ReadContext": "read",
    "ReadSettings": "read",
    "View": "read",
    "explain": "read",
    "RulePlanner": "read",
    "ChatPlanner": "read",
    # System 1 backends
    "LocalDecisionModel": "judges",
    "ChatDecisionModel": "judges",
    "JevDecisionModel": "judges",
    "ScriptedDecisionModel": "judges",
    # consolidation and its index
    "create_consolidation_graph": "consolidation",
    "ConsolidationSettings": "consolidation",
    "ConsolidationReport": "consolidation",
    "SQLiteItemStore": "consolidation",
    "IndexItem": "items",
    "ItemSource": "items",
    # integration surfaces
    "add_memory": "integrations",
    "memory_nodes": "integrations",
    "MnemonMiddleware": "integrations",
    "MnemonMemory": "integrations",
    "MnemonChatMessageHistory": "integrations",
    # errors
    "MnemonError": "errors",
    "SetupError": "errors",
    "ConfigurationError": "errors",
    "MissingDependencyError": "errors",
    "EmbeddingMismatchError": "errors",
    "SchemaVersionError": "errors",
    "JournalError": "errors",
    "JournalLockedError": "errors",
    "JournalReadOnlyError": "errors",
    "InputError": "errors",
    "NamespaceError": "errors",
    "RuntimeMnemonError": "errors",
    "ModelCallError": "errors",
}

__all__ = [  # noqa: RUF022 - grouped as in _WHERE, pinned by tests/test_public_api.py
    "__version__",
    "Journal",
    "MnemonStore",
    "IngestResult",
    "MiniLMEmbeddings",
    "MnemonRetriever",
    "Message",
    "Namespace",
    "Record",
    "SearchFilters",
    "SearchHit",
    "SearchSource",
    "create_read_graph",
    "ReadContext",
    "ReadSettings",
    "View",
    "explain",
    "RulePlanner",
    "ChatPlanner",
    "LocalDecisionModel",
    "ChatDecisionModel",
    "JevDecisionModel",
    "ScriptedDecisionModel",
    "create_consolidation_graph",
    "ConsolidationSettings",
    "ConsolidationReport",
    "SQLiteItemStore",
    "IndexItem",
    "ItemSource",
    "add_memory",
    "memory_nodes",
    "MnemonMiddleware",
    "MnemonMemory",
    "MnemonChatMessageHistory",
    "MnemonError",
    "SetupError",
    "ConfigurationError",
    "MissingDependencyError",
    "EmbeddingMismatchError",
    "SchemaVersionError",
    "JournalError",
    "JournalLockedError",
    "JournalReadOnlyError",
    "InputError",
    "NamespaceError",
    "RuntimeMnemonError",
    "ModelCallError",
]


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'mnemon_langgraph' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"mnemon_langgraph.{module}"), name)
    globals()[name] = value  # cache: the next access skips __getattr__
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
