"""Tests of reciprocal rank fusion (paging and pooling: ``test_pooling.py``)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mnemon_langgraph.search._fusion import reciprocal_rank, rrf_fuse


def test_rrf_scores_follow_cormack_formula() -> None:
    fused = rrf_fuse([["a", "b", "c"], ["c", "a"]])
    by_key = {f.key: f for f in fused}
    assert by_key["a"].score == pytest.approx(1 / 60 + 1 / 61)
    assert by_key["c"].score == pytest.approx(1 / 62 + 1 / 60)
    assert by_key["b"].score == pytest.approx(1 / 61)
    assert by_key["b"].ranks == (1, None)
    assert [f.key for f in fused] == ["a", "c", "b"]


def test_rrf_custom_k_and_ties_are_deterministic() -> None:
    fused = rrf_fuse([["x", "y"], ["y2", "x2"]], k=1)
    # x and y2 tie (rank 0 each), y and x2 tie (rank 1 each): first appearance breaks ties.
    assert [f.key for f in fused] == ["x", "y2", "y", "x2"]
    assert fused[0].score == pytest.approx(1.0)


def test_rrf_empty_and_duplicates() -> None:
    assert rrf_fuse([]) == []
    assert rrf_fuse([[], []]) == []
    fused = rrf_fuse([["a", "a", "b"]])
    assert fused[0].key == "a" and fused[0].ranks == (0,)
    assert fused[0].score == pytest.approx(reciprocal_rank(0))


@given(st.lists(st.lists(st.integers(0, 30), unique=True, max_size=15), max_size=4))
def test_rrf_is_sorted_and_complete(rankings: list[list[int]]) -> None:
    fused = rrf_fuse(rankings)
    keys = [f.key for f in fused]
    assert sorted(keys) == sorted({x for r in rankings for x in r})
    scores = [f.score for f in fused]
    assert scores == sorted(scores, reverse=True)


def _reference_rrf(rankings, k=60, weights=None):  # type: ignore[no-untyped-def]
    """The formula as first written: a reading of the paper, not tuned for speed."""
    weights = [1.0] * len(rankings) if weights is None else weights
    ranks: dict = {}
    first_seen: dict = {}
    for r, ranking in enumerate(rankings):
        for pos, key in enumerate(ranking):
            slot = ranks.setdefault(key, [None] * len(rankings))
            first_seen.setdefault(key, len(first_seen))
            if slot[r] is None:
                slot[r] = pos
    fused = [
        (
            key,
            sum(
                w * reciprocal_rank(x, k) for x, w in zip(rs, weights, strict=True) if x is not None
            ),
            tuple(rs),
        )
        for key, rs in ranks.items()
    ]
    fused.sort(key=lambda f: (-f[1], min(x for x in f[2] if x is not None), first_seen[f[0]]))
    return fused


@given(
    st.lists(st.lists(st.integers(0, 40), max_size=30), max_size=4),
    st.integers(1, 80),
    st.data(),
)
def test_rrf_equals_the_formula_bit_for_bit(rankings: list[list[int]], k: int, data) -> None:  # type: ignore[no-untyped-def]
    """Keys, scores (exact floats), ranks and order equal a plain reading of the formula,
    with repeated keys, ties and weights (zero included)."""
    weights = data.draw(
        st.none()
        | st.lists(
            st.sampled_from([0.0, 0.5, 1.0, 2.0, 1 / 3]),
            min_size=len(rankings),
            max_size=len(rankings),
        )
    )
    got = [(f.key, f.score, f.ranks) for f in rrf_fuse(rankings, k=k, weights=weights)]
    assert got == _reference_rrf(rankings, k=k, weights=weights)
    limit = data.draw(st.integers(0, 50))
    head = rrf_fuse(rankings, k=k, weights=weights, limit=limit)
    assert [(f.key, f.score, f.ranks) for f in head] == got[:limit]
