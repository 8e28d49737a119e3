"""Helpers shared by the loaders: strict UTF-8 reading, date parsing, role names."""

from __future__ import annotations

import json
import math
import os
import re
from datetime import UTC, datetime
from pathlib import Path

from mnemon_langgraph.errors import InputError
from mnemon_langgraph.search._text import month_number
from mnemon_langgraph.types import Message, Role, as_naive_utc

__all__ = ["loads_json", "make_message", "parse_date", "parse_role", "read_text", "split_lines"]

_ROLE_ALIASES: dict[str, Role] = {
    "user": "user",
    "human": "user",
    "assistant": "assistant",
    "ai": "assistant",
    "bot": "assistant",
    "model": "assistant",
    "system": "system",
    "developer": "system",
    "tool": "tool",
    "function": "tool",
}

_DATE_FORMATS = (
    "%I:%M %p on %d %B, %Y",  # LoCoMo: "1:56 pm on 8 May, 2023"
    "%I:%M %p on %d %b, %Y",
    "%I:%M %p on %d %B %Y",
    "%I:%M%p on %d %B, %Y",
    "%d %B, %Y",
    "%d %B %Y",
    "%d %b %Y",
    "%B %d, %Y",
    "%b %d, %Y",
    "%Y/%m/%d",
    "%Y/%m/%d %H:%M",
    "%Y/%m/%d (%a) %H:%M",  # LongMemEval: "2023/05/20 (Sat) 02:21"
)


# "1:56 pm on 8 May, 2023" / "8 May 2023" — parsed without the C library's locale.
_WRITTEN = re.compile(
    r"(?:(?P<h>\d{1,2}):(?P<m>\d{2})\s*(?P<ampm>[ap]\.?m\.?)\s+on\s+)?"
    r"(?P<d>\d{1,2})(?:st|nd|rd|th)?\s+(?P<mon>[a-z]+)\.?,?\s+(?P<y>\d{4})",
    re.IGNORECASE,
)


def _written_date(text: str) -> datetime | None:
    match = _WRITTEN.fullmatch(text)
    if match is None:
        return None
    month = month_number(match.group("mon"))
    if month is None:
        return None
    hour = minute = 0
    if match.group("h"):
        hour, minute = int(match.group("h")), int(match.group("m"))
        if not 1 <= hour <= 12:
            return None
        pm = match.group("ampm").lower().startswith("p")
        hour = hour % 12 + (12 if pm else 0)
    try:
        return datetime(int(match.group("y")), month, int(match.group("d")), hour, minute)
    except ValueError:
        return None


def read_text(path: str | os.PathLike[str]) -> str:
    """Read a file as strict UTF-8 (a leading BOM is dropped).

    Raises:
        InputError: The file is missing, unreadable, or not valid UTF-8 (the message
            names the file, the line and the byte offset).
    """
    p = Path(path)
    try:
        data = p.read_bytes()
    except OSError as exc:
        raise InputError(f"{p}: cannot read file: {exc.strerror or exc}") from exc
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise InputError(
            f"{p}: line {line}: invalid UTF-8 (byte offset {exc.start}: {exc.reason})"
        ) from exc
    return text.removeprefix("\ufeff")


def split_lines(text: str) -> list[str]:
    """Lines of ``text`` split on ``\\n`` only (a trailing ``\\r`` is dropped).

    Not :meth:`str.splitlines`: that also splits on U+2028, U+0085, U+001E … which
    ``json.dumps(ensure_ascii=False)`` writes raw inside strings, so a valid JSONL line
    would be cut in the middle of a string.
    """
    return [line.removesuffix("\r") for line in text.split("\n")]


def loads_json(text: str, *, where: str) -> object:
    """``json.loads`` with every failure as an :class:`InputError` naming ``where``.

    Catches ``RecursionError`` too: JSON nested tens of thousands deep exhausts the
    parser's stack, which must read as bad input, not a traceback.
    """
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(
            f"{where}: invalid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})"
        ) from exc
    except RecursionError:
        raise InputError(f"{where}: JSON nested too deeply to read") from None


def make_message(where: str, **fields: object) -> Message:
    """Build a :class:`Message`; its validation errors are prefixed with ``where``.

    :class:`Message` holds the one validation rule for every entry point (session range,
    role, speaker and text bounds, dates); loaders call this so the error also names the
    file, line or turn.
    """
    try:
        return Message(**fields)  # type: ignore[arg-type]
    except InputError as exc:
        raise InputError(f"{where}: {exc}") from None


def parse_date(value: object, *, where: str) -> datetime:
    """Parse a timestamp: ISO 8601, epoch seconds (or milliseconds), or a written date.

    Written forms include LoCoMo's ``"1:56 pm on 8 May, 2023"``, ``"8 May 2023"`` and
    ``"May 8, 2023"``. Epoch values become UTC datetimes; strings keep their own offset
    (or none).

    Args:
        value: A string, an int/float epoch, or a datetime.
        where: Context for the error message (file and line).

    Raises:
        InputError: The value cannot be read as a date.
    """
    parsed = _parse_date(value, where=where)
    try:
        as_naive_utc(parsed)  # a zoned date near year 1 or 9999 has no UTC equivalent
    except InputError as exc:
        raise InputError(f"{where}: {exc}") from None
    return parsed


def _parse_date(value: object, *, where: str) -> datetime:
    if isinstance(value, datetime):
        return value
    if isinstance(value, bool):
        raise InputError(f"{where}: timestamp must be a date or a number, got {value!r}")
    if isinstance(value, int | float):
        if not math.isfinite(value):
            raise InputError(f"{where}: timestamp {value!r} is not a finite number")
        seconds = float(value) / 1000.0 if abs(value) > 1e11 else float(value)
        try:
            return datetime.fromtimestamp(seconds, UTC)
        except (OverflowError, OSError, ValueError) as exc:
            raise InputError(f"{where}: epoch timestamp {value!r} is out of range") from exc
    if not isinstance(value, str) or not value.strip():
        raise InputError(f"{where}: timestamp must be a non-empty string, got {value!r}")
    text = re.sub(r"\s+", " ", value.strip())
    if re.fullmatch(r"-?\d+(\.\d+)?", text):
        return _parse_date(float(text), where=where)
    try:
        return datetime.fromisoformat(text)
    except ValueError:
        pass
    written = _written_date(text)
    if written is not None:
        return written
    for fmt in _DATE_FORMATS:
        try:
            return datetime.strptime(text, fmt)
        except ValueError:
            continue
    raise InputError(
        f"{where}: cannot parse date {value!r} (expected ISO 8601 like 2023-05-08T13:56, "
        "epoch seconds, or e.g. '1:56 pm on 8 May, 2023')"
    )


def parse_role(value: object, *, where: str) -> Role:
    """Map a role name (``human``, ``ai``, ``assistant`` …) to a :data:`Role`.

    Raises:
        InputError: An unknown role.
    """
    if isinstance(value, str):
        role = _ROLE_ALIASES.get(value.strip().lower().removesuffix("messagechunk"))
        if role is not None:
            return role
    raise InputError(
        f"{where}: unknown role {value!r} (expected one of {sorted(set(_ROLE_ALIASES))}; "
        "put a person's name in 'speaker')"
    )


def role_for_speaker(speaker: str) -> Role:
    """Role implied by a speaker name: role words map to their role, anything else is user."""
    return _ROLE_ALIASES.get(speaker.strip().lower(), "user")
