"""Reciprocal rank fusion, the one pure function that fuses rankings.

:func:`rrf_fuse` (Cormack, Clarke & Büttcher, "Reciprocal Rank Fusion outperforms Condorcet
and individual Rank Learning Methods", SIGIR 2009): ``score(d) = Σ_r 1 / (k + rank_r(d))``
with ``k = 60``. The embedded backend's hybrid index (:mod:`mnemon_langgraph.store.embedded._index`)
fuses BM25 and vectors with it; the read path's pool (in :mod:`mnemon_langgraph.read._pooling`)
sums the same reciprocal ranks.

Ranks are 0-based everywhere, so the reciprocal rank of the top hit is ``1 / 60``.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

__all__ = ["CANDIDATE_DEPTH", "RRF_K", "Fused", "reciprocal_rank", "rrf_fuse"]

RRF_K = 60
"""The ``k`` of reciprocal rank fusion (Cormack et al. 2009)."""

CANDIDATE_DEPTH = 100
"""Records each retriever contributes to the fusion (raised to ``offset + k`` if larger)."""

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


def rrf_fuse(
    rankings: Sequence[Sequence[K]],
    k: int = RRF_K,
    weights: Sequence[float] | None = None,
    *,
    limit: int | None = None,
) -> list[Fused[K]]:
    """Fuse rankings by reciprocal rank fusion (Cormack et al. 2009).

    ``score(d) = Σ_r w_r / (k + rank_r(d))`` over the rankings ``r`` that contain ``d``
    (0-based ranks; every ``w_r`` is 1 unless ``weights`` says otherwise, the weighted form
    search engines such as Elasticsearch offer). An item repeated within one ranking counts
    at its first position.

    Args:
        rankings: Each a sequence of distinct hashable keys, best first.
        k: The RRF constant (60 in the paper and in Cormack et al.).
        weights: One non-negative weight per ranking (default: all 1).
        limit: Return only the first ``limit`` items of the fused ranking (the same as
            slicing the whole of it; a page's caller builds no items it drops).

    Returns:
        Every key of every ranking, by score descending; ties by best single rank, then by
        first appearance (ranking order, then position) — deterministic for equal inputs.
    """
    if weights is None:
        weights = [1.0] * len(rankings)
    if len(weights) != len(rankings) or any(not w >= 0 for w in weights):
        raise ValueError(f"rrf_fuse: one non-negative weight per ranking, got {weights!r}")
    # Written for speed (the store fuses two rankings of a hundred or more on every search):
    # one dict whose insertion order is the order of first appearance, and one tuple sort
    # key per item. The scores are the formula's terms added in ranking order, as
    # ``sum(w * reciprocal_rank(x, k) ...)`` adds them.
    n = len(rankings)
    ranks: dict[K, list[int | None]] = {}
    for r, ranking in enumerate(rankings):
        for pos, key in enumerate(ranking):
            slot = ranks.get(key)
            if slot is None:
                slot = ranks[key] = [None] * n
            if slot[r] is None:
                slot[r] = pos
    keyed = []
    for seen, (key, rs) in enumerate(ranks.items()):
        score: float = 0
        best = None
        for x, w in zip(rs, weights, strict=True):
            if x is not None:
                score += w * (1.0 / (k + x))
                if best is None or x < best:
                    best = x
        keyed.append((-score, best, seen, key, rs))
    keyed.sort(key=_sort_key)
    if limit is not None:
        keyed = keyed[: max(0, limit)]
    return [Fused(key, -neg, tuple(rs)) for neg, _, _, key, rs in keyed]


def _sort_key(entry: tuple[float, int | None, int, Any, Any]) -> tuple[float, int | None, int]:
    """Score descending, then best single rank, then first appearance (never the key)."""
    return entry[0], entry[1], entry[2]
