"""Leave-one-conversation-out choice of the local judge's calibration (issue 12: judge AUC).

Runs the default read graph once over LoCoMo-format files with the local judge's calibration
off (``p = σ(s)``; ``mnemon eval locomo`` with a fresh store), keeps every pooled record's
P(needed) as the eval scores it (its last *needed* judgment, else its *screen* one), which
of the two it is, its gold label, its question's distinct content words and whether the
turn's plan had a need of kind ``ALL``, then scores the pooled AUC of every
:class:`~mnemon_langgraph.judges.learned.Calibration` ``p = σ(k · t(s))`` of a grid:
``k = (n / 5) ** exponent``, ``t(s) = s − shift`` for a negative screen score, and a
negative score of an ``ALL`` turn multiplied by ``all_no_scale``. Within a question the
calibration keeps every order and every ``p >= 1/2`` decision, so the read path and the View
are the same for every grid point (calibration invariance): only the AUC has to be
replayed, and it is exact.

Each fold chooses the grid point with the highest pooled AUC over the other conversations
(ties to the earlier point) and is scored on its held-out conversation; the held-out scores
are pooled over the folds. The gold evidence labels score the AUC only; nothing reaches
the memory.

Usage::

    python benchmarks/judge_calibration_cv.py OUT_DIR conv-26.json conv-30.json ...

(``OUT_DIR/calibration_rows.npz`` from an earlier run is reused: no eval then.)
"""

from __future__ import annotations

import json
import math
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from mnemon_langgraph.cli._common import embeddings_for
from mnemon_langgraph.eval.locomo import EvalConfig, run_locomo_eval
from mnemon_langgraph.eval.metrics import roc_auc
from mnemon_langgraph.judges._features import terms
from mnemon_langgraph.judges.learned import Calibration
from mnemon_langgraph.judges.local import LocalDecisionModel
from mnemon_langgraph.read.graph import create_read_graph
from mnemon_langgraph.read.settings import ReadSettings
from mnemon_langgraph.store import MnemonStore

EXPONENTS = (0.0, 0.25, 0.5, 0.75, 1.0, 1.5)
SHIFTS = (0.0, 1.0, 2.0, 3.0, 4.0, 6.0)
ALL_SCALES = (1.0, 0.75, 0.6, 0.5, 0.4)
Point = tuple[float, float, float]
"""A grid point: (exponent, screen shift, ALL-turn scale of a negative score)."""
OFF: Point = (0.0, 0.0, 1.0)
SCORED = (1, 2, 3, 4)


class _Keep:
    """The read graph, keeping each question's judgments (the View's trace)."""

    def __init__(self, graph: Any) -> None:
        self.graph = graph
        self.judgments: list[list[dict[str, Any]]] = []
        self.every_instance: list[bool] = []

    def invoke(self, *args: Any, **kwargs: Any) -> Any:
        state = self.graph.invoke(*args, **kwargs)
        trace = state["view"].trace
        self.judgments.append(list(trace.get("judgments") or []))
        self.every_instance.append(any(n.get("kind") == "ALL" for n in trace.get("needs") or []))
        return state


def _logit(p: float) -> float:
    p = min(max(p, 1e-15), 1 - 1e-15)
    return math.log(p / (1 - p))


def capture(files: Sequence[str], out: str) -> dict[str, np.ndarray]:
    """Run the eval uncalibrated; one row per scored pooled record (as the eval's AUC)."""
    emb = embeddings_for("minilm")
    with tempfile.TemporaryDirectory() as tmp:
        store = MnemonStore(Path(tmp) / "journal.sqlite", embeddings=emb)
        judge = LocalDecisionModel(embeddings=emb, calibration=None)
        graph = _Keep(
            create_read_graph(source=store, judge=judge, planner=None, settings=ReadSettings())
        )
        run_locomo_eval(
            files, out, graph=graph, store=store, embeddings=emb, config=EvalConfig(plots=False)
        )
        store.close()
    rows = [json.loads(x) for x in (Path(out) / "results.jsonl").read_text().splitlines()]
    keys = ("s", "gold", "screen", "n", "every_instance", "conv", "q")
    cols: dict[str, list[Any]] = {k: [] for k in keys}
    turns = zip(rows, graph.judgments, graph.every_instance, strict=True)
    for qi, (row, judged, every) in enumerate(turns):
        if not row.get("gold_evidence") or row.get("category") not in SCORED:
            continue
        last: dict[str, tuple[str, float]] = {}
        for j in judged:
            prop = str(j.get("proposition"))
            if prop == "needed" or (
                prop == "screen" and last.get(j["target"], ("",))[0] != "needed"
            ):
                last[j["target"]] = (prop, float(j["p"]))
        n_terms = len(set(terms(row["question"])))
        for rid, _, gold in row.get("pool_scores") or []:
            prop, p = last[rid]
            for key, value in zip(
                cols,
                (_logit(p), gold, prop == "screen", n_terms, every, row["conversation"], qi),
                strict=True,
            ):
                cols[key].append(value)
    return {k: np.asarray(v) for k, v in cols.items()}


