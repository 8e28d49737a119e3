"""Load LoCoMo conversations (Maharana et al., 2024) as messages.

Accepts one conversation — a dict with ``speaker_a``, ``speaker_b``, ``session_N`` and
``session_N_date_time`` keys (optionally with ``qa`` beside them), or a
``{"sample_id", "conversation": {...}, "qa": [...]}`` entry of the public
``locomo10.json`` release — or a list of either, as a parsed object or a JSON file.

Only the raw sessions become messages. The dataset's ``session_N_summary``,
``session_N_observation`` and ``events_session_N`` fields and the ``qa`` list are never
read into messages (they would leak the answers into memory); ``qa`` is kept on the
returned :class:`LocomoConversation` for evaluation only.

Each turn becomes a :class:`~mnemon_langgraph.types.Message` with ``id`` = its ``dia_id``,
``role`` = ``"user"`` (both speakers are people), ``session`` = N and ``timestamp`` = the
session's date. A shared image's ``blip_caption`` is kept as part of the turn's text:
``"… [shares a photo: a photo of a dog …]"``. Sessions with a date but no turns are skipped.
"""

from __future__ import annotations

import os
import re
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from mnemon_langgraph.errors import InputError
from mnemon_langgraph.loaders._common import loads_json, make_message, parse_date, read_text
from mnemon_langgraph.types import Message, check_session

__all__ = ["LocomoConversation", "is_locomo", "load_locomo", "turn_text"]

_SESSION_KEY = re.compile(r"session_(\d+)")


@dataclass(frozen=True)
class LocomoConversation:
    """One LoCoMo conversation, ready to ingest, with its questions kept apart.

    Attributes:
        id: ``sample_id``, else the file stem, else ``conversation-<index>``.
        speakers: ``(speaker_a, speaker_b)``.
        messages: Every turn of every non-empty session, in order.
        sessions: Session number → session date (``None`` when the file has none), for
            the sessions that have turns.
        qa: The dataset's question list, untouched (for evaluation only — never ingest it).
        origin: The ingest label to store on records (``"locomo:<id>"``); ``source`` is its
            deprecated old name (a read-only alias that warns, one release).
    """

    id: str
    speakers: tuple[str, str]
    messages: list[Message]
    sessions: dict[int, datetime | None] = field(default_factory=dict)
    qa: list[dict[str, Any]] = field(default_factory=list)
    origin: str = ""

    @property
    def source(self) -> str:
        """Deprecated: the ingest label's old name (:attr:`origin`), kept for one release."""
        warnings.warn(
            "LocomoConversation.source is deprecated: read LocomoConversation.origin",
            DeprecationWarning,
            stacklevel=2,
        )
        return self.origin


def turn_text(turn: Mapping[str, Any]) -> str:
    """A turn's text with its shared photo's caption appended, if any."""
    text = turn.get("text")
    text = text.strip() if isinstance(text, str) else ""
    caption = turn.get("blip_caption")
    if isinstance(caption, str) and caption.strip():
        photo = f"[shares a photo: {caption.strip()}]"
        text = f"{text} {photo}" if text else photo
    return text


def is_locomo(data: object) -> bool:
    """Whether parsed JSON looks like LoCoMo (one conversation, an entry, or a list)."""
    if isinstance(data, list):
        return bool(data) and all(is_locomo(x) for x in data if not isinstance(x, list))
    if not isinstance(data, Mapping):
        return False
    if isinstance(data.get("conversation"), Mapping):
        return True
    return "speaker_a" in data and any(_SESSION_KEY.fullmatch(k) for k in data)


def _session_keys(conv: Mapping[str, Any], *, where: str) -> dict[int, str]:
    """Session number → its key (``session_1`` or ``session_01``), validated.

    Raises:
        InputError: Two keys name the same session (``session_1`` and ``session_01``), or a
            number no index can hold (0, ≥ 2**31).
    """
    keys: dict[int, str] = {}
    for key in conv:
        match = _SESSION_KEY.fullmatch(key)
        if match is None:
            continue
        n = int(match.group(1))
        try:
            check_session(n, what=f"session number of {key!r}")
        except InputError as exc:
            raise InputError(f"{where}: {exc}") from None
        if n in keys:
            raise InputError(f"{where}: both {keys[n]!r} and {key!r} name session {n}")
        keys[n] = key
    return keys


