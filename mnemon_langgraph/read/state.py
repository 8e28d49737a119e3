"""State and runtime context of the read graph.

The state holds only data (JSON-able dicts, lists and LangChain messages), so any
LangGraph checkpointer can store it; backends (the store, the judge, the planner, the
index) reach the nodes through closures, never through state. The namespace comes from
the runtime context (:class:`ReadContext`) or, as a fallback, from
``config["configurable"]["namespace"]`` / ``["user_id"]``.
"""

from __future__ import annotations

import operator
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Annotated, Any

from langchain_core.messages import AnyMessage
from langgraph.graph.message import add_messages
from typing_extensions import TypedDict

from mnemon_langgraph.errors import ConfigurationError
from mnemon_langgraph.types import Namespace, normalize_namespace

__all__ = ["ReadContext", "ReadInput", "ReadOutput", "ReadState", "resolve_namespace"]


@dataclass(frozen=True, slots=True)
class ReadContext:
    """Per-invocation context of the read graph (``context=`` of ``invoke``).

    Attributes:
        namespace: Whose memory to read, e.g. ``"ada@example.com"`` or
            ``("users", "ada")``.
        now: When the latest message is asked (defaults to the wall clock); System 1 sees
            it, so questions asked after the last session are judged against the right day.
    """

    namespace: str | tuple[str, ...] | None = None
    now: datetime | None = None


class ReadInput(TypedDict):
    """Input of the read graph: the conversation so far (the latest message last)."""

    messages: Annotated[list[AnyMessage], add_messages]


class ReadState(TypedDict, total=False):
    """Everything one turn decided, as plain data.

    Keys:
        messages: The conversation (``add_messages``); the last ``recent_messages`` are read.
        namespace: The resolved namespace, as a list of strings.
        now: ISO time the message is asked.
        plan: ``{"planner", "needs": [...], "notes": [...]}``.
        searches: Each search: ``{"index", "query", "origin", "next_offset", "exhausted",
            "pages": [...]}``.
        pool: Pooled records, in pool order: ``{"id", "session", "date", "position",
            "speakers", "message_ids", "text", "found": [[search, rank], ...], "round"}``.
        judgments: ``{"target", "proposition", "p", "need_index", "round"}``, in order made.
        needs: The needs' statuses: ``{"index", "text", "kind", "state", "lead_step",
            "positives"}``.
        pending: Actions the next ``retrieve`` runs.
        rounds: Rounds of ``act`` done.
        index: What ``judge_items`` found: instructions, topics, groups, judged items.
        trace: Append-only trace entries (``operator.add``).
        view: The composed :class:`~mnemon_langgraph.read.view.View`.
    """

    messages: Annotated[list[AnyMessage], add_messages]
    namespace: list[str]
    now: str
    plan: dict[str, Any]
    searches: list[dict[str, Any]]
    pool: list[dict[str, Any]]
    judgments: Annotated[list[dict[str, Any]], operator.add]
    needs: list[dict[str, Any]]
    pending: list[dict[str, Any]]
    rounds: int
    index: dict[str, Any]
    trace: Annotated[list[dict[str, Any]], operator.add]
    view: Any


class ReadOutput(TypedDict, total=False):
    """Output of the read graph."""

    view: Any
    messages: Annotated[list[AnyMessage], add_messages]


def _namespace_of(value: Any) -> Namespace | None:
    """Namespace named by a context object or mapping (``namespace`` wins over ``user_id``).

    Empty values count as absent: the LangGraph server fills ``configurable.user_id`` with
    ``""`` when it has no auth, and that must not shadow a namespace given elsewhere.
    """
    if value is None:
        return None
    if isinstance(value, Mapping):
        namespace, user_id = value.get("namespace"), value.get("user_id")
    else:
        namespace = getattr(value, "namespace", None)
        user_id = getattr(value, "user_id", None)
    if namespace:
        return normalize_namespace(namespace)
    if user_id:
        return normalize_namespace(str(user_id))
    return None


# Where LangGraph keeps the Runtime inside a config (for code that only has the config).
_RUNTIME_KEY = "__pregel_runtime"


def resolve_namespace(
    context: Any,
    config: Mapping[str, Any] | None,
    default: str | Sequence[str] | None = None,
) -> Namespace:
    """The namespace of this run — the one rule every surface uses.

    Order: the runtime context (``namespace``, then ``user_id``), then
    ``config["configurable"]`` (``namespace``, then ``user_id``), then the context of the
    runtime stored in that config, then ``default``. A ``user_id`` ``"ada"`` is the one-part
    namespace ``("ada",)``.

    Raises:
        ConfigurationError: If none of them names one.
    """
    found = _namespace_of(context)
    if found is None and config:
        configurable = config.get("configurable") or {}
        found = _namespace_of(configurable)
        if found is None:
            runtime = configurable.get(_RUNTIME_KEY)
            found = _namespace_of(getattr(runtime, "context", None))
    if found is None and default is not None:
        found = normalize_namespace(default)
    if found is None:
        raise ConfigurationError(
            "the read graph needs a namespace (whose memory to read): pass "
            "context=ReadContext(namespace='user-1') to invoke, or "
            "config={'configurable': {'namespace': 'user-1'}} (or 'user_id')"
        )
    return found
