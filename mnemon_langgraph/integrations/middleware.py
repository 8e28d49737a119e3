"""Memory for ``langchain.agents.create_agent``: :class:`MnemonMiddleware`.

The View is injected in ``wrap_model_call``: the hook changes only the request the model
receives (its system message), so the View reaches the model without ever entering the
agent's state. ``before_model`` would have to return a state update, which the ``messages``
reducer persists into the thread's history (and its checkpoints): every turn's View would be
kept, shown to the caller in ``result["messages"]``, and read back as conversation on later
turns. The View is computed once per user turn (keyed by the last user message) and reused
for the model calls of that turn's tool loop. After the agent finishes, ``after_agent``
writes the turn's new user and assistant messages to the journal (no model call).

The namespace of each run comes from the runtime context (``context_schema`` with a
``user_id`` or ``namespace`` field) or ``config["configurable"]``.
"""

from __future__ import annotations

import asyncio
import threading
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from langchain.agents.middleware import AgentMiddleware, AgentState, ModelRequest, ModelResponse
from langchain_core.messages import BaseMessage, SystemMessage
from langgraph.runtime import Runtime

from mnemon_langgraph.integrations._common import (
    arun_read_graph,
    build_read_graph,
    conversation,
    ingest_messages,
    namespace_from,
    new_messages,
    render_view_message,
    run_read_graph,
)
from mnemon_langgraph.types import Namespace

__all__ = ["MnemonMiddleware"]


def _current_config() -> dict[str, Any] | None:
    try:
        from langgraph.config import get_config

        return dict(get_config())
    except RuntimeError:
        return None


def _turn_key(namespace: Namespace, messages: Sequence[BaseMessage]) -> tuple[Any, ...]:
    """Identify the user turn: the conversation up to and including the last user message."""
    last_user = max((i for i, m in enumerate(messages) if m.type == "human"), default=-1)
    head = messages[: last_user + 1]
    return (namespace, tuple(m.id or f"{m.type}:{m.text}" for m in head))


def _with_view(system: SystemMessage | None, view_message: SystemMessage) -> SystemMessage:
    """The agent's own system message followed by the View (or the View alone)."""
    if system is None:
        return view_message
    if isinstance(system.content, str):
        return SystemMessage(content=f"{system.content}\n\n{view_message.text}", id=system.id)
    blocks = [*system.content, {"type": "text", "text": view_message.text}]
    return SystemMessage(content=blocks, id=system.id)


class MnemonMiddleware(AgentMiddleware):
    """Long-term memory for ``create_agent``: View before the model, turn saved after.

    Example::

        agent = create_agent(model, tools=[], middleware=[MnemonMiddleware(store)],
                             context_schema=UserContext)
        agent.invoke({"messages": [("user", "hi")]}, context=UserContext(user_id="ada"))

    Args:
        store: A ``MnemonStore``.
        read_graph: A compiled read graph (built from the other arguments when omitted).
        judge: System 1 backend of the read graph.
        planner: System 2 chat model of the read graph.
        items: Consolidated index (``ItemSource``).
        settings: ``ReadSettings``.
        namespace: Namespace used when neither the context nor the config names one.
        source: ``source`` written on the records of remembered turns.
        cache_size: User turns whose View is kept for reuse in their tool loops.
    """

    def __init__(
        self,
        store: Any,
        *,
        read_graph: Any = None,
        judge: Any = None,
        planner: Any = None,
        items: Any = None,
        settings: Any = None,
        namespace: str | Sequence[str] | None = None,
        source: str = "agent",
        cache_size: int = 64,
    ) -> None:
        super().__init__()
        self.store = store
        self.read_graph = read_graph or build_read_graph(
            store, judge=judge, planner=planner, items=items, settings=settings
        )
        self.namespace = namespace
        self.source = source
        self._cache: OrderedDict[tuple[Any, ...], SystemMessage] = OrderedDict()
        self._cache_size = max(1, cache_size)
        self._lock = threading.Lock()

    @property
    def name(self) -> str:
        """Name of the middleware in the agent graph."""
        return "MnemonMiddleware"

    def _namespace(self, runtime: Any) -> Namespace:
        return namespace_from(
            context=getattr(runtime, "context", None),
            config=_current_config(),
            default=self.namespace,
        )

    def _cached(self, key: tuple[Any, ...]) -> SystemMessage | None:
        with self._lock:
            found = self._cache.get(key)
            if found is not None:
                self._cache.move_to_end(key)
            return found

    def _keep(self, key: tuple[Any, ...], message: SystemMessage) -> None:
        with self._lock:
            self._cache[key] = message
            while len(self._cache) > self._cache_size:
                self._cache.popitem(last=False)

    def view_message(self, request: ModelRequest) -> SystemMessage:
        """The View for the request's user turn, as a system message (computed once a turn)."""
        namespace = self._namespace(request.runtime)
        messages = conversation(request.messages)
        key = _turn_key(namespace, messages)
        found = self._cached(key)
        if found is None:
            view = run_read_graph(self.read_graph, messages, namespace, _current_config())
            found = render_view_message(view)
            self._keep(key, found)
        return found

    async def aview_message(self, request: ModelRequest) -> SystemMessage:
        """Async form of :meth:`view_message`."""
        namespace = self._namespace(request.runtime)
        messages = conversation(request.messages)
        key = _turn_key(namespace, messages)
        found = self._cached(key)
        if found is None:
            config = _current_config()
            view = await arun_read_graph(self.read_graph, messages, namespace, config)
            found = render_view_message(view)
            self._keep(key, found)
        return found

    def wrap_model_call(
        self,
        request: ModelRequest,
        handler: Callable[[ModelRequest], ModelResponse],
    ) -> Any:
        """Call the model with the View appended to the request's system message."""
        view = self.view_message(request)
        return handler(request.override(system_message=_with_view(request.system_message, view)))

    async def awrap_model_call(
        self,
        request: ModelRequest,
        handler: Callable[[ModelRequest], Awaitable[ModelResponse]],
    ) -> Any:
        """Async form of :meth:`wrap_model_call`."""
        view = await self.aview_message(request)
        return await handler(
            request.override(system_message=_with_view(request.system_message, view))
        )

    def after_agent(self, state: AgentState, runtime: Runtime[Any]) -> dict[str, Any] | None:
        """Write the turn's new user and assistant messages to the journal."""
        namespace = self._namespace(runtime)
        fresh = new_messages(self.store, namespace, state["messages"])
        ingest_messages(self.store, namespace, fresh, source=self.source)
        return None

    async def aafter_agent(self, state: AgentState, runtime: Runtime[Any]) -> dict[str, Any] | None:
        """Async form of :meth:`after_agent` (the write runs in a worker thread)."""
        namespace = self._namespace(runtime)
        fresh = new_messages(self.store, namespace, state["messages"])
        await asyncio.to_thread(ingest_messages, self.store, namespace, fresh, source=self.source)
        return None
