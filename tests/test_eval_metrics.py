"""Tests of the pure metric functions: AUC, ECI, Wilson, aggregation."""

from __future__ import annotations

import itertools
import random

import pytest

from mnemon_langgraph.eval.metrics import (
    aggregate,
    effective_cost_index,
    roc_auc,
    wilson_interval,
)


def _brute_auc(scores: list[float], labels: list[bool]) -> float:
    pos = [s for s, lab in zip(scores, labels, strict=True) if lab]
    neg = [s for s, lab in zip(scores, labels, strict=True) if not lab]
    total = sum(1.0 if p > n else 0.5 if p == n else 0.0 for p, n in itertools.product(pos, neg))
    return total / (len(pos) * len(neg))


def test_auc_perfect_inverse_and_constant() -> None:
    assert roc_auc([0.9, 0.8, 0.1, 0.2], [True, True, False, False]) == 1.0
    assert roc_auc([0.1, 0.2, 0.9, 0.8], [True, True, False, False]) == 0.0
    assert roc_auc([0.5, 0.5, 0.5], [True, False, False]) == 0.5


def test_auc_with_ties_matches_pairwise_definition() -> None:
    scores = [0.9, 0.5, 0.5, 0.3, 0.5, 0.1]
    labels = [True, True, False, True, False, False]
    # pairs: pos {0.9, 0.5, 0.3} vs neg {0.5, 0.5, 0.1}
    assert roc_auc(scores, labels) == pytest.approx(_brute_auc(scores, labels))
    assert roc_auc(scores, labels) == pytest.approx((3 + 2 + 1) / 9)


def test_auc_random_agrees_with_brute_force() -> None:
    rng = random.Random(7)
    for _ in range(30):
        n = rng.randint(2, 25)
        scores = [rng.choice([0.0, 0.25, 0.5, 0.75, 1.0]) for _ in range(n)]
        labels = [rng.random() < 0.4 for _ in range(n)]
        if all(labels) or not any(labels):
            assert roc_auc(scores, labels) is None
            continue
        assert roc_auc(scores, labels) == pytest.approx(_brute_auc(scores, labels))


def test_auc_undefined_and_length_mismatch() -> None:
    assert roc_auc([0.1, 0.2], [True, True]) is None
    assert roc_auc([], []) is None
    with pytest.raises(ValueError):
        roc_auc([0.1], [True, False])


def test_eci() -> None:
    assert effective_cost_index(0.917, 3800, 21613) == pytest.approx(0.083 + 3800 / 21613)
    assert effective_cost_index(1.0, 0, 100) == 0.0
    with pytest.raises(ValueError):
        effective_cost_index(0.5, 10, 0)
    with pytest.raises(ValueError):
        effective_cost_index(1.5, 10, 10)


def test_wilson_interval_contains_estimate() -> None:
    lo, hi = wilson_interval(8, 10)
    assert 0.0 < lo < 0.8 < hi < 1.0
    assert wilson_interval(0, 0) == (0.0, 1.0)


def test_aggregate_by_category_and_unscored() -> None:
    rows = [
        {"category": 1, "all_hit": True, "chars": 100},
        {"category": 1, "all_hit": False, "chars": 300},
        {"category": 4, "all_hit": True, "chars": 200},
        {"category": 5, "all_hit": False, "chars": 1000},
        {"category": 4, "all_hit": None, "chars": 50},
    ]
    out = aggregate(rows, ["all_hit", "chars"])
    assert out["overall"]["n"] == 4
    assert out["overall"]["all_hit"] == pytest.approx(2 / 3)
    assert out["overall"]["chars"] == pytest.approx(650 / 4)
    assert len(out["overall"]["all_hit_ci95"]) == 2
    assert out["by_category"]["1"]["all_hit"] == 0.5
    assert out["by_category"]["1"]["name"] == "multi-hop"
    assert out["by_category"]["5"]["all_hit"] == 0.0
    assert out["unscored"]["n"] == 1
    assert out["unscored"]["chars"] == 1000
    assert "chars_ci95" not in out["overall"]
