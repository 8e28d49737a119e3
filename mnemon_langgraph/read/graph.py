"""The read path as a LangGraph ``StateGraph`` (Mnemon §4.2–4.3, Algorithm 1).

::

    plan ─► retrieve ─► judge ─► act ─┬─► retrieve …   (the round produced actions, < 3 rounds)
                                      └─► judge_items ─► compose ─► View

Every node is one body with a thin sync and async driver around it
(:mod:`mnemon_langgraph.read._drive`), so ``invoke``, ``ainvoke`` and ``stream`` run the
same logic. Backends (the search source, the
decision model, the planner, the index) reach the nodes through closures; the state holds
only data. The namespace comes from the runtime context (:class:`ReadContext`) or from
``config["configurable"]["namespace"]`` / ``["user_id"]``.
"""

from __future__ import annotations

import weakref
from collections.abc import Mapping
from typing import Any

from langchain_core.decisions import BaseDecisionModel
from langchain_core.language_models import BaseChatModel
from langchain_core.runnables import RunnableLambda
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Checkpointer

from mnemon_langgraph.backends import resolve_judge
from mnemon_langgraph.items import ItemSource
from mnemon_langgraph.read._nodes import NODES, Reader
from mnemon_langgraph.read.planner import Planner, resolve_planner
from mnemon_langgraph.read.settings import ReadSettings
from mnemon_langgraph.read.sources.binding import named_sources
from mnemon_langgraph.read.state import (
    ReadContext,
    ReadInput,
    ReadOutput,
    ReadState,
)
from mnemon_langgraph.read.view import View
from mnemon_langgraph.types import SearchSource

__all__ = ["NODES", "create_read_graph", "sources_of", "view_of"]

_SOURCES: weakref.WeakKeyDictionary[Any, dict[str, SearchSource]] = weakref.WeakKeyDictionary()
"""Each compiled read graph's named sources, for the surfaces that search them directly (a
memory tool's hybrid ``search_memory``): kept beside the graph, not on it (the compiled graph
is LangGraph's object)."""


def sources_of(graph: Any) -> dict[str, SearchSource] | None:
    """The named sources a compiled read graph reads (``None``: not one of ours)."""
    try:
        found = _SOURCES.get(graph)
    except TypeError:  # not weak-referenceable: not a graph create_read_graph built
        return None
    return dict(found) if found is not None else None


def create_read_graph(
    *,
    source: SearchSource | None = None,
    sources: Mapping[str, SearchSource] | None = None,
    judge: BaseDecisionModel | str | None = None,
    planner: Planner | BaseChatModel | str | None = None,
    items: ItemSource | None = None,
    settings: ReadSettings | None = None,
    checkpointer: Checkpointer = None,
    name: str = "mnemon_read",
) -> CompiledStateGraph[ReadState, ReadContext, ReadInput, ReadOutput]:
    """Build and compile the read graph.

    Args:
        source: Where records come from (``MnemonStore`` or any :class:`SearchSource`): the
            one-source case, the same as ``sources={"memory": source}``.
        sources: Named sources read into one View, e.g. ``{"memory": store, "team":
            SharedNamespace(store, ("teams", "{team_id}")), "docs": RetrieverSource(r)}``
            (the contract: :mod:`mnemon_langgraph.read.sources.binding`). Every search of
            the turn goes to every source, the first pool keeps a share per source
            (``ReadSettings.source_share``), a source that fails or takes longer than
            ``ReadSettings.source_timeout_s`` is left out of the turn (in the trace), and
            each record block of the View names its source. Pass ``source`` or
            ``sources``, not both.
        judge: System 1: a ``BaseDecisionModel`` or a name (``"local"``, ``"jev"``,
            ``"llm:provider:model"``; see :func:`mnemon_langgraph.backends.resolve_judge`);
            default: the offline local judge, sharing the source's embedder.
        planner: System 2: a :class:`Planner` (``RulePlanner()``, ``ChatPlanner(model)``),
            any ``BaseChatModel``, a ``"provider:model"`` string, or ``None`` / ``"rules"``
            for the rule planner (no model).
        items: The consolidated index; ``None``: the View has no index block.
        settings: Budgets (paper defaults).
        checkpointer: Optional LangGraph checkpointer.
        name: Graph name.

    Returns:
        A compiled graph: input ``{"messages": [...]}``, output ``{"view": View, ...}``.
        Pass the namespace as ``context=ReadContext(namespace=...)`` (or
        ``config={"configurable": {"namespace": ...}}``).

    Raises:
        ConfigurationError: If ``judge`` or ``planner`` names nothing this package knows, or
            the sources are not as above (both or neither given, a bad name or source).
    """
    settings = settings or ReadSettings()
    named = named_sources(source, sources)
    first = next(iter(named.values()))
    reader = Reader(
        named,
        resolve_judge(judge, embeddings=getattr(first, "embeddings", None)),
        resolve_planner(planner),
        items,
        settings,
    )
    builder = StateGraph(
        ReadState, context_schema=ReadContext, input_schema=ReadInput, output_schema=ReadOutput
    )
    # One body per node, a sync and an async driver around it (read/_drive.py);
    # RunnableLambda(func, afunc) makes the pair one node for invoke and ainvoke.
    builder.add_node("plan", RunnableLambda(reader.plan, reader.aplan, name="plan"))
    builder.add_node("retrieve", RunnableLambda(reader.retrieve, reader.aretrieve, name="retrieve"))
    builder.add_node("judge", RunnableLambda(reader.judge, reader.ajudge, name="judge"))
    builder.add_node("act", reader.act)
    builder.add_node(
        "judge_items", RunnableLambda(reader.judge_items, reader.ajudge_items, name="judge_items")
    )
    builder.add_node("compose", RunnableLambda(reader.compose, reader.acompose, name="compose"))
    builder.add_edge(START, "plan")
    builder.add_edge("plan", "retrieve")
    builder.add_edge("retrieve", "judge")
    builder.add_edge("judge", "act")
    builder.add_conditional_edges(
        "act", reader.route, {"retrieve": "retrieve", "judge_items": "judge_items"}
    )
    builder.add_edge("judge_items", "compose")
    builder.add_edge("compose", END)
    graph = builder.compile(checkpointer=checkpointer, name=name)
    _SOURCES[graph] = named
    return graph


def view_of(result: dict[str, Any]) -> View:
    """The View in a read-graph result (``result["view"]``)."""
    return result["view"]
