"""Standing instructions found at read time: the user's "always … when I ask about …".

A standing instruction ("Always format code snippets with syntax highlighting when I ask
about implementation details") applies to a later request that shares few words with it
("How do I implement a login feature?"): searched by the request, it is rarely pooled, and
pooled, System 1 judges it against what the reply needs, not against how the reply should
be written. Consolidation turns such turns into the index's standing instructions, but it
needs a chat model and runs in batches. With ``ReadSettings.instruction_records`` set, the
read path itself looks for them each turn:

* one more search, worded as such an instruction about the latest message
  (:func:`instruction_query`), returns ``ReadSettings.instruction_depth`` records;
* a line of those records is a standing instruction when its message is the user's and it
  opens as one (:func:`standing_lines`: *always*, *never*, *whenever*, *from now on* …);
* those records join the pool outside the fused ranking (the other searches' pool is the
  same with and without them), and the View leads with their instruction lines, at most
  ``instruction_records`` of them, right after the index;
* with ``ReadSettings.instruction_match`` (the default), the instructions are ordered for
  that lead by how near each one's own line is to the latest message
  (:func:`line_similarities`, the source's embedder), not by the search's rank of the
  whole record: in a long history many standing instructions share the search's words
  ("always", "when I ask about") and a record's other lines, and the one whose condition
  matches the request ("… when I ask about draft revisions" for "how should I edit my
  draft?") can rank below them; a record whose lines are all farther from the message
  than ``ReadSettings.instruction_floor`` is dropped from the lane (in a conversation
  between people, "Always good to hear!" opens like an instruction and is about nothing
  asked).

Nothing is decided when a record is written: the pattern reads raw records at read time,
and a record whose text merely contains "always" is not an instruction.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from mnemon_langgraph.types import Record

__all__ = [
    "INSTRUCTION_DEPTH",
    "STANDING",
    "instruction_query",
    "line_similarities",
    "standing_lines",
    "standing_texts",
]

INSTRUCTION_DEPTH = 10
"""The instruction search's depth before ``ReadSettings.instruction_depth`` (its old fixed
value, kept for reproducing earlier figures)."""

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


def standing_texts(record: Record) -> list[str]:
    """The text of the record's standing-instruction lines (:func:`standing_lines`), each
    without its ``speaker:`` prefix."""
    lines = record.text.split("\n")
    return [
        (lines[i].split(": ", 1)[1] if ": " in lines[i] else lines[i]).strip()
        for i in standing_lines(record)
    ]


def line_similarities(
    message: str, lines: Mapping[str, Sequence[str]], embed: Callable[[str], Any]
) -> dict[str, float]:
    """Record id → the highest cosine of its standing lines with ``message``.

    ``embed`` is a source's query embedder (``VectorSource.query_vector``: a unit vector,
    any shape of 1 × d). Records without lines are left out. An embedder error propagates
    (the caller keeps the search's order then).
    """
    todo = {rid: list(texts) for rid, texts in lines.items() if texts}
    if not todo:
        return {}
    query = _unit(embed(message))
    return {
        rid: max(float(_unit(embed(text)) @ query) for text in texts) for rid, texts in todo.items()
    }


def _unit(vector: Any) -> np.ndarray:
    """A flat unit vector (a zero vector stays zero)."""
    flat = np.asarray(vector, dtype=np.float64).ravel()
    norm = float(np.linalg.norm(flat))
    return flat / norm if norm > 0 else flat
