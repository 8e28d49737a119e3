"""Evaluation: evidence in the View, retrieval baselines, judge AUC, answers and ECI.

* :mod:`.locomo` — the LoCoMo harness (:func:`run_locomo_eval`; CLI ``mnemon eval locomo``);
* :mod:`.evidence` — repair of malformed gold evidence ids;
* :mod:`.baselines` — Turns + cosine / BM25 / RRF at k and at the View's characters;
* :mod:`.metrics` — ROC AUC (Mann–Whitney U), ECI (paper Eq. 2), Wilson intervals;
* :mod:`.answer` — the answer step and the lenient LLM grader;
* :mod:`.plots`, :mod:`.report` — PNG plots (extra ``eval``), summary.md, token counts;
* :mod:`.longmemeval` — the LongMemEval harness (``mnemon eval longmemeval``), with
  :mod:`.longmemeval_answer` (the benchmark's own answer and grading prompts) and
  :mod:`.longmemeval_report`;
* :mod:`.beam` — BEAM's ``chat.json`` conversations and probing questions; :mod:`.beam_eval`
  — the BEAM harness (``mnemon eval beam``).

Submodules are imported on first use, so importing this package stays cheap.
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = [
    "EvalConfig",
    "TurnIndex",
    "effective_cost_index",
    "grade_answer",
    "load_beam_chat",
    "repair_evidence",
    "roc_auc",
    "run_locomo_eval",
]

_WHERE = {
    "EvalConfig": "locomo",
    "run_locomo_eval": "locomo",
    "TurnIndex": "baselines",
    "effective_cost_index": "metrics",
    "roc_auc": "metrics",
    "grade_answer": "answer",
    "load_beam_chat": "beam",
    "repair_evidence": "evidence",
}


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        module = importlib.import_module(f"{__name__}.{_WHERE[name]}")
        return getattr(module, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
