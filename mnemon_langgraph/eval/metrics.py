"""Pure metric functions of the evaluation: ROC AUC, ECI, Wilson intervals, aggregation.

Nothing here touches a model, a file or the clock, so every function is tested directly.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

__all__ = [
    "CATEGORY_NAMES",
    "SCORED_CATEGORIES",
    "aggregate",
    "effective_cost_index",
    "mean",
    "roc_auc",
    "wilson_interval",
]

CATEGORY_NAMES: dict[int, str] = {
    1: "multi-hop",
    2: "temporal",
    3: "open-domain",
    4: "single-hop",
    5: "adversarial",
}
"""LoCoMo question categories as the literature names them."""

SCORED_CATEGORIES: tuple[int, ...] = (1, 2, 3, 4)
"""Categories scored overall; 5 (adversarial, unanswerable) is reported separately."""


def roc_auc(scores: Sequence[float], labels: Sequence[bool]) -> float | None:
    """ROC AUC of ``scores`` for ``labels`` by the Mann–Whitney U statistic.

    Ties count one half (average ranks), so a constant score gives 0.5. This is the
    probability that a random positive scores above a random negative.

    Args:
        scores: One score per item (higher = more likely positive).
        labels: ``True`` for positives.

    Returns:
        The AUC in ``[0, 1]``, or ``None`` when there are no positives or no negatives.

    Raises:
        ValueError: If the sequences differ in length.
    """
    if len(scores) != len(labels):
        raise ValueError(f"{len(scores)} scores but {len(labels)} labels")
    n_pos = sum(1 for lab in labels if lab)
    n_neg = len(labels) - n_pos
    if n_pos == 0 or n_neg == 0:
        return None
    order = sorted(range(len(scores)), key=lambda i: scores[i])
    ranks = [0.0] * len(scores)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and scores[order[j + 1]] == scores[order[i]]:
            j += 1
        average = (i + j) / 2 + 1  # 1-based average rank of the tie group
        for t in range(i, j + 1):
            ranks[order[t]] = average
        i = j + 1
    rank_sum = sum(r for r, lab in zip(ranks, labels, strict=True) if lab)
    u = rank_sum - n_pos * (n_pos + 1) / 2
    return u / (n_pos * n_neg)


def effective_cost_index(accuracy: float, context_tokens: float, full_tokens: float) -> float:
    """Effective cost index, paper Eq. 2: ``(1 − a) + c / c_full`` (lower is better).

    Args:
        accuracy: Share of questions answered correctly, in ``[0, 1]``.
        context_tokens: Mean tokens of context sent to the answering model per question.
        full_tokens: Tokens of the full conversation (the cost of one full-context answer).

    Raises:
        ValueError: If ``full_tokens`` is not positive or ``accuracy`` is outside ``[0, 1]``.
    """
    if full_tokens <= 0:
        raise ValueError("full_tokens must be positive")
    if not 0.0 <= accuracy <= 1.0:
        raise ValueError(f"accuracy must be in [0, 1], got {accuracy}")
    return (1.0 - accuracy) + context_tokens / full_tokens


def wilson_interval(successes: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """Wilson score interval of a proportion (95% by default); ``(0, 1)`` when ``n == 0``."""
    if n == 0:
        return (0.0, 1.0)
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return (max(0.0, centre - half), min(1.0, centre + half))


def mean(values: Iterable[float]) -> float | None:
    """Arithmetic mean, ``None`` for no values."""
    items = list(values)
    return sum(items) / len(items) if items else None


def _summarize(rows: Sequence[Mapping[str, Any]], fields: Sequence[str]) -> dict[str, Any]:
    out: dict[str, Any] = {"n": len(rows)}
    for name in fields:
        values = [row[name] for row in rows if row.get(name) is not None]
        if not values:
            out[name] = None
            continue
        m = mean(float(v) for v in values)
        out[name] = m
        if all(isinstance(v, bool) for v in values):
            lo, hi = wilson_interval(sum(1 for v in values if v), len(values))
            out[f"{name}_ci95"] = [lo, hi]
    return out


def aggregate(
    rows: Sequence[Mapping[str, Any]],
    fields: Sequence[str],
    *,
    category_key: str = "category",
    scored: Sequence[Any] = SCORED_CATEGORIES,
) -> dict[str, Any]:
    """Means of ``fields`` overall (scored categories only), by category and for the rest.

    Booleans average to a share and get a Wilson 95% interval (``<field>_ci95``). A row
    whose field is ``None`` is left out of that field's mean only.

    Args:
        rows: One mapping per question.
        fields: Names of numeric or boolean fields to average.
        category_key: Field holding the question's category.
        scored: Categories that count in ``overall``.

    Returns:
        ``{"overall": {...}, "by_category": {"1": {...}, ...}, "unscored": {...}}``; each
        summary has ``n`` (rows) and one entry per field.
    """
    scored_set = set(scored)
    overall = [r for r in rows if r.get(category_key) in scored_set]
    unscored = [r for r in rows if r.get(category_key) not in scored_set]
    categories = sorted({r.get(category_key) for r in rows}, key=lambda c: (c is None, c))
    by_category = {
        str(c): {
            "name": CATEGORY_NAMES.get(c, str(c)) if isinstance(c, int) else str(c),
            **_summarize([r for r in rows if r.get(category_key) == c], fields),
        }
        for c in categories
    }
    return {
        "overall": _summarize(overall, fields),
        "by_category": by_category,
        "unscored": _summarize(unscored, fields),
    }
