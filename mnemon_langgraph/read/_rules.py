"""The rules that connect System 2 and System 1 (Mnemon §4.3, "The loop").

Pure functions, no I/O. They read **only** the order of judgments and the decision
``p >= 1/2`` — never a probability's value otherwise — so replacing every ``p`` by
``h(p)`` for a strictly increasing ``h`` with ``h(1/2) = 1/2`` changes no action
(paper, Proposition 1; ``tests/test_rules_calibration.py`` checks it).

Each open need gets one action per round:

* a single need (``NEED``) is **met** once one record satisfies it;
* a need for every instance (``ALL``, or a need two records satisfy) **pages** each search
  that found a new positive, one per round, until no search does — then it is met;
* a need no record satisfies yet follows its **lead**, the record the need table ranks
  highest: first page the search that ranked the lead highest, then ask the planner for
  one new search, then drop the need.

Beyond the paper (``follow > 0``; ``ReadSettings.follow_positives``, 2 by default): each
need's first ``follow`` *new* positives are **followed** — the next round searches with
the record's own text (around it in its session, and/or across the memory). A question
whose answer spans records ("what did she do after the race?") has parts that share the
found part's people and words more than the question's; on the dev conversations most
gold turns no planned search pooled sat beside, or shared words with, a record judged to
satisfy the need (docs/results/misses.md).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Literal, TypeAlias

__all__ = [
    "THRESHOLD",
    "Action",
    "DropNeed",
    "FollowRecord",
    "Judgment",
    "Need",
    "NeedKind",
    "NeedStatus",
    "NewSearch",
    "PageSearch",
    "decide",
    "is_yes",
    "rank_by",
    "should_continue",
]

THRESHOLD = 0.5
"""The one number the rules compare a probability with."""

NeedKind: TypeAlias = Literal["NEED", "ALL"]
Proposition: TypeAlias = Literal["screen", "needed", "stale", "satisfies", "item_needed"]


def is_yes(p: float) -> bool:
    """System 1's decision: ``p >= 1/2``."""
    return p >= THRESHOLD


@dataclass(frozen=True, slots=True)
class Need:
    """One thing the reply needs, as the planner named it.

    Attributes:
        index: Position in the need plan (0-based).
        text: What is needed, in words.
        kind: ``NEED`` (one record answers it) or ``ALL`` (every instance: a count, a
            total, a list).
    """

    index: int
    text: str
    kind: NeedKind = "NEED"


@dataclass(frozen=True, slots=True)
class Judgment:
    """One System 1 answer: P(yes) for a proposition about one record or item.

    Attributes:
        target_id: Record id (or item id for ``item_needed``).
        proposition: ``screen``, ``needed``, ``stale`` (no longer current),
            ``satisfies`` (need ``need_index``) or ``item_needed``.
        p: Probability of yes.
        need_index: The need, for ``satisfies``.
        round: Round (1-based) of the wave that produced it.
    """

    target_id: str
    proposition: str
    p: float
    need_index: int | None = None
    round: int = 1


@dataclass(frozen=True, slots=True)
class NeedStatus:
    """Where a need stands after the rounds so far.

    Attributes:
        index: The need's index.
        state: ``open``, ``met`` or ``dropped``.
        lead_step: For a need no record satisfies: 0 = nothing tried, 1 = the lead's
            search was paged, 2 = the planner was asked for a new search.
        positives: Ids of records seen satisfying the need so far, in the order found.
    """

    index: int
    state: Literal["open", "met", "dropped"] = "open"
    lead_step: int = 0
    positives: tuple[str, ...] = field(default=())


@dataclass(frozen=True, slots=True)
class PageSearch:
    """Fetch the next page of search ``search_index`` from ``offset``."""

    search_index: int
    offset: int
    need_index: int
    reason: str
    kind: Literal["page"] = "page"


@dataclass(frozen=True, slots=True)
class NewSearch:
    """Ask the planner for one new search for need ``need_index``."""

    need_index: int
    reason: str
    kind: Literal["new_search"] = "new_search"


@dataclass(frozen=True, slots=True)
class DropNeed:
    """Give up on need ``need_index``."""

    need_index: int
    reason: str
    kind: Literal["drop"] = "drop"


@dataclass(frozen=True, slots=True)
class FollowRecord:
    """Search with positive record ``record_id``'s text, for need ``need_index``."""

    record_id: str
    need_index: int
    reason: str
    kind: Literal["follow"] = "follow"


Action: TypeAlias = PageSearch | NewSearch | DropNeed | FollowRecord


def rank_by(
    judgments: Iterable[Judgment],
    proposition: str,
    *,
    need_index: int | None = None,
    order: Sequence[str] = (),
) -> list[tuple[str, float]]:
    """Targets judged on ``proposition``, highest ``p`` first (latest judgment wins).

    Ties keep ``order`` (e.g. the pool's fused order), then first judgment order — so the
    result depends on the order of the ``p`` values only.
    """
    latest: dict[str, float] = {}
    for j in judgments:
        if j.proposition == proposition and (need_index is None or j.need_index == need_index):
            latest[j.target_id] = j.p
    position = {rid: i for i, rid in enumerate(order)}
    first = {rid: i for i, rid in enumerate(latest)}
    return sorted(
        latest.items(),
        key=lambda kv: (-kv[1], position.get(kv[0], len(position)), first[kv[0]]),
    )


