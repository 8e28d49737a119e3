"""``mnemon train judge``: learn the local judge's weights, cross-validated by conversation.

Runs the read path over LoCoMo-format conversations, labels the local judge's feature rows
with the gold evidence (labels are used only here, never by the memory), fits a logistic
regression with leave-one-conversation-out cross-validation, and writes the weights fitted
on all conversations with their provenance — the command, the data files, the date and
the CROSS-VALIDATED figures (never the training fit) — by default as the package's
``mnemon_langgraph/data/judge_weights.json``, which the local judge then loads.

``mnemon train updates``: the update detector's weights
(:mod:`mnemon_langgraph.judges._update_model`), fitted on the writing half of the labelled
update pairs only, cross-validated inside it.
"""

from __future__ import annotations

import argparse
import hashlib
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from mnemon_langgraph.cli._common import add_embeddings_arg, embeddings_for
from mnemon_langgraph.errors import ConfigurationError

__all__ = ["register"]


def register(sub: Any) -> None:
    """Add the ``train`` command: ``judge`` (the local judge) and ``updates`` (the update
    detector)."""
    p = sub.add_parser(
        "train",
        help="learn model weights from labelled data",
        description="Learn model weights from labelled data, chosen by cross-validation: the "
        "local judge (leave-one-conversation-out) or the update detector (writing-half folds).",
    )
    what = p.add_subparsers(dest="model", metavar="MODEL", required=True)
    j = what.add_parser(
        "judge",
        help="the local judge's weights (leave-one-conversation-out CV)",
        description="Learn the local judge's feature weights from LoCoMo-format files, "
        "cross-validated by conversation; writes the weights with provenance.",
    )
    j.add_argument("files", nargs="+", metavar="FILE", help="LoCoMo-format JSON files")
    j.add_argument("--out", help="weights file (default: the package data file)")
    j.add_argument("--l2", type=float, default=1.0, help="ridge penalty (default 1.0)")
    j.add_argument(
        "--objective",
        choices=("pairwise", "pointwise"),
        default="pointwise",
        help="pointwise: class-balanced logistic regression (default; the better of the two "
        "under leave-one-conversation-out CV on LoCoMo dev); pairwise: order records within "
        "each question, intercept at the hand formula's share of yes",
    )
    j.add_argument(
        "--limit-questions", type=int, metavar="N", help="train on N questions per conversation"
    )
    j.add_argument(
        "--eval-questions",
        type=int,
        metavar="N",
        help="N questions per held-out conversation in the --cv-dir evals (default: as "
        "--limit-questions; 0 = all)",
    )
    j.add_argument("--features", metavar="NPZ", help="reuse (or save) collected feature rows")
    j.add_argument(
        "--cv-dir", metavar="DIR", help="also run each held-out conversation's eval with its fold"
    )
    j.add_argument(
        "--budgets", default="12000,2000", help="View budgets of the --cv-dir evals (chars)"
    )
    add_embeddings_arg(j, what="embedder of the training journal and the judge")
    j.set_defaults(func=run)
    u = what.add_parser(
        "updates",
        help="the update detector's weights (writing half of the labelled pairs, 5-fold CV)",
        description="Learn the update detector's weights from the writing half of the "
        "labelled update pairs, the ridge penalty, mode and threshold chosen by 5-fold "
        "cross-validation inside that half; deterministic (same pairs, same weights). Writes "
        "the weights with provenance; the frozen half is never read.",
    )
    u.add_argument("--out", help="weights file (default: the package data file)")
    u.add_argument(
        "--pairs", metavar="JSONL", help="labelled pairs (default: the package's own set)"
    )
    u.set_defaults(func=run_updates)


def _datasets(args: argparse.Namespace, embeddings: Any) -> dict[str, Any]:
    """Collected rows, from the --features cache when it exists (else collected and saved)."""
    import tempfile

    import numpy as np

    from mnemon_langgraph.eval.crossval import Dataset, collect_features
    from mnemon_langgraph.store import MnemonStore

    cache = Path(args.features) if args.features else None
    if cache is not None and cache.is_file():
        npz = np.load(cache)
        convs = sorted({k.rsplit("__", 1)[0] for k in npz.files})
        return {
            c: Dataset(
                npz[f"{c}__rows"],
                npz[f"{c}__labels"],
                0,
                npz[f"{c}__groups"] if f"{c}__groups" in npz.files else None,
            )
            for c in convs
        }
    with (
        tempfile.TemporaryDirectory(prefix="mnemon-train-") as folder,
        MnemonStore(Path(folder) / "j.sqlite", embeddings) as store,
    ):
        data = collect_features(
            args.files, store=store, embeddings=embeddings, limit_questions=args.limit_questions
        )
    if cache is not None:
        arrays = {
            f"{c}__{k}": getattr(d, k)
            for c, d in data.items()
            for k in ("rows", "labels", "groups")
            if getattr(d, k) is not None
        }
        np.savez_compressed(cache, **arrays)  # type: ignore[arg-type]
    return data


def _finished(out: Path, weights: dict[str, Any]) -> dict[str, Any] | None:
    """The summary of an earlier held-out run in ``out`` made with these very fold weights.

    Lets a long cross-validated evaluation run once (or in parallel, one budget each) and
    the weights be written afterwards; any difference in the folds means a fresh run.
    """
    try:
        folds = json.loads((out / "folds.json").read_text(encoding="utf-8"))
        summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    same = folds == {c: w.to_json() for c, w in weights.items()}
    return summary if same else None


