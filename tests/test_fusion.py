"""Tests of the pure fusion, paging and pooling functions."""

from __future__ import annotations

from datetime import datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mnemon_langgraph.search.fusion import build_pool, reciprocal_rank, rrf_fuse, take_page
from mnemon_langgraph.types import Record, SearchHit


def _rec(rid: str, text: str = "x") -> Record:
    return Record(
        id=rid,
        namespace=("t",),
        session=1,
        date=datetime(2024, 1, 1),
        position=0,
        speakers=("a",),
        message_ids=(rid,),
        text=text,
    )


def _hits(ids: list[str], *, text: str = "x") -> list[SearchHit]:
    return [SearchHit(_rec(i, text), rank=r, score=1.0 / (60 + r)) for r, i in enumerate(ids)]


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


def test_take_page_record_limit() -> None:
    page = take_page(_hits([f"r{i}" for i in range(30)]))
    assert [h.record.id for h in page] == [f"r{i}" for i in range(20)]


def test_take_page_char_limit_and_at_least_one() -> None:
    hits = _hits(["a", "b", "c"], text="y" * 5000)
    size = len(hits[0].record.render())
    page = take_page(hits, max_chars=2 * size)
    assert [h.record.id for h in page] == ["a", "b"]
    page = take_page(hits, max_chars=10)
    assert [h.record.id for h in page] == ["a"]
    assert take_page([]) == []


def test_build_pool_quota_then_summed_rr() -> None:
    s0 = _hits([f"a{i}" for i in range(10)])
    s1 = _hits([f"b{i}" for i in range(10)])
    # "a5" also appears at rank 0 of a third search, so its summed RR is highest of the rest.
    s2 = _hits(["a5", "c1", "c2"])
    pool = build_pool([s0, s1, s2], cap=7)
    ids = [e.record.id for e in pool]
    assert len(ids) == 7
    # Quota 7 // 3 = 2: a0, a1 from s0; b0, b1 from s1; a5, c1 from s2; then 1 by summed RR.
    assert {"a0", "a1", "b0", "b1", "a5", "c1"} <= set(ids)
    extra = (set(ids) - {"a0", "a1", "b0", "b1", "a5", "c1"}).pop()
    # a2, b2 and c2 tie (one search each, rank 2): first appearance picks a2.
    assert extra == "a2"
    a5 = next(e for e in pool if e.record.id == "a5")
    assert a5.found_by == {0: 5, 2: 0}
    assert a5.best_search == 2 and a5.best_rank == 0
    assert a5.score == pytest.approx(1 / 65 + 1 / 60)
    assert [e.order for e in pool] == list(range(7))
    scores = [e.score for e in pool]
    assert scores == sorted(scores, reverse=True)


def test_build_pool_skips_duplicates_in_quota() -> None:
    s0 = _hits(["x", "y", "z"])
    s1 = _hits(["x", "y", "w", "v"])
    pool = build_pool([s0, s1], cap=4)
    ids = {e.record.id for e in pool}
    # s0 takes x, y; s1's quota of 2 skips x and y (already pooled) and takes w, v.
    assert ids == {"x", "y", "w", "v"}
    assert next(e for e in pool if e.record.id == "x").found_by == {0: 0, 1: 0}


def test_build_pool_cap_and_empty() -> None:
    pages = [_hits([f"s{s}-{i}" for i in range(40)]) for s in range(5)]
    pool = build_pool(pages)
    assert len(pool) == 48
    assert len({e.record.id for e in pool}) == 48
    assert build_pool([]) == []
    assert build_pool([[], []]) == []
    # deterministic
    assert [e.record.id for e in build_pool(pages)] == [e.record.id for e in pool]
