"""LoCoMo before/after of the View's staleness rule (``replaced_stale``), on one run.

Runs ``mnemon eval locomo`` (``run_locomo_eval``, default read graph, fresh store) over the
files given with the capture of ``view_neighbours_cv.py``, so ``OUT_DIR`` holds the run's
own results (the package as it is: "after"), and composes every question's View again with
the rule before it (every record judged no longer current left out: "before"), and with
``ReadSettings.fused_weight`` at 0.25 / 0.5 / 1 / 2. The capture is kept as
``OUT_DIR/capture.pkl``.
``compose_view`` is pure, so the replay is the View the read graph gave before the change.

Usage::

    PYTHONPATH=. python docs/results/longview_locomo.py OUT_DIR conv-26.json
"""

from __future__ import annotations

import pickle
import sys
from typing import Any

from view_neighbours_cv import capture  # the same folder

import mnemon_langgraph.read.view as view_module

SHIPPED = view_module.replaced_stale


def shown(q: dict[str, Any], budget: int, old: bool, fused_weight: float = 0.0) -> set[str]:
    import dataclasses

    kw = dict(q["kw"])
    kw["settings"] = dataclasses.replace(
        kw["settings"], view_chars=budget, fused_weight=fused_weight
    )
    view_module.replaced_stale = (lambda pool, judged, stale: set(stale)) if old else SHIPPED  # type: ignore[assignment]
    try:
        return set(view_module.compose_view(q["pool"], q["judgments"], **kw).message_ids)
    finally:
        view_module.replaced_stale = SHIPPED  # type: ignore[assignment]


def main(out: str, files: list[str]) -> None:
    qs = capture(files, out)
    with open(f"{out}/capture.pkl", "wb") as fh:
        pickle.dump(qs, fh)
    n = len(qs)
    agree = sum(q["hit"] == (q["gold"] <= shown(q, 12_000, False)) for q in qs)
    print(f"{n} scored questions; replay 'after' agrees with the run on {agree}")
    for budget in (12_000, 2_000):
        for name, old in (("before", True), ("after", False)):
            views = [shown(q, budget, old) for q in qs]
            all_hit = sum(q["gold"] <= v for q, v in zip(qs, views, strict=True)) / n
            any_hit = sum(bool(q["gold"] & v) for q, v in zip(qs, views, strict=True)) / n
            print(f"{budget:>6} chars {name:6}: all {all_hit:.1%} any {any_hit:.1%}")
        for w in (0.25, 0.5, 1.0, 2.0):
            views = [shown(q, budget, False, w) for q in qs]
            all_hit = sum(q["gold"] <= v for q, v in zip(qs, views, strict=True)) / n
            any_hit = sum(bool(q["gold"] & v) for q, v in zip(qs, views, strict=True)) / n
            print(f"{budget:>6} chars fused_weight {w:g}: all {all_hit:.1%} any {any_hit:.1%}")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
