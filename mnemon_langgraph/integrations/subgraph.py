"""Memory for a LangGraph graph of your own: :func:`add_memory` and :func:`memory_nodes`.

The View reaches the model the same way as in :class:`~.middleware.MnemonMiddleware`: it is
put in front of the messages *the model node receives*, and never written to the graph's
state. A ``recall`` node that returned the View as a state update would have to store it in
``messages`` (rewriting the thread's history every turn, or piling one View per turn into the
checkpoints) or in an extra state key the user's state does not have. Wrapping the model node
keeps the checkpointed ``messages`` exactly the conversation. ``remember`` writes the turn's
new messages to the journal after the reply (chunking and one embedding, no model call)::

    builder = StateGraph(MessagesState)
    builder.add_node("model", call_model)
    graph = add_memory(builder, store).compile()

or, for your own wiring::

    with_view, remember = memory_nodes(store)
    builder.add_node("model", with_view(call_model))
    builder.add_node("remember", remember)

The namespace of each run follows the one rule of every surface
(:func:`~._common.namespace_from`): a template such as ``("memories", "{user_id}")`` filled
from the run's context or ``config["configurable"]``, else the run's ``namespace`` /
``user_id``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

from langchain_core.messages import BaseMessage
from langchain_core.runnables import Runnable, RunnableConfig, RunnableLambda
from langgraph.graph import END, START, StateGraph
from pydantic import BaseModel

from mnemon_langgraph.errors import ConfigurationError
from mnemon_langgraph.integrations._common import (
    NamespaceTemplate,
    ReadGraph,
    ViewCache,
    aingest_messages,
    anew_messages,
    build_read_graph,
    conversation,
    ingest_messages,
    is_view,
    namespace_from_config,
    new_messages,
)
from mnemon_langgraph.types import NOT_GIVEN, origin_label

if TYPE_CHECKING:
    from mnemon_langgraph.store import MnemonStore

__all__ = ["MemoryNodes", "add_memory", "memory_nodes"]

Node = Runnable[Any, Any] | Callable[..., Any]
"""A LangGraph node: a runnable or a function of the state (and optionally the config)."""


class MemoryNodes(NamedTuple):
    """What :func:`memory_nodes` returns (unpack as ``with_view, remember``).

    Attributes:
        with_view: Wraps a model node so that the model sees the View first.
        remember: The node that writes the turn's new messages to the journal.
    """

    with_view: Callable[[Node], Runnable[Any, Any]]
    remember: Runnable[Any, Any]


def _messages_of(state: Any) -> list[BaseMessage]:
    if isinstance(state, Mapping):
        return list(state["messages"])
    return list(state.messages)


def _replace_messages(state: Any, messages: list[BaseMessage]) -> Any:
    """A copy of ``state`` with other ``messages`` (TypedDict, pydantic or dataclass state)."""
    if isinstance(state, Mapping):
        return {**state, "messages": messages}
    if isinstance(state, BaseModel):
        return state.model_copy(update={"messages": messages})
    if dataclasses.is_dataclass(state) and not isinstance(state, type):
        return dataclasses.replace(state, messages=messages)
    raise ConfigurationError(f"add_memory: cannot pass the View in a {type(state).__name__} state")


def _without_view(update: Any) -> Any:
    """The node's update with any View message dropped (a node may return the whole list)."""
    if isinstance(update, Mapping) and isinstance(update.get("messages"), list):
        return {**update, "messages": [m for m in update["messages"] if not _is_view_like(m)]}
    return update


def _is_view_like(message: Any) -> bool:
    return isinstance(message, BaseMessage) and is_view(message)


class _Memory:
    """What the wrapper and ``remember`` share: the store, the View cache, the namespace."""

    def __init__(
        self,
        store: MnemonStore,
        read_graph: ReadGraph,
        namespace: NamespaceTemplate | None,
        origin: str,
    ) -> None:
        self.store = store
        self.views = ViewCache(read_graph)
        self.namespace = namespace
        self.origin = origin

    # --- the model node, with the View in front of its messages ------------------------------
    def with_view(self, node: Node) -> Runnable[Any, Any]:
        inner: Runnable[Any, Any] = node if isinstance(node, Runnable) else RunnableLambda(node)

        def call(state: Any, config: RunnableConfig) -> Any:
            messages = conversation(_messages_of(state))
            namespace = namespace_from_config(config, self.namespace)
            view = self.views.get(namespace, messages, config)
            return _without_view(inner.invoke(_replace_messages(state, [view, *messages]), config))

        async def acall(state: Any, config: RunnableConfig) -> Any:
            messages = conversation(_messages_of(state))
            namespace = namespace_from_config(config, self.namespace)
            view = await self.views.aget(namespace, messages, config)
            update = await inner.ainvoke(_replace_messages(state, [view, *messages]), config)
            return _without_view(update)

        return RunnableLambda(call, acall, name=f"mnemon_with_view({inner.get_name()})")

    # --- remember ----------------------------------------------------------------------------
    def remember(self, state: Any, config: RunnableConfig) -> dict[str, Any]:
        namespace = namespace_from_config(config, self.namespace)
        fresh = new_messages(self.store, namespace, _messages_of(state))
        ingest_messages(self.store, namespace, fresh, origin=self.origin)
        return {}

    async def aremember(self, state: Any, config: RunnableConfig) -> dict[str, Any]:
        namespace = namespace_from_config(config, self.namespace)
        fresh = await anew_messages(self.store, namespace, _messages_of(state))
        await aingest_messages(self.store, namespace, fresh, origin=self.origin)
        return {}