def scores(data: dict[str, np.ndarray], point: Point) -> np.ndarray:
    """Every row's calibrated score under one grid point (the judge's own Calibration)."""
    exponent, shift, scale = point
    cal = Calibration(exponent=exponent, screen_no_shift=shift, all_no_scale=scale)
    out = np.empty(len(data["s"]))
    rows = zip(data["s"], data["screen"], data["n"], data["every_instance"], strict=True)
    for i, (s, screen, n, every) in enumerate(rows):
        out[i] = cal.apply(
            np.array([s]), n_terms=int(n), screen=bool(screen), every_instance=bool(every)
        )[0]
    return out


def _auc(s: np.ndarray, y: np.ndarray) -> float:
    found = roc_auc(list(map(float, s)), list(map(bool, y)))
    assert found is not None
    return found


def _mean_per_conversation(s: np.ndarray, y: np.ndarray, conv: np.ndarray) -> float:
    return float(np.mean([_auc(s[conv == c], y[conv == c]) for c in sorted(set(conv))]))


def cross_validate(data: dict[str, np.ndarray], grid: Sequence[Point]) -> dict[str, Any]:
    """Each fold picks the grid point of best training AUC; held-out AUC per fold and pooled.

    Pooling the folds' held-out scores mixes calibrations chosen by different folds (an
    exponent of 1/4 and one of 3/4 give scores of different scales), so the mean of the
    folds' own AUCs is reported beside it.
    """
    grid = list(grid)
    shipped = Calibration()
    ship: Point = (shipped.exponent, shipped.screen_no_shift, shipped.all_no_scale)
    by_point = {g: scores(data, g) for g in {*grid, OFF, ship}}
    y, conv = data["gold"], data["conv"]
    held = np.empty(len(y))
    folds: dict[str, Any] = {}
    for c in sorted(set(conv)):
        train = conv != c
        best = max(grid, key=lambda g: (_auc(by_point[g][train], y[train]), -grid.index(g)))
        held[~train] = by_point[best][~train]
        folds[c] = {
            "choice": best,
            "held_out_auc": _auc(by_point[best][~train], y[~train]),
            "uncalibrated_auc": _auc(by_point[OFF][~train], y[~train]),
        }
    return {
        "held_out_pooled_auc": _auc(held, y),
        "held_out_mean_per_fold": float(np.mean([f["held_out_auc"] for f in folds.values()])),
        "uncalibrated_pooled_auc": _auc(by_point[OFF], y),
        "uncalibrated_mean_per_fold": _mean_per_conversation(by_point[OFF], y, conv),
        "shipped_pooled_auc": _auc(by_point[ship], y),
        "shipped_mean_per_conversation": _mean_per_conversation(by_point[ship], y, conv),
        "choice_on_all": max(grid, key=lambda g: (_auc(by_point[g], y), -grid.index(g))),
        "folds": folds,
        "rows": len(y),
        "gold": int(y.sum()),
    }


def main(argv: Sequence[str]) -> None:
    """``OUT_DIR FILE…``: capture once (or reuse OUT_DIR's rows), cross-validate, save."""
    out, files = Path(argv[0]), list(argv[1:])
    saved = out / "calibration_rows.npz"
    if saved.exists():
        data = dict(np.load(saved))
    else:
        data = capture(files, str(out))
        np.savez(saved, **data)
    result = {
        # the 1/sqrt(n) argument fixes the exponent; the shift and the ALL scale are chosen
        "exponent_one_half": cross_validate(
            data, [(0.5, c, a) for c in SHIFTS for a in ALL_SCALES]
        ),
        "exponent_one_half_no_all_scale": cross_validate(data, [(0.5, c, 1.0) for c in SHIFTS]),
        "grid": cross_validate(
            data, [(e, c, a) for e in EXPONENTS for c in SHIFTS for a in ALL_SCALES]
        ),
    }
    (out / "calibration_cv.json").write_text(json.dumps(result, indent=2, default=str))
    print(json.dumps(result, indent=2, default=str))


if __name__ == "__main__":
    main(sys.argv[1:])
