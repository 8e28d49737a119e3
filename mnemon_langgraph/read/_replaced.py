"""Replaced values, marked: what the View says on a record judged no longer current.

System 1's *no longer current* (``stale``) keeps a record in the View by default (leaving
it out removed gold evidence), so the answering model would read "I work night shifts at
St Mary's" and, sessions later, "I now work at Oakridge Primary" as equals. The View marks
such a record instead: its block's ``status`` says "no longer current" as of the View's
date, and the date of the later record that replaced it.

System 1 answers whether a record is no longer current, not which record replaced it. The
replacing record is found among the pooled records said later, by the same sentence
matcher the offline judge uses to find a change of the same subject
(:func:`~mnemon_langgraph.judges._staleness.replacements`): the best later match names the
date. When no pooled record matches (the change is in the recent messages, or in a record
no search pooled), the mark says that a later message or record changes it, with no date
it cannot name.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from mnemon_langgraph.judges._features import Doc, stem
from mnemon_langgraph.judges._update_clauses import canon, clauses
from mnemon_langgraph.judges._update_rules import change_score

__all__ = ["replaced_marks"]


def _when(rec: Mapping[str, Any]) -> tuple[str, int, int]:
    position = rec.get("position")
    pos = position if isinstance(position, int) and not isinstance(position, bool) else -1
    return str(rec.get("date") or ""), int(rec.get("session") or 0), pos


def _day(value: object) -> str:
    return str(value or "")[:10]


def _replacing(docs: Sequence[Doc], wanted: set[str]) -> dict[str, list[Doc]]:
    """Each wanted record's later records that change what it says (the offline judge's
    sentence matcher, :func:`~mnemon_langgraph.judges._staleness.replacements`, keeping every
    match: one record of several turns may hold a job and a car, changed on two days)."""
    names = frozenset(canon(stem(n)) for r in docs for n in r.speakers)
    changing = [(r, [c for c in clauses(r.text) if c.change]) for r in docs]
    changing = [(r, cs) for r, cs in changing if cs]
    out: dict[str, list[Doc]] = {}
    for doc in docs:
        if doc.id not in wanted:
            continue
        mine = clauses(doc.text)
        out[doc.id] = [
            r
            for r, cs in changing
            if r is not doc
            and r.later_than(doc)
            and any(change_score(t, m, names) > 0 for m in mine for t in cs)
        ]
    return out


def _days(days: Sequence[str]) -> str:
    """``a``, ``a and b``, ``a, b and c`` (the first three)."""
    shown = list(days[:MAX_DATES])
    return shown[0] if len(shown) == 1 else f"{', '.join(shown[:-1])} and {shown[-1]}"


MAX_DATES = 3
"""Most replacing dates a mark names."""


def replaced_marks(
    pool: Sequence[Mapping[str, Any]], stale: Iterable[str], dated: str = ""
) -> dict[str, str]:
    """The ``status`` of each record of ``stale`` (judged no longer current, kept in the View).

    Args:
        pool: The pooled records (``id``, ``header``, ``text``, ``date``, ``session``,
            ``position``).
        stale: Ids of the records judged no longer current.
        dated: The View's date (its ``as_of``, else when the message is asked; ISO), or
            ``""`` when unknown.

    Returns:
        Record id → its status, e.g. ``"no longer current as of 2023-08-01: replaced on
        2023-07-02"`` (every day a pooled later record changed it, up to three).
    """
    wanted = set(stale)
    if not wanted:
        return {}
    ordered = sorted(pool, key=_when)
    by = _replacing([Doc(rec, i) for i, rec in enumerate(ordered)], wanted)
    date_of = {str(rec.get("id")): _day(rec.get("date")) for rec in pool}
    head = "no longer current" + (f" as of {_day(dated)}" if dated else "")
    out: dict[str, str] = {}
    for rid in sorted(wanted):
        later = by.get(rid) or []
        days = sorted({date_of.get(d.id, "") for d in later} - {""})
        if days:
            out[rid] = f"{head}: replaced on {_days(days)}"
        elif later:
            out[rid] = f"{head}: replaced by a later record"
        else:
            out[rid] = f"{head}: a later message or record changes it"
    return out
