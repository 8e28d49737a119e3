"""Loader for BEAM ("Beyond a Million Tokens") conversations: ``chat.json`` → messages.

BEAM ships each conversation as ``chats/<tier>/<n>/chat.json`` beside
``probing_questions/probing_questions.json`` (:func:`load_beam_conversation`,
:func:`find_beam_conversations`). The chat loader accepts the release's shape (checked
against the 100K tier's files) and a few variants:

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
message's timestamp. In the release the batch's own anchor is null and the batch's first
message carries it: a message's ``time_anchor`` dates that message and the batch's later
ones. The generator's trailing plan index on user turns (``"… ->-> 1,1"``) is removed.
Dates are parsed from ISO 8601 and the common spelled-out forms (``"March-15-2024"``,
``"March 15, 2024"``, ``"15 March 2024"``, ``"2024/03/15"``); an unparseable anchor leaves
the timestamp ``None``. Turns with empty content are skipped. Message ids are the turn's
``id`` when present, else ``"b<batch>:t<index>"``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from mnemon_langgraph.errors import InputError
from mnemon_langgraph.types import MAX_MESSAGE_CHARS, Message, Role

__all__ = [
    "ABILITIES",
    "BeamConversation",
    "BeamQuestion",
    "clean_text",
    "concatenate_conversations",
    "find_beam_conversations",
    "load_beam_chat",
    "load_beam_conversation",
    "load_beam_questions",
    "messages_from_beam",
    "parse_concat_spec",
    "parse_time_anchor",
]

# The generator's plan index the release leaves at the end of user turns ("… ->-> 1,1"):
# scaffolding of how the conversation was made, not something the user said.
_PLAN_MARKER = re.compile(r"\s*->->\s*\d+(?:\s*,\s*\d+)*\s*$")
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


_SPACE_RUN = re.compile(r"[ \t\f\v]{2,}")
_BLANK_LINES = re.compile(r"\n\s*\n(?:\s*\n)+")
_REPEATED_LINE = re.compile(r"(^[^\n]{1,80}\n)\1{3,}", re.MULTILINE)
_TRUNCATED = "\n[… the rest of this message was cut: over the message size limit]"


def clean_text(content: str) -> str:
    """A turn's text as stored: plan marker removed, degenerate runs collapsed, bounded.

    A few release turns are degenerate generations (an answer far over the message limit
    that is mostly spaces, thousands of repeats of one short line). Runs of spaces and blank
    lines are collapsed, a short line repeated more than three times in a row is kept three
    times, and what is still over :data:`~mnemon_langgraph.types.MAX_MESSAGE_CHARS` is cut
    with a marker.
    """
    text = _PLAN_MARKER.sub("", content)
    text = _SPACE_RUN.sub(" ", text)
    text = _BLANK_LINES.sub("\n\n", text)
    text = _REPEATED_LINE.sub(lambda m: m.group(1) * 3, text).strip()
    if len(text) > MAX_MESSAGE_CHARS:
        text = text[: MAX_MESSAGE_CHARS - len(_TRUNCATED)] + _TRUNCATED
    return text


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
            # the release dates a batch by its first message's anchor (the batch's own is
            # null): an anchor holds for its message and the batch's later ones
            batch_date = parse_time_anchor(turn.get("time_anchor")) or batch_date
            content = turn.get("content", turn.get("text"))
            if not isinstance(content, str) or not content.strip():
                continue
            raw_role = str(turn.get("role", "user")).lower()
            role: Role = raw_role if raw_role in ("user", "assistant", "system") else "user"  # type: ignore[assignment]
            turn_date = batch_date
            turn_id = turn.get("id")
            messages.append(
                Message(
                    text=clean_text(content),
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


ABILITIES: tuple[str, ...] = (
    "abstention",
    "contradiction_resolution",
    "event_ordering",
    "information_extraction",
    "instruction_following",
    "knowledge_update",
    "multi_session_reasoning",
    "preference_following",
    "summarization",
    "temporal_reasoning",
)
"""BEAM's probing abilities (keys of ``probing_questions.json``)."""

_ANSWER_KEYS = ("answer", "ideal_answer", "ideal_response", "ideal_summary", "expected_compliance")


@dataclass(frozen=True)
class BeamQuestion:
    """One probing question; its evidence ids are for scoring only.

    Attributes:
        ability: The ability it probes (its key in ``probing_questions.json``).
        index: Its position under that key.
        question: The question text.
        answer: The reference answer (``answer``, ``ideal_answer``, ``ideal_response``,
            ``ideal_summary`` or ``expected_compliance``, the first present).
        evidence: Message ids of ``source_chat_ids``: a list as is; for a dict, the
            ``updated_info`` ids of a knowledge-update question (the statement that must
            win), else every listed id.
        origin: The conversation the question was written for (``<tier>/<n>``); in a
            concatenated conversation, the part it came from.
    """

    ability: str
    index: int
    question: str
    answer: str
    evidence: list[str]
    origin: str = ""


