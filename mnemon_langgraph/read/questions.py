"""The user's turn a reply answers, brought into the View with the reply.

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
  journal (:class:`JournalSource`, both stores), in the :data:`SPAN` records written just
  before the reply (by ``seq``). A question written further back, or a source that is not
  a journal, gives none, and the View is composed as without the setting.
* The View places each question right before its reply, at the reply's rank
  (``view.with_questions``); it is the user's words, so the rule that ranks the
  assistant's replies lower does not move it.

Nothing is decided when a record is written: the reply and its question are found at read
time from the positions the journal keeps.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

__all__ = [
    "MIN_REPLY_CHARS",
    "SPAN",
    "is_reply",
    "question_of",
    "questions",
    "reads",
    "replies_judged",
    "windows",
]

SPAN = 16
"""Records written before a reply that are read to find its question: a reply of up to
fifteen pieces (about 9,000 characters at the default record size) and its question."""


MIN_REPLY_CHARS = 200
"""Shortest reply (its record's text) that brings its question. A reply of a line or two
("Twelve kilometres a day is great exercise. How is Pepper coping?") is itself what the
turn's words found, and its question may be about something else ("I cycle to the
hospital every day"); a longer reply elaborates on what the user said. On the dev sets
100, 200 and 400 give the same all-evidence within one BEAM question, and 0 the same as
200: the value was set for ``mnemon demo``'s short replies, not chosen by cross-validation
(docs/results/replies.md)."""


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
    position = reply.get("position")
    if not isinstance(position, int) or isinstance(position, bool):
        return None
    where = (reply.get("source"), reply.get("session"))
    at = {
        r["position"]: r
        for r in records
        if (r.get("source"), r.get("session")) == where and isinstance(r.get("position"), int)
    }
    step = position - 1
    while step in at:
        rec = at[step]
        if _has_user_line(rec):
            return rec
        if not is_reply(rec):
            return None
        step -= 1
    return None


def windows(pool: Sequence[Mapping[str, Any]], replies: Sequence[str]) -> list[int]:
    """For each reply whose question the pool does not hold, the ``after_seq`` of the
    journal read that would hold it (the :data:`SPAN` records before the reply)."""
    by_id = {r["id"]: r for r in pool}
    out = []
    for rid in replies:
        rec = by_id[rid]
        seq = rec.get("seq")
        if question_of(rec, pool) is None and isinstance(seq, int) and seq > 0:
            out.append(max(-1, seq - SPAN - 1))
    return sorted(set(out))


def reads(afters: Sequence[int]) -> list[tuple[int, int]]:
    """The journal reads, ``(after_seq, limit)``, that cover the :data:`SPAN` records after
    each of ``afters``, overlapping windows merged into one read: the pieces of one long
    reply, each judged in depth, share their question and their window."""
    out: list[tuple[int, int]] = []
    for after in sorted(set(afters)):
        if out and after <= out[-1][0] + out[-1][1]:
            start = out[-1][0]
            out[-1] = (start, after + SPAN - start)
        else:
            out.append((after, SPAN))
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
    by_id = {r["id"]: r for r in pool}
    known = [*pool, *(r for r in read if r["id"] not in by_id)]
    found: dict[str, str] = {}
    added: dict[str, Mapping[str, Any]] = {}
    for rid in replies:
        q = question_of(by_id[rid], known)
        if q is None:
            continue
        found[rid] = q["id"]
        if q["id"] not in by_id:
            added.setdefault(q["id"], q)
    return found, list(added.values())
