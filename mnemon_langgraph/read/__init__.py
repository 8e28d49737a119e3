"""The read path: plan, retrieve, judge, act, compose (paper §4.2–4.3).

``create_read_graph(source=...)`` builds the LangGraph graph; its output holds a
:class:`View` (what the main agent reads) and :func:`explain` tells why a record is (not)
in it; in Jupyter both show as HTML, as do :func:`show_trace` and :func:`show_memory`.
Imports are lazy so ``import mnemon_langgraph.read`` stays cheap.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mnemon_langgraph.read._rules import DropNeed, Judgment, Need, NewSearch, PageSearch
    from mnemon_langgraph.read.graph import create_read_graph
    from mnemon_langgraph.read.html import Explanation, show_memory, show_trace
    from mnemon_langgraph.read.memory import InMemoryItemSource, InMemorySearchSource
    from mnemon_langgraph.read.planner import ChatPlanner, Planner, RulePlanner
    from mnemon_langgraph.read.settings import ReadSettings
    from mnemon_langgraph.read.state import ReadContext, ReadState
    from mnemon_langgraph.read.view import View, ViewRecord, explain

__all__ = [
    "ChatPlanner",
    "DropNeed",
    "Explanation",
    "InMemoryItemSource",
    "InMemorySearchSource",
    "Judgment",
    "Need",
    "NewSearch",
    "PageSearch",
    "Planner",
    "ReadContext",
    "ReadSettings",
    "ReadState",
    "RulePlanner",
    "View",
    "ViewRecord",
    "create_read_graph",
    "explain",
    "show_memory",
    "show_trace",
]

_WHERE = {
    "create_read_graph": "graph",
    "Explanation": "html",
    "show_memory": "html",
    "show_trace": "html",
    "InMemoryItemSource": "memory",
    "InMemorySearchSource": "memory",
    "ChatPlanner": "planner",
    "RulePlanner": "planner",
    "Planner": "planner",
    "DropNeed": "_rules",
    "Judgment": "_rules",
    "Need": "_rules",
    "NewSearch": "_rules",
    "PageSearch": "_rules",
    "ReadSettings": "settings",
    "ReadContext": "state",
    "ReadState": "state",
    "View": "view",
    "ViewRecord": "view",
    "explain": "view",
}


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        return getattr(importlib.import_module(f"mnemon_langgraph.read.{_WHERE[name]}"), name)
    raise AttributeError(f"module 'mnemon_langgraph.read' has no attribute {name!r}")
