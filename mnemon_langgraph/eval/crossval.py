"""Leave-one-conversation-out training and evaluation of the local judge.

The local judge's weights are the one thing in the offline read path that is *learned*.
To keep the reported figures honest (issue 12: no fitting to the dev set), everything
here is cross-validated by conversation: for each LoCoMo conversation, the weights are
fitted on the OTHER conversations only and evaluated on it; the figures reported are the
pooled held-out ones, never the training fit.

Labels come from LoCoMo's gold evidence (allowed for tuning); they are used here, in the
trainer, and never reach the memory: the judge at read time sees only the state any
backend sees.

Steps:

1. :func:`collect_features` runs the read graph over every question with a
   :class:`RecordingJudge` (the hand-set local judge that also keeps every feature row it
   scores) and labels each row by whether the record holds a gold evidence turn;
2. :func:`cross_validate` fits :func:`~mnemon_langgraph.judges.learned.fit_logistic` per
   held-out conversation and reports the pooled held-out AUC (beside the hand formula's
   AUC on the same rows);
3. :func:`evaluate_folds` runs the whole LoCoMo evaluation of each held-out conversation
   with its fold's weights (View evidence hit rates at a budget, the trace's judge AUC).
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from langchain_core.messages import HumanMessage
from pydantic import PrivateAttr

from mnemon_langgraph.eval.evidence import repair_evidence
from mnemon_langgraph.eval.locomo import (
    EvalConfig,
    LocomoItem,
    load_locomo_items,
    run_locomo_eval,
    summarize_results_file,
)
from mnemon_langgraph.eval.metrics import roc_auc
from mnemon_langgraph.judges._features import Doc
from mnemon_langgraph.judges.learned import (
    JudgeWeights,
    fit_logistic,
    fit_pairwise,
    hand_weights,
    intercept_for_rate,
)
from mnemon_langgraph.judges.local import LocalDecisionModel
from mnemon_langgraph.judges.propositions import Proposition

__all__ = [
    "OBJECTIVES",
    "FoldResult",
    "RecordingJudge",
    "collect_features",
    "cross_validate",
    "evaluate_folds",
    "fit_weights",
]

OBJECTIVES = ("pairwise", "pointwise")
"""Training objectives of :func:`fit_weights` (``mnemon train judge --objective``)."""


class RecordingJudge(LocalDecisionModel):
    """The local judge that also keeps the feature rows it scores (for training)."""

    _seen: list[tuple[str, list[str], np.ndarray]] = PrivateAttr(default_factory=list)

    def observe(self, group: Proposition, docs: Sequence[Doc], rows: np.ndarray) -> None:
        """Keep ``(proposition, record texts, rows)`` of screen and needed groups."""
        if group in (Proposition.SCREEN, Proposition.NEEDED):
            self._seen.append((group.value, [d.text for d in docs], rows))

    def take(self) -> list[tuple[str, list[str], np.ndarray]]:
        """The rows kept since the last call (and forget them)."""
        out, self._seen = self._seen, []
        return out


@dataclass
class Dataset:
    """Feature rows of one conversation, their gold labels and their groups.

    ``groups`` numbers the (question, proposition) block each row was scored in: the rows
    a judge compares with each other. ``None`` for caches written before groups existed.
    """

    rows: np.ndarray
    labels: np.ndarray
    questions: int
    groups: np.ndarray | None = None


def _squash(text: str) -> str:
    return " ".join(text.split()).casefold()


def _gold_lines(item: LocomoItem, gold: Sequence[str]) -> list[str]:
    """The gold turns' texts, whitespace-squashed (a record holding one is gold)."""
    wanted = set(gold)
    return [_squash(m.text)[:80] for m in item.messages if m.id in wanted and m.text.strip()]


def collect_features(
    files: Sequence[str | Path],
    *,
    store: Any,
    embeddings: Any,
    settings: Any = None,
    limit_questions: int | None = None,
) -> dict[str, Dataset]:
    """Run every question through the read graph and keep the judge's labelled rows.

    Args:
        files: LoCoMo-format JSON files.
        store: A :class:`~mnemon_langgraph.store.MnemonStore` to ingest into.
        embeddings: The embedder the judge shares with the store.
        settings: Read settings (default ones when ``None``).
        limit_questions: At most this many questions per conversation.

    Returns:
        Conversation id → its rows and labels.
    """
    from mnemon_langgraph.read.graph import create_read_graph
    from mnemon_langgraph.read.state import ReadContext

    judge = RecordingJudge(embeddings=embeddings, weights=hand_weights())
    graph = create_read_graph(source=store, judge=judge, settings=settings)
    out: dict[str, Dataset] = {}
    for item in load_locomo_items(files):
        ns = ("locomo", item.conversation_id)
        store.ingest(ns, item.messages, origin=f"locomo:{item.conversation_id}")
        rows: list[np.ndarray] = []
        labels: list[bool] = []
        groups: list[int] = []
        qa = item.qa[:limit_questions] if limit_questions else item.qa
        for q in qa:
            gold = _gold_lines(item, repair_evidence(q.get("evidence") or [], item.turn_ids).ids)
            judge.take()
            graph.invoke(
                {"messages": [HumanMessage(str(q.get("question", "")))]},
                context=ReadContext(namespace=ns, now=item.ask_date),
            )
            if not gold:
                continue
            for _, texts, block in judge.take():
                rows.append(block)
                labels += [any(g in _squash(t) for g in gold) for t in texts]
                groups += [len(rows)] * len(texts)
        out[item.conversation_id] = Dataset(
            np.vstack(rows), np.asarray(labels), len(qa), np.asarray(groups)
        )
    return out


