"""Integration surfaces: LangGraph nodes, ``create_agent`` middleware, classic memory, history.

Each surface lives in its own module and is imported on first use, so that optional packages
(``langchain`` for the middleware, ``langchain-classic`` for ``BaseMemory``) are only needed by
the surface that uses them:

- :func:`memory_nodes` / :func:`add_memory` — ``recall`` and ``remember`` nodes for a graph
  built on ``MessagesState`` (:mod:`.subgraph`);
- :class:`MnemonMiddleware` — memory for ``langchain.agents.create_agent`` (:mod:`.middleware`);
- :class:`MnemonMemory` — the classic ``BaseMemory`` shape (:mod:`.memory`);
- :class:`MnemonChatMessageHistory` — a ``BaseChatMessageHistory`` (:mod:`.history`).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mnemon_langgraph.integrations._common import VIEW_MESSAGE_ID, namespace_from
    from mnemon_langgraph.integrations.history import MnemonChatMessageHistory
    from mnemon_langgraph.integrations.memory import MnemonMemory
    from mnemon_langgraph.integrations.middleware import MnemonMiddleware
    from mnemon_langgraph.integrations.subgraph import MemoryNodes, add_memory, memory_nodes

__all__ = [
    "VIEW_MESSAGE_ID",
    "MemoryNodes",
    "MnemonChatMessageHistory",
    "MnemonMemory",
    "MnemonMiddleware",
    "add_memory",
    "memory_nodes",
    "namespace_from",
]

_WHERE = {
    "VIEW_MESSAGE_ID": "_common",
    "namespace_from": "_common",
    "MemoryNodes": "subgraph",
    "add_memory": "subgraph",
    "memory_nodes": "subgraph",
    "MnemonMiddleware": "middleware",
    "MnemonMemory": "memory",
    "MnemonChatMessageHistory": "history",
}


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)


def __dir__() -> list[str]:
    return sorted(__all__)