def memory_nodes(
    store: MnemonStore,
    *,
    read_graph: ReadGraph | None = None,
    namespace: NamespaceTemplate | None = None,
    origin: str = "langgraph",
    source: str = NOT_GIVEN,
) -> MemoryNodes:
    """Build the model-node wrapper and the ``remember`` node for a graph of your own.

    Args:
        store: The ``MnemonStore`` searched by the read graph and written by ``remember``.
        read_graph: The compiled read graph; default ``create_read_graph(source=store)``.
        namespace: A namespace template such as ``("memories", "{user_id}")`` (filled per run
            from its context or ``configurable``), or the namespace used when a run names none.
        origin: The ingest label written on the records of the turns remembered (default
            ``"langgraph"``).
        source: Deprecated name of ``origin`` (warns; one release).

    Returns:
        ``MemoryNodes(with_view, remember)``.
    """
    label = origin_label(origin, source, where="memory_nodes", default="langgraph")
    memory = _Memory(store, read_graph or build_read_graph(store), namespace, label)
    remember = RunnableLambda(memory.remember, memory.aremember, name="mnemon_remember")
    return MemoryNodes(with_view=memory.with_view, remember=remember)


def add_memory(
    builder: StateGraph[Any, Any, Any, Any],
    store: MnemonStore,
    *,
    model_node: str = "model",
    after: str | None = None,
    remember_name: str = "remember",
    read_graph: ReadGraph | None = None,
    namespace: NamespaceTemplate | None = None,
    origin: str = "langgraph",
    source: str = NOT_GIVEN,
) -> StateGraph[Any, Any, Any, Any]:
    """Give the model node of ``builder`` the View, and add ``remember`` after the turn.

    The node ``model_node`` (already added) is wrapped so that the model it calls receives the
    View as the first message; the graph's state never holds it. The edges
    ``START → model_node`` (when ``START`` has none yet) and ``after → remember → END`` are
    added; tool loops route their "done" branch to ``remember_name`` instead of ``END``.

    Args:
        builder: A ``StateGraph`` whose state has ``messages`` (e.g. ``MessagesState``).
        store: The ``MnemonStore``.
        model_node: Name of the node that calls the chat model.
        after: Node after which the turn is written (default: ``model_node``). Pass ``""``
            to add the ``remember`` node without wiring it.
        remember_name: Name given to the remember node.
        read_graph: The compiled read graph; default ``create_read_graph(source=store)``.
        namespace: Namespace template or default namespace (see :func:`memory_nodes`).
        origin: The ingest label written on the records of the turns remembered (default
            ``"langgraph"``).
        source: Deprecated name of ``origin`` (warns; one release).

    Returns:
        The builder, for chaining.

    Raises:
        ConfigurationError: ``model_node`` is not a node of ``builder``.
    """
    label = origin_label(origin, source, where="add_memory", default="langgraph")
    spec = builder.nodes.get(model_node)
    if spec is None:
        raise ConfigurationError(
            f"add_memory: no node {model_node!r} in the graph (nodes: {sorted(builder.nodes)}); "
            "add the model node first or pass model_node="
        )
    with_view, remember = memory_nodes(
        store, read_graph=read_graph, namespace=namespace, origin=label
    )
    # The node already added is wrapped in place: LangGraph's own coercion of the user's
    # function (config/runtime injection) stays inside, and no public API re-adds a node.
    builder.nodes[model_node] = dataclasses.replace(spec, runnable=with_view(spec.runnable))
    builder.add_node(remember_name, remember)
    if not any(start == START for start, _ in builder.edges):
        builder.add_edge(START, model_node)
    tail = model_node if after is None else after
    if tail:
        builder.add_edge(tail, remember_name)
        builder.add_edge(remember_name, END)
    return builder
