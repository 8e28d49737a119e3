"""Loader for BEAM ("Beyond a Million Tokens") conversations: ``chat.json`` → messages.

BEAM ships each conversation as a ``chat.json`` file. This loader assumes, and checks, the
following shape (written defensively, since releases differ in details):

* the top level is a **list of batches**, or a dict holding that list under ``"chat"``,
  ``"batches"``, ``"sessions"`` or ``"conversation"``;
* a batch is a dict with ``"turns"`` (also accepted: ``"messages"``, ``"chat"``) and an
  optional ``"time_anchor"`` (also accepted: ``"date"``, ``"timestamp"``); a batch may also be
  a bare list of turns (no date);
* ``"turns"`` is a list of turns, possibly nested one level (a list of user/assistant pairs);
* a turn is a dict with ``"role"`` (``user``/``assistant``/``system``; anything else is read
  as ``user``) and ``"content"`` (also accepted: ``"text"``), an optional ``"id"`` and an
  optional per-turn ``"time_anchor"`` that overrides the batch's.

Each batch becomes one session (1-based, in file order); its ``time_anchor`` becomes every
message's timestamp. Dates are parsed from ISO 8601 and the common spelled-out forms
(``"March-15-2024"``, ``"March 15, 2024"``, ``"15 March 2024"``, ``"2024/03/15"``); an
unparseable anchor leaves the timestamp ``None``. Turns with empty content are skipped.
Message ids are the turn's ``id`` when present, else ``"b<batch>:t<index>"``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from mnemon_langgraph.errors import InputError
from mnemon_langgraph.types import Message, Role

__all__ = ["load_beam_chat", "messages_from_beam", "parse_time_anchor"]

_BATCH_LIST_KEYS = ("chat", "batches", "sessions", "conversation")
_TURN_KEYS = ("turns", "messages", "chat")
_ANCHOR_KEYS = ("time_anchor", "date", "timestamp")
_FORMATS = (
    "%B-%d-%Y",
    "%b-%d-%Y",
    "%B %d, %Y",
    "%b %d, %Y",
    "%B %d %Y",
    "%d %B %Y",
    "%d %B, %Y",
    "%d %b %Y",
    "%Y/%m/%d",
    "%m/%d/%Y",
    "%d-%m-%Y",
    "%Y-%m-%d %H:%M:%S",
    "%Y-%m-%d %H:%M",
)


def parse_time_anchor(value: object) -> datetime | None:
    """Parse a BEAM ``time_anchor`` (or any common date spelling); ``None`` if it can't.

    Timezone information, if any, is dropped (records keep naive local dates).
    """
    if isinstance(value, datetime):
        return value.replace(tzinfo=None)
    if isinstance(value, int | float) and not isinstance(value, bool):
        try:
            return datetime.fromtimestamp(float(value))
        except (OverflowError, OSError, ValueError):
            return None
    if not isinstance(value, str) or not value.strip():
        return None
    text = re.sub(r"\s+", " ", value.strip())
    text = re.sub(r"(\d)(st|nd|rd|th)\b", r"\1", text)
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).replace(tzinfo=None)
    except ValueError:
        pass
    for fmt in _FORMATS:
        try:
            return datetime.strptime(text, fmt)
        except ValueError:
            continue
    return None


def _batches(data: Any) -> list[Any]:
    if isinstance(data, dict):
        for key in _BATCH_LIST_KEYS:
            if isinstance(data.get(key), list):
                return list(data[key])
        raise InputError(
            "BEAM chat.json: expected a list of batches or a dict with one of "
            f"{list(_BATCH_LIST_KEYS)}, got keys {sorted(data)[:10]}"
        )
    if isinstance(data, list):
        return data
    raise InputError(f"BEAM chat.json: expected a list of batches, got {type(data).__name__}")


def _flatten(turns: Sequence[Any]) -> Iterator[dict[str, Any]]:
    for turn in turns:
        if isinstance(turn, dict):
            yield turn
        elif isinstance(turn, list | tuple):
            yield from _flatten(turn)


def messages_from_beam(data: Any) -> list[Message]:
    """Convert parsed ``chat.json`` data into messages, one session per batch.

    Args:
        data: The parsed JSON (see the module docstring for the shape assumed).

    Returns:
        The messages in order.

    Raises:
        InputError: If the top level or a batch has an unexpected shape.
    """
    messages: list[Message] = []
    for b_index, batch in enumerate(_batches(data), start=1):
        anchor: object = None
        if isinstance(batch, dict):
            turns = next((batch[k] for k in _TURN_KEYS if isinstance(batch.get(k), list)), None)
            if turns is None:
                raise InputError(
                    f"BEAM chat.json: batch {b_index} has none of {list(_TURN_KEYS)} as a list"
                )
            anchor = next((batch[k] for k in _ANCHOR_KEYS if batch.get(k) is not None), None)
        elif isinstance(batch, list):
            turns = batch
        else:
            raise InputError(
                f"BEAM chat.json: batch {b_index} is a {type(batch).__name__}, not a dict or list"
            )
        batch_date = parse_time_anchor(anchor)
        for t_index, turn in enumerate(_flatten(turns)):
            content = turn.get("content", turn.get("text"))
            if not isinstance(content, str) or not content.strip():
                continue
            raw_role = str(turn.get("role", "user")).lower()
            role: Role = raw_role if raw_role in ("user", "assistant", "system") else "user"  # type: ignore[assignment]
            turn_date = parse_time_anchor(turn.get("time_anchor")) or batch_date
            turn_id = turn.get("id")
            messages.append(
                Message(
                    text=content.strip(),
                    speaker=role,
                    role=role,
                    id=str(turn_id) if turn_id is not None else f"b{b_index}:t{t_index}",
                    timestamp=turn_date,
                    session=b_index,
                )
            )
    return messages


def load_beam_chat(path: str | Path) -> list[Message]:
    """Load a BEAM ``chat.json`` file (or a folder holding one) as messages.

    Raises:
        InputError: If the file is missing, not JSON, or not shaped like BEAM's chat.json.
    """
    file = Path(path)
    if file.is_dir():
        file = file / "chat.json"
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise InputError(f"BEAM chat file not found: {file}") from exc
    except json.JSONDecodeError as exc:
        raise InputError(f"BEAM chat file {file} is not JSON: {exc}") from exc
    return messages_from_beam(data)
