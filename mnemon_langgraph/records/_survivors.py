"""Where the survivors of a message deletion go back: the place their records held.

``delete_messages`` deletes every record holding a part of the named messages and writes
the *other* messages of those records again (re-chunked, re-embedded). So that the
conversation keeps its order — the View's neighbour rule and its blocks read positions —
the re-written records take the positions of the records they replace, not the end of the
session. Both backends use the plan made here:

* The deleted records are cut into **runs**: records of one session with no kept record
  between them. A run's survivors are re-chunked together (never with another run's, which
  would pull a later message before the records in between) starting at the run's first
  position.
* A message belongs to the run holding its first piece.
* Normally a run's survivors need no more records than the run had. When they need more
  (the store's ``record_chars`` shrank since, or a re-split came out longer), the records
  after the run are moved down by the difference (:attr:`SurvivorRun.limit`), so
  ``(session, position)`` stays unique and in conversation order.

Pure functions: the backends fetch the kept positions (:func:`kept_ranges`) and do the
writing in their own transaction.
"""

from __future__ import annotations

import bisect
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from mnemon_langgraph.records.schema import rebuild_messages, record_lines
from mnemon_langgraph.types import Message, Record

__all__ = ["SurvivorRun", "kept_ranges", "survivor_runs"]


@dataclass(frozen=True, slots=True)
class SurvivorRun:
    """The survivors of one run of deleted records and the place they go back to.

    Attributes:
        session: The run's session.
        first: Position the first re-written record takes (the run's first position).
        limit: Position of the session's next kept record after the run (``None``: none);
            the re-written records must stay below it, or the kept ones move down.
        messages: The run's surviving messages, in conversation order.
    """

    session: int
    first: int
    limit: int | None
    messages: list[Message]


def kept_ranges(records: Sequence[Record]) -> dict[int, tuple[int, int]]:
    """``session -> (lowest, highest)`` position of the deleted ``records``.

    The caller reads, after deleting them, the positions of the session's kept records
    above ``lowest`` up to ``highest``, plus the first one above ``highest`` (the runs'
    limits), and passes them to :func:`survivor_runs`.
    """
    out: dict[int, tuple[int, int]] = {}
    for rec in records:
        low, high = out.get(rec.session, (rec.position, rec.position))
        out[rec.session] = (min(low, rec.position), max(high, rec.position))
    return out


def survivor_runs(
    records: Sequence[Record], exclude: set[str], kept: Mapping[int, Sequence[int]]
) -> list[SurvivorRun]:
    """Cut the deleted ``records`` into runs and give each its surviving messages.

    Args:
        records: The deleted records, ordered by ``(session, position, seq)``.
        exclude: The message ids that were deleted (left out of the survivors).
        kept: Per session, the sorted positions of its kept records (see
            :func:`kept_ranges`); a session missing here has none.

    Returns:
        The runs that have survivors, in conversation order.
    """
    groups: list[list[Record]] = []
    for rec in records:
        if groups and _same_run(groups[-1][-1], rec, kept.get(rec.session, ())):
            groups[-1].append(rec)
        else:
            groups.append([rec])
    home: dict[str, int] = {}  # message id -> run of its first piece
    for n, group in enumerate(groups):
        for rec in group:
            for mid, _, _, _ in record_lines(rec):
                home.setdefault(mid, n)
    survivors = rebuild_messages(records, exclude=exclude)
    runs: list[SurvivorRun] = []
    for n, group in enumerate(groups):
        mine = [m for m in survivors if home.get(m.id or "") == n]
        if not mine:
            continue
        session = group[0].session
        positions = kept.get(session, ())
        after = bisect.bisect_right(positions, group[-1].position)
        limit = positions[after] if after < len(positions) else None
        runs.append(SurvivorRun(session, group[0].position, limit, mine))
    return runs


def _same_run(prev: Record, rec: Record, positions: Sequence[int]) -> bool:
    """Whether ``rec`` follows ``prev`` with no kept record of their session between them."""
    if prev.session != rec.session:
        return False
    return bisect.bisect_right(positions, prev.position) == bisect.bisect_left(
        positions, rec.position
    )
