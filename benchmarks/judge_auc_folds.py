"""The local judge's pooled ROC AUC by fold, from an eval run's ``results.jsonl`` (judge.md).

Each scored question's row holds ``pool_scores`` (record, P(needed), gold), as ``mnemon eval
locomo`` and ``mnemon eval longmemeval`` write them. Folds: the conversation on LoCoMo; on
LongMemEval a question's rank among its type's questions mod 5 (as docs/results/longmemeval.md),
so every fold holds one question of each type. Prints each fold's AUC, their mean and the
AUC pooled over all rows.

Usage::

    python benchmarks/judge_auc_folds.py RUN_DIR/results.jsonl
"""

from __future__ import annotations

import json
import statistics
import sys
from collections import defaultdict
from pathlib import Path

from mnemon_langgraph.eval.metrics import roc_auc


def folds(path: str) -> dict[str, list[tuple[float, bool]]]:
    text = Path(path).read_text(encoding="utf-8")
    rows = [json.loads(line) for line in text.splitlines() if line.strip()]
    out: dict[str, list[tuple[float, bool]]] = defaultdict(list)
    rank: dict[str, int] = defaultdict(int)
    for r in rows:
        if not r.get("gold_evidence") or not r.get("pool_scores"):
            continue
        if "question_type" in r:
            if r.get("abstention") or r.get("scored") is False:
                continue
            kind = str(r["question_type"])
            fold = f"fold {rank[kind] % 5}"
            rank[kind] += 1
        else:
            if r.get("category") not in (1, 2, 3, 4):
                continue
            fold = str(r["conversation"])
        out[fold] += [(float(p), bool(g)) for _, p, g in r["pool_scores"]]
    return dict(out)


def main(path: str) -> None:
    by_fold = folds(path)
    aucs = {}
    for fold, pairs in sorted(by_fold.items()):
        aucs[fold] = roc_auc([p for p, _ in pairs], [g for _, g in pairs])
        gold = sum(g for _, g in pairs)
        print(f"{fold}: AUC {aucs[fold]:.4f} ({len(pairs)} records, {gold} gold)")
    every = [x for pairs in by_fold.values() for x in pairs]
    valid = [a for a in aucs.values() if a is not None]
    print(f"mean over folds {statistics.mean(valid):.4f}")
    print(f"pooled {roc_auc([p for p, _ in every], [g for _, g in every]):.4f}")


if __name__ == "__main__":
    main(sys.argv[1])
