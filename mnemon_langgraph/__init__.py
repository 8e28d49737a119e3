"""mnemon-langgraph: long-term memory for LangGraph and LangChain agents.

Conversations are kept as raw, dated records in a journal; at each user turn a read
graph (System 2 plans, System 1 judges, rules with budgets) builds a small View for the
unchanged main agent; a batch job consolidates the history into an index of topic
timelines, value histories and standing instructions that link back to the records.
After the Mnemon paper ("Raw Records, Fast Judgments, Slow Thoughts").

The top level holds what a user needs and nothing else: the store, the factories, the View,
the judges, the settings and the agent surfaces. Errors are in :mod:`mnemon_langgraph.errors`;
building blocks (loaders, the journal, search, the read graph's parts) in their subpackages.
Imports are lazy, so ``import mnemon_langgraph`` loads no model, index or heavy dependency.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

if TYPE_CHECKING:
    from mnemon_langgraph.consolidation import ConsolidationSettings, create_consolidation_graph
    from mnemon_langgraph.integrations import (
        MnemonBaseStore,
        MnemonMemory,
        MnemonMiddleware,
        MnemonRetriever,
        add_memory,
        create_memory_tools,
    )
    from mnemon_langgraph.judges import ChatDecisionModel, JevDecisionModel, LocalDecisionModel
    from mnemon_langgraph.read import ReadContext, ReadSettings, View, create_read_graph, explain
    from mnemon_langgraph.store import MnemonStore
    from mnemon_langgraph.store.embedded import EmbeddedItemStore

# public name -> module that defines it
_WHERE: dict[str, str] = {
    # the store (write path, hybrid search, per-user API)
    "MnemonStore": "store",
    # read path
    "create_read_graph": "read",
    "ReadContext": "read",
    "ReadSettings": "read",
    "View": "read",
    "explain": "read",
    # System 1 backends
    "LocalDecisionModel": "judges",
    "ChatDecisionModel": "judges",
    "JevDecisionModel": "judges",
    # consolidation and its index
    "create_consolidation_graph": "consolidation",
    "ConsolidationSettings": "consolidation",
    "EmbeddedItemStore": "store.embedded",
    # agent surfaces
    "add_memory": "integrations",
    "MnemonMiddleware": "integrations",
    "MnemonMemory": "integrations",
    "create_memory_tools": "integrations",
    "MnemonRetriever": "integrations",
    "MnemonBaseStore": "integrations",
}

__all__ = [  # noqa: RUF022 - grouped as in _WHERE, pinned by tests/test_public_api.py
    "__version__",
    "MnemonStore",
    "create_read_graph",
    "ReadContext",
    "ReadSettings",
    "View",
    "explain",
    "LocalDecisionModel",
    "ChatDecisionModel",
    "JevDecisionModel",
    "create_consolidation_graph",
    "ConsolidationSettings",
    "EmbeddedItemStore",
    "add_memory",
    "MnemonMiddleware",
    "MnemonMemory",
    "create_memory_tools",
    "MnemonRetriever",
    "MnemonBaseStore",
]


_RENAMED = {"SQLiteItemStore": "EmbeddedItemStore"}
"""Old public names, deprecated for one release (docs/migration.md): they warn."""


def __getattr__(name: str) -> Any:
    if name in _RENAMED:
        from mnemon_langgraph.errors import warn_deprecated

        warn_deprecated(f"mnemon_langgraph.{name}", f"mnemon_langgraph.{_RENAMED[name]}")
        return __getattr__(_RENAMED[name])
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(
            f"module 'mnemon_langgraph' has no attribute {name!r}"
            + (" (errors are in mnemon_langgraph.errors)" if name.endswith("Error") else "")
        )
    value = getattr(importlib.import_module(f"mnemon_langgraph.{module}"), name)
    globals()[name] = value  # cache: the next access skips __getattr__
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