def _conversation(entry: Mapping[str, Any], *, where: str, default_id: str) -> LocomoConversation:
    if isinstance(entry.get("conversation"), Mapping):
        conv: Mapping[str, Any] = entry["conversation"]
        qa = entry.get("qa", conv.get("qa", []))
    else:
        conv = entry
        qa = entry.get("qa", [])
    cid = str(entry.get("sample_id") or conv.get("sample_id") or default_id)
    where = f"{where} [{cid}]"
    speakers: list[str] = []
    for key in ("speaker_a", "speaker_b"):
        value = conv.get(key)
        if not isinstance(value, str) or not value.strip():
            raise InputError(f"{where}: missing or empty {key!r}")
        speakers.append(value.strip())
    if not isinstance(qa, list):
        raise InputError(f"{where}: 'qa' must be a list, got {type(qa).__name__}")
    keys = _session_keys(conv, where=where)
    source = f"locomo:{cid}"
    messages: list[Message] = []
    sessions: dict[int, datetime | None] = {}
    seen: set[str] = set()
    for n, key in sorted(keys.items()):
        turns = conv[key]
        if not isinstance(turns, list):
            raise InputError(f"{where}: {key} must be a list of turns")
        if not turns:
            continue
        raw_date = conv.get(f"{key}_date_time")
        date = None if raw_date is None else parse_date(raw_date, where=f"{where}: {key}_date_time")
        sessions[n] = date
        for i, turn in enumerate(turns):
            at = f"{where}: {key} turn {i}"
            if not isinstance(turn, Mapping):
                raise InputError(f"{at}: a turn must be an object, got {type(turn).__name__}")
            dia_id = turn.get("dia_id")
            if not isinstance(dia_id, str) or not dia_id.strip():
                raise InputError(f"{at}: missing 'dia_id'")
            at = f"{where}: {key} turn {dia_id}"
            if dia_id in seen:
                raise InputError(f"{at}: duplicate dia_id")
            seen.add(dia_id)
            speaker = turn.get("speaker")
            if not isinstance(speaker, str) or not speaker.strip():
                raise InputError(f"{at}: missing 'speaker'")
            if "text" in turn and not isinstance(turn["text"], str):
                raise InputError(f"{at}: 'text' must be a string")
            text = turn_text(turn)
            if not text:
                raise InputError(f"{at}: empty text")
            messages.append(
                make_message(
                    at,
                    text=text,
                    speaker=speaker.strip(),
                    role="user",
                    id=dia_id.strip(),
                    timestamp=date,
                    session=n,
                )
            )
    if not messages:
        raise InputError(f"{where}: no turns in any session")
    return LocomoConversation(
        id=cid,
        speakers=(speakers[0], speakers[1]),
        messages=messages,
        sessions=sessions,
        qa=list(qa),
        origin=source,
    )


def load_locomo(
    data: str | os.PathLike[str] | Mapping[str, Any] | Sequence[Mapping[str, Any]],
) -> list[LocomoConversation]:
    """Load LoCoMo conversations from a file or an already-parsed object.

    Everything is validated before anything is returned.

    Args:
        data: A path to a ``.json`` file, one conversation dict, or a list of them.

    Returns:
        One :class:`LocomoConversation` per conversation, in input order.

    Raises:
        InputError: Invalid UTF-8 or JSON, a missing field, an empty turn, an unparsable
            session date, a duplicate ``dia_id`` (the message names file, session, turn).
    """
    stem = "conversation"
    where = "locomo data"
    parsed: object = data
    if isinstance(data, str | os.PathLike):
        path = Path(data)
        where = str(path)
        stem = os.fsencode(path.stem).decode("utf-8", "backslashreplace")  # valid text
        parsed = loads_json(read_text(path), where=str(path))
    if isinstance(parsed, Mapping):
        return [_conversation(parsed, where=where, default_id=stem)]
    if isinstance(parsed, list):
        if not parsed:
            raise InputError(f"{where}: empty list, no conversations")
        out = []
        for i, entry in enumerate(parsed):
            if not isinstance(entry, Mapping):
                raise InputError(f"{where}: entry {i} is not an object")
            default = stem if len(parsed) == 1 else f"{stem}-{i}"
            out.append(_conversation(entry, where=f"{where} entry {i}", default_id=default))
        ids = [c.id for c in out]
        if len(set(ids)) != len(ids):
            raise InputError(f"{where}: duplicate conversation ids {ids}")
        return out
    raise InputError(f"{where}: expected a conversation object or a list of them")
