"""Load a plain-text transcript: ``Speaker: text`` lines with optional session headers.

Format::

    ## Session 1 — 2023-05-08 13:56
    Caroline: Hey Mel! How have you been?
    Melanie: Swamped with the kids & work.
      A line that does not start with "Name:" continues the previous turn.

    --- 2023-05-25 13:14 ---
    Caroline: …

* A turn starts with ``Name: text``; the name is 1–40 characters, at most four words,
  without ``:`` and not starting with a digit (so "10:30" or URLs do not start turns).
  Pass ``speakers=`` to accept only known names (then "Note: …" inside a turn is safe).
* Session headers: ``## Session N`` with an optional date after ``—``/``–``/``-``/``:``,
  or ``--- <date> ---`` (the next session number). Markdown headings that are neither
  are an error, so that nothing is silently misread.
* Other lines continue the previous turn (joined with a newline). Text before the first
  turn is an error.
* Speakers named ``assistant``/``ai``/``bot`` get role ``assistant``, ``system`` and
  ``tool`` their own role, everybody else ``user``.
* Ids are hashes of (source, line number, text), so re-ingesting the same file is
  idempotent. Timestamps are the session dates.
"""

from __future__ import annotations

import os
import re
from collections.abc import Collection
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from mnemon_langgraph.errors import InputError
from mnemon_langgraph.loaders._common import (
    make_message,
    parse_date,
    read_text,
    role_for_speaker,
    split_lines,
)
from mnemon_langgraph.records._chunking import stable_hash
from mnemon_langgraph.types import NOT_GIVEN, Message, check_session, origin_label

__all__ = ["load_transcript", "parse_transcript"]

_SESSION_HEADER = re.compile(
    r"#{1,6}\s*session\s+(\d+)\s*(?:[—–:\-]+\s*(?P<date>.*?))?\s*", re.IGNORECASE
)
_DASH_HEADER = re.compile(r"-{3,}\s*(?P<date>.*?)\s*-{3,}")
_HEADING = re.compile(r"#{1,6}\s+.*")
_TURN = re.compile(r"(?P<speaker>[^:\d\s][^:]{0,39}?)\s*:(?:\s+(?P<text>.*)|\s*)")


@dataclass
class _Turn:
    speaker: str
    lineno: int
    session: int | None
    date: datetime | None
    lines: list[str] = field(default_factory=list)


class _Parser:
    """Line-by-line state of :func:`parse_transcript` (kept apart so each step is small)."""

    def __init__(self, label: str, known: set[str] | None) -> None:
        self.label = label
        self.known = known
        self.turns: list[_Turn] = []
        self.session: int | None = None
        self.date: datetime | None = None

    def feed(self, lineno: int, raw: str) -> None:
        """Consume one line: a blank, a session header, a turn start or a continuation."""
        line = raw.strip()
        where = f"{self.label}:{lineno}"
        if not line:
            if self.turns:
                self.turns[-1].lines.append("")
            return
        if self._header(line, lineno, where):
            return
        if _HEADING.fullmatch(line):
            raise InputError(
                f"{where}: unrecognised heading {line[:60]!r} (expected '## Session N — date')"
            )
        match = _TURN.fullmatch(line)
        name = match.group("speaker").strip() if match else ""
        starts_turn = bool(match) and len(name.split()) <= 4 and "//" not in name
        if self.known is not None:
            starts_turn = starts_turn and name in self.known
        if starts_turn:
            assert match is not None
            self.turns.append(_Turn(name, lineno, self.session, self.date))
            self.turns[-1].lines.append(match.group("text") or "")
            return
        if not self.turns or not self.turns[-1].speaker:
            raise InputError(f"{where}: text before the first 'Speaker: text' line: {line[:60]!r}")
        self.turns[-1].lines.append(line)

    def _header(self, line: str, lineno: int, where: str) -> bool:
        """Handle a session header line; returns whether ``line`` was one."""
        header = _SESSION_HEADER.fullmatch(line)
        dashes = None if header else _DASH_HEADER.fullmatch(line)
        if header:
            self.session = check_session_at(int(header.group(1)), where)
            raw_date = header.group("date")
        elif dashes:
            self.session = check_session_at((self.session or 0) + 1, where)
            raw_date = dashes.group("date")
            if not raw_date:
                raise InputError(f"{where}: '--- <date> ---' header without a date")
        else:
            return False
        self.date = parse_date(raw_date, where=where) if raw_date else None
        self.turns.append(_Turn(speaker="", lineno=lineno, session=self.session, date=self.date))
        return True

    def messages(self, source: str) -> list[Message]:
        """The parsed turns as messages (validated by :class:`Message`)."""
        messages: list[Message] = []
        for turn in self.turns:
            if not turn.speaker:
                continue
            body = "\n".join(turn.lines).strip()
            where = f"{self.label}:{turn.lineno}"
            if not body:
                raise InputError(f"{where}: empty turn of {turn.speaker!r}")
            messages.append(
                make_message(
                    where,
                    text=body,
                    speaker=turn.speaker,
                    role=role_for_speaker(turn.speaker),
                    id="m-" + stable_hash(source, turn.lineno, body, length=24),
                    timestamp=turn.date,
                    session=turn.session,
                )
            )
        if not messages:
            raise InputError(f"{self.label}: no 'Speaker: text' lines")
        return messages


def check_session_at(number: int, where: str) -> int:
    """:func:`~mnemon_langgraph.types.check_session` with ``where`` in the error."""
    try:
        return check_session(number, what="session number")
    except InputError as exc:
        raise InputError(f"{where}: {exc}") from None


def parse_transcript(
    text: str,
    *,
    origin: str = NOT_GIVEN,
    speakers: Collection[str] | None = None,
    label: str | None = None,
    source: str = NOT_GIVEN,
) -> list[Message]:
    """Parse transcript text (see the module docstring).

    Lines are split on ``\\n`` only, so a U+2028 inside a turn stays part of it.

    Args:
        text: The transcript.
        origin: The ingest label, used in error messages and derived ids.
        speakers: If given, only these names start a turn.
        label: Name of the input in error messages (default: ``origin``).
        source: Deprecated name of ``origin`` (warns; one release).

    Raises:
        InputError: Text before the first turn, an empty turn, an unknown heading, an
            unparsable date or a session number outside ``1..2**31-1`` — naming the
            source and line.
    """
    source = origin_label(origin, source, where="parse_transcript")
    known = {s.strip() for s in speakers} if speakers is not None else None
    parser = _Parser(label or source, known)
    for lineno, raw in enumerate(split_lines(text), start=1):
        parser.feed(lineno, raw)
    return parser.messages(source)


def load_transcript(
    path: str | os.PathLike[str],
    *,
    origin: str = "",
    speakers: Collection[str] | None = None,
    source: str = NOT_GIVEN,
) -> list[Message]:
    """Load a transcript file (strict UTF-8); see :func:`parse_transcript`.

    Args:
        path: The file.
        origin: The ingest label for derived ids (default: the file name).
        speakers: If given, only these names start a turn.
        source: Deprecated name of ``origin`` (warns; one release).
    """
    p = Path(path)
    label = origin_label(origin, source, where="load_transcript", default="") or p.name
    return parse_transcript(read_text(p), origin=label, speakers=speakers, label=str(p))
