"""The local judge's linear scorer: weights over :data:`~._features.FEATURES`, with provenance.

A :class:`JudgeWeights` turns a feature row ``x`` into one score ``s = w·x + b``, and the
turn's :class:`Calibration` turns that into ``p = σ(k · t(s))`` (``p = σ(s)`` without it).
Within a turn every probability the local judge gives is therefore a strictly increasing
function of one score per (record, proposition), with ``p >= 1/2`` exactly when ``s >= 0``
— the calibration-invariance property the read path relies on (paper §4: rules compare p
with 1/2 and rank by p).

Learned weights live in ``mnemon_langgraph/data/judge_weights.json``, written by
``mnemon train judge`` with their provenance: the training command, the data, the date and
the leave-one-conversation-out figures. They are shipped only when their cross-validated
figures beat the hand formula's; without that file the judge uses :func:`hand_weights`,
the hand-set formula (``s = 0.45·sem + 0.55·lex + date and time bonuses``, cut at 0.30,
scale 0.06), which gives the retrieval-evidence features weight 0. On LoCoMo dev, learned weights
over all features (pointwise or pairwise, see :func:`fit_pairwise`) have not beaten it under
leave-one-conversation-out cross-validation of the View (docs/results/log.md), so none ship.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from mnemon_langgraph.errors import ConfigurationError
from mnemon_langgraph.judges._features import FEATURES

__all__ = [
    "Calibration",
    "JudgeWeights",
    "default_weights",
    "fit_logistic",
    "fit_pairwise",
    "hand_weights",
    "intercept_for_rate",
]

WHEN_TIME_BONUS = 0.05
"""Bonus of a record with a time expression when the message asks *when* (:func:`hand_weights`)."""
WEIGHTS_PATH = Path(__file__).resolve().parent.parent / "data" / "judge_weights.json"


@dataclass(frozen=True)
class JudgeWeights:
    """A linear score over named features and the sigmoid that makes it a probability.

    Attributes:
        features: Column names (must be :data:`FEATURES`, in order).
        coef: One weight per feature.
        intercept: The bias ``b``.
        provenance: How the weights were made (command, data, date, CV figures).
    """

    features: tuple[str, ...]
    coef: tuple[float, ...]
    intercept: float
    provenance: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if tuple(self.features) != FEATURES:
            raise ConfigurationError(
                f"judge weights name features {list(self.features)}, this version computes "
                f"{list(FEATURES)}; retrain with `mnemon train judge`"
            )
        if len(self.coef) != len(FEATURES) or not all(math.isfinite(c) for c in self.coef):
            raise ConfigurationError("judge weights: one finite weight per feature expected")

    def scores(self, rows: np.ndarray) -> np.ndarray:
        """``w·x + b`` per row."""
        return rows @ np.asarray(self.coef, dtype=np.float64) + self.intercept

    def probabilities(self, rows: np.ndarray) -> np.ndarray:
        """``σ(w·x + b)`` per row (clipped so that it never overflows)."""
        return 1.0 / (1.0 + np.exp(-np.clip(self.scores(rows), -60.0, 60.0)))

    def to_json(self) -> dict[str, Any]:
        """The JSON form written as package data."""
        return {
            "features": list(self.features),
            "coef": [round(c, 6) for c in self.coef],
            "intercept": round(self.intercept, 6),
            "provenance": dict(self.provenance),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> JudgeWeights:
        """Parse :meth:`to_json` output; a malformed file is a :class:`ConfigurationError`."""
        try:
            return cls(
                features=tuple(str(f) for f in data["features"]),
                coef=tuple(float(c) for c in data["coef"]),
                intercept=float(data["intercept"]),
                provenance=dict(data.get("provenance") or {}),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise ConfigurationError(f"judge weights: malformed ({exc})") from exc

    @classmethod
    def load(cls, path: str | Path) -> JudgeWeights:
        """Read a weights file written by ``mnemon train judge``."""
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise ConfigurationError(f"judge weights {path}: cannot read ({exc})") from exc
        return cls.from_json(data)


@dataclass(frozen=True)
class Calibration:
    """How one turn's scores become probabilities: ``p = σ(k · t(s))``, same order, same sign.

    ``s = w·x + b`` ranks the records of one turn; the read path reads only that order and
    ``p >= 1/2`` (``s >= 0``). But a p is also read *across* turns and propositions — the
    judge's pooled ROC AUC (paper §6.5) ranks every pooled record of every question by its
    P(needed), a screened-out record by its *screen* p — and there the plain ``σ(s)`` is
    miscalibrated in three ways on LoCoMo dev (docs/results/log.md, "The judge's p is
    calibrated"):

    * **How much a score says grows with the question's words.** The lexical evidence is
      the share of the question's words a record covers; over ``n`` words its noise falls
      like ``1/√n``, so the same score is stronger evidence on an eight-word question than
      on a two-word one. ``k = (n / pivot_terms) ** exponent`` (``n``: distinct content
      words of the latest message, at least 1; ``exponent`` 1/2 is that square root) keeps
      a question of ``pivot_terms`` words (the median) at ``σ(s)``.
    * **A screen "no" is evidence too.** Records the screen rejects were needed less
      often than needed-judged records of the same score, so a negative *screen* score is
      moved down by ``screen_no_shift``
      (``t(s) = s − shift`` for ``s < 0``, else ``s``).
    * **A "no" says less when the reply needs every instance.** For a need of kind ``ALL``
      (a list, a count) the instances rarely repeat the question's words ("what activities
      …" is answered by "we went camping"), so a low score is weaker evidence that a record
      is not needed; such a turn's negative scores are multiplied by ``all_no_scale``
      (after the screen shift).

    Within a turn ``k`` is one positive constant (every call of a turn judges the same
    latest message and needs) and ``t`` is strictly increasing with ``t(0) = 0``, so each p stays a
    strictly increasing function of one score, every ``p >= 1/2`` decision and every order
    is unchanged, and the read path's actions and the View are exactly what ``σ(s)`` gives
    (calibration invariance, paper Proposition 1). The shift and the scale were chosen by
    leave-one-conversation-out cross-validation of the pooled AUC, the exponent fixed at
    the ``1/2`` the argument above gives (``benchmarks/judge_calibration_cv.py``).

    Attributes:
        exponent: Power of ``n / pivot_terms`` (0 turns the scale off).
        pivot_terms: Word count whose scores keep their scale.
        screen_no_shift: Subtracted from negative screen scores (0 turns it off).
        all_no_scale: Multiplies the negative scores of a turn with an ``ALL`` need
            (``0 < x``; 1 turns it off).
    """

    exponent: float = 0.5
    pivot_terms: int = 5
    screen_no_shift: float = 2.0
    all_no_scale: float = 0.6

    def __post_init__(self) -> None:
        if not (math.isfinite(self.exponent) and self.exponent >= 0):
            raise ConfigurationError(f"calibration exponent must be >= 0, got {self.exponent}")
        if self.pivot_terms < 1:
            raise ConfigurationError(
                f"calibration pivot_terms must be >= 1, got {self.pivot_terms}"
            )
        if not (math.isfinite(self.screen_no_shift) and self.screen_no_shift >= 0):
            raise ConfigurationError(
                f"calibration screen_no_shift must be >= 0, got {self.screen_no_shift}"
            )
        if not (math.isfinite(self.all_no_scale) and self.all_no_scale > 0):
            raise ConfigurationError(
                f"calibration all_no_scale must be > 0, got {self.all_no_scale}"
            )

    def factor(self, n_terms: int) -> float:
        """``k``: the turn's scale for a latest message of ``n_terms`` distinct content words."""
        return float((max(1, n_terms) / self.pivot_terms) ** self.exponent)

    def apply(
        self, scores: np.ndarray, *, n_terms: int, screen: bool, every_instance: bool = False
    ) -> np.ndarray:
        """``k · t(s)`` of one group's scores.

        Args:
            scores: The group's scores ``s``.
            n_terms: Distinct content words of the turn's latest message.
            screen: The group answers *screen*.
            every_instance: The turn has a need of kind ``ALL``.
        """
        out = np.asarray(scores, dtype=np.float64)
        if screen and self.screen_no_shift:
            out = np.where(out < 0, out - self.screen_no_shift, out)
        if every_instance and self.all_no_scale != 1:
            out = np.where(out < 0, out * self.all_no_scale, out)
        return out * self.factor(n_terms)


def hand_weights() -> JudgeWeights:
    """The hand-set formula as weights: ``σ((0.45·sem + 0.55·lex + bonuses − 0.30) / 0.06)``.

    The bonuses: the record was said on the day (+0.15) or in the month (+0.05) the message
    names, and — for a *when* question — the record holds a time expression (+0.05; chosen by
    leave-one-conversation-out cross-validation, docs/results/log.md, "What was fitted": a
    *when* question is answered by the turn that says when, which the question's words alone
    rank no higher than the turns that merely mention the event).
    """
    scale = 0.06
    by_name = {
        "sem": 0.45,
        "lex": 0.55,
        "date_day": 0.15,
        "date_month": 0.05,
        "when_time": WHEN_TIME_BONUS,
    }
    return JudgeWeights(
        features=FEATURES,
        coef=tuple(by_name.get(f, 0.0) / scale for f in FEATURES),
        intercept=-0.30 / scale,
        provenance={"source": "hand-set formula (no training)"},
    )


def default_weights() -> JudgeWeights:
    """The packaged learned weights, or :func:`hand_weights` when none are installed."""
    path = WEIGHTS_PATH
    if not path.is_file():
        return hand_weights()
    return JudgeWeights.load(path)


def fit_logistic(
    rows: np.ndarray,
    labels: Sequence[bool] | np.ndarray,
    *,
    l2: float = 1.0,
    balanced: bool = True,
    iterations: int = 50,
) -> tuple[np.ndarray, float]:
    """L2-regularised logistic regression by Newton's method (IRLS), in numpy.

    Written here rather than imported because the project keeps heavy dependencies
    (scikit-learn, scipy) out of the runtime, and ten features need nothing more.

    Args:
        rows: ``n × d`` feature matrix.
        labels: ``n`` booleans.
        l2: Ridge penalty on the weights (not on the intercept).
        balanced: Weigh the classes equally, so ``p = 1/2`` is the balanced cut (the
            read path's yes/no threshold) rather than the base rate's.
        iterations: At most this many Newton steps.

    Returns:
        ``(coef, intercept)``.
    """
    y = np.asarray(labels, dtype=np.float64)
    if rows.shape[0] != y.shape[0] or y.min(initial=1.0) == y.max(initial=0.0):
        raise ValueError("fit_logistic needs rows matching labels and both classes present")
    x = np.hstack([rows, np.ones((rows.shape[0], 1))])
    pos = y.sum()
    sample = np.where(y > 0, len(y) / (2 * pos), len(y) / (2 * (len(y) - pos))) if balanced else 1
    sample = np.broadcast_to(np.asarray(sample, dtype=np.float64), y.shape)
    penalty = np.full(x.shape[1], l2)
    penalty[-1] = 0.0
    w = np.zeros(x.shape[1])
    for _ in range(iterations):
        p = 1.0 / (1.0 + np.exp(-np.clip(x @ w, -60, 60)))
        grad = x.T @ (sample * (p - y)) + penalty * w
        hess = (x * (sample * p * (1 - p))[:, None]).T @ x + np.diag(penalty + 1e-9)
        step = np.linalg.solve(hess, grad)
        w -= step
        if float(np.abs(step).max()) < 1e-8:
            break
    return w[:-1], float(w[-1])


def fit_pairwise(
    rows: np.ndarray,
    labels: Sequence[bool] | np.ndarray,
    groups: Sequence[int] | np.ndarray,
    *,
    l2: float = 1.0,
    max_pairs: int = 400_000,
    seed: int = 0,
) -> np.ndarray:
    """Weights that order each group's positives above its negatives (pairwise logistic).

    The read path compares records *of one question* with each other (the View takes the
    best of one pool), so what matters is the order within a group, not one cut across
    all questions. Each (positive, negative) pair of a group gives the difference of their
    rows; a logistic regression on those differences (both signs, no intercept needed —
    the data are symmetric) is RankNet's objective with a linear scorer.

    Args:
        rows: ``n × d`` feature matrix.
        labels: ``n`` booleans.
        groups: ``n`` group ids (one per question and proposition).
        l2: Ridge penalty on the weights.
        max_pairs: At most this many pairs (sampled without replacement, seeded).
        seed: Seed of that sample.

    Returns:
        ``coef`` (``d`` weights; the caller sets the intercept, see
        :func:`intercept_for_rate`).
    """
    y = np.asarray(labels, dtype=bool)
    g = np.asarray(groups)
    diffs: list[np.ndarray] = []
    for group in np.unique(g):
        at = g == group
        pos, neg = rows[at & y], rows[at & ~y]
        if len(pos) and len(neg):
            diffs.append((pos[:, None, :] - neg[None, :, :]).reshape(-1, rows.shape[1]))
    if not diffs:
        raise ValueError("fit_pairwise needs a group with both a positive and a negative")
    pairs = np.vstack(diffs)
    if len(pairs) > max_pairs:
        pairs = pairs[np.random.default_rng(seed).choice(len(pairs), max_pairs, replace=False)]
    both = np.vstack([pairs, -pairs])
    sign = np.concatenate([np.ones(len(pairs), bool), np.zeros(len(pairs), bool)])
    coef, _ = fit_logistic(both, sign, l2=l2, balanced=False)
    return coef


def intercept_for_rate(scores: np.ndarray, rate: float) -> float:
    """The intercept ``b`` with which a share ``rate`` of ``scores + b`` is above 0.

    Keeps a learned order at the operating point the read path's rules were written for
    (the hand formula's share of *yes*, computed on the same training rows).
    """
    rate = min(max(rate, 0.0), 1.0)
    if rate <= 0.0:
        return -float(np.max(scores)) - 1e-6
    return -float(np.quantile(scores, 1.0 - rate))