@dataclass(frozen=True)
class BeamConversation:
    """One BEAM conversation: its messages (for memory) and its questions (kept apart)."""

    id: str
    tier: str
    messages: list[Message]
    questions: list[BeamQuestion] = field(default_factory=list)


def _flat_ids(value: object) -> Iterator[object]:
    """Items of ``value`` with nested lists opened (a release list nests one, e.g.
    ``[134, [136, 138]]``)."""
    if isinstance(value, list):
        for item in value:
            yield from _flat_ids(item)
    else:
        yield value


def _evidence_ids(ability: str, value: object, where: str) -> list[str]:
    if value is None:
        return []
    if isinstance(value, dict):
        if ability == "knowledge_update" and "updated_info" in value:
            value = value["updated_info"]
        else:
            value = [part for part in value.values() if part]
    if not isinstance(value, list):
        raise InputError(f"{where}: source_chat_ids must be a list or dict, got {value!r:.80}")
    ids = list(_flat_ids(value))
    for x in ids:
        if not (
            (isinstance(x, int) and not isinstance(x, bool)) or (isinstance(x, str) and x.isdigit())
        ):
            raise InputError(f"{where}: source_chat_ids must hold message ids, got {x!r:.80}")
    return list(dict.fromkeys(str(int(x)) for x in ids))  # type: ignore[call-overload]


