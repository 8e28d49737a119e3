"""Turn LangChain messages (``BaseMessage``) into :class:`~mnemon_langgraph.types.Message`.

* **text**: a string content, or the text blocks of a content-block list (plain strings
  and ``{"type": "text", "text": …}``); images, tool calls and other blocks are dropped. A
  message with no text at all is an :class:`InputError` (filter tool-call-only AI messages
  out first, or pass ``skip_empty=True``).
* **role** from ``message.type``: ``human`` → ``user``, ``ai`` → ``assistant``,
  ``system`` → ``system``, ``tool``/``function`` → ``tool``; a ``ChatMessage`` uses its
  ``role``.
* **speaker**: ``message.name``, else the role.
* **id**: ``message.id``, else a hash of (source, index, speaker, text).
* **timestamp**: the first of ``additional_kwargs[k]`` then ``response_metadata[k]`` for
  ``k`` in ``TIMESTAMP_KEYS`` = (``"timestamp"``, ``"created_at"``, ``"time"``) that is
  present: a datetime, ISO 8601 string or epoch seconds/milliseconds.
* **session**: ``session=`` for all messages; else ``additional_kwargs["session"]`` when
  present; else derived: sessions start at ``first_session`` and a new session starts
  when the gap between consecutive timestamps exceeds ``gap`` (default 4 hours).
  Pass ``last_timestamp`` (the timestamp of the last message already stored in
  ``first_session``) when continuing a conversation.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

from mnemon_langgraph.errors import InputError
from mnemon_langgraph.loaders._common import make_message, parse_date, parse_role
from mnemon_langgraph.loaders.jsonl import text_of_content
from mnemon_langgraph.records._chunking import derive_message_id
from mnemon_langgraph.types import NOT_GIVEN, Message, Role, check_session, origin_label

__all__ = ["DEFAULT_SESSION_GAP", "TIMESTAMP_KEYS", "messages_from_langchain"]

TIMESTAMP_KEYS = ("timestamp", "created_at", "time")
DEFAULT_SESSION_GAP = timedelta(hours=4)


def _timestamp(msg: Any, *, where: str) -> datetime | None:
    for holder in (
        getattr(msg, "additional_kwargs", None),
        getattr(msg, "response_metadata", None),
    ):
        if not isinstance(holder, Mapping):
            continue
        for key in TIMESTAMP_KEYS:
            if holder.get(key) is not None:
                return parse_date(holder[key], where=f"{where}: {key}")
    return None


def _role(msg: Any, *, where: str) -> Role:
    kind = getattr(msg, "type", None)
    if kind in ("chat", "ChatMessageChunk"):
        return parse_role(getattr(msg, "role", None), where=where)
    return parse_role(kind, where=where)


def _aware_gap(a: datetime, b: datetime) -> timedelta:
    if (a.tzinfo is None) != (b.tzinfo is None):
        a, b = a.replace(tzinfo=None), b.replace(tzinfo=None)
    return b - a


def messages_from_langchain(
    messages: Sequence[Any],
    *,
    origin: str = "langchain",
    session: int | None = None,
    gap: timedelta = DEFAULT_SESSION_GAP,
    first_session: int = 1,
    last_timestamp: datetime | None = None,
    skip_empty: bool = False,
    source: str = NOT_GIVEN,
) -> list[Message]:
    """Convert LangChain messages (see the module docstring for the mapping).

    Args:
        messages: ``BaseMessage`` objects, in conversation order.
        origin: The ingest label, part of derived ids (default ``"langchain"``).
        session: Session number for every message (disables derivation).
        gap: Longest pause inside one derived session.
        first_session: Number of the first derived session.
        last_timestamp: Timestamp of the message before ``messages[0]``, if continuing.
        skip_empty: Drop messages without text instead of raising.
        source: Deprecated name of ``origin`` (warns; one release).

    Raises:
        InputError: A message without text (unless ``skip_empty``), an unknown type, a bad
            timestamp, an invalid session — naming the message index and id.
    """
    source = origin_label(origin, source, where="messages_from_langchain", default="langchain")
    if session is not None:
        check_session(session)
    check_session(first_session, what="first_session")
    out: list[Message] = []
    current = first_session
    previous = last_timestamp
    for index, msg in enumerate(messages):
        mid = getattr(msg, "id", None)
        where = f"{source}: message {index}" + (f" (id {mid!r})" if mid else "")
        if not hasattr(msg, "content") or not hasattr(msg, "type"):
            raise InputError(f"{where}: not a LangChain message: {type(msg).__name__}")
        role = _role(msg, where=where)
        try:
            text = text_of_content(msg.content, where=where)
        except InputError:
            if skip_empty:
                continue
            raise
        name = getattr(msg, "name", None)
        speaker = name.strip() if isinstance(name, str) and name.strip() else role
        timestamp = _timestamp(msg, where=where)
        extra = getattr(msg, "additional_kwargs", None) or {}
        if session is not None:
            number = session
        elif extra.get("session") is not None:
            number = extra["session"]
            try:
                check_session(number, what="additional_kwargs['session']")
            except InputError as exc:
                raise InputError(f"{where}: {exc}") from None
        else:
            if (
                timestamp is not None
                and previous is not None
                and _aware_gap(previous, timestamp) > gap
            ):
                current += 1
            number = current
        if timestamp is not None:
            previous = timestamp
        base = make_message(
            where, text=text, speaker=speaker, role=role, timestamp=timestamp, session=number
        )
        if not (isinstance(mid, str) and mid.strip()):
            mid = derive_message_id(base, source=source, index=index)
        out.append(dataclasses.replace(base, id=mid))
    return out