def _eval_questions(args: argparse.Namespace) -> int | None:
    """Questions per held-out conversation in the View evals (``None``: all)."""
    n = args.eval_questions if args.eval_questions is not None else args.limit_questions
    return n or None


def _view_figures(summary: dict[str, Any]) -> dict[str, Any]:
    overall = summary["view"]["overall"]
    return {
        "all_evidence": overall.get("all_hit"),
        "any_evidence": overall.get("any_hit"),
        "view_chars": overall.get("view_chars"),
        "judge_auc": summary.get("judge_auc", {}).get("auc"),
        "questions": overall.get("n"),
    }


def run(args: argparse.Namespace) -> int:
    """Collect, cross-validate, fit on all, write the weights with provenance."""
    from mnemon_langgraph.eval.crossval import cross_validate, evaluate_folds, fit_all
    from mnemon_langgraph.judges._features import FEATURES
    from mnemon_langgraph.judges.learned import WEIGHTS_PATH, JudgeWeights

    try:
        budgets = [int(b) for b in args.budgets.split(",") if b.strip()]
    except ValueError as exc:
        raise ConfigurationError(f"--budgets: comma-separated integers ({exc})") from exc
    embeddings = embeddings_for(args.embeddings)
    data = _datasets(args, embeddings)
    if len(data) < 2:
        raise ConfigurationError("train judge needs at least two conversations (one held out)")
    cv = cross_validate(data, l2=args.l2, objective=args.objective)
    print(
        f"leave-one-conversation-out judge AUC: learned {cv.auc_learned:.3f}, "
        f"hand formula {cv.auc_hand:.3f} (same rows)"
    )
    figures: dict[str, Any] = {
        "row_auc_learned": cv.auc_learned,
        "row_auc_hand": cv.auc_hand,
        "per_conversation": cv.per_conversation,
    }
    for budget in budgets if args.cv_dir else []:
        out = Path(args.cv_dir) / f"view{budget}"
        summary = _finished(out, cv.weights) or evaluate_folds(
            args.files,
            cv.weights,
            out,
            embeddings=embeddings,
            budget_chars=budget,
            limit_questions=_eval_questions(args),
        )
        figures[f"view_{budget}"] = _view_figures(summary)
        print(f"View <= {budget} chars (held-out folds): {figures[f'view_{budget}']}")
    coef, intercept = fit_all(data, l2=args.l2, objective=args.objective)
    provenance = {
        "command": "mnemon train judge "
        + " ".join(
            [*args.files, "--l2", str(args.l2), "--objective", args.objective]
            + (["--limit-questions", str(args.limit_questions)] if args.limit_questions else [])
            + (
                ["--eval-questions", str(args.eval_questions)]
                if args.eval_questions is not None
                else []
            )
        ),
        "data": {
            Path(f).name: hashlib.sha256(Path(f).read_bytes()).hexdigest()[:16] for f in args.files
        },
        "date": datetime.now(UTC).strftime("%Y-%m-%dT%H:%MZ"),
        "rows": int(sum(len(d.labels) for d in data.values())),
        "positives": int(sum(int(d.labels.sum()) for d in data.values())),
        "model": f"logistic regression (numpy IRLS), {args.objective} objective, fitted on all "
        "files",
        "cross_validation": "leave-one-conversation-out; figures are held-out, not training",
        "cv": figures,
    }
    weights = JudgeWeights(FEATURES, tuple(float(c) for c in coef), intercept, provenance)
    target = Path(args.out) if args.out else WEIGHTS_PATH
    target.write_text(json.dumps(weights.to_json(), indent=2) + "\n", encoding="utf-8")
    print(f"wrote {target}")
    return 0


def run_updates(args: argparse.Namespace) -> int:
    """Train the update detector on the writing half and write the weights with provenance."""
    from mnemon_langgraph.judges._update_model import UPDATE_WEIGHTS_PATH, train
    from mnemon_langgraph.judges._updatedata import GENERAL_PAIRS, load_pairs

    source = Path(args.pairs) if args.pairs else GENERAL_PAIRS
    pairs = load_pairs(source, split="writing")
    if not any(p.stale for p in pairs) or all(p.stale for p in pairs):
        raise ConfigurationError(f"{source}: the writing half needs updates and non-updates")
    provenance = {
        "command": "mnemon train updates" + (f" --pairs {source.name}" if args.pairs else ""),
        "data": {source.name: hashlib.sha256(source.read_bytes()).hexdigest()[:16]},
        "split": f"writing half only ({len(pairs)} pairs); the frozen half is never read",
        "date": datetime.now(UTC).strftime("%Y-%m-%dT%H:%MZ"),
        "model": "logistic regression (numpy IRLS, class-balanced) over the rule detector's "
        "inputs; negatives also every cross pair of two families sharing no name, number or slot",
        "cross_validation": "5 folds inside the writing half (round robin by digest within "
        "each family); penalty, mode and threshold chosen on out-of-fold scores for the most "
        "true marks at precision >= 0.95; figures are out-of-fold, not training",
    }
    weights = train(pairs, provenance)
    best = weights.provenance["cv"]["best"]
    print(
        f"writing-half CV: {best['mode']}, l2 {best['l2']}: recall {best['tp']}/"
        f"{sum(p.stale for p in pairs)}, precision {best['precision']:.3f}"
    )
    target = Path(args.out) if args.out else UPDATE_WEIGHTS_PATH
    target.write_text(json.dumps(weights.to_json(), indent=2) + "\n", encoding="utf-8")
    print(f"wrote {target}")
    return 0
