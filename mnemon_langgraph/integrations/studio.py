"""Build the graphs of ``langgraph.json`` from environment variables, for ``langgraph dev``.

``graphs/read_graph.py``, ``graphs/agent_graph.py`` and ``graphs/consolidation_graph.py``
call these functions and do nothing else. Variables:

- ``MNEMON_DB``: path of the journal (default ``mnemon.db`` in the working directory; the
  repository's ``.gitignore`` ignores ``/*.db`` and their ``.indexes`` folders);
- ``MNEMON_NAMESPACE``: namespace read by runs that name none in their context or config
  (or a JSON array template such as ``["org", "{org}", "user", "{user_id}"]`` that each run
  fills from its context). Unset, such a run is refused with a message saying what to set
  (never a silent read of some shared namespace). Never used on a server with authentication,
  where the login decides whose memory (``graphs/auth.py``, ``docs/security.md``);
- ``MNEMON_PLANNER_MODEL``: System 2 chat model for the read graph, as
  ``init_chat_model`` takes it (``openai:gpt-4.1-mini``); unset: the offline rule planner;
- ``MNEMON_JUDGE``: System 1 backend: ``local`` (default, offline), ``jev`` (needs
  ``TYPESAFE_API_KEY``), or ``llm:<provider:model>``;
- ``MNEMON_AGENT_MODEL``: the chat model of the ``mnemon_agent`` graph (``provider:model``);
  unset: a clearly labelled offline stand-in that quotes what memory found;
- ``MNEMON_CONSOLIDATION_MODEL``: chat model that folds batches in the consolidation graph
  (unset: the graph is built without one and says so when run);
- ``MNEMON_SOURCES``: further read sources of the read and agent graphs, read beside the
  user's memory (the journal, named ``memory``) into one View: a JSON object, or ``@`` and
  the path of a JSON file holding one, naming each source, e.g. ``{"team": {"shared":
  ["teams", "{team_id}"]}, "docs": {"import": "my_app.sources:docs"}}``. ``shared``: a
  read-only namespace of the same store (:class:`~mnemon_langgraph.read.sources.SharedNamespace`),
  its template filled from each run (its fields join the graphs' context forms); ``import``:
  ``package.module:attribute``, a search source (``RetrieverSource(...)``, any object with
  ``search``/``asearch``) or a callable returning one (see :func:`sources_from_env`).
"""

from __future__ import annotations

import importlib
import json
import os
import re
from collections.abc import Mapping, Sequence
from typing import Any, cast

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import RunnableConfig, RunnableLambda
from langgraph.graph import END, START, StateGraph

from mnemon_langgraph.backends import chat_model_from_spec, judge_from_spec
from mnemon_langgraph.errors import ConfigurationError
from mnemon_langgraph.integrations._common import (
    current_context,
    is_view,
    namespace_from,
    template_fields,
)
from mnemon_langgraph.read.namespaces import auth_identity, context_fields, granted_namespace
from mnemon_langgraph.read.view import PREAMBLE

