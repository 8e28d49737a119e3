"""Loaders that turn conversations into :class:`~mnemon_langgraph.types.Message` lists.

Every loader validates its whole input before returning, so a bad line never leaves half a
file in the journal; errors are :class:`~mnemon_langgraph.errors.InputError` naming the
file, the line or turn, and the problem. Files are read as strict UTF-8.

* :func:`load_locomo` — LoCoMo conversations (raw sessions only; ``qa`` kept apart).
* :func:`load_jsonl` — one JSON message object per line.
* :func:`load_transcript` — ``Speaker: text`` lines with optional session headers.
* :func:`messages_from_langchain` — LangChain ``BaseMessage`` lists.
* :func:`load_any` — picks one of the file loaders by extension and content.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from mnemon_langgraph.errors import InputError
from mnemon_langgraph.loaders._common import loads_json, parse_date, read_text, split_lines
from mnemon_langgraph.loaders.jsonl import load_jsonl, message_from_dict
from mnemon_langgraph.loaders.locomo import LocomoConversation, is_locomo, load_locomo
from mnemon_langgraph.loaders.messages import messages_from_langchain
from mnemon_langgraph.loaders.transcript import load_transcript, parse_transcript
from mnemon_langgraph.types import Message

#: The bundled sample conversation (JSONL) that ``mnemon demo`` and ``bench ingest`` use.
SAMPLE_PATH = Path(__file__).resolve().parent.parent / "data" / "sample_conversation.jsonl"

__all__ = [
    "SAMPLE_PATH",
    "LocomoConversation",
    "detect_format",
    "load_any",
    "load_jsonl",
    "load_locomo",
    "load_transcript",
    "messages_from_langchain",
    "parse_date",
    "parse_transcript",
    "read_text",
]

_JSONL_EXT = {".jsonl", ".ndjson"}
_TEXT_EXT = {".txt", ".md", ".transcript", ".log"}


def _looks_like_jsonl(text: str) -> bool:
    lines = [line for line in split_lines(text) if line.strip()]
    if len(lines) < 2 or not lines[0].lstrip().startswith("{"):
        return False
    try:
        json.loads(lines[0])
    except (json.JSONDecodeError, RecursionError):
        return False
    return True


def detect_format(path: str | os.PathLike[str], text: str | None = None) -> str:
    """``"locomo"``, ``"json"`` (a JSON list of message objects), ``"jsonl"`` or ``"transcript"``.

    By extension first (``.jsonl``/``.ndjson``, ``.txt``/``.md``), then by content.
    """
    p = Path(path)
    ext = p.suffix.lower()
    if ext in _JSONL_EXT:
        return "jsonl"
    if ext in _TEXT_EXT:
        return "transcript"
    text = read_text(p) if text is None else text
    stripped = text.lstrip()
    if ext == ".json" or stripped[:1] in ("[", "{"):
        try:
            data = json.loads(text)
        except RecursionError:
            raise InputError(f"{p}: JSON nested too deeply to read") from None
        except json.JSONDecodeError as exc:
            if _looks_like_jsonl(text):
                return "jsonl"
            if ext == ".json":
                raise InputError(f"{p}: line {exc.lineno}: invalid JSON: {exc.msg}") from exc
            return "transcript"
        if is_locomo(data):
            return "locomo"
        if isinstance(data, list):
            return "json"
        if isinstance(data, dict) and len(split_lines(text.strip())) == 1:
            return "jsonl"  # a one-line JSONL file
        raise InputError(
            f"{p}: JSON holds neither a LoCoMo conversation nor a list of message objects"
        )
    return "transcript"


def load_any(path: str | os.PathLike[str]) -> list[Message]:
    """Load messages from a file, picking the loader by extension and content.

    LoCoMo files must hold a single conversation here (use :func:`load_locomo` to put
    each conversation of the release file into its own namespace).

    Raises:
        InputError: Unreadable or malformed input, or a multi-conversation LoCoMo file.
    """
    p = Path(path)
    text = read_text(p)
    kind = detect_format(p, text)
    if kind == "jsonl":
        return load_jsonl(p)
    if kind == "transcript":
        return load_transcript(p)
    data = loads_json(text, where=str(p))
    if kind == "locomo":
        conversations = load_locomo(p)
        if len(conversations) != 1:
            raise InputError(
                f"{p}: holds {len(conversations)} LoCoMo conversations; use load_locomo() "
                "and ingest each into its own namespace"
            )
        return conversations[0].messages
    messages: list[Message] = []
    seen: set[str] = set()
    assert isinstance(data, list)  # detect_format said "json": a list of message objects
    for i, obj in enumerate(data):
        msg = message_from_dict(obj, where=f"{p}: item {i}", source=p.name, index=i)
        assert msg.id is not None
        if msg.id in seen:
            raise InputError(f"{p}: item {i}: duplicate id {msg.id!r}")
        seen.add(msg.id)
        messages.append(msg)
    if not messages:
        raise InputError(f"{p}: no messages")
    return messages
