"""The user's turns the View brings beside what System 1 judged: the turn a reply
answers, and the turn that opens a session.

On a long history of exchanges with an assistant, System 1 judges pieces of the assistant's
replies: a reply restates the question and elaborates at length, so it shares the most
words with a later question. What the user said is the turn just before the reply,
which often shares few of those words and is never pooled. With
``ReadSettings.reply_questions`` on, every reply of more than a line or two
(:data:`MIN_REPLY_CHARS`) that the turn judged in depth (it has a *needed* judgment: at
most ``ReadSettings.deep_records`` records) brings its **question**: the record holding
the user's turn right before the reply's message.

* :func:`question_of` finds it among records it is given: same source and session,
  walking back from the reply's position over the reply's own earlier pieces (records
  that are the assistant's only) to the first record with a user line. A gap in the
  positions, or a record that is neither, ends the walk: nothing is guessed.
* The records come from the pool first; a question the pool lacks is read from the
  journal (:class:`JournalSource`, both stores): the :data:`SPAN` records of the reply's
  session just before it, by position (not by ``seq``: one journal serves many users and
  their writes interleave). A question further back, or a source that is not a journal,
  gives none, and the View is composed as without the setting.
* The View places each question right before its reply, at the reply's rank
  (``view.with_questions``); it is the user's words, so the rule that ranks the
  assistant's replies lower does not move it.

On such a history the user also opens each session with what they want and the situation
behind it ("I'm looking for recipes for my new toaster oven: I got rid of the old
toaster"), and the rest of the session is the assistant's answers and the user's
follow-ups, which share the question's words. A question about every instance of
something (a count, a list, an order: the planner's ``ALL`` need) gathers facts told in
passing across many sessions, so with ``ReadSettings.opening_turns`` = *M* and an ``ALL``
need, the session of each of the *M* records System 1 judges most needed brings its
**opening turn**: the first record of the session with a user line. (For a single fact the
best record holds it, and an opening turn only takes room.)

* Only a session with an assistant in it (a record of it in the pool, or among its first
  records read, has an assistant line), and only when the pool holds a line of the
  assistant at all: in a conversation between people (LoCoMo) a session opens with a
  greeting, and nothing is read for it.
* :func:`opening_of` finds it among records it is given, walking up from position 0 over
  the assistant's records (a session the assistant opened) to the first user line, at
  most :data:`OPENING_SPAN` records, with no gap: nothing is guessed.
* From the pool first, else from the journal: the session's first :data:`OPENING_SPAN`
  positions.
* The View places it right before the session's best record (``view.with_openings``).

Nothing is decided when a record is written: the reply and its question, the session and
its opening turn are found at read time from the positions the journal keeps.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

__all__ = [
    "MIN_REPLY_CHARS",
    "OPENING_SPAN",
    "SPAN",
    "Window",
    "is_reply",
    "opening_of",
    "opening_windows",
    "openings",
    "question_of",
    "questions",
    "reads",
    "replies_judged",
    "sessions_opened",
    "windows",
]

SPAN = 16
"""Positions before a reply, in its session, that are read to find its question: a reply
of up to fifteen pieces (about 9,000 characters at the default record size) and its
question."""


MIN_REPLY_CHARS = 200
"""Shortest reply (its record's text) that brings its question. A reply of a line or two
("Twelve kilometres a day is great exercise. How is Pepper coping?") is itself what the
turn's words found, and its question may be about something else ("I cycle to the
hospital every day"); a longer reply elaborates on what the user said. The dev sets hardly
tell the values apart, so the value was set for ``mnemon demo``'s short replies, not chosen
by cross-validation (docs/results/replies.md)."""


OPENING_SPAN = 4
"""Most records from a session's start that are walked (and read from the journal) to
find its first user line: a session the assistant opened with a few records of its own
still gives its opening turn; a longer run of them gives none."""


def is_reply(rec: Mapping[str, Any]) -> bool:
    """Whether every line of a record is the assistant's (known roles only)."""
    roles = rec.get("roles") or ()
    return bool(roles) and all(role == "assistant" for role in roles)


def _has_user_line(rec: Mapping[str, Any]) -> bool:
    return "user" in (rec.get("roles") or ())


def replies_judged(pool: Sequence[Mapping[str, Any]], needed: Iterable[str]) -> list[str]:
    """The pooled replies among ``needed`` (the records judged in depth) of at least
    :data:`MIN_REPLY_CHARS` characters, in pool order."""
    deep = set(needed)
    return [
        r["id"]
        for r in pool
        if r["id"] in deep and is_reply(r) and len(str(r.get("text", ""))) >= MIN_REPLY_CHARS
    ]


def question_of(
    reply: Mapping[str, Any], records: Iterable[Mapping[str, Any]]
) -> Mapping[str, Any] | None:
    """The record holding the user's turn just before ``reply``'s message, or ``None``."""
    return _question_in(reply, _sessions(records))


def _question_in(reply: Mapping[str, Any], sessions: _Sessions) -> Mapping[str, Any] | None:
    """:func:`question_of` among records indexed by :func:`_sessions`."""
    position = reply.get("position")
    if not isinstance(position, int) or isinstance(position, bool):
        return None
    at = sessions.get(_where(reply), {})
    step = position - 1
    while step in at:
        rec = at[step]
        if _has_user_line(rec):
            return rec
        if not is_reply(rec):
            return None
        step -= 1
    return None


_Sessions = dict[tuple[Any, Any, Any], dict[int, Mapping[str, Any]]]
"""Records by session (:func:`_where`) and position."""


def _sessions(records: Iterable[Mapping[str, Any]]) -> _Sessions:
    """Index records by session and position once, so that finding a turn for each of many
    records does not scan every record each time (a later record at a taken position wins,
    as a dict built in order would have it)."""
    out: _Sessions = {}
    for r in records:
        position = r.get("position")
        if isinstance(position, int):
            out.setdefault(_where(r), {})[position] = r
    return out


_Finder = Callable[[Mapping[str, Any], _Sessions], Mapping[str, Any] | None]


Window = tuple[int, int, int]
"""A part of one session to read from the journal: ``(session, start, stop)``, the records
at positions ``start .. stop - 1``."""


def windows(pool: Sequence[Mapping[str, Any]], replies: Sequence[str]) -> list[Window]:
    """For each reply whose question the pool does not hold, the part of its session that
    would hold it: the :data:`SPAN` positions before the reply."""
    return _unpooled(pool, replies, _question_in, lambda at: (max(0, at - SPAN), at))


def _unpooled(
    pool: Sequence[Mapping[str, Any]],
    ids: Sequence[str],
    find: _Finder,
    part: Callable[[int], tuple[int, int]],
) -> list[Window]:
    """For each of ``ids`` (placed in a session, past its start) for which ``find`` gives
    nothing in the pool, its session and the positions ``part(position)``."""
    by_id = {r["id"]: r for r in pool}
    sessions = _sessions(pool)
    out = []
    for rid in ids:
        rec = by_id[rid]
        session, position = _placed(rec)
        if session >= 0 and position > 0 and find(rec, sessions) is None:
            out.append((session, *part(position)))
    return sorted(set(out))


def _placed(rec: Mapping[str, Any]) -> tuple[int, int]:
    """A record's session and position (``-1`` for either it lacks)."""
    session, position = rec.get("session"), rec.get("position")
    known = [
        v if isinstance(v, int) and not isinstance(v, bool) else -1 for v in (session, position)
    ]
    return known[0], known[1]


def reads(wanted: Sequence[Window]) -> list[Window]:
    """The journal reads that cover the ``wanted`` parts of sessions, overlapping or
    touching parts of one session merged into one read: the pieces of one long reply, each
    judged in depth, share their question and their part."""
    out: list[Window] = []
    for session, start, stop in sorted(set(wanted)):
        if out and out[-1][0] == session and start <= out[-1][2]:
            out[-1] = (session, out[-1][1], max(out[-1][2], stop))
        else:
            out.append((session, start, stop))
    return out


def questions(
    pool: Sequence[Mapping[str, Any]],
    replies: Sequence[str],
    read: Iterable[Mapping[str, Any]] = (),
) -> tuple[dict[str, str], list[Mapping[str, Any]]]:
    """Each reply's question, from the pool or the records ``read`` from the journal.

    Returns:
        Reply id → question id, and the questions that were not pooled (to add to the
        pool the View is composed from).
    """
    return _brought(pool, replies, read, _question_in)


def _brought(
    pool: Sequence[Mapping[str, Any]],
    ids: Sequence[str],
    read: Iterable[Mapping[str, Any]],
    find: _Finder,
) -> tuple[dict[str, str], list[Mapping[str, Any]]]:
    """For each of ``ids``, the record ``find`` gives among the pool and the records
    ``read``: id → its id, and those of them that were not pooled."""
    by_id = {r["id"]: r for r in pool}
    known = _sessions([*pool, *(r for r in read if r["id"] not in by_id)])
    found: dict[str, str] = {}
    added: dict[str, Mapping[str, Any]] = {}
    for rid in ids:
        rec = find(by_id[rid], known)
        if rec is None:
            continue
        found[rid] = rec["id"]
        if rec["id"] not in by_id:
            added.setdefault(rec["id"], rec)
    return found, list(added.values())


def _where(rec: Mapping[str, Any]) -> tuple[Any, Any, Any]:
    """A record's session as the read path keys it: read source, ingest label, session
    (session numbers collide across sources)."""
    return rec.get("read_source"), rec.get("source"), rec.get("session")


def sessions_opened(
    pool: Sequence[Mapping[str, Any]], ranked: Sequence[str], best: int
) -> list[str]:
    """Of the ``best`` first of ``ranked`` (record ids, System 1's order), the first of
    each session that the record does not open itself (position 0): the records whose
    session's opening turn is looked for. None when no pooled record has an assistant line:
    a conversation between people is not read for openings it cannot have."""
    if not any("assistant" in (r.get("roles") or ()) for r in pool):
        return []
    by_id = {r["id"]: r for r in pool}
    out: list[str] = []
    seen: set[tuple[Any, Any, Any]] = set()
    for rid in ranked[: max(0, best)]:
        rec = by_id.get(rid)
        if rec is None or _where(rec) in seen:
            continue
        seen.add(_where(rec))
        position = rec.get("position")
        if isinstance(position, int) and not isinstance(position, bool) and position > 0:
            out.append(rid)
    return out


def opening_of(
    rec: Mapping[str, Any], records: Iterable[Mapping[str, Any]]
) -> Mapping[str, Any] | None:
    """The record holding the first user line of ``rec``'s session, or ``None``: walked up
    from position 0 over the assistant's records, at most :data:`OPENING_SPAN`, with no gap
    and not past ``rec`` itself."""
    return _opening_in(rec, _sessions(records))


def _opening_in(rec: Mapping[str, Any], sessions: _Sessions) -> Mapping[str, Any] | None:
    """:func:`opening_of` among records indexed by :func:`_sessions`."""
    position = rec.get("position")
    if not isinstance(position, int) or isinstance(position, bool):
        return None
    at = sessions.get(_where(rec), {})
    for step in range(min(OPENING_SPAN, position)):
        first = at.get(step)
        if first is None:
            return None
        if _has_user_line(first):
            return first
        if not is_reply(first):
            return None
    return None


def opening_windows(pool: Sequence[Mapping[str, Any]], ids: Sequence[str]) -> list[Window]:
    """For each of ``ids`` whose session's opening turn the pool does not hold, the part
    of its session that would hold it: its first :data:`OPENING_SPAN` positions (before
    the record's own)."""
    return _unpooled(pool, ids, _opening_in, lambda at: (0, min(OPENING_SPAN, at)))


def openings(
    pool: Sequence[Mapping[str, Any]],
    ids: Sequence[str],
    read: Iterable[Mapping[str, Any]] = (),
) -> tuple[dict[str, str], list[Mapping[str, Any]]]:
    """Each of ``ids``' session's opening turn, from the pool or the records ``read``, for
    the sessions with an assistant in them (a record of the session among those has an
    assistant line): a conversation between people opens with a greeting.

    Returns:
        Record id → opening turn's record id, and the opening turns that were not pooled.
    """
    read = list(read)
    talk = {_where(r) for r in [*pool, *read] if "assistant" in (r.get("roles") or ())}

    def find(rec: Mapping[str, Any], known: _Sessions) -> Any:
        return _opening_in(rec, known) if _where(rec) in talk else None

    return _brought(pool, ids, read, find)
