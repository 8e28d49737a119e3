"""Standing instructions found at read time: the user's "always … when I ask about …".

A standing instruction ("Always format code snippets with syntax highlighting when I ask
about implementation details") applies to a later request that shares few words with it
("How do I implement a login feature?"): searched by the request, it is rarely pooled, and
pooled, System 1 judges it against what the reply needs, not against how the reply should
be written. Consolidation turns such turns into the index's standing instructions, but it
needs a chat model and runs in batches. With ``ReadSettings.instruction_records`` set, the
read path itself looks for them each turn:

* one more search, worded as such an instruction about the latest message
  (:func:`instruction_query`), returns :data:`INSTRUCTION_DEPTH` records;
* a line of those records is a standing instruction when its message is the user's and it
  opens as one (:func:`standing_lines`: *always*, *never*, *whenever*, *from now on* …);
* those records join the pool outside the fused ranking (the other searches' pool is the
  same with and without them), and the View leads with their instruction lines, at most
  ``instruction_records`` of them, right after the index.

Nothing is decided when a record is written: the pattern reads raw records at read time,
and a record whose text merely contains "always" is not an instruction.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from mnemon_langgraph.types import Record

__all__ = ["INSTRUCTION_DEPTH", "STANDING", "instruction_query", "standing_lines"]

INSTRUCTION_DEPTH = 10
"""Records the instruction search returns: the instructions nearest the request."""

STANDING = re.compile(
    r"^(?:(?:please|so|and|also|ok(?:ay)?)[,\s]+)?"
    r"(?:i\s+(?:want|need|would\s+like|'d\s+like|’d\s+like)\s+you\s+to\s+)?"
    r"(?:always|never|whenever|from\s+now\s+on|every\s+time|each\s+time|going\s+forward|"
    r"in\s+(?:the\s+)?future|make\s+sure\s+(?:to|you)|remember\s+to|do\s+not\s+ever|"
    r"don'?t\s+ever|don’t\s+ever)\b",
    re.IGNORECASE,
)
"""How a standing instruction opens (English; the message's text after ``speaker:``)."""


def instruction_query(text: str) -> str:
    """The instruction search's query: the message worded as a standing instruction about
    it, so that the dense and BM25 rankings both favour instructions on its topic."""
    return f"Always do this when I ask about: {text}"


def standing_lines(record: Record) -> list[int]:
    """Indices of the record's lines that are standing instructions of the user.

    A line counts when its message's role is ``user`` (lines of unknown role never count)
    and its text after the ``speaker:`` prefix opens as an instruction (:data:`STANDING`).
    """
    lines = record.text.split("\n")
    roles: Sequence[str] = record.roles
    if len(roles) != len(lines):
        return []
    out = []
    for i, (line, role) in enumerate(zip(lines, roles, strict=True)):
        body = line.split(": ", 1)[1] if ": " in line else line
        if role == "user" and STANDING.match(body.strip()):
            out.append(i)
    return out