__all__ = [
    "DEFAULT_DB",
    "OFFLINE_LABEL",
    "OFFLINE_NAME",
    "MissingChatModel",
    "OfflineStandInModel",
    "agent_graph_from_env",
    "chat_model_from_env",
    "consolidation_graph_from_env",
    "context_schema_for",
    "create_chat_agent",
    "default_namespace",
    "judge_from_env",
    "no_namespace_message",
    "read_graph_from_env",
    "resolve_run_namespace",
    "sources_from_env",
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


def context_schema_for(
    default: str | Sequence[str] | None, fields: Sequence[str] = ()
) -> type[Any]:
    """The context schema of a graph whose runs resolve their namespace against ``default``.

    :class:`~mnemon_langgraph.read.state.ReadContext` (``namespace``, ``now``, ``user_id``)
    plus one field per placeholder of a template ``default`` and per name of ``fields`` (the
    read sources' template fields, :func:`source_fields`); LangGraph Studio's context form
    shows these fields, and ``context={...}`` with any of them is accepted.
    """
    from mnemon_langgraph.read.state import read_context_schema

    return read_context_schema([*template_fields(default), *fields])


def resolve_run_namespace(context: Any, config: Any, default: str | Sequence[str] | None) -> Any:
    """The run's namespace (:func:`namespace_from`), or a refusal naming calls that work."""
    try:
        return namespace_from(context=context, config=config, default=default)
    except ConfigurationError as exc:
        if auth_identity(config) is not None:
            raise  # authenticated: the message names what the auth handler must return
        fields = template_fields(default)
        message = no_namespace_message(fields, has_default=default is not None)
        raise ConfigurationError(message) from exc


def with_default_namespace(
    read_graph: Any, default: str | Sequence[str] | None, fields: Sequence[str] = ()
) -> Any:
    """Wrap a compiled read graph so that each run's namespace is resolved, or refused.

    The namespace is resolved per run by the one rule
    (:func:`~mnemon_langgraph.read.namespaces.resolve_namespace`) and handed to the read graph
    as its context. On a LangGraph server with authentication the authenticated identity
    (``configurable["langgraph_auth_user_id"]``, which the server sets from the login and a
    client cannot) decides: ``("users", identity)``, or ``default`` filled from the
    authenticated user when it is a template; ``default`` is never used as a plain namespace,
    and a run naming another user is refused (:class:`NamespaceAccessError`). Without
    authentication: the run's context (``namespace`` / ``user_id``), then ``configurable``,
    then ``default``; a run that names no user is refused with a :class:`ConfigurationError`
    saying what to set. Input and output are the read graph's. ``fields``: the read
    sources' template fields (:func:`source_fields`), added to the context schema.
    """
    from mnemon_langgraph.read.state import ReadContext, ReadInput, ReadOutput

    def _context(config: RunnableConfig) -> tuple[Any, RunnableConfig]:
        context = current_context()
        namespace = resolve_run_namespace(context, config, default)
        # the run's context fields reach the read sources' templates ({team_id}) as config
        fields = {k: v for k, v in context_fields(context).items() if k != "namespace"}
        conf = {**fields, **(config.get("configurable") or {})}
        child = cast(RunnableConfig, {**config, "configurable": conf})
        return ReadContext(namespace=namespace, now=getattr(context, "now", None)), child

    def read(state: dict[str, Any], config: RunnableConfig) -> dict[str, Any]:
        context, child = _context(config)
        with granted_namespace(context.namespace):
            out = read_graph.invoke(state, child, context=context)
        return {"view": out["view"]}

    async def aread(state: dict[str, Any], config: RunnableConfig) -> dict[str, Any]:
        context, child = _context(config)
        with granted_namespace(context.namespace):
            out = await read_graph.ainvoke(state, child, context=context)
        return {"view": out["view"]}

    builder = StateGraph(
        ReadOutput,
        context_schema=context_schema_for(default, fields),
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
    store = store_from_env(environ)
    sources = sources_from_env(store, environ)
    graph = _read_graph_over(store, environ, sources)
    return with_default_namespace(graph, default_namespace(environ), source_fields(sources))


def _read_graph_over(
    store: Any, environ: Mapping[str, str] | None, sources: Mapping[str, Any] | None = None
) -> Any:
    """The read graph over ``store`` (and ``sources``, :func:`sources_from_env`) with the
    planner and judge the environment names."""
    from mnemon_langgraph.read.graph import create_read_graph

    return create_read_graph(
        source=None if sources else store,
        sources=sources or None,
        judge=judge_from_env(environ),
        planner=chat_model_from_env("MNEMON_PLANNER_MODEL", environ),
        items=_items(store),
    )


def _sources_spec(environ: Mapping[str, str] | None) -> dict[str, Any]:
    """``MNEMON_SOURCES`` (or the JSON file it names after ``@``) as a dict, ``{}`` unset."""
    raw = _env(environ).get("MNEMON_SOURCES", "").strip()
    if not raw:
        return {}
    where = f"MNEMON_SOURCES={raw!r}"
    try:
        if raw.startswith("@"):
            with open(raw[1:], encoding="utf-8") as handle:
                raw = handle.read()
        spec = json.loads(raw)
    except (OSError, json.JSONDecodeError) as exc:
        raise ConfigurationError(
            f"{where}: not a JSON object or an @file holding one ({exc})"
        ) from exc
    if not isinstance(spec, dict) or "memory" in spec:
        raise ConfigurationError(
            f"{where}: must be a JSON object of further sources ('memory' is the journal's name)"
        )
    return spec


def _source_from(store: Any, name: str, entry: Any) -> Any:
    """One source of ``MNEMON_SOURCES``: ``{"shared": [...]}`` or ``{"import": "m:attr"}``."""
    from mnemon_langgraph.read.sources import SharedNamespace

    if isinstance(entry, dict) and set(entry) == {"shared"}:
        return SharedNamespace(store, entry["shared"])
    if isinstance(entry, dict) and set(entry) == {"import"} and ":" in str(entry["import"]):
        module_name, _, attribute = str(entry["import"]).partition(":")
        try:
            found = getattr(importlib.import_module(module_name), attribute)
        except (ImportError, AttributeError) as exc:
            raise ConfigurationError(f"MNEMON_SOURCES {name!r}: cannot import it ({exc})") from exc
        return found if callable(getattr(found, "search", None)) else found()
    raise ConfigurationError(
        f"MNEMON_SOURCES {name!r}: expected {{'shared': [namespace template parts]}} or "
        f"{{'import': 'package.module:attribute'}}, got {entry!r}"
    )


def sources_from_env(store: Any, environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The read sources ``MNEMON_SOURCES`` names, after the journal (``{"memory": store,
    ...}``), or ``{}`` when it is unset (the graphs then read the journal alone).

    Raises:
        ConfigurationError: The value (or the file it names) is not a JSON object of
            ``{"shared": [...]}`` / ``{"import": "package.module:attribute"}`` entries, an
            import fails, or a name is not a usable source name.
    """
    spec = _sources_spec(environ)
    if not spec:
        return {}
    return {"memory": store, **{name: _source_from(store, name, e) for name, e in spec.items()}}


def source_fields(sources: Mapping[str, Any] | None) -> list[str]:
    """The fields the sources' namespace templates name (``team_id``), in order."""
    out: list[str] = []
    for src in (sources or {}).values():
        template = getattr(src, "namespace_template", None)
        out.extend(template_fields(template) if template else ())
    return list(dict.fromkeys(out))


def _items(store: Any) -> Any:
    return store.item_store()


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
    running it raises :class:`ConfigurationError` naming the variable. A run names its user
    as the other graphs take it (``context={"user_id": "ada"}``) or in its input
    (``{"namespace": ["users", "ada"]}``); ``MNEMON_NAMESPACE`` is the default or template.
    """
    from mnemon_langgraph.consolidation import create_consolidation_graph

    store = store_from_env(environ)
    model = chat_model_from_env("MNEMON_CONSOLIDATION_MODEL", environ) or MissingChatModel()
    return create_consolidation_graph(
        store=store, model=model, namespace=default_namespace(environ)
    )


# --- the chat agent with memory (mnemon_agent) -------------------------------------------------

OFFLINE_NAME = "mnemon-offline-stand-in"
"""``name`` of the offline stand-in's replies (they are never written to memory)."""

OFFLINE_LABEL = (
    "[Offline stand-in, not a model: no chat model is configured (start the server with "
    "MNEMON_AGENT_MODEL=provider:model, e.g. openai:gpt-4.1-mini). This reply only quotes "
    "what memory found for your message.]"
)


class OfflineStandInModel(BaseChatModel):
    """The agent's model when ``MNEMON_AGENT_MODEL`` is unset: quotes the View, labelled.

    So LangGraph Studio shows a working memory agent offline: each reply starts with
    :data:`OFFLINE_LABEL` and quotes the View the model would have read (its record text
    escaped, as in the View), or says memory found nothing.
    """

    @property
    def _llm_type(self) -> str:
        return "mnemon-offline-stand-in"

    def _generate(
        self, messages: Any, stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> ChatResult:
        view = next((m for m in messages if isinstance(m, BaseMessage) and is_view(m)), None)
        body = _VIEW_BODY.search(view.text) if view is not None else None
        found = body.group(1).strip() if body else ""
        if found.removeprefix(PREAMBLE).strip() in ("", "(nothing relevant in memory)"):
            found = "Memory found nothing for this message."
        reply = AIMessage(f"{OFFLINE_LABEL}\n\n{found}", name=OFFLINE_NAME)
        return ChatResult(generations=[ChatGeneration(message=reply)])


_VIEW_BODY = re.compile(r"<memory_view>\n(.*)\n</memory_view>", re.DOTALL)


def _is_stand_in(message: Any) -> bool:
    return isinstance(message, AIMessage) and message.name == OFFLINE_NAME


def create_chat_agent(
    store: Any,
    *,
    model: BaseChatModel | None = None,
    namespace: str | Sequence[str] | None = None,
    read_graph: Any = None,
    fields: Sequence[str] = (),
) -> Any:
    """A chat agent with memory: the View before each model call, the turn written after it.

    ``START → model → remember → END`` over ``MessagesState``: the model node is wrapped by
    :func:`~.subgraph.memory_nodes` (the View reaches the model as its first message and is
    never stored in the thread), and ``remember`` writes the turn's new messages to the
    journal. The replies of the :class:`OfflineStandInModel` are not written: they only quote
    memory back.

    Args:
        store: The ``MnemonStore``.
        model: The chat model (default: the labelled offline stand-in).
        namespace: A namespace template (``("org", "{org}", "user", "{user_id}")``) or the
            namespace of runs that name none; ``None``: every run must name its user.
        read_graph: The compiled read graph (default: built over ``store``).
        fields: Further context fields (the read sources' template fields,
            :func:`source_fields`): the context schema accepts them.

    Returns:
        The compiled graph (named ``mnemon_agent``); its context schema has ``user_id``,
        ``namespace``, ``now`` and the template's fields.
    """
    from langgraph.graph import MessagesState

    from mnemon_langgraph.integrations.subgraph import memory_nodes

    chat = model or OfflineStandInModel()
    with_view, remember = memory_nodes(
        store, read_graph=read_graph, namespace=namespace, origin="mnemon_agent"
    )

    def reply(state: dict[str, Any], config: RunnableConfig) -> dict[str, Any]:
        return {"messages": [chat.invoke(state["messages"], config)]}

    async def areply(state: dict[str, Any], config: RunnableConfig) -> dict[str, Any]:
        return {"messages": [await chat.ainvoke(state["messages"], config)]}

    model_node = with_view(RunnableLambda(reply, areply, name="reply"))

    def call(state: dict[str, Any], config: RunnableConfig) -> Any:
        resolve_run_namespace(current_context(), config, namespace)  # refuse with the hint
        return model_node.invoke(state, config)

    async def acall(state: dict[str, Any], config: RunnableConfig) -> Any:
        resolve_run_namespace(current_context(), config, namespace)
        return await model_node.ainvoke(state, config)

    def kept(state: dict[str, Any]) -> dict[str, Any]:
        return {"messages": [m for m in state["messages"] if not _is_stand_in(m)]}

    def write(state: dict[str, Any], config: RunnableConfig) -> Any:
        return remember.invoke(kept(state), config)

    async def awrite(state: dict[str, Any], config: RunnableConfig) -> Any:
        return await remember.ainvoke(kept(state), config)

    builder = StateGraph(MessagesState, context_schema=context_schema_for(namespace, fields))
    model_step: Any = RunnableLambda(call, acall, name="model")
    write_step: Any = RunnableLambda(write, awrite, name="remember")
    builder.add_node("model", model_step)
    builder.add_node("remember", write_step)
    builder.add_edge(START, "model")
    builder.add_edge("model", "remember")
    builder.add_edge("remember", END)
    return builder.compile(name="mnemon_agent")


def agent_graph_from_env(environ: Mapping[str, str] | None = None) -> Any:
    """The ``mnemon_agent`` graph over ``MNEMON_DB``, its model from ``MNEMON_AGENT_MODEL``.

    Unset, the model is the labelled :class:`OfflineStandInModel`; the read path's planner and
    judge come from ``MNEMON_PLANNER_MODEL`` / ``MNEMON_JUDGE``, the default namespace (or
    template) from ``MNEMON_NAMESPACE``, as for the read graph.
    """
    store = store_from_env(environ)
    sources = sources_from_env(store, environ)
    return create_chat_agent(
        store,
        model=chat_model_from_env("MNEMON_AGENT_MODEL", environ),
        namespace=default_namespace(environ),
        read_graph=_read_graph_over(store, environ, sources),
        fields=source_fields(sources),
    )
