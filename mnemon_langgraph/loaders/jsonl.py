"""Load messages from JSON Lines: one JSON object per line.

Fields of each object (aliases in brackets):

* ``text`` [``content``] — a string, or a list of content blocks of which the
  ``{"type": "text", "text": ...}`` blocks (and plain strings) are kept; required.
* ``speaker`` [``name``] — display name; defaults to the role.
* ``role`` — ``user``/``human``, ``assistant``/``ai``, ``system``, ``tool``; defaults to
  ``user``.
* ``id`` [``message_id``] — optional; a missing id becomes a hash of (source, line
  number, text), so re-ingesting the same file is idempotent.
* ``timestamp`` [``time``, ``date``, ``created_at``] — ISO 8601 or epoch seconds
  (milliseconds are recognised); optional.
* ``session`` — positive integer; optional.

Blank lines are skipped. Every line is validated before anything is returned.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, cast

from mnemon_langgraph.errors import InputError
from mnemon_langgraph.loaders._common import (
    loads_json,
    make_message,
    parse_date,
    parse_role,
    read_text,
    split_lines,
)
from mnemon_langgraph.records._chunking import stable_hash
from mnemon_langgraph.types import NOT_GIVEN, Message, origin_label

__all__ = ["load_jsonl", "message_from_dict", "text_of_content"]

_TEXT_KEYS = ("text", "content")
_SPEAKER_KEYS = ("speaker", "name")
_ID_KEYS = ("id", "message_id")
_TIME_KEYS = ("timestamp", "time", "date", "created_at")


def text_of_content(content: object, *, where: str) -> str:
    """Text of a message content: a string, or the text blocks of a block list.

    Raises:
        InputError: Content is neither, or holds no text.
    """
    if isinstance(content, str):
        text = content
    elif isinstance(content, list):
        parts = []
        for block in content:
            if isinstance(block, str):
                parts.append(block)
            elif isinstance(block, Mapping) and block.get("type") == "text":
                value = block.get("text")
                if isinstance(value, str):
                    parts.append(value)
        text = "\n".join(p for p in parts if p.strip())
    else:
        raise InputError(f"{where}: content must be text, got {type(content).__name__}")
    if not text.strip():
        raise InputError(f"{where}: empty or non-text content")
    return text


def _first(obj: Mapping[str, Any], keys: tuple[str, ...]) -> Any:
    for key in keys:
        if key in obj and obj[key] is not None:
            return obj[key]
    return None


def message_from_dict(obj: Mapping[str, Any], *, where: str, source: str, index: int) -> Message:
    """Build a message from one JSON object (see the module docstring for the fields).

    Args:
        obj: The parsed object.
        where: ``file:line`` for error messages.
        source: Source name, part of derived ids.
        index: Line number (or list index), part of derived ids.
    """
    if not isinstance(obj, Mapping):
        raise InputError(f"{where}: expected a JSON object, got {type(obj).__name__}")
    content = _first(obj, _TEXT_KEYS)
    if content is None:
        raise InputError(f"{where}: missing 'text' (or 'content')")
    text = text_of_content(content, where=where)
    raw_role = obj.get("role")
    speaker = _first(obj, _SPEAKER_KEYS)
    role = parse_role(raw_role, where=where) if raw_role is not None else "user"
    if speaker is None:
        speaker = role
    if not isinstance(speaker, str) or not speaker.strip():
        raise InputError(f"{where}: 'speaker' must be a non-empty string")
    mid = _first(obj, _ID_KEYS)
    if mid is None:
        mid = "m-" + stable_hash(source, index, text, length=24)
    elif isinstance(mid, int) and not isinstance(mid, bool):
        mid = str(mid)
    if not isinstance(mid, str) or not mid.strip():
        raise InputError(f"{where}: 'id' must be a non-empty string")
    raw_time = _first(obj, _TIME_KEYS)
    timestamp = None if raw_time is None else parse_date(raw_time, where=where)
    return make_message(
        where,
        text=text,
        speaker=speaker.strip(),
        role=role,
        id=mid,
        timestamp=timestamp,
        session=obj.get("session"),
    )


def load_jsonl(
    path: str | os.PathLike[str], *, origin: str = "", source: str = NOT_GIVEN
) -> list[Message]:
    """Load a JSON Lines file of messages.

    Args:
        path: The file (strict UTF-8).
        origin: The ingest label used in derived ids (default: the file name).
        source: Deprecated name of ``origin`` (warns; one release).

    Returns:
        The messages, in file order.

    Raises:
        InputError: Invalid UTF-8 or JSON, a missing field, empty text, a bad date, a
            duplicate id — naming the file and line.
    """
    p = Path(path)
    src = origin_label(origin, source, where="load_jsonl", default="") or p.name
    messages: list[Message] = []
    seen: dict[str, int] = {}
    for lineno, line in enumerate(split_lines(read_text(p)), start=1):
        if not line.strip():
            continue
        where = f"{p}:{lineno}"
        obj = cast(Mapping[str, Any], loads_json(line, where=where))  # checked next
        msg = message_from_dict(obj, where=where, source=src, index=lineno)
        assert msg.id is not None
        if msg.id in seen:
            raise InputError(f"{where}: duplicate id {msg.id!r} (first on line {seen[msg.id]})")
        seen[msg.id] = lineno
        messages.append(msg)
    if not messages:
        raise InputError(f"{p}: no messages")
    return messages