def _best_search(
    ids: Sequence[str],
    found: Mapping[int, Mapping[str, int]],
    exhausted: set[int],
) -> tuple[int, int] | None:
    """The (search, rank) that ranked any of ``ids`` highest, over searches not exhausted.

    Ties on rank go to the search that found more of ``ids``, then to the lower index.
    """
    best: tuple[int, int, int] | None = None  # (rank, -count, search)
    for search, ranks in found.items():
        if search in exhausted:
            continue
        hits = [ranks[i] for i in ids if i in ranks]
        if not hits:
            continue
        key = (min(hits), -len(hits), search)
        if best is None or key < best:
            best = key
    return None if best is None else (best[2], best[0])


@dataclass(frozen=True, slots=True)
class _Searches:
    """What the rules know of the searches: who found what at which rank, and what is left."""

    found: Mapping[int, Mapping[str, int]]
    next_offset: Mapping[int, int]
    exhausted: set[int]

    def best(self, ids: Sequence[str]) -> tuple[int, int] | None:
        return _best_search(ids, self.found, self.exhausted)


def _follow_positives(
    need: Need,
    status: NeedStatus,
    positives: Sequence[str],
    new: Sequence[str],
    searches: _Searches,
    follow: int = 0,
) -> tuple[list[Action], NeedStatus]:
    """A need some record satisfies: met, or page the search that found new positives.

    Either way its first ``follow`` new positives (best first) are followed.
    """
    seen = status.positives + tuple(new)
    followed: list[Action] = [
        FollowRecord(
            rid,
            need.index,
            f"need {need.index}: follow its new positive {rid} (a search with its text)",
        )
        for rid in new[: max(0, follow)]
    ]
    many = need.kind == "ALL" or len(positives) >= 2
    choice = searches.best(new) if many else None
    if choice is None:
        return followed, replace(status, state="met", positives=seen)
    search, rank = choice
    why = "ALL need" if need.kind == "ALL" else "two records satisfy it"
    action = PageSearch(
        search,
        searches.next_offset.get(search, 0),
        need.index,
        f"need {need.index} ({why}): search {search} found {len(new)} new "
        f"positive(s), best at rank {rank}; page it",
    )
    return [action, *followed], replace(status, positives=seen)


def _follow_lead(
    need: Need,
    status: NeedStatus,
    ranked: Sequence[tuple[str, float]],
    searches: _Searches,
) -> tuple[Action, NeedStatus]:
    """A need no record satisfies: page its lead's search, then a new search, then drop."""
    step = status.lead_step
    if step == 0:
        lead = ranked[0][0] if ranked else None
        choice = searches.best([lead]) if lead is not None else None
        if choice is not None:
            search, rank = choice
            action = PageSearch(
                search,
                searches.next_offset.get(search, 0),
                need.index,
                f"need {need.index} unmet: its lead {lead} was ranked {rank} by "
                f"search {search}; page that search",
            )
            return action, replace(status, lead_step=1)
        step = 1
    if step == 1:
        why = (
            "after paging its lead's search"
            if status.lead_step == 1
            else "and it has no lead in a search with pages left"
        )
        ask = NewSearch(
            need.index, f"need {need.index} unmet {why}; ask the planner for one new search"
        )
        return ask, replace(status, lead_step=2)
    drop = DropNeed(need.index, f"need {need.index} unmet after a page and a new search")
    return drop, replace(status, state="dropped", lead_step=3)


def decide(
    needs: Sequence[Need],
    statuses: Sequence[NeedStatus],
    judgments: Sequence[Judgment],
    *,
    found: Mapping[int, Mapping[str, int]],
    next_offset: Mapping[int, int],
    exhausted: Iterable[int] = (),
    order: Sequence[str] = (),
    follow: int = 0,
) -> tuple[list[Action], list[NeedStatus]]:
    """One round of the loop: an action per open need, and the needs' new statuses.

    Args:
        needs: The planner's needs.
        statuses: Their statuses after the previous round (same order as ``needs``).
        judgments: Every judgment so far, in the order made.
        found: For each search index, the records it returned and at which rank (0-based).
        next_offset: For each search index, where its next page starts.
        exhausted: Searches that have no further pages.
        order: The pool's order, to break ties between equal ``p`` deterministically.
        follow: New positives of each need to follow (:class:`FollowRecord`); 0: none.

    Returns:
        The actions (one per open need, plus its :class:`FollowRecord` s) and the
        updated statuses.
    """
    searches = _Searches(found, next_offset, set(exhausted))
    by_index = {s.index: s for s in statuses}
    actions: list[Action] = []
    out: list[NeedStatus] = []
    for need in needs:
        status = by_index.get(need.index, NeedStatus(need.index))
        if status.state != "open":
            out.append(status)
            continue
        ranked = rank_by(judgments, "satisfies", need_index=need.index, order=order)
        positives = [rid for rid, p in ranked if is_yes(p)]
        new = [rid for rid in positives if rid not in status.positives]
        if positives:
            more, status = _follow_positives(need, status, positives, new, searches, follow)
            actions.extend(more)
        else:
            action, status = _follow_lead(need, status, ranked, searches)
            actions.append(action)
        out.append(status)
    return actions, out


def should_continue(actions: Sequence[Action], rounds_done: int, max_rounds: int) -> bool:
    """Whether another round runs: some action fetches records and rounds remain."""
    fetching = any(isinstance(a, PageSearch | NewSearch | FollowRecord) for a in actions)
    return fetching and rounds_done < max_rounds
