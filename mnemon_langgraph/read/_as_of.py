"""As-of Views: read the memory as it stood at a date (``ReadContext.as_of``).

With ``as_of`` set, the read path behaves as if the memory held only the records dated at or
before it — "dated" being the record's conversation date (what was said when), not when it
was written to the journal. The bound is pushed into every read rather than filtered after
it: each search gets ``SearchFilters.date_to`` (both backends apply it inside the search, so
a page is filled with records that qualify), the session reads that bring a reply's question
and a session's opening turn get the same filter in their SQL, and consolidated items are
kept only when every record they link is known at ``as_of`` (:func:`items_known`).

**Undated records are left out** of an as-of View: a record without a date cannot be
placed at or before ``as_of``, and keeping it could show something said after it. This is
the rule every date bound of :class:`~mnemon_langgraph.types.SearchFilters` already follows
(a record without a date passes no date bound), so one rule holds for the searches and the
session reads alike.

A date without a time (``"2023-05-08"``, a :class:`~datetime.date`) means the end of that
day: "as of May 8" includes what was said on May 8.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import date, datetime, time
from typing import Any

from mnemon_langgraph.errors import InputError
from mnemon_langgraph.items import IndexItem
from mnemon_langgraph.types import Record, SearchFilters, as_naive_utc

__all__ = [
    "AS_OF_KEY",
    "as_of_bound",
    "as_of_filters",
    "as_of_line",
    "items_known",
    "known_at",
    "linked_ids",
    "run_as_of",
]

AS_OF_KEY = "as_of"
"""The context field and ``configurable`` key that name the View's date."""


def as_of_bound(value: object) -> datetime | None:
    """``value`` as the as-of bound: a naive-UTC datetime, or ``None`` when not given.

    Accepts a :class:`~datetime.datetime`, a :class:`~datetime.date` or an ISO string; a
    date without a time is the end of that day.

    Raises:
        InputError: ``value`` is none of these, or a string that is not an ISO date.
    """
    if value is None or value == "":
        return None
    if isinstance(value, str):
        text = value.strip()
        try:
            stamp = datetime.fromisoformat(text)
        except ValueError as exc:
            raise InputError(
                f"as_of must be an ISO date or time (e.g. 2023-05-08 or 2023-05-08T18:00), "
                f"got {value!r}"
            ) from exc
        # a bare date: the whole day counts
        value = stamp.date() if len(text) <= 10 else stamp
    if isinstance(value, datetime):
        return as_naive_utc(value)
    if isinstance(value, date):
        return datetime.combine(value, time.max)
    raise InputError(f"as_of must be a datetime, a date or an ISO string, got {value!r}")


def _field(source: object, name: str) -> object:
    if isinstance(source, Mapping):
        return source.get(name)
    return getattr(source, name, None)


def run_as_of(context: object, config: Mapping[str, Any] | None) -> datetime | None:
    """The run's as-of bound: the context's ``as_of``, else ``config["configurable"]["as_of"]``."""
    found = _field(context, AS_OF_KEY)
    if found is None or found == "":
        found = ((config or {}).get("configurable") or {}).get(AS_OF_KEY)
    return as_of_bound(found)


def as_of_filters(as_of: datetime | None, filters: SearchFilters | None) -> SearchFilters | None:
    """``filters`` with ``date_to`` cut at ``as_of`` (the earlier of the two bounds)."""
    if as_of is None:
        return filters
    if filters is None:
        return SearchFilters(date_to=as_of)
    bound = as_of if filters.date_to is None else min(as_of, filters.date_to)
    return SearchFilters(
        date_from=filters.date_from,
        date_to=bound,
        session_from=filters.session_from,
        session_to=filters.session_to,
    )


def known_at(record: Record, as_of: datetime | None) -> bool:
    """Whether ``record`` belongs to the memory as of ``as_of`` (dated at or before it)."""
    return as_of is None or (record.date is not None and record.date <= as_of)


def items_known(
    items: Iterable[IndexItem], dates: Mapping[str, datetime | None], as_of: datetime | None
) -> list[IndexItem]:
    """The items known at ``as_of``: every linked record still stored is dated at or before
    it (``dates``: record id → date, for the linked records still stored), at least one is,
    and the item's own date is not later. A value history or timeline cut this way keeps
    its values and events up to ``as_of``."""
    if as_of is None:
        return list(items)
    out: list[IndexItem] = []
    for item in items:
        linked = [dates[rid] for rid in item.record_ids if rid in dates]
        if not linked or any(d is None or d > as_of for d in linked):
            continue
        day = as_naive_utc(item.date)
        if day is not None and day > as_of:
            continue
        out.append(item)
    return out


def linked_ids(items: Sequence[IndexItem]) -> list[str]:
    """The record ids the items link, each once."""
    return list(dict.fromkeys(rid for item in items for rid in item.record_ids))


def as_of_line(as_of: str) -> str:
    """The View's line that says the date it was built as of (``as_of``: ISO)."""
    when = as_of[:10] if as_of.endswith("T23:59:59.999999") else as_of[:16].replace("T", " ")
    return f"As of {when}: nothing said after it is shown."
