"""Turn messages into records: ``speaker: text`` lines of at most ~600 characters.

Rules (paper §4.1, "Records"):

* Each message becomes one or more lines ``speaker: text``. Runs of whitespace inside a
  message (newlines included) are collapsed to single spaces, so that every line of a
  record is exactly one piece of one message and ``Record.message_ids`` and
  ``Record.roles`` are parallel to the lines of ``Record.text``.
* A message whose line would exceed ``max_chars`` is split: at sentence ends where
  possible, then between words, then (for a single token longer than the budget) hard.
  Every piece keeps the message id. Cut points drop exactly one space (or nothing, for a
  hard cut), so the pieces rejoin to the message text.
* With ``pack=True`` (the default), short consecutive turns of the same session share a
  record while the record stays within ``max_chars``; with ``pack=False`` every piece is
  a record of its own. Records never span two sessions.
* Record ids are stable: a hash of (namespace, source, the message ids of its lines and
  each line's part index), so chunking the same messages again gives the same ids.
* ``position`` is the order of the record within its session, starting at
  ``first_positions[session]`` (default 0) — pass :meth:`Journal.next_position` values when
  appending to a session that already has records.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from mnemon_langgraph.errors import ConfigurationError, InputError
from mnemon_langgraph.types import (
    MAX_MESSAGE_CHARS,
    NOT_GIVEN,
    Message,
    Namespace,
    Record,
    Role,
    normalize_namespace,
    origin_label,
)

__all__ = [
    "DEFAULT_MAX_CHARS",
    "DEFAULT_MAX_MESSAGE_CHARS",
    "RECORD_CHARS_RANGE",
    "check_record_chars",
    "chunk_messages",
    "derive_message_id",
    "normalize_text",
    "split_text",
    "stable_hash",
]

DEFAULT_MAX_CHARS = 600
"""Default record size limit in characters (paper: ≤ ~600).

A store takes another (``MnemonStore(..., record_chars=N)``, :func:`check_record_chars`):
smaller records let a small View hold more separate excerpts, larger ones keep more of an
exchange together; on LoCoMo dev smaller records helped a small View and hurt a large one
(docs/results/log.md), so 600 stays the default for the default budget."""

RECORD_CHARS_RANGE = (120, 4_000)
"""Record sizes a store accepts: below 120 a line with a 100-character speaker name has
no room for text; above 4,000 a record is most of a View, and the bundled MiniLM reads
only its first 256 word pieces (~1,000 characters) anyway."""

DEFAULT_MAX_MESSAGE_CHARS = MAX_MESSAGE_CHARS
"""Longest accepted message; a longer one is an :class:`InputError`, never truncated.

Every record line repeats its speaker (at most ``MAX_SPEAKER_CHARS`` = 100 characters) and
a piece is at least ~500 characters of text, so the records of one message cost at most
about 1.4 times its text (docs/results/log.md, "Records and the journal"):
one message cannot amplify into many times its size."""

_MIN_PIECE = 40  # a speaker name never squeezes a piece budget below this
# A sentence ends with . ! ? … (optionally followed by closing quotes/brackets) and a space,
# or with a CJK full stop (no space needed).
_SENTENCE_END = re.compile(r"(?<=[.!?…][\"'”’)\]]) |(?<=[.!?…]) |(?<=[。！？])")


def check_record_chars(value: object) -> int:
    """``value`` as a store's record size, or a :class:`ConfigurationError` saying why not."""
    low, high = RECORD_CHARS_RANGE
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ConfigurationError(
            f"record_chars must be a whole number of characters from {low} to {high}, got {value!r}"
        )
    return value


def stable_hash(*parts: object, length: int = 32) -> str:
    """Hex SHA-256 of the JSON encoding of ``parts`` (its first ``length`` characters)."""
    data = json.dumps(parts, ensure_ascii=False, separators=(",", ":"), default=str)
    # surrogatepass: a lone surrogate (from a "\\ud800" JSON escape) must not crash hashing;
    # the store rejects such text with an InputError before writing anything.
    return hashlib.sha256(data.encode("utf-8", "surrogatepass")).hexdigest()[:length]


def normalize_text(text: str) -> str:
    """Collapse every run of whitespace to one space and strip the ends."""
    return " ".join(text.split())


def derive_message_id(message: Message, *, source: str, index: int) -> str:
    """A deterministic id for a message that came without one.

    A dated message's id also hashes its timestamp (and session), so the same words said
    again in a later turn ("yes", "ok") get a new id and are stored again, while the same
    batch ingested twice gets the same ids and is written once. An undated message has
    nothing that tells a repeat from a re-ingest: its id is (source, index, speaker, text),
    as before dates were hashed, so re-ingesting an undated file stays idempotent.

    Args:
        message: The message.
        source: Its source name.
        index: Its position in the source (line number, turn number).

    Returns:
        ``"m-"`` followed by a hash of (source, index, speaker, text[, timestamp, session]).
    """
    parts: list[object] = [source, index, message.speaker, message.text]
    if message.timestamp is not None:
        parts += [message.timestamp.isoformat(), message.session]
    return "m-" + stable_hash(*parts, length=24)


