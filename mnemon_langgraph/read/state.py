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


def resolve_namespace(context: Any, config: Mapping[str, Any] | None) -> Namespace:
    """The namespace of this run: the context first, then ``configurable``.

    Raises:
        ConfigurationError: If neither names one.
    """
    value: Any = None
    if context is not None:
        value = (
            context.get("namespace")
            if isinstance(context, Mapping)
            else getattr(context, "namespace", None)
        )
    if value is None and config is not None:
        conf = config.get("configurable") or {}
        value = conf.get("namespace") or conf.get("user_id")
    if value is None or (isinstance(value, Sequence) and not isinstance(value, str) and not value):
        raise ConfigurationError(
            "the read graph needs a namespace (whose memory to read): pass "
            "context=ReadContext(namespace='user-1') to invoke, or "
            "config={'configurable': {'namespace': 'user-1'}} (or 'user_id')"
        )
    return normalize_namespace(value if isinstance(value, str) else tuple(value))
