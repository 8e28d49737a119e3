"""Integration surfaces: LangGraph nodes, ``create_agent`` middleware, classic memory, history.

Each surface lives in its own module and is imported on first use, so that optional packages
(``langchain`` for the middleware, ``langchain-classic`` for ``BaseMemory``) are only needed by
the surface that uses them:

- :func:`add_memory` / :func:`memory_nodes` — the View in your graph's model node, and a
  ``remember`` node (:mod:`.subgraph`);
- :class:`MnemonMiddleware` — memory for ``langchain.agents.create_agent`` (:mod:`.middleware`);
- :class:`MnemonMemory` — the classic ``BaseMemory`` shape (:mod:`.memory`);
- :class:`MnemonChatMessageHistory` — a ``BaseChatMessageHistory`` (:mod:`.history`);
- :func:`create_memory_tools` — ``search_memory`` / ``remember`` / ``forget`` tools (:mod:`.tools`);
- :class:`MnemonRetriever` — the hybrid search as a ``BaseRetriever`` (:mod:`.retriever`);
- :class:`MnemonBaseStore` — the memory as a LangGraph ``BaseStore`` (:mod:`.basestore`).

Every surface finds the run's namespace by one rule (:func:`namespace_from`) and none stores
the View in the agent's state.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mnemon_langgraph.integrations._common import (
        VIEW_MESSAGE_ID,
        fill_namespace,
        namespace_from,
    )
    from mnemon_langgraph.integrations.basestore import MnemonBaseStore
    from mnemon_langgraph.integrations.history import MnemonChatMessageHistory
    from mnemon_langgraph.integrations.memory import MnemonMemory
    from mnemon_langgraph.integrations.middleware import MnemonMiddleware
    from mnemon_langgraph.integrations.retriever import MnemonRetriever
    from mnemon_langgraph.integrations.subgraph import MemoryNodes, add_memory, memory_nodes
    from mnemon_langgraph.integrations.tools import create_memory_tools

__all__ = [
    "VIEW_MESSAGE_ID",
    "MemoryNodes",
    "MnemonBaseStore",
    "MnemonChatMessageHistory",
    "MnemonMemory",
    "MnemonMiddleware",
    "MnemonRetriever",
    "add_memory",
    "create_memory_tools",
    "fill_namespace",
    "memory_nodes",
    "namespace_from",
]

_WHERE = {
    "VIEW_MESSAGE_ID": "_common",
    "namespace_from": "_common",
    "fill_namespace": "_common",
    "create_memory_tools": "tools",
    "MnemonRetriever": "retriever",
    "MemoryNodes": "subgraph",
    "add_memory": "subgraph",
    "memory_nodes": "subgraph",
    "MnemonMiddleware": "middleware",
    "MnemonMemory": "memory",
    "MnemonChatMessageHistory": "history",
    "MnemonBaseStore": "basestore",
}


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)


def __dir__() -> list[str]:
    return sorted(__all__)
