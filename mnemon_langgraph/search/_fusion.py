"""Reciprocal rank fusion, the one pure function that fuses rankings.

:func:`rrf_fuse` (Cormack, Clarke & Büttcher, "Reciprocal Rank Fusion outperforms Condorcet
and individual Rank Learning Methods", SIGIR 2009): ``score(d) = Σ_r 1 / (k + rank_r(d))``
with ``k = 60``. The embedded backend's hybrid index (:mod:`mnemon_langgraph.store.embedded._index`)
fuses BM25 and vectors with it; the read path's pool (in :mod:`mnemon_langgraph.read._pooling`)
sums the same reciprocal ranks.

Ranks are 0-based everywhere, so the reciprocal rank of the top hit is ``1 / 60``.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterator, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

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

    Returns:
        Every key of every ranking, by score descending; ties by best single rank, then by
        first appearance (ranking order, then position) — deterministic for equal inputs.
    """
    if weights is None:
        weights = [1.0] * len(rankings)
    if len(weights) != len(rankings) or any(not w >= 0 for w in weights):
        raise ValueError(f"rrf_fuse: one non-negative weight per ranking, got {weights!r}")
    ranks: dict[K, list[int | None]] = {}
    first_seen: dict[K, int] = {}
    for r, ranking in enumerate(rankings):
        for pos, key in enumerate(ranking):
            slot = ranks.setdefault(key, [None] * len(rankings))
            first_seen.setdefault(key, len(first_seen))
            if slot[r] is None:
                slot[r] = pos
    fused = [
        Fused(key, sum(w * reciprocal_rank(x, k) for x, w in _present(rs, weights)), tuple(rs))
        for key, rs in ranks.items()
    ]
    fused.sort(
        key=lambda f: (-f.score, min(x for x in f.ranks if x is not None), first_seen[f.key])
    )
    return fused


def _present(ranks: Sequence[int | None], weights: Sequence[float]) -> Iterator[tuple[int, float]]:
    """Each rank an item has, with its ranking's weight."""
    return ((x, w) for x, w in zip(ranks, weights, strict=True) if x is not None)
