"""A ``BaseChatMessageHistory`` backed by the journal: :class:`MnemonChatMessageHistory`.

For ``RunnableWithMessageHistory`` users: messages written through it become journal records
(searchable by the read graph like any others), and ``messages`` reads the namespace's
messages back in the order they were written.
"""

from __future__ import annotations

import uuid
import warnings
from collections.abc import Sequence
from typing import TYPE_CHECKING

from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    ChatMessage,
    HumanMessage,
    SystemMessage,
)

from mnemon_langgraph.integrations._common import aingest_messages, ingest_messages
from mnemon_langgraph.read.namespaces import run_actor
from mnemon_langgraph.types import (
    NOT_GIVEN,
    Message,
    Namespace,
    Record,
    normalize_namespace,
    origin_label,
)

with warnings.catch_warnings():
    # Importing is silent; subclassing a deprecated class is the documented way to keep
    # RunnableWithMessageHistory working, and instances warn as langchain-core decides.
    warnings.simplefilter("ignore")
    from langchain_core.chat_history import BaseChatMessageHistory

if TYPE_CHECKING:
    from mnemon_langgraph.store import MnemonStore

__all__ = ["MnemonChatMessageHistory"]


def _to_langchain(message_id: str, speaker: str, text: str, role: str) -> BaseMessage:
    # a speaker equal to the role is the default name the write path gave a nameless message
    name = speaker if speaker and speaker != role else None
    if role == "user":
        return HumanMessage(content=text, id=message_id, name=name)
    if role == "assistant":
        return AIMessage(content=text, id=message_id, name=name)
    if role == "system":
        return SystemMessage(content=text, id=message_id, name=name)
    return ChatMessage(content=text, role=role, id=message_id, name=name)


def messages_from_records(records: Sequence[Record]) -> list[BaseMessage]:
    """Rejoin the LangChain messages held by ``records`` (given in write order).

    A long message split over several records is rejoined with single spaces; several short
    messages packed into one record come out as separate messages.
    """
    from mnemon_langgraph.records.schema import record_lines

    order: list[str] = []
    parts: dict[str, list[str]] = {}
    meta: dict[str, tuple[str, str]] = {}
    for record in records:
        for message_id, speaker, text, role in record_lines(record):
            if message_id not in parts:
                order.append(message_id)
                parts[message_id] = []
                meta[message_id] = (speaker, role)
            parts[message_id].append(text)
    return [
        _to_langchain(mid, meta[mid][0], " ".join(p for p in parts[mid] if p), meta[mid][1])
        for mid in order
    ]


class MnemonChatMessageHistory(BaseChatMessageHistory):
    """Chat message history that writes to, and reads back from, the journal.

    ``messages`` returns the namespace's messages in write order; ``add_messages`` writes
    them through the store (chunked into records and indexed, no model call); ``clear``
    erases the namespace through the store's audited ``erase_namespace``.

    Deprecated: this class is deprecated with its base class. langchain-core marks
    ``BaseChatMessageHistory`` deprecated since 1.6.4, to be removed in langchain-core
    2.0.0, with the note "See the short-term memory documentation for recommended
    alternatives: https://docs.langchain.com/oss/python/langchain/short-term-memory";
    ``RunnableWithMessageHistory`` is deprecated since 1.3.3 ("Use LangGraph's built-in
    persistence instead."). It is kept for code that still uses them; new code should use
    :func:`mnemon_langgraph.integrations.memory_nodes` or
    :class:`mnemon_langgraph.integrations.MnemonMiddleware`.

    Args:
        store: A ``MnemonStore``.
        namespace: Namespace (e.g. the session or user id of ``RunnableWithMessageHistory``).
        origin: The ingest label written on the records (default ``"history"``).
        source: Deprecated name of ``origin`` (warns; one release).
    """

    def __init__(
        self,
        store: MnemonStore,
        namespace: str | Sequence[str],
        *,
        origin: str = "history",
        source: str = NOT_GIVEN,
    ):
        self.store = store
        self.namespace: Namespace = normalize_namespace(namespace)
        self.origin = origin_label(
            origin, source, where="MnemonChatMessageHistory", default="history"
        )

    @property
    def messages(self) -> list[BaseMessage]:  # type: ignore[override]
        """The namespace's messages, in the order they were written."""
        return messages_from_records(list(self.store.records(self.namespace)))

    async def aget_messages(self) -> list[BaseMessage]:
        """Async form of :attr:`messages`."""
        return messages_from_records([r async for r in self.store.arecords(self.namespace)])

    def add_messages(self, messages: Sequence[BaseMessage]) -> None:
        """Write ``messages`` to the journal (each gets an id if it has none)."""
        ingest_messages(self.store, self.namespace, _with_ids(messages), origin=self.origin)

    async def aadd_messages(self, messages: Sequence[BaseMessage]) -> None:
        """Async form of :meth:`add_messages`."""
        await aingest_messages(self.store, self.namespace, _with_ids(messages), origin=self.origin)

    def clear(self) -> None:
        """Erase the namespace through the store's audited ``erase_namespace``."""
        self.store.erase_namespace(
            self.namespace, actor=run_actor("MnemonChatMessageHistory.clear")
        )

    async def aclear(self) -> None:
        """Async form of :meth:`clear`."""
        await self.store.aerase_namespace(
            self.namespace, actor=run_actor("MnemonChatMessageHistory.clear")
        )


def _with_ids(messages: Sequence[BaseMessage]) -> list[Message]:
    """``messages`` as mnemon Messages, each with an id (a fresh one where it had none)."""
    from mnemon_langgraph.loaders import messages_from_langchain

    with_ids = [m if m.id else m.model_copy(update={"id": uuid.uuid4().hex}) for m in messages]
    return messages_from_langchain(with_ids)
