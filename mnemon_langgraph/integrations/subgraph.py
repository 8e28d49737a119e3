"""Memory as two nodes of an existing LangGraph agent built on ``MessagesState``.

``recall`` runs the compiled read graph over the conversation and puts the View in front of
the model as one system message with a stable id (each turn replaces the previous View rather
than stacking one per turn). ``remember`` writes the turn's new messages to the journal after
the reply (the write path: chunking and one embedding, no model call). A few lines add both::

    recall, remember = memory_nodes(store)
    builder = StateGraph(MessagesState)
    builder.add_sequence([("recall", recall), ("model", call_model), ("remember", remember)])
    builder.add_edge(START, "recall")
    graph = builder.compile()

or, for a builder that already has its model node, ``add_memory(builder, store)``.
The namespace of each run comes from the runtime context (``user_id`` / ``namespace``) or
``config["configurable"]`` (``user_id`` / ``namespace``), so one compiled graph serves many
users without mixing their records.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any, NamedTuple

from langchain_core.messages import BaseMessage, RemoveMessage
from langchain_core.runnables import RunnableConfig, RunnableLambda
from langgraph.graph import END, START
from langgraph.graph.message import REMOVE_ALL_MESSAGES

from mnemon_langgraph.integrations._common import (
    VIEW_MESSAGE_ID,
    arun_read_graph,
    build_read_graph,
    conversation,
    ingest_messages,
    namespace_from_config,
    new_messages,
    render_view_message,
    run_read_graph,
)

__all__ = ["MemoryNodes", "add_memory", "memory_nodes"]


class MemoryNodes(NamedTuple):
    """The two nodes :func:`memory_nodes` returns (unpack as ``recall, remember``)."""

    recall: RunnableLambda
    remember: RunnableLambda


def _place_view(messages: Sequence[BaseMessage], view_message: BaseMessage) -> list[BaseMessage]:
    """State update that puts ``view_message`` first and drops any earlier View.

    On the first turn (no View yet, no system message in the way) the update is a rewrite of
    the list all the same: ``add_messages`` would otherwise append the View after the user's
    message, and a replacement by id keeps the old position. A leading system message is what
    every chat model provider accepts.
    """
    rest = conversation(messages)
    return [RemoveMessage(id=REMOVE_ALL_MESSAGES), view_message, *rest]


class _Memory:
    """Holds what both nodes share: the store, the compiled read graph, the default namespace."""

    def __init__(
        self,
        store: Any,
        read_graph: Any,
        namespace: str | Sequence[str] | None,
        source: str,
        message_id: str,
    ) -> None:
        self.store = store
        self.read_graph = read_graph
        self.namespace = namespace
        self.source = source
        self.message_id = message_id

    # --- recall -------------------------------------------------------------------------
    def recall(self, state: dict[str, Any], config: RunnableConfig) -> dict[str, Any]:
        messages = state["messages"]
        namespace = namespace_from_config(config, self.namespace)
        view = run_read_graph(self.read_graph, conversation(messages), namespace, config)
        message = render_view_message(view, message_id=self.message_id)
        return {"messages": _place_view(messages, message)}

    async def arecall(self, state: dict[str, Any], config: RunnableConfig) -> dict[str, Any]:
        messages = state["messages"]
        namespace = namespace_from_config(config, self.namespace)
        view = await arun_read_graph(self.read_graph, conversation(messages), namespace, config)
        message = render_view_message(view, message_id=self.message_id)
        return {"messages": _place_view(messages, message)}

    # --- remember -----------------------------------------------------------------------
    def remember(self, state: dict[str, Any], config: RunnableConfig) -> dict[str, Any]:
        namespace = namespace_from_config(config, self.namespace)
        fresh = new_messages(self.store, namespace, state["messages"])
        ingest_messages(self.store, namespace, fresh, source=self.source)
        return {}

    async def aremember(self, state: dict[str, Any], config: RunnableConfig) -> dict[str, Any]:
        return await asyncio.to_thread(self.remember, state, config)


def memory_nodes(
    store: Any,
    *,
    read_graph: Any = None,
    judge: Any = None,
    planner: Any = None,
    items: Any = None,
    settings: Any = None,
    namespace: str | Sequence[str] | None = None,
    source: str = "langgraph",
    view_message_id: str = VIEW_MESSAGE_ID,
) -> MemoryNodes:
    """Build the ``recall`` and ``remember`` nodes for a ``MessagesState`` graph.

    Args:
        store: A ``MnemonStore`` (search source of the read graph and journal written to).
        read_graph: A compiled read graph; built from ``store``, ``judge``, ``planner``,
            ``items`` and ``settings`` when omitted.
        judge: System 1 backend for the read graph (default: the local judge).
        planner: System 2 chat model for the read graph (default: the rule planner).
        items: Consolidated index (``ItemSource``) the View may include.
        settings: ``ReadSettings`` budgets.
        namespace: Namespace used when the run names none (context or config win).
        source: ``source`` written on the records of the turns remembered.
        view_message_id: Stable id of the View's system message.

    Returns:
        ``MemoryNodes(recall, remember)``: runnables with sync and async forms to pass to
        ``StateGraph.add_node``.
    """
    graph = read_graph or build_read_graph(
        store, judge=judge, planner=planner, items=items, settings=settings
    )
    memory = _Memory(store, graph, namespace, source, view_message_id)
    return MemoryNodes(
        recall=RunnableLambda(memory.recall, memory.arecall, name="mnemon_recall"),
        remember=RunnableLambda(memory.remember, memory.aremember, name="mnemon_remember"),
    )


def add_memory(
    builder: Any,
    store: Any,
    *,
    model_node: str = "model",
    after: str | None = None,
    recall_name: str = "recall",
    remember_name: str = "remember",
    **kwargs: Any,
) -> Any:
    """Add ``recall`` before ``model_node`` and ``remember`` at the end of a ``StateGraph``.

    Adds the two nodes and the edges ``START → recall → model_node`` and
    ``after → remember → END``. Call it on a builder whose model node exists and that has no
    edge from ``START`` yet, then add the rest of the edges (tool loops route their "done"
    branch to ``remember_name`` instead of ``END``).

    Args:
        builder: A ``StateGraph`` over ``MessagesState`` (or any state with ``messages``).
        store: The ``MnemonStore``.
        model_node: Name of the node that calls the chat model.
        after: Node after which the turn is written (default: ``model_node``). Pass ``""``
            to add the ``remember`` node without wiring it.
        recall_name: Name given to the recall node.
        remember_name: Name given to the remember node.
        **kwargs: Passed to :func:`memory_nodes` (``judge``, ``planner``, ``namespace`` …).

    Returns:
        The builder, for chaining.
    """
    recall, remember = memory_nodes(store, **kwargs)
    builder.add_node(recall_name, recall)
    builder.add_node(remember_name, remember)
    builder.add_edge(START, recall_name)
    builder.add_edge(recall_name, model_node)
    tail = model_node if after is None else after
    if tail:
        builder.add_edge(tail, remember_name)
        builder.add_edge(remember_name, END)
    return builder
