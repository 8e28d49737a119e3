"""Build the two graphs from environment variables, for ``langgraph dev`` / LangGraph Studio.

``graphs/read_graph.py`` and ``graphs/consolidation_graph.py`` (named in ``langgraph.json``)
call these functions and do nothing else. Variables:

- ``MNEMON_DB``: path of the journal (default ``mnemon.db`` in the working directory; the
  repository's ``.gitignore`` ignores ``/*.db`` and their ``.indexes`` folders);
- ``MNEMON_NAMESPACE``: namespace read by runs that name none in their context or config
  (or a JSON array template such as ``["org", "{org}", "user", "{user_id}"]`` that each run
  fills from its context). Unset, such a run is refused with a message saying what to set
  (never a silent read of some shared namespace);
- ``MNEMON_PLANNER_MODEL``: System 2 chat model for the read graph, as
  ``init_chat_model`` takes it (``openai:gpt-4.1-mini``); unset: the offline rule planner;
- ``MNEMON_JUDGE``: System 1 backend: ``local`` (default, offline), ``jev`` (needs
  ``TYPESAFE_API_KEY``), or ``llm:<provider:model>``;
- ``MNEMON_CONSOLIDATION_MODEL``: chat model that folds batches in the consolidation graph
  (unset: the graph is built without one and says so when run).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.runnables import RunnableConfig, RunnableLambda
from langgraph.graph import END, START, StateGraph

from mnemon_langgraph.backends import chat_model_from_spec, judge_from_spec
from mnemon_langgraph.errors import ConfigurationError
from mnemon_langgraph.integrations._common import (
    current_context,
    namespace_from,
    template_fields,
)

__all__ = [
    "DEFAULT_DB",
    "MissingChatModel",
    "chat_model_from_env",
    "consolidation_graph_from_env",
    "context_schema_for",
    "default_namespace",
    "judge_from_env",
    "no_namespace_message",
    "read_graph_from_env",
    "resolve_run_namespace",
    "store_from_env",
    "with_default_namespace",
]

DEFAULT_DB = "mnemon.db"

_EXAMPLE_USER = "user-1"


def no_namespace_message(fields: Sequence[str] = (), *, has_default: bool = False) -> str:
    """What a run that names no user is told: only calls that work, written out in full.

    Args:
        fields: The namespace template's fields (none: the run names ``user_id``).
        has_default: Whether the server has a default namespace (then setting
            ``MNEMON_NAMESPACE`` would not help, and is not recommended).
    """
    names = list(fields) or ["user_id"]
    values = {name: _EXAMPLE_USER for name in names}
    text = (
        f"this graph reads one user's memory and the run named none: pass "
        f"context={values!r} or config={{'configurable': {values!r}}} with the run "
        "(LangGraph Studio: the run's context form, or the assistant's configuration)"
    )
    if not fields:
        text += ", or context={'namespace': ['users', 'user-1']}"
    if not has_default:
        text += (
            ", or start the server with MNEMON_NAMESPACE=<namespace> to read that namespace "
            "by default"
        )
    return text


def _env(environ: Mapping[str, str] | None) -> Mapping[str, str]:
    return os.environ if environ is None else environ


def chat_model_from_env(name: str, environ: Mapping[str, str] | None = None) -> Any:
    """The chat model named by variable ``name`` (``provider:model``), or ``None`` if unset."""
    spec = _env(environ).get(name, "").strip()
    return chat_model_from_spec(spec) if spec else None


def judge_from_env(environ: Mapping[str, str] | None = None) -> Any:
    """The System 1 backend named by ``MNEMON_JUDGE`` (``None``: the read graph's default).

    Values: ``local`` (or unset): the offline local judge; ``jev``: TypeSafe's Jev (needs
    ``TYPESAFE_API_KEY``); ``llm:<provider:model>``: a chat model asked the propositions;
    ``package.module:attribute``: a ``BaseDecisionModel`` class or factory called with no
    arguments (or an instance).
    """
    spec = _env(environ).get("MNEMON_JUDGE", "").strip()
    if not spec or spec == "local":
        return None
    try:
        return judge_from_spec(spec)
    except ConfigurationError as exc:
        raise ConfigurationError(f"MNEMON_JUDGE={spec!r}: {exc}") from exc


def store_from_env(environ: Mapping[str, str] | None = None) -> Any:
    """The ``MnemonStore`` at ``MNEMON_DB`` (opened, not searched: indexes load lazily)."""
    from mnemon_langgraph.store import MnemonStore

    return MnemonStore(_env(environ).get("MNEMON_DB") or DEFAULT_DB)


def default_namespace(environ: Mapping[str, str] | None = None) -> str | tuple[str, ...] | None:
    """``MNEMON_NAMESPACE``, or ``None`` (runs must then name their user).

    A value starting with ``[`` is a JSON array of parts, e.g. ``["org", "{org}", "user",
    "{user_id}"]``: a namespace template each run fills from its context or config.

    Raises:
        ConfigurationError: A ``[`` value that is not a JSON array of strings.
    """
    value = _env(environ).get("MNEMON_NAMESPACE", "").strip()
    if not value.startswith("["):
        return value or None
    try:
        parts = json.loads(value)
    except json.JSONDecodeError as exc:
        raise ConfigurationError(f"MNEMON_NAMESPACE={value!r} is not a JSON array: {exc}") from exc
    if not parts or not all(isinstance(p, str) and p for p in parts):
        raise ConfigurationError(
            f"MNEMON_NAMESPACE={value!r}: a JSON namespace must be a non-empty list of strings"
        )
    return tuple(parts)


def context_schema_for(default: str | Sequence[str] | None) -> type[Any]:
    """The context schema of a graph whose runs resolve their namespace against ``default``.

    :class:`~mnemon_langgraph.read.state.ReadContext` (``namespace``, ``now``, ``user_id``)
    plus one field per placeholder of a template ``default``; LangGraph Studio's context form
    shows these fields, and ``context={...}`` with any of them is accepted.
    """
    from mnemon_langgraph.read.state import read_context_schema

    return read_context_schema(template_fields(default))


def resolve_run_namespace(context: Any, config: Any, default: str | Sequence[str] | None) -> Any:
    """The run's namespace (:func:`namespace_from`), or a refusal naming calls that work."""
    try:
        return namespace_from(context=context, config=config, default=default)
    except ConfigurationError as exc:
        fields = template_fields(default)
        message = no_namespace_message(fields, has_default=default is not None)
        raise ConfigurationError(message) from exc


def with_default_namespace(read_graph: Any, default: str | Sequence[str] | None) -> Any:
    """Wrap a compiled read graph so that each run's namespace is resolved, or refused.

    A LangGraph server puts its authenticated user id into ``configurable.user_id`` (an empty
    string without auth), which would replace a default baked into the graph's config; so the
    namespace is resolved per run here — the run's context (``namespace`` / ``user_id``), then
    ``configurable`` (``namespace``, a non-empty ``user_id``), then ``default`` — and handed to
    the read graph as its context. Without a default, a run that names no user is refused with
    a :class:`ConfigurationError` saying what to set. Input and output are the read graph's.
    """
    from mnemon_langgraph.read.state import ReadContext, ReadInput, ReadOutput

    def _context(config: RunnableConfig) -> Any:
        context = current_context()
        namespace = resolve_run_namespace(context, config, default)
        return ReadContext(namespace=namespace, now=getattr(context, "now", None))

    def read(state: dict[str, Any], config: RunnableConfig) -> dict[str, Any]:
        out = read_graph.invoke(state, config, context=_context(config))
        return {"view": out["view"]}

    async def aread(state: dict[str, Any], config: RunnableConfig) -> dict[str, Any]:
        out = await read_graph.ainvoke(state, config, context=_context(config))
        return {"view": out["view"]}

    builder = StateGraph(
        ReadOutput,
        context_schema=context_schema_for(default),
        input_schema=ReadInput,
        output_schema=ReadOutput,
    )
    node: Any = RunnableLambda(read, aread, name="read")
    builder.add_node("read", node)
    builder.add_edge(START, "read")
    builder.add_edge("read", END)
    return builder.compile(name="mnemon_read")


def read_graph_from_env(environ: Mapping[str, str] | None = None) -> Any:
    """The compiled read graph over ``MNEMON_DB`` with the planner and judge of the env.

    Runs that name no namespace (in their context or ``configurable``) read
    ``MNEMON_NAMESPACE``, or are refused when it is unset (see :func:`with_default_namespace`).
    """
    from mnemon_langgraph.read.graph import create_read_graph

    store = store_from_env(environ)
    graph = create_read_graph(
        source=store,
        judge=judge_from_env(environ),
        planner=chat_model_from_env("MNEMON_PLANNER_MODEL", environ),
        items=_items(store),
    )
    return with_default_namespace(graph, default_namespace(environ))


def _items(store: Any) -> Any:
    from mnemon_langgraph.consolidation.graph import item_store_for

    return item_store_for(store)


class MissingChatModel(BaseChatModel):
    """Stands in for an unset model: the graph builds, and a run says what to set."""

    variable: str = "MNEMON_CONSOLIDATION_MODEL"

    @property
    def _llm_type(self) -> str:
        return "mnemon-missing-model"

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        """Accept tools (structured output binds them); every call still raises."""
        return self

    def _generate(
        self, messages: Any, stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> Any:
        raise ConfigurationError(
            f"no chat model configured: set {self.variable} (e.g. 'openai:gpt-4.1-mini') "
            "before starting the server"
        )


def consolidation_graph_from_env(environ: Mapping[str, str] | None = None) -> Any:
    """The compiled consolidation graph over ``MNEMON_DB`` with its model from the env.

    Without ``MNEMON_CONSOLIDATION_MODEL`` the graph is still built (Studio can show it);
    running it raises :class:`ConfigurationError` naming the variable.
    """
    from mnemon_langgraph.consolidation import create_consolidation_graph

    store = store_from_env(environ)
    model = chat_model_from_env("MNEMON_CONSOLIDATION_MODEL", environ) or MissingChatModel()
    return create_consolidation_graph(model=model, store=store)