def load_beam_questions(path: str | Path) -> list[BeamQuestion]:
    """Load ``probing_questions.json`` (a dict ability → list of questions).

    Raises:
        InputError: A missing file, bad JSON, or an unexpected shape.
    """
    file = Path(path)
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except OSError as exc:
        raise InputError(f"cannot read BEAM questions {file}: {exc}") from exc
    except json.JSONDecodeError as exc:
        raise InputError(f"BEAM questions file {file} is not JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise InputError(f"{file}: expected a dict of ability → questions")
    out: list[BeamQuestion] = []
    for ability, items in data.items():
        if not isinstance(items, list):
            raise InputError(f"{file}: {ability!r} must hold a list of questions")
        for i, q in enumerate(items):
            where = f"{file}: {ability}[{i}]"
            if not isinstance(q, dict) or not isinstance(q.get("question"), str):
                raise InputError(f"{where}: a question must be an object with 'question'")
            answer = next((q[k] for k in _ANSWER_KEYS if q.get(k) is not None), "")
            evidence = _evidence_ids(ability, q.get("source_chat_ids"), where)
            out.append(BeamQuestion(str(ability), i, q["question"], str(answer), evidence))
    return out


def find_beam_conversations(root: str | Path) -> list[tuple[str, Path]]:
    """``(tier, folder)`` of every conversation under ``root``, by tier then number.

    A conversation is a folder holding ``chat.json`` and
    ``probing_questions/probing_questions.json`` (the release's ``chats/<tier>/<n>/``;
    ``root`` may be the release folder, ``chats``, one tier or one conversation). Its tier
    is the name of the folder above it.

    Raises:
        InputError: If ``root`` holds no conversation.
    """
    base = Path(root)
    if not base.is_dir():
        raise InputError(f"BEAM folder not found: {base}")
    found = [
        chat.parent
        for chat in base.rglob("chat.json")
        if (chat.parent / "probing_questions" / "probing_questions.json").is_file()
    ]
    if not found:
        raise InputError(f"{base}: no <tier>/<n>/chat.json with probing_questions found")

    def order(folder: Path) -> tuple[str, int, str]:
        name = folder.name
        return (folder.parent.name, int(name) if name.isdigit() else 0, name)

    return [(folder.parent.name, folder) for folder in sorted(found, key=order)]


def load_beam_conversation(folder: str | Path, tier: str | None = None) -> BeamConversation:
    """A conversation folder's messages and probing questions.

    Raises:
        InputError: Bad input, or evidence naming no message of the conversation.
    """
    path = Path(folder)
    tier = tier or path.parent.name
    messages = load_beam_chat(path)
    questions = load_beam_questions(path / "probing_questions" / "probing_questions.json")
    conv_id = f"{tier}/{path.name}"
    return BeamConversation(
        conv_id, tier, messages, [replace(q, origin=conv_id) for q in questions]
    )


# -- longer conversations built from shorter ones -------------------------------------------


def parse_concat_spec(text: str) -> tuple[str, list[str]]:
    """``"LABEL=TIER/N,TIER/N,..."`` → ``(LABEL, [TIER/N, ...])`` (a ``--concat`` value).

    ``TIER/A-B`` stands for ``TIER/A`` … ``TIER/B``. A part may not repeat (its message ids
    would collide and its questions be asked twice).

    Raises:
        InputError: A missing label, no parts, a bad range or a repeated part.
    """
    label, sep, rest = text.partition("=")
    label = label.strip()
    if not sep or not label or "/" in label:
        raise InputError(
            f"--concat needs LABEL=TIER/N,TIER/N,... (a label without '/'), got {text!r}"
        )
    parts: list[str] = []
    for item in (x.strip() for x in rest.split(",")):
        tier, slash, n = item.partition("/")
        if not item or not slash or not tier or not n:
            raise InputError(f"--concat {label}: {item!r} is not TIER/N")
        lo, dash, hi = n.partition("-")
        if dash and lo.isdigit() and hi.isdigit() and int(lo) <= int(hi):
            parts += [f"{tier}/{i}" for i in range(int(lo), int(hi) + 1)]
        elif dash:
            raise InputError(f"--concat {label}: {item!r} is not a range TIER/A-B with A <= B")
        else:
            parts.append(item)
    repeated = sorted({p for p in parts if parts.count(p) > 1})
    if repeated:
        raise InputError(f"--concat {label}: {repeated} named twice")
    if len(parts) < 2:
        raise InputError(f"--concat {label}: name at least two conversations")
    return label, parts


def _date_shift(messages: Sequence[Message], after: datetime | None, gap: timedelta) -> timedelta:
    """Whole days that move a part's first date to ``gap`` after ``after`` (the dates
    before it), or none when either side is undated."""
    stamps = [m.timestamp for m in messages if m.timestamp is not None]
    if after is None or not stamps:
        return timedelta(0)
    return timedelta(days=(after.date() - min(stamps).date()).days) + gap


def _new_id(old: str | None, offset: int, part: int) -> str | None:
    """A part's message id in the concatenation: a release id (an integer) shifted by
    ``offset``; any other id prefixed with the part's number."""
    if old is None:
        return None
    return str(int(old) + offset) if old.isdigit() else f"{part}:{old}"


def concatenate_conversations(
    parts: Sequence[BeamConversation], tier: str, *, gap: timedelta = timedelta(days=1)
) -> BeamConversation:
    """One long conversation from several: the history of each part in turn.

    The rule, applied part after part (in the order given):

    * **sessions** (batches) are renumbered in order: a part's session ``s`` becomes
      ``s`` plus the number of sessions before it;
    * **dates** keep each part's own relative dates: the whole part is moved by a whole
      number of days so that its first date falls ``gap`` (one day) after the last date of
      the parts before it; dates therefore never decrease where each part's do not;
    * **message ids** are renumbered: a part's integer id ``i`` becomes ``i`` plus one more
      than the largest integer id before it (any other id gets a ``"<part>:"`` prefix);
    * **questions**: every part's probing questions, their evidence ids mapped the same
      way (so they name that part's messages) and ``origin`` naming the part; they are
      asked of the whole history.

    The result's id is ``<tier>/<part ids joined by '+'>`` (``/`` in a part id becomes ``-``).

    Raises:
        InputError: Fewer than two parts, or an evidence id naming no message of its part.
    """
    if len(parts) < 2:
        raise InputError("a concatenation needs at least two conversations")
    messages: list[Message] = []
    questions: list[BeamQuestion] = []
    offset = session_offset = 0
    last: datetime | None = None
    for k, conv in enumerate(parts, start=1):
        shift = _date_shift(conv.messages, last, gap)
        ids = {m.id: _new_id(m.id, offset, k) for m in conv.messages}
        messages += [_moved(m, ids[m.id], shift, session_offset) for m in conv.messages]
        questions += [_remapped(q, ids, conv.id) for q in conv.questions]
        stamps = [m.timestamp for m in messages if m.timestamp is not None]
        last = max(stamps) if stamps else last
        numeric = [int(i) for i in ids if i is not None and i.isdigit()]
        offset += max(numeric) + 1 if numeric else 0
        session_offset = max((m.session or 0 for m in messages), default=session_offset)
    name = "+".join(c.id.replace("/", "-") for c in parts)
    return BeamConversation(f"{tier}/{name}", tier, messages, questions)


def _moved(m: Message, new_id: str | None, shift: timedelta, sessions: int) -> Message:
    return replace(
        m,
        id=new_id,
        timestamp=m.timestamp + shift if m.timestamp is not None else None,
        session=m.session + sessions if m.session is not None else None,
    )


def _remapped(q: BeamQuestion, ids: Mapping[str | None, str | None], origin: str) -> BeamQuestion:
    unknown = [e for e in q.evidence if e not in ids]
    if unknown:
        raise InputError(
            f"{origin}: {q.ability}[{q.index}] names messages {unknown[:5]} it does not have"
        )
    return replace(q, evidence=[str(ids[e]) for e in q.evidence], origin=q.origin or origin)
