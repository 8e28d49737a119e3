"""The learned update detector: a logistic regression over the rule detector's inputs.

:func:`mnemon_langgraph.judges._update_rows.update_features` turns a (later sentence, earlier
sentence) pair into a row — the rule detector's cues and verdict, lexical overlap, slots,
the earlier sentence's state, temporal cue words. :func:`train` fits the weights on the
*writing* half of the labelled pairs (:mod:`~._updatedata`) only, choosing the ridge penalty
and the threshold by cross-validation inside that half (the threshold is the one whose
out-of-fold precision is at least :data:`MIN_PRECISION`); ``mnemon train updates`` writes
them, with their provenance, as the package data file :data:`UPDATE_WEIGHTS_PATH`, which
:func:`~._staleness.stale_p` then uses. Training is deterministic: the same pairs give the
same weights.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from mnemon_langgraph.errors import ConfigurationError
from mnemon_langgraph.judges._update_rows import UPDATE_FEATURES, candidate_rows
from mnemon_langgraph.judges._update_rules import rule_stale_p

__all__ = [
    "MIN_PRECISION",
    "UPDATE_WEIGHTS_PATH",
    "UpdateWeights",
    "cross_validate",
    "pair_scores",
    "shipped_weights",
    "train",
    "weights_in_use",
]

UPDATE_WEIGHTS_PATH = Path(__file__).resolve().parent / "data" / "update_weights.json"
MIN_PRECISION = 0.95
"""Out-of-fold precision the chosen threshold must reach on the writing half."""
L2_GRID = (0.03, 0.1, 0.3, 1.0, 3.0, 10.0)
FOLDS = 5
MODES = ("model", "rules_or_model")


@dataclass(frozen=True)
class UpdateWeights:
    """Weights over :data:`~._update_rows.UPDATE_FEATURES`; ``s = w·x + b``, stale iff ``s >= 0``.

    Attributes:
        features: Column names (must be the detector's, in order).
        coef: One weight per feature.
        intercept: The bias, threshold included.
        mode: ``"model"`` (the score alone) or ``"rules_or_model"`` (a rule verdict also
            marks a record stale).
        provenance: How the weights were made (command, data digest, CV figures).
    """

    features: tuple[str, ...]
    coef: tuple[float, ...]
    intercept: float
    mode: str = "model"
    provenance: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if tuple(self.features) != UPDATE_FEATURES:
            raise ConfigurationError(
                "update weights name other features than this version computes; retrain "
                "with `mnemon train updates`"
            )
        if len(self.coef) != len(self.features) or not all(math.isfinite(c) for c in self.coef):
            raise ConfigurationError("update weights: one finite weight per feature expected")
        if self.mode not in MODES or not math.isfinite(self.intercept):
            raise ConfigurationError(f"update weights: mode must be one of {MODES}")

    def score(self, row: Sequence[float]) -> float:
        """``w·x + b`` of one row."""
        return float(np.dot(np.asarray(self.coef), np.asarray(row, dtype=np.float64))) + (
            self.intercept
        )

    def to_json(self) -> dict[str, Any]:
        """The JSON form written as package data."""
        return {
            "features": list(self.features),
            "coef": [round(c, 6) for c in self.coef],
            "intercept": round(self.intercept, 6),
            "mode": self.mode,
            "provenance": dict(self.provenance),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> UpdateWeights:
        """Parse :meth:`to_json` output; a malformed file is a :class:`ConfigurationError`."""
        try:
            return cls(
                features=tuple(str(f) for f in data["features"]),
                coef=tuple(float(c) for c in data["coef"]),
                intercept=float(data["intercept"]),
                mode=str(data.get("mode", "model")),
                provenance=dict(data.get("provenance") or {}),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise ConfigurationError(f"update weights: malformed ({exc})") from exc

    @classmethod
    def load(cls, path: str | Path) -> UpdateWeights:
        """Read a weights file written by ``mnemon train updates``."""
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise ConfigurationError(f"update weights {path}: cannot read ({exc})") from exc
        return cls.from_json(data)


LEARNED_IN_USE = False
"""Whether :func:`~._staleness.stale_p` uses the packaged weights by default. They ship (with
the command that makes them and a test that it still does) but are not in use: they miss
the precision goal on the frozen half, mark far more real conversation turns than the
rules on LongMemEval dev, and mark the demo's new values stale (docs/results/updates.md)."""


@lru_cache(maxsize=1)
def shipped_weights() -> UpdateWeights | None:
    """The packaged weights, or ``None`` when none are installed."""
    return UpdateWeights.load(UPDATE_WEIGHTS_PATH) if UPDATE_WEIGHTS_PATH.is_file() else None


def weights_in_use() -> UpdateWeights | None:
    """The weights :func:`~._staleness.stale_p` uses by default (``None``: the rules alone)."""
    return shipped_weights() if LEARNED_IN_USE else None


def _rows_of(
    earlier_text: str, later_text: str, same_speaker: bool
) -> tuple[list[list[float]], bool]:
    """Candidate rows of one (earlier, later) statement pair and the rule verdict, judged as
    the tests judge a pair: the earlier in session 1, the later in session 2, by one speaker
    (or two)."""
    from mnemon_langgraph.judges._features import Doc

    earlier = Doc({"id": "a", "header": "Session 1", "text": f"Sam: {earlier_text}"}, 0)
    who = "Sam" if same_speaker else "Alex"
    later = Doc({"id": "b", "header": "Session 2", "text": f"{who}: {later_text}"}, 1)
    records = [earlier, later]
    return candidate_rows(earlier, records, []), rule_stale_p(earlier, records, []) >= 0.5


@dataclass
class _Data:
    """Feature rows of the labelled pairs and of the unrelated cross pairs."""

    x: np.ndarray  # one row per candidate sentence pair
    owner: np.ndarray  # each row's item
    labels: np.ndarray  # per item
    rule: np.ndarray  # per item: the rules' verdict
    first: np.ndarray  # per item: index of the labelled pair giving the earlier statement
    second: np.ndarray  # …and the later one (the same index for a labelled pair)


def _items(pairs: Sequence[Any]) -> list[tuple[int, int]]:
    """The labelled pairs ``(i, i)``, then every cross pair ``(i, j)`` of two families:
    pair i's earlier statement, pair j's later one. Those sharing no name, number or slot are kept
    (:func:`_matrix`) as negatives: they stand for what a conversation holds most of, a
    change about something else."""
    n = len(pairs)
    cross = [(i, j) for i in range(n) for j in range(n) if pairs[i].kind != pairs[j].kind]
    return [(i, i) for i in range(n)] + cross


def _matrix(pairs: Sequence[Any]) -> _Data:
    named, slots = UPDATE_FEATURES.index("named"), UPDATE_FEATURES.index("slots")
    items: list[tuple[int, int]] = []
    rows: list[list[float]] = []
    owner: list[int] = []
    verdicts: list[bool] = []
    for i, j in _items(pairs):
        same = pairs[i].same_speaker if i == j else True
        candidates, verdict = _rows_of(pairs[i].earlier, pairs[j].later, same)
        if i != j and any(r[named] or r[slots] for r in candidates):
            continue  # two families may share a subject: "married" → "single again", a name
        rows += candidates
        owner += [len(items)] * len(candidates)
        items.append((i, j))
        verdicts.append(verdict)
    rule = np.asarray(verdicts, dtype=bool)
    return _Data(
        x=np.asarray(rows, dtype=np.float64).reshape(-1, len(UPDATE_FEATURES)),
        owner=np.asarray(owner, dtype=np.int64),
        labels=np.asarray([i == j and pairs[i].stale for i, j in items], dtype=bool),
        rule=rule,
        first=np.asarray([i for i, _ in items], dtype=np.int64),
        second=np.asarray([j for _, j in items], dtype=np.int64),
    )


def _fit(x: np.ndarray, y: np.ndarray, l2: float) -> tuple[np.ndarray, float]:
    from mnemon_langgraph.judges.learned import fit_logistic

    return fit_logistic(x, y, l2=l2, balanced=True)


def _item_max(scores: np.ndarray, owner: np.ndarray, n: int) -> np.ndarray:
    """Per item, the best candidate's score (−inf: no candidate, never stale)."""
    out = np.full(n, -np.inf)
    np.maximum.at(out, owner, scores)
    return out


def _folds(pairs: Sequence[Any]) -> np.ndarray:
    """Fold of each labelled pair: within each family, digest order, round robin."""
    fold = np.zeros(len(pairs), dtype=np.int64)
    by_kind: dict[str, list[int]] = {}
    for i, p in enumerate(pairs):
        by_kind.setdefault(p.kind, []).append(i)
    for idx in by_kind.values():
        for k, i in enumerate(sorted(idx, key=lambda j: pairs[j].digest)):
            fold[i] = k % FOLDS
    return fold


def _threshold(scores: np.ndarray, labels: np.ndarray, rule: np.ndarray) -> tuple[float, int, int]:
    """The threshold with the most true marks at precision ≥ MIN_PRECISION over the scored
    items: ``(threshold, true marks, false marks)``; the cut lies halfway to the next score
    below."""
    finite = np.unique(scores[np.isfinite(scores)])[::-1]
    tp0, fp0 = int((rule & labels).sum()), int((rule & ~labels).sum())
    feasible = tp0 / max(1, tp0 + fp0) >= MIN_PRECISION
    best = (float(finite[0]) + 1.0 if len(finite) else 0.0, tp0 if feasible else 0, fp0)
    if not feasible:  # nothing reaches the precision: no threshold, no marks counted
        best = (math.inf, 0, 0)
    for k, t in enumerate(finite):
        marked = rule | (scores >= t)
        tp, fp = int((marked & labels).sum()), int((marked & ~labels).sum())
        if tp / max(1, tp + fp) >= MIN_PRECISION and tp > best[1]:
            below = float(finite[k + 1]) if k + 1 < len(finite) else float(t) - 1.0
            best = ((float(t) + below) / 2, tp, fp)
    return best


def _out_of_fold(data: _Data, fold: np.ndarray, l2: float) -> tuple[np.ndarray, np.ndarray]:
    """Out-of-fold item scores, and which items were held out at all (a cross pair is held
    out when both its statements are in one held-out fold, trained on when neither is)."""
    n = len(data.labels)
    f1, f2 = fold[data.first], fold[data.second]
    oof = np.full(n, -np.inf)
    held_any = np.zeros(n, dtype=bool)
    for f in range(FOLDS):
        train_items = (f1 != f) & (f2 != f)
        at = train_items[data.owner]
        coef, b = _fit(data.x[at], data.labels[data.owner[at]], l2)
        held = (f1 == f) & (f2 == f)
        oof[held] = _item_max(data.x @ coef + b, data.owner, n)[held]
        held_any |= held
    return oof, held_any


def cross_validate(pairs: Sequence[Any], data: _Data | None = None) -> dict[str, Any]:
    """Out-of-fold figures of every (mode, ridge penalty) on ``pairs``, and the best one."""
    data = data or _matrix(pairs)
    fold = _folds(pairs)
    labelled = data.first == data.second
    results: list[dict[str, Any]] = []
    for l2 in L2_GRID:
        oof, held = _out_of_fold(data, fold, l2)
        for mode in MODES:
            rule = data.rule[held] if mode == "rules_or_model" else np.zeros(held.sum(), bool)
            t, tp, _ = _threshold(oof[held], data.labels[held], rule)
            marked = (oof >= t) | (data.rule if mode == "rules_or_model" else False)
            results.append(
                {
                    "mode": mode,
                    "l2": l2,
                    "threshold": t if math.isfinite(t) else None,
                    "tp": tp,
                    "fp_labelled": int((marked & labelled & ~data.labels).sum()),
                    "fp_cross": int((marked & held & ~labelled).sum()),
                    "cross_held_out": int((held & ~labelled).sum()),
                }
            )
    positives = int(data.labels.sum())
    for r in results:
        r["recall"] = r["tp"] / max(1, positives)
        r["precision"] = r["tp"] / max(1, r["tp"] + r["fp_labelled"] + r["fp_cross"])
    # most true marks; then fewest false ones, the simpler mode, the stronger penalty
    best = max(
        results,
        key=lambda r: (r["tp"], -r["fp_labelled"] - r["fp_cross"], r["mode"] == "model", r["l2"]),
    )
    rule_labelled = data.rule & labelled
    return {
        "grid": results,
        "best": best,
        "rules": {
            "tp": int((rule_labelled & data.labels).sum()),
            "fp_labelled": int((rule_labelled & ~data.labels).sum()),
            "fp_cross": int((data.rule & ~labelled).sum()),
            "cross": int((~labelled).sum()),
            "positives": positives,
        },
    }


def train(pairs: Sequence[Any], provenance: Mapping[str, Any] | None = None) -> UpdateWeights:
    """Weights fitted on ``pairs`` with the cross-validated penalty, mode and threshold."""
    data = _matrix(pairs)
    cv = cross_validate(pairs, data)
    best = cv["best"]
    if best["threshold"] is None:
        raise ConfigurationError(f"no threshold reaches precision {MIN_PRECISION} in CV")
    coef, b = _fit(data.x, data.labels[data.owner], best["l2"])
    info = {**(provenance or {}), "cv": cv}
    return UpdateWeights(
        features=UPDATE_FEATURES,
        coef=tuple(float(c) for c in coef),
        intercept=float(b - best["threshold"]),
        mode=str(best["mode"]),
        provenance=info,
    )


def pair_scores(weights: UpdateWeights, pairs: Sequence[Any]) -> list[bool]:
    """The detector's verdict on each labelled pair with ``weights``."""
    out = []
    for pair in pairs:
        rows, rule = _rows_of(pair.earlier, pair.later, pair.same_speaker)
        learned = any(weights.score(r) >= 0 for r in rows)
        out.append(learned or (weights.mode == "rules_or_model" and rule))
    return out
