"""Conversation files to messages: what ``ingest_file`` (either backend) and ``mnemon ingest``
read."""

from __future__ import annotations

import os
from pathlib import Path

from mnemon_langgraph.errors import InputError
from mnemon_langgraph.types import Message

__all__ = ["load_messages"]


def load_messages(
    path: str | os.PathLike[str], *, format: str = "auto"
) -> list[tuple[str, list[Message]]]:
    """Messages of a file as ``[(origin, messages)]`` (the ingest label of each part).

    Args:
        path: A LoCoMo JSON file (one conversation), a JSON list of message objects, a JSONL
            file or a transcript.
        format: ``auto`` (by extension and content), ``locomo``, ``jsonl`` or ``transcript``.

    Raises:
        InputError: Unknown format, malformed input, or a LoCoMo file with several
            conversations (their turn ids collide: ingest each into its own namespace).
    """
    from mnemon_langgraph import loaders

    p = Path(path)
    # A file name that is not valid UTF-8 (surrogate-escaped bytes) would be refused as a
    # source name; its bytes are kept readable as \\xNN escapes instead.
    name = os.fsencode(p.name).decode("utf-8", "backslashreplace")
    if format not in _FORMATS:
        raise InputError(f"unknown format {format!r}: use {', '.join(_FORMATS)}")
    fmt = loaders.detect_format(p) if format == "auto" else format
    if fmt == "locomo":
        conversations = loaders.load_locomo(p)
        if len(conversations) != 1:
            raise InputError(
                f"{p}: holds {len(conversations)} LoCoMo conversations; ingest each into its "
                "own namespace (their turn ids collide)"
            )
        conv = conversations[0]
        return [(conv.origin or name, list(conv.messages))]
    if fmt == "jsonl":
        return [(name, list(loaders.load_jsonl(p, origin=name)))]
    if fmt == "transcript":
        return [(name, list(loaders.load_transcript(p, origin=name)))]
    return [(name, list(loaders.load_any(p)))]


_FORMATS = ("auto", "locomo", "jsonl", "transcript")