@dataclass
class FoldResult:
    """Leave-one-conversation-out figures: the held-out AUCs and each fold's weights."""

    auc_learned: float | None
    auc_hand: float | None
    per_conversation: dict[str, dict[str, float | None]]
    weights: dict[str, JudgeWeights]


def _fold_weights(coef: np.ndarray, intercept: float, note: Mapping[str, Any]) -> JudgeWeights:
    from mnemon_langgraph.judges._features import FEATURES

    return JudgeWeights(FEATURES, tuple(float(c) for c in coef), intercept, dict(note))


def _within_auc(scores: np.ndarray, data: Dataset) -> float | None:
    """Mean ROC AUC inside each group (the order the read path uses), over mixed groups."""
    if data.groups is None:
        return None
    found = []
    for group in np.unique(data.groups):
        at = data.groups == group
        auc = roc_auc(list(scores[at]), list(data.labels[at]))
        if auc is not None:
            found.append(auc)
    return float(np.mean(found)) if found else None


def fit_weights(
    train: Sequence[Dataset], *, l2: float = 1.0, objective: str = "pairwise"
) -> tuple[np.ndarray, float]:
    """Coefficients and intercept from training conversations.

    ``pointwise``: class-balanced logistic regression on the rows. ``pairwise``: the order
    inside each group (:func:`~mnemon_langgraph.judges.learned.fit_pairwise`), with the
    intercept that gives the hand formula's share of *yes* on the same rows.
    """
    rows = np.vstack([d.rows for d in train])
    labels = np.concatenate([d.labels for d in train])
    if objective == "pointwise":
        return fit_logistic(rows, labels, l2=l2)
    if objective not in OBJECTIVES:
        raise ValueError(f"objective must be one of {OBJECTIVES}, got {objective!r}")
    parts: list[np.ndarray] = []
    for d in train:
        if d.groups is None:
            raise ValueError("pairwise training needs grouped rows: collect the features again")
        parts.append(d.groups + (int(parts[-1].max()) + 1 if parts else 0))
    groups = np.concatenate(parts)
    coef = fit_pairwise(rows, labels, groups, l2=l2)
    rate = float((hand_weights().scores(rows) > 0).mean())
    return coef, intercept_for_rate(rows @ coef, rate)


def cross_validate(
    data: Mapping[str, Dataset], *, l2: float = 1.0, objective: str = "pointwise"
) -> FoldResult:
    """Fit on all conversations but one, score the held-out one; pool the held-out scores."""
    hand = hand_weights()
    pooled: list[tuple[float, float, bool]] = []
    per: dict[str, dict[str, float | None]] = {}
    weights: dict[str, JudgeWeights] = {}
    for held in data:
        train = [d for c, d in data.items() if c != held]
        coef, b = fit_weights(train, l2=l2, objective=objective)
        weights[held] = _fold_weights(coef, b, {"held_out": held, "l2": l2, "objective": objective})
        test = data[held]
        learned = weights[held].scores(test.rows)
        by_hand = hand.scores(test.rows)
        pooled += list(zip(learned, by_hand, test.labels, strict=True))
        per[held] = {
            "auc_learned": roc_auc(list(learned), list(test.labels)),
            "auc_hand": roc_auc(list(by_hand), list(test.labels)),
            "within_auc_learned": _within_auc(learned, test),
            "within_auc_hand": _within_auc(by_hand, test),
        }
    labels = [g for _, _, g in pooled]
    return FoldResult(
        auc_learned=roc_auc([s for s, _, _ in pooled], labels),
        auc_hand=roc_auc([h for _, h, _ in pooled], labels),
        per_conversation=per,
        weights=weights,
    )


def fit_all(
    data: Mapping[str, Dataset], *, l2: float = 1.0, objective: str = "pointwise"
) -> tuple[np.ndarray, float]:
    """The final weights: fitted on every conversation (reported with the CV figures only)."""
    return fit_weights(list(data.values()), l2=l2, objective=objective)


def evaluate_folds(
    files: Sequence[str | Path],
    weights: Mapping[str, JudgeWeights],
    out_dir: str | Path,
    *,
    embeddings: Any,
    budget_chars: int,
    limit_questions: int | None = None,
) -> dict[str, Any]:
    """The LoCoMo evaluation, each conversation judged by the weights it was held out of.

    Writes one sub-folder per conversation and the pooled ``results.jsonl`` /
    ``summary.json`` in ``out_dir``; returns the pooled summary.
    """
    from mnemon_langgraph.read.graph import create_read_graph
    from mnemon_langgraph.read.settings import ReadSettings
    from mnemon_langgraph.store import MnemonStore

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    lines: list[str] = []
    for conv, fold in weights.items():
        judge = LocalDecisionModel(embeddings=embeddings, weights=fold)
        with (
            tempfile.TemporaryDirectory(prefix="mnemon-cv-") as folder,
            MnemonStore(Path(folder) / "j.sqlite", embeddings=embeddings) as store,
        ):
            graph = create_read_graph(
                source=store, judge=judge, settings=ReadSettings(view_chars=budget_chars)
            )
            config = EvalConfig(
                budget_chars=budget_chars,
                conversations=[conv],
                limit_questions=limit_questions,
                plots=False,
            )
            run_locomo_eval(files, out / conv, graph=graph, store=store, config=config)
        lines += (out / conv / "results.jsonl").read_text(encoding="utf-8").splitlines()
    (out / "results.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    summary = summarize_results_file(out, plots=False)
    (out / "folds.json").write_text(
        json.dumps({c: w.to_json() for c, w in weights.items()}, indent=2), encoding="utf-8"
    )
    return summary