def _cut_points(text: str, pattern: re.Pattern[str]) -> list[int]:
    """Offsets where ``text`` may be cut (the cut drops the space there, if any)."""
    return [m.start() for m in pattern.finditer(text)]


def split_text(text: str, budget: int) -> list[str]:
    """Split normalized ``text`` into pieces of at most ``budget`` characters.

    Sentence ends are preferred, then spaces, then a hard cut. Each piece is a substring
    of ``text``; between two pieces at most one space was dropped.

    Args:
        text: Text with single spaces (see :func:`normalize_text`).
        budget: Maximum piece length (≥ 1).

    Returns:
        The pieces, in order (``[text]`` when it fits).
    """
    if budget < 1:
        raise InputError(f"piece budget must be positive, got {budget}")
    pieces: list[str] = []
    rest = text
    while len(rest) > budget:
        window = rest[: budget + 1]  # a cut at index `budget` (a space) is still fine
        cut = _best_cut(window, budget)
        if cut is None:
            pieces.append(rest[:budget])
            rest = rest[budget:]
        else:
            pieces.append(rest[:cut])
            rest = rest[cut:]
            if rest.startswith(" "):
                rest = rest[1:]
    if rest or not pieces:
        pieces.append(rest)
    return pieces


def _best_cut(window: str, budget: int) -> int | None:
    """Cut offset in ``window`` (≤ budget): last sentence end, else last space."""
    ends = [c for c in _cut_points(window, _SENTENCE_END) if budget // 3 <= c <= budget and c > 0]
    if ends:
        return ends[-1]
    spaces = [i for i, ch in enumerate(window) if ch == " " and 0 < i <= budget]
    if spaces:
        return spaces[-1]
    return None


@dataclass
class _Open:
    session: int
    date: datetime | None
    lines: list[str] = field(default_factory=list)
    mids: list[str] = field(default_factory=list)
    parts: list[int] = field(default_factory=list)
    roles: list[Role] = field(default_factory=list)
    speakers: list[str] = field(default_factory=list)

    @property
    def size(self) -> int:
        return sum(len(x) for x in self.lines) + max(0, len(self.lines) - 1)


def chunk_messages(
    messages: Sequence[Message],
    *,
    namespace: str | Sequence[str],
    origin: str = NOT_GIVEN,
    max_chars: int = DEFAULT_MAX_CHARS,
    pack: bool = True,
    max_message_chars: int = DEFAULT_MAX_MESSAGE_CHARS,
    default_session: int = 1,
    first_positions: Mapping[int, int] | None = None,
    source: str = NOT_GIVEN,
) -> list[Record]:
    """Chunk messages into records (see the module docstring for the rules).

    Messages are taken in the given order. A message without an id gets
    :func:`derive_message_id` (by its index in ``messages``); a message without a session
    gets ``default_session``. ``Record.date`` is the timestamp of the record's first message.

    Args:
        messages: Messages, in conversation order.
        namespace: Namespace of the records.
        origin: The ingest label stored on every record and part of the record ids.
        max_chars: Record size limit in characters (text without the header).
        pack: Let short consecutive turns of a session share a record.
        max_message_chars: Longest accepted message.
        default_session: Session of messages whose ``session`` is ``None``.
        first_positions: Position of the first new record per session (default 0).
        source: Deprecated name of ``origin`` (warns; one release).

    Returns:
        The records (``seq`` 0; the journal assigns it).

    Raises:
        InputError: A message is empty, longer than ``max_message_chars``, or two messages
            share an id; ``max_chars`` is too small.
    """
    source = origin_label(origin, source, where="chunk_messages")
    ns: Namespace = normalize_namespace(namespace)
    if max_chars < 2 * _MIN_PIECE:
        raise InputError(f"max_chars must be at least {2 * _MIN_PIECE}, got {max_chars}")
    if isinstance(messages, list | tuple) and len(messages) == 1:
        one = _one_record(messages[0], ns, source, max_chars, max_message_chars, first_positions)
        if one is not None:
            return [one]
    chunker = _Chunker(ns, source, max_chars=max_chars, pack=pack, positions=first_positions)
    seen_ids: set[str] = set()
    for index, msg in enumerate(messages):
        mid = _checked_id(msg, index, source=source, seen=seen_ids)
        text = _checked_text(msg, mid, source=source, limit=max_message_chars)
        speaker = normalize_text(msg.speaker or "") or msg.role
        session = msg.session if msg.session is not None else default_session
        chunker.add(mid, speaker, text, msg.role, session, msg.timestamp)
    chunker.flush()
    return chunker.records


def _one_record(
    msg: Message,
    ns: Namespace,
    source: str,
    max_chars: int,
    max_message_chars: int,
    first_positions: Mapping[int, int] | None,
) -> Record | None:
    """The record of one message that fits one piece, as :class:`_Chunker` makes it (packing
    changes nothing for a single piece); ``None`` for anything else, which the general path
    handles (and refuses, where it is bad input). Written out because a read source converts
    documents one at a time, on every search that returns one not seen before, and the
    chunker's bookkeeping cost several times the record itself."""
    mid, text, session = msg.id, msg.text, msg.session
    if (
        not isinstance(mid, str)
        or not mid.strip()
        or not isinstance(text, str)
        or len(text) > max_message_chars
        or session is None
    ):
        return None
    text = normalize_text(text)
    speaker = normalize_text(msg.speaker or "") or msg.role
    prefix = f"{speaker}: "
    if not text or len(text) > max(max_chars - len(prefix), _MIN_PIECE):
        return None  # empty (refused) or cut into pieces
    return Record(
        id="r-" + stable_hash(list(ns), source, [[mid, 0]]),
        namespace=ns,
        session=session,
        date=msg.timestamp,
        position=(first_positions or {}).get(session, 0),
        speakers=(speaker,),
        message_ids=(mid,),
        text=prefix + text,
        origin=source,
        roles=(msg.role,),
    )


def _checked_id(msg: Message, index: int, *, source: str, seen: set[str]) -> str:
    """The message's id (derived when missing); raises on an empty or repeated id."""
    mid = msg.id if msg.id is not None else derive_message_id(msg, source=source, index=index)
    if not isinstance(mid, str) or not mid.strip():
        raise InputError(f"{source}: message {index} has an empty id")
    if mid in seen:
        raise InputError(f"{source}: message id {mid!r} appears twice")
    seen.add(mid)
    return mid


def _checked_text(msg: Message, mid: str, *, source: str, limit: int) -> str:
    """The message's normalized text; raises when it is empty or longer than ``limit``."""
    if not isinstance(msg.text, str):
        raise InputError(f"{source}: message {mid!r} has non-text content")
    if len(msg.text) > limit:
        raise InputError(
            f"{source}: message {mid!r} has {len(msg.text):,} characters, more than "
            f"max_message_chars={limit:,}; split it or raise the limit"
        )
    text = normalize_text(msg.text)
    if not text:
        raise InputError(f"{source}: message {mid!r} has empty text")
    return text


class _Chunker:
    """Packs message pieces into records (the state of :func:`chunk_messages`)."""

    def __init__(
        self,
        ns: Namespace,
        source: str,
        *,
        max_chars: int,
        pack: bool,
        positions: Mapping[int, int] | None,
    ) -> None:
        self.ns = ns
        self.source = source
        self.max_chars = max_chars
        self.pack = pack
        self.positions: dict[int, int] = dict(positions or {})
        self.records: list[Record] = []
        self.current: _Open | None = None

    def add(
        self,
        mid: str,
        speaker: str,
        text: str,
        role: Role,
        session: int,
        date: datetime | None,
    ) -> None:
        """Add one message: split it into pieces and pack them into records."""
        prefix = f"{speaker}: "
        budget = max(self.max_chars - len(prefix), _MIN_PIECE)
        pieces = split_text(text, budget)
        if self.current is not None and self.current.session != session:
            self.flush()
        if len(pieces) > 1:
            self.flush()
        for part, piece in enumerate(pieces):
            line = prefix + piece
            current = self.current
            if current is not None and (
                not self.pack or current.size + 1 + len(line) > self.max_chars
            ):
                self.flush()
            if self.current is None:
                self.current = _Open(session=session, date=date)
            self.current.lines.append(line)
            self.current.mids.append(mid)
            self.current.parts.append(part)
            self.current.roles.append(role)
            self.current.speakers.append(speaker)
            if not self.pack:
                self.flush()

    def flush(self) -> None:
        """Close the open record, if it has lines."""
        current, self.current = self.current, None
        if current is None or not current.lines:
            return
        pos = self.positions.get(current.session, 0)
        self.positions[current.session] = pos + 1
        rid = "r-" + stable_hash(
            list(self.ns),
            self.source,
            [[m, p] for m, p in zip(current.mids, current.parts, strict=True)],
        )
        self.records.append(
            Record(
                id=rid,
                namespace=self.ns,
                session=current.session,
                date=current.date,
                position=pos,
                speakers=tuple(dict.fromkeys(current.speakers)),
                message_ids=tuple(current.mids),
                text="\n".join(current.lines),
                origin=self.source,
                roles=tuple(current.roles),
            )
        )
