"""Memory for ``langchain.agents.create_agent``: :class:`MnemonMiddleware`.

The View is injected in ``wrap_model_call``: the hook changes only the request the model
receives (its system message), so the View reaches the model without ever entering the
agent's state — the same behaviour as :func:`~.subgraph.add_memory`'s model-node wrapper.
``before_model`` would have to return a state update, which the ``messages`` reducer persists
into the thread's history (and its checkpoints). The View is computed once per user turn and
reused for the model calls of that turn's tool loop. After the agent finishes, ``after_agent``
writes the turn's new user and assistant messages to the journal (no model call).

The namespace of each run follows the one rule of every surface
(:func:`~._common.namespace_from`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from langchain_core.messages import SystemMessage
from langgraph.runtime import Runtime

from mnemon_langgraph.errors import MissingDependencyError

try:
    from langchain.agents.middleware import (
        AgentMiddleware,
        AgentState,
        ModelRequest,
        ModelResponse,
    )
except ModuleNotFoundError as exc:  # the [agents] extra: one line saying so, not a traceback
    raise MissingDependencyError("MnemonMiddleware", "langchain", "agents") from exc

from mnemon_langgraph.integrations._common import (
    NamespaceTemplate,
    ReadGraph,
    ViewCache,
    aingest_messages,
    anew_messages,
    build_read_graph,
    current_config,
    ingest_messages,
    namespace_from,
    new_messages,
)
from mnemon_langgraph.types import NOT_GIVEN, Namespace, origin_label

if TYPE_CHECKING:
    from mnemon_langgraph.store import MnemonStore

__all__ = ["MnemonMiddleware"]


def _with_view(system: SystemMessage | None, view_message: SystemMessage) -> SystemMessage:
    """The agent's own system message followed by the View (or the View alone)."""
    if system is None:
        return view_message
    if isinstance(system.content, str):
        return SystemMessage(content=f"{system.content}\n\n{view_message.text}", id=system.id)
    blocks = [*system.content, {"type": "text", "text": view_message.text}]
    return SystemMessage(content=blocks, id=system.id)


class MnemonMiddleware(AgentMiddleware):
    """Long-term memory for ``create_agent``: View in the model call, turn saved after.

    Example::

        agent = create_agent(model, middleware=[MnemonMiddleware(store)],
                             context_schema=UserContext)
        agent.invoke({"messages": [("user", "hi")]}, context=UserContext(user_id="ada"))

    Args:
        store: The ``MnemonStore``.
        read_graph: The compiled read graph; default ``create_read_graph(source=store)``.
        namespace: A namespace template such as ``("memories", "{user_id}")`` (filled per run
            from its context or ``configurable``), or the namespace used when a run names none.
        origin: The ingest label written on the records of remembered turns (default
            ``"agent"``).
        source: Deprecated name of ``origin`` (warns; one release).
        cache_size: User turns whose View is kept for reuse in their tool loops.
    """

    def __init__(
        self,
        store: MnemonStore,
        *,
        read_graph: ReadGraph | None = None,
        namespace: NamespaceTemplate | None = None,
        origin: str = "agent",
        cache_size: int = 64,
        source: str = NOT_GIVEN,
    ) -> None:
        super().__init__()
        self.store = store
        self.read_graph = read_graph or build_read_graph(store)
        self.namespace = namespace
        self.origin = origin_label(origin, source, where="MnemonMiddleware", default="agent")
        self._views = ViewCache(self.read_graph, cache_size)

    @property
    def name(self) -> str:
        """Name of the middleware in the agent graph."""
        return "MnemonMiddleware"

    def _namespace(self, runtime: Any) -> Namespace:
        return namespace_from(
            context=getattr(runtime, "context", None),
            config=current_config(),
            default=self.namespace,
        )

    def view_message(self, request: ModelRequest) -> SystemMessage:
        """The View for the request's user turn, as a system message (computed once a turn)."""
        namespace = self._namespace(request.runtime)
        return self._views.get(namespace, request.messages, current_config())

    async def aview_message(self, request: ModelRequest) -> SystemMessage:
        """Async form of :meth:`view_message`."""
        namespace = self._namespace(request.runtime)
        return await self._views.aget(namespace, request.messages, current_config())

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
        ingest_messages(self.store, namespace, fresh, origin=self.origin)
        return None

    async def aafter_agent(self, state: AgentState, runtime: Runtime[Any]) -> dict[str, Any] | None:
        """Async form of :meth:`after_agent` (on the store's async twins)."""
        namespace = self._namespace(runtime)
        fresh = await anew_messages(self.store, namespace, state["messages"])
        await aingest_messages(self.store, namespace, fresh, origin=self.origin)
        return None
