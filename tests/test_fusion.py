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
