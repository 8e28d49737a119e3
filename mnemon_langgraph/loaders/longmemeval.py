"""Load LongMemEval questions (Wu et al., ICLR 2025) with their own chat histories.

Reads the release format as it is: one JSON list of questions (``longmemeval_s_cleaned.json``,
the ``_m`` variant, or any subset in the same shape). One question holds ``question_id``
(``…_abs`` for an abstention question), ``question_type``, ``question``, ``answer``,
``question_date`` (``"2023/05/30 (Tue) 23:40"``) and its history: ``haystack_session_ids``,
``haystack_dates`` (one per session) and ``haystack_sessions`` (lists of ``{role, content}``
turns; evidence turns carry ``has_answer: true``), plus ``answer_session_ids``.

The file is read one question at a time (:func:`iter_longmemeval`), so the ``_m`` variant
(gigabytes) never has to fit in memory as one parsed object. Each question becomes a
:class:`LongMemEvalQuestion`: its turns as :class:`~mnemon_langgraph.types.Message` (``id`` =
``<session id>_<turn number from 1>``, LongMemEval's own corpus ids; ``timestamp`` = the
session's date; sessions numbered 1.. in date order, because the release lists a history's
sessions in no particular order), and the labels kept apart: ``has_answer`` turns and
``answer_session_ids`` are for scoring only and never reach a message. A turn with empty
``content`` is skipped and counted (:attr:`LongMemEvalQuestion.empty_turns`).

A session id listed twice in one history with the same turns (the public LongMemEval-S
release has 13 such questions, each repeating a filler session at a second date) is a session
told twice: both tellings are kept, each at its own date, and counted
(:attr:`LongMemEvalQuestion.repeated_sessions`). The repeat's turn ids carry ``@2`` (``@3``,
…): ``<session id>_<turn>@2``, so ids stay unique and :func:`session_of` still names the
session; :func:`first_telling` maps a repeat back to the turn's id. Gold turns are the first
telling's. The same id with *different* turns is refused (the file contradicts itself).
"""

from __future__ import annotations

import codecs
import json
import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from mnemon_langgraph.errors import InputError
from mnemon_langgraph.loaders._common import make_message, parse_date, parse_role
from mnemon_langgraph.types import Message

__all__ = [
    "QUESTION_TYPES",
    "LongMemEvalQuestion",
    "first_telling",
    "iter_longmemeval",
    "load_longmemeval",
    "parse_question",
]

QUESTION_TYPES: tuple[str, ...] = (
    "single-session-user",
    "single-session-assistant",
    "single-session-preference",
    "multi-session",
    "temporal-reasoning",
    "knowledge-update",
)
"""LongMemEval's question types (an abstention question keeps its type; its id ends ``_abs``)."""

_CHUNK = 1 << 22  # characters read at a time while streaming the list
_REQUIRED = ("question_id", "question_type", "question", "answer", "question_date")


@dataclass(frozen=True)
class LongMemEvalQuestion:
    """One LongMemEval question with its own history, labels kept apart from the messages.

    Attributes:
        question_id: The release's id (ends ``_abs`` for abstention questions).
        question_type: One of :data:`QUESTION_TYPES`.
        question: The question text.
        answer: The gold answer (or, for abstention, the explanation), as text.
        question_date: When the question is asked.
        messages: The history's non-empty turns, sessions in date order.
        session_dates: Session id → date, for the sessions of the history.
        gold_turns: Message ids of the ``has_answer`` turns (scoring only).
        answer_sessions: ``answer_session_ids`` found in the history (scoring only).
        unresolved_sessions: ``answer_session_ids`` that name no session of the history.
        empty_turns: Turns skipped because their ``content`` is empty.
        empty_gold_turns: Of those, turns marked ``has_answer``.
        repeated_sessions: Sessions told again (a session id listed a second time with the
            same turns), kept as further sessions.
    """

    question_id: str
    question_type: str
    question: str
    answer: str
    question_date: datetime
    messages: list[Message]
    session_dates: dict[str, datetime | None] = field(default_factory=dict)
    gold_turns: list[str] = field(default_factory=list)
    answer_sessions: list[str] = field(default_factory=list)
    unresolved_sessions: list[str] = field(default_factory=list)
    empty_turns: int = 0
    empty_gold_turns: int = 0
    repeated_sessions: int = 0

    @property
    def is_abstention(self) -> bool:
        """Whether this is an abstention question (no answer in the history)."""
        return self.question_id.endswith("_abs")


def session_of(message_id: str) -> str:
    """The session id of a message id ``<session id>_<turn number>`` (``@2`` and so on: a
    repeated telling, see :func:`first_telling`)."""
    return message_id.rsplit("_", 1)[0]


