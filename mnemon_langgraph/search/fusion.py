"""Pure functions that fuse rankings, cut pages and pool the results of several searches.

* :func:`rrf_fuse` — reciprocal rank fusion (Cormack, Clarke & Büttcher, "Reciprocal Rank
  Fusion outperforms Condorcet and individual Rank Learning Methods", SIGIR 2009):
  ``score(d) = Σ_r 1 / (k + rank_r(d))`` with ``k = 60``.
* :func:`take_page` — a page of search hits: 20 records or 12,000 characters of rendered
  text, whichever comes first, never empty when there are hits (paper §4.2 budgets).
* :func:`build_pool` — merge the pages of several searches into a candidate pool of at most
  48 records: each search first gets an equal quota of its top results, the remaining slots
  go to the highest summed reciprocal rank across searches.

Ranks are 0-based everywhere, so the reciprocal rank of the top hit is ``1 / 60``.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from mnemon_langgraph.types import Record, SearchHit

__all__ = [
    "RRF_K",
    "Fused",
    "PoolEntry",
    "build_pool",
    "reciprocal_rank",
    "rrf_fuse",
    "take_page",
]

RRF_K = 60
"""The ``k`` of reciprocal rank fusion (Cormack et al. 2009)."""

K = TypeVar("K", bound=Hashable)


def reciprocal_rank(rank: int, k: int = RRF_K) -> float:
    """``1 / (k + rank)`` for a 0-based ``rank``."""
    return 1.0 / (k + rank)


@dataclass(frozen=True, slots=True)
class Fused(Generic[K]):
    """One item of a fused ranking.

    Attributes:
        key: The item.
        score: ``Σ 1 / (k + rank)`` over the rankings that contain it.
        ranks: Its 0-based rank in each input ranking (``None`` where absent), in input order.
    """

    key: K
    score: float
    ranks: tuple[int | None, ...]


def rrf_fuse(rankings: Sequence[Sequence[K]], k: int = RRF_K) -> list[Fused[K]]:
    """Fuse rankings by reciprocal rank fusion (Cormack et al. 2009).

    ``score(d) = Σ_r 1 / (k + rank_r(d))`` over the rankings ``r`` that contain ``d``
    (0-based ranks). An item repeated within one ranking counts at its first position.

    Args:
        rankings: Each a sequence of distinct hashable keys, best first.
        k: The RRF constant (60 in the paper and in Cormack et al.).

    Returns:
        Every key of every ranking, by score descending; ties by best single rank, then by
        first appearance (ranking order, then position) — deterministic for equal inputs.
    """
    ranks: dict[K, list[int | None]] = {}
    first_seen: dict[K, int] = {}
    for r, ranking in enumerate(rankings):
        for pos, key in enumerate(ranking):
            slot = ranks.setdefault(key, [None] * len(rankings))
            first_seen.setdefault(key, len(first_seen))
            if slot[r] is None:
                slot[r] = pos
    fused = [
        Fused(key, sum(reciprocal_rank(x, k) for x in rs if x is not None), tuple(rs))
        for key, rs in ranks.items()
    ]
    fused.sort(
        key=lambda f: (-f.score, min(x for x in f.ranks if x is not None), first_seen[f.key])
    )
    return fused


def _rendered(hit: SearchHit) -> str:
    return hit.record.render()


def take_page(
    hits: Sequence[SearchHit],
    *,
    max_records: int = 20,
    max_chars: int = 12_000,
    render: Callable[[SearchHit], str] = _rendered,
) -> list[SearchHit]:
    """The leading hits that fit a page: ``max_records`` or ``max_chars``, whichever first.

    Characters are counted over ``render(hit)`` (the record with its header). The first hit
    is always taken, even if it alone is longer than ``max_chars``.

    Args:
        hits: Hits in ranking order.
        max_records: Most records on a page (paper: 20).
        max_chars: Most characters of rendered text on a page (paper: 12,000).
        render: How a hit is shown (default ``hit.record.render()``).

    Returns:
        A prefix of ``hits`` (empty only when ``hits`` is).
    """
    page: list[SearchHit] = []
    used = 0
    for hit in hits:
        if len(page) >= max(1, max_records):
            break
        size = len(render(hit))
        if page and used + size > max_chars:
            break
        page.append(hit)
        used += size
    return page


@dataclass(slots=True)
class PoolEntry:
    """A record in the candidate pool and where it was found.

    Attributes:
        record: The record.
        found_by: Search index → the record's 0-based rank in that search (``hit.rank``),
            for every search whose page contained it.
        score: Summed reciprocal rank ``Σ 1 / (60 + rank)`` over ``found_by``.
        order: Position in the pool (0-based).
    """

    record: Record
    found_by: dict[int, int] = field(default_factory=dict)
    score: float = 0.0
    order: int = 0

    @property
    def best_search(self) -> int:
        """The search that ranked this record highest (lowest rank; ties: lower index)."""
        return min(self.found_by, key=lambda s: (self.found_by[s], s))

    @property
    def best_rank(self) -> int:
        """The record's best rank over the searches that found it."""
        return min(self.found_by.values())


def build_pool(
    pages: Sequence[Sequence[SearchHit]], *, cap: int = 48, k: int = RRF_K
) -> list[PoolEntry]:
    """Merge the pages of several searches into a pool of at most ``cap`` records.

    1. Quota: each search in turn (in the given order) adds its top results that are not in
       the pool yet, until it has added ``cap // len(pages)`` records or its page is spent.
    2. The remaining slots go to the other records by highest summed reciprocal rank
       ``Σ 1 / (k + rank)`` across the searches that found them (``rank`` = ``hit.rank``).

    Args:
        pages: One sequence of hits per search, best first (several pages of the same
            search may be passed concatenated).
        cap: Most records in the pool (paper: 48).
        k: Reciprocal-rank constant.

    Returns:
        Pool entries by summed reciprocal rank descending, then best rank, then the order in
        which they were selected; ``order`` is set to the final position. Each entry's
        ``found_by`` lists every search that found it, so the read path can page "the search
        that ranked the lead highest" (:attr:`PoolEntry.best_search`).
    """
    entries: dict[str, PoolEntry] = {}
    for s, page in enumerate(pages):
        for hit in page:
            entry = entries.setdefault(hit.record.id, PoolEntry(record=hit.record))
            if s not in entry.found_by or hit.rank < entry.found_by[s]:
                entry.found_by[s] = hit.rank
    for entry in entries.values():
        entry.score = sum(reciprocal_rank(r, k) for r in entry.found_by.values())
    if cap <= 0 or not entries:
        return []
    chosen: dict[str, int] = {}
    quota = cap // len(pages)
    for page in pages:
        added = 0
        for hit in page:
            if added >= quota or len(chosen) >= cap:
                break
            if hit.record.id not in chosen:
                chosen[hit.record.id] = len(chosen)
                added += 1
    if len(chosen) < cap:
        first_seen = {rid: i for i, rid in enumerate(entries)}
        rest = sorted(
            (e for rid, e in entries.items() if rid not in chosen),
            key=lambda e: (-e.score, e.best_rank, first_seen[e.record.id]),
        )
        for entry in rest[: cap - len(chosen)]:
            chosen[entry.record.id] = len(chosen)
    pool = sorted(
        (entries[rid] for rid in chosen),
        key=lambda e: (-e.score, e.best_rank, chosen[e.record.id]),
    )
    for i, entry in enumerate(pool):
        entry.order = i
    return pool
