"""Questions asked as of a date (``--as-of-evidence``): the dates come from the gold labels.

The memory never sees these labels; the evaluation reads them to pick when to ask
(:class:`~mnemon_langgraph.read.state.ReadContext` ``as_of``), then checks that nothing
dated after that moment reached the pool or the View.

* **LongMemEval** knowledge-update questions whose evidence spans two dates (an earlier
  turn holds the old value, a later one the new): asked as of the midpoint between the old
  value's session and the next evidence session. The View should hold the old value's
  evidence turn (:func:`longmemeval_as_of`).
* **LoCoMo**: each question asked as of one day after its last evidence session
  (:func:`locomo_as_of`): all its evidence is known then, so the all-evidence rate should
  stay near the plain run's.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

from mnemon_langgraph.types import Message

__all__ = [
    "after_as_of",
    "as_of_summary",
    "locomo_as_of",
    "longmemeval_as_of",
    "message_dates",
]


def message_dates(messages: Iterable[Message]) -> dict[str, datetime | None]:
    """Message id → its date (what the evaluation knows of each turn)."""
    return {m.id: m.timestamp for m in messages if m.id is not None}


def longmemeval_as_of(
    gold_turns: Sequence[str], dates: Mapping[str, datetime | None]
) -> tuple[datetime, list[str]] | None:
    """``(as_of, old evidence turns)`` of a question whose evidence spans two dates, else
    ``None``: the midpoint between the earliest evidence date and the next one; the old
    evidence is the gold turns of the earliest date."""
    dated = sorted({d for m in gold_turns if (d := dates.get(m)) is not None})
    if len(dated) < 2:
        return None
    old, new = dated[0], dated[1]
    return old + (new - old) / 2, [m for m in gold_turns if dates.get(m) == old]


def locomo_as_of(gold: Sequence[str], dates: Mapping[str, datetime | None]) -> datetime | None:
    """One day after the last evidence turn's date (``None``: no evidence turn is dated)."""
    dated = [d for m in gold if (d := dates.get(m)) is not None]
    return max(dated) + timedelta(days=1) if dated else None


def after_as_of(view: Any, dates: Mapping[str, datetime | None], as_of: datetime) -> dict[str, int]:
    """How many pooled records and View records hold a turn dated after ``as_of`` (or an
    undated turn): both must be 0."""

    def later(ids: Iterable[str]) -> bool:
        return any((d := dates.get(m)) is None or d > as_of for m in ids)

    pool = (getattr(view, "trace", None) or {}).get("pool") or []
    return {
        "pool_after_as_of": sum(later(p.get("message_ids") or []) for p in pool),
        "view_after_as_of": sum(later(r.message_ids) for r in view.records),
    }


def as_of_summary(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any] | None:
    """The as-of figures of a run's rows (``None`` when no row was asked as of a date)."""
    asked = [r for r in rows if r.get("as_of")]
    if not asked:
        return None
    out: dict[str, Any] = {
        "questions": len(asked),
        "pools_with_a_later_record": sum(1 for r in asked if r.get("pool_after_as_of")),
        "views_with_a_later_record": sum(1 for r in asked if r.get("view_after_as_of")),
    }
    old = [r for r in asked if r.get("old_evidence")]
    if old:
        out["old_evidence_shown"] = sum(1 for r in old if r.get("old_evidence_shown"))
        out["old_evidence_questions"] = len(old)
    return out