def first_telling(message_id: str) -> str:
    """The id of a turn in its session's first telling: ``s_3@2`` → ``s_3``."""
    base, sep, telling = message_id.rpartition("@")
    return base if sep and telling.isdigit() else message_id


def _tellings(
    ids: Sequence[str], sessions: Sequence[object], order: Sequence[int], where: str
) -> list[int]:
    """Which telling of its session each listed session is: 1, then 2, … for a repeat,
    counted in ``order`` (date order: the earliest date is the first telling).

    Raises:
        InputError: A session id is listed again with different turns.
    """
    first: dict[str, int] = {}
    told: dict[str, int] = {}
    out: list[int] = [1] * len(ids)
    for i in order:
        sid = ids[i]
        if sid in first and sessions[first[sid]] != sessions[i]:
            raise InputError(
                f"{where}: session id {sid!r} appears twice in haystack_session_ids with "
                "different turns"
            )
        first.setdefault(sid, i)
        told[sid] = told.get(sid, 0) + 1
        out[i] = told[sid]
    return out


def _str_list(value: object, key: str, where: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(x, str) for x in value):
        raise InputError(f"{where}: {key!r} must be a list of strings")
    return list(value)


def _turns(
    session: object, sid: str, number: int, date: datetime | None, where: str, telling: int = 1
) -> tuple[list[Message], list[str], int, int]:
    """One session's messages, its gold turn ids (first telling only), and its empty (and
    empty gold) turns."""
    at = f"{where}: session {sid!r}"
    if not isinstance(session, list):
        raise InputError(f"{at}: a session must be a list of turns")
    messages: list[Message] = []
    gold: list[str] = []
    empty = empty_gold = 0
    for i, turn in enumerate(session):
        if not isinstance(turn, Mapping):
            raise InputError(f"{at} turn {i + 1}: a turn must be an object")
        content = turn.get("content")
        if content is None:
            content = ""
        if not isinstance(content, str):
            raise InputError(f"{at} turn {i + 1}: 'content' must be a string")
        role = parse_role(turn.get("role"), where=f"{at} turn {i + 1}")
        has_answer = turn.get("has_answer") is True
        if not content.strip():
            empty += 1
            empty_gold += has_answer
            continue
        mid = f"{sid}_{i + 1}" + (f"@{telling}" if telling > 1 else "")
        messages.append(
            make_message(
                f"{at} turn {i + 1}",
                text=content,
                speaker=role,
                role=role,
                id=mid,
                timestamp=date,
                session=number,
            )
        )
        if has_answer and telling == 1:
            gold.append(mid)
    return messages, gold, empty, empty_gold


def parse_question(raw: object, *, where: str = "question") -> LongMemEvalQuestion:
    """Validate one question of the release and build its :class:`LongMemEvalQuestion`.

    Raises:
        InputError: A field is missing or malformed (the message names the question and
            the session or turn).
    """
    if not isinstance(raw, Mapping):
        raise InputError(f"{where}: a question must be an object, got {type(raw).__name__}")
    missing = [k for k in _REQUIRED if k not in raw]
    if missing:
        raise InputError(f"{where}: missing {', '.join(repr(k) for k in missing)}")
    qid = str(raw["question_id"])
    where = f"{where} [{qid}]"
    qtype = raw["question_type"]
    if qtype not in QUESTION_TYPES:
        raise InputError(f"{where}: unknown question_type {qtype!r}")
    if not isinstance(raw["question"], str) or not raw["question"].strip():
        raise InputError(f"{where}: 'question' must be a non-empty string")
    ids = _str_list(raw.get("haystack_session_ids"), "haystack_session_ids", where)
    dates = _str_list(raw.get("haystack_dates"), "haystack_dates", where)
    sessions = raw.get("haystack_sessions")
    if not isinstance(sessions, list) or not len(ids) == len(dates) == len(sessions):
        raise InputError(
            f"{where}: haystack_session_ids, haystack_dates and haystack_sessions must be "
            "lists of the same length"
        )
    parsed = [
        parse_date(d, where=f"{where}: date of session {s!r}")
        for s, d in zip(ids, dates, strict=True)
    ]
    order = sorted(range(len(ids)), key=lambda i: parsed[i])  # stable: ties keep file order
    tellings = _tellings(ids, sessions, order, where)
    messages: list[Message] = []
    gold: list[str] = []
    empty = empty_gold = 0
    for number, i in enumerate(order, start=1):
        msgs, g, e, eg = _turns(sessions[i], ids[i], number, parsed[i], where, tellings[i])
        messages += msgs
        gold += g
        empty += e
        empty_gold += eg
    answer_ids = _str_list(raw.get("answer_session_ids", []), "answer_session_ids", where)
    known = set(ids)
    return LongMemEvalQuestion(
        question_id=qid,
        question_type=str(qtype),
        question=raw["question"],
        answer=str(raw["answer"]),
        question_date=parse_date(raw["question_date"], where=f"{where}: question_date"),
        messages=messages,
        session_dates={s: d for s, d, t in zip(ids, parsed, tellings, strict=True) if t == 1},
        gold_turns=gold,
        answer_sessions=[s for s in answer_ids if s in known],
        unresolved_sessions=[s for s in answer_ids if s not in known],
        empty_turns=empty,
        empty_gold_turns=empty_gold,
        repeated_sessions=sum(1 for t in tellings if t > 1),
    )


def _read_more(fh: Any, decoder: Any, path: Path) -> str:
    try:
        data = fh.read(_CHUNK)
        return str(decoder.decode(data, final=not data))
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: invalid UTF-8 ({exc.reason})") from exc
    except OSError as exc:
        raise InputError(f"{path}: cannot read file: {exc.strerror or exc}") from exc


def iter_longmemeval(path: str | os.PathLike[str]) -> Iterator[tuple[int, dict[str, Any]]]:
    """``(index, raw question)`` for each element of the file's top-level JSON list, streamed.

    Raises:
        InputError: The file cannot be read, is not UTF-8, or is not a JSON list of objects.
    """
    p = Path(path)
    try:
        fh = p.open("rb")
    except OSError as exc:
        raise InputError(f"{p}: cannot read file: {exc.strerror or exc}") from exc
    decoder = codecs.getincrementaldecoder("utf-8-sig")()
    json_decoder = json.JSONDecoder()
    with fh:
        buf, pos, eof, index, started, need_comma = "", 0, False, 0, False, False
        while True:
            while pos < len(buf) and buf[pos] in " \t\r\n":
                pos += 1
            if pos >= len(buf) - 1 and not eof:  # keep one char of lookahead
                more = _read_more(fh, decoder, p)
                eof = not more
                buf, pos = buf[pos:] + more, 0
                continue
            if pos >= len(buf):
                raise InputError(f"{p}: the JSON list is not closed")
            ch = buf[pos]
            if not started:
                if ch != "[":
                    raise InputError(f"{p}: expected a JSON list of LongMemEval questions")
                started, pos = True, pos + 1
                continue
            if need_comma:
                if ch == "]":
                    return
                if ch != ",":
                    raise InputError(f"{p}: invalid JSON after question {index - 1}: ',' expected")
                need_comma, pos = False, pos + 1
                continue
            if ch == "]" and index == 0:
                return
            try:
                value, end = json_decoder.raw_decode(buf, pos)
            except json.JSONDecodeError as exc:
                if eof:
                    raise InputError(f"{p}: invalid JSON in question {index}: {exc.msg}") from exc
                more = _read_more(fh, decoder, p)
                eof = not more
                buf, pos = buf[pos:] + more, 0
                continue
            except RecursionError:
                raise InputError(f"{p}: JSON nested too deeply to read") from None
            if not isinstance(value, dict):
                raise InputError(f"{p}: element {index} of the list is not an object")
            yield index, value
            index += 1
            buf, pos, need_comma = buf[end:], 0, True


def load_longmemeval(
    path: str | os.PathLike[str],
    *,
    question_types: Sequence[str] | None = None,
    limit: int | None = None,
) -> Iterator[LongMemEvalQuestion]:
    """The file's questions, parsed one at a time, optionally filtered.

    Args:
        path: A LongMemEval-format JSON file.
        question_types: Only questions of these types (an abstention question counts as its
            type).
        limit: At most this many questions (after the type filter, in file order).

    Raises:
        InputError: Bad input, an unknown question type asked for, or a question id twice.
    """
    wanted = set(question_types or ())
    unknown = wanted - set(QUESTION_TYPES)
    if unknown:
        raise InputError(
            f"unknown question type {sorted(unknown)}; known: {', '.join(QUESTION_TYPES)}"
        )
    seen: set[str] = set()
    taken = 0
    for index, raw in iter_longmemeval(path):
        if limit is not None and taken >= limit:
            return
        if wanted and raw.get("question_type") not in wanted:
            continue
        question = parse_question(raw, where=f"{Path(path)}: question {index}")
        if question.question_id in seen:
            raise InputError(f"{path}: question id {question.question_id!r} appears twice")
        seen.add(question.question_id)
        taken += 1
        yield question
