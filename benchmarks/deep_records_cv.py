"""Choose a read setting by cross-validation over LoCoMo, LongMemEval and BEAM.

Usage (each RUN is an ``mnemon eval`` output folder; for ``deep_records`` a label ``none``
is the setting off)::

    python benchmarks/deep_records_cv.py none=RUN_LOCOMO,RUN_LME,RUN_BEAM 32=... 48=...
    python benchmarks/deep_records_cv.py --prefer base base=... fw1=... pool64=...

With ``--prefer LABEL`` (the shipped defaults), ties go to that label, then to the label
given first; without it, labels are budgets and ties go to the smaller one.

Folds: LoCoMo one per conversation (5); LongMemEval five, a question's fold being its rank
among its type's questions (file order) mod 5; BEAM one per source conversation (10; a
question of a concatenated tier belongs to the conversation it was asked of, ``origin``).
Each held-out fold is scored with the value the other folds choose: the most all-evidence
hits summed over every set's training questions, ties to the smaller budget (fewer
judgments), ``none`` counting as the largest. Prints, per value, the hits and the median
warm judgments per set, then the held-out hits per set and which value each fold chose.
"""

from __future__ import annotations

import json
import statistics
import sys
from collections import defaultdict
from pathlib import Path


def _rows(run: str) -> list[dict]:
    return [json.loads(line) for line in (Path(run) / "results.jsonl").read_text().splitlines()]


def _key_and_fold(kind: str, row: dict, type_rank: dict) -> tuple[tuple, str]:
    if kind == "locomo":
        return (row["conversation"], row["question_index"]), f"locomo:{row['conversation']}"
    if kind == "lme":
        rank = type_rank[row["question_id"]]
        return (row["question_id"],), f"lme:{rank % 5}"
    origin = row.get("origin") or row["conversation"]
    key = (row["tier"], origin, row["ability"], row["question_index"])
    return key, f"beam:{origin}"


def _load(runs: list[str]) -> dict[tuple, tuple[str, bool, int]]:
    """(set, question key) -> (fold, all_hit, judgments), scored questions only."""
    out: dict[tuple, tuple[str, bool, int]] = {}
    for kind, run in zip(("locomo", "lme", "beam"), runs, strict=True):
        rows = _rows(run)
        type_rank: dict[str, int] = {}
        seen: dict[str, int] = defaultdict(int)
        for row in rows:
            if kind == "lme":
                type_rank[row["question_id"]] = seen[row["question_type"]]
                seen[row["question_type"]] += 1
        for row in rows:
            if kind == "locomo" and (row["category"] == 5 or not row["gold_evidence"]):
                continue
            if kind != "locomo" and not row.get("scored", True):
                continue
            key, fold = _key_and_fold(kind, row, type_rank)
            out[(kind, *key)] = (fold, bool(row["all_hit"]), int(row["judgments"]))
    return out


def _order(label: str) -> float:
    return float("inf") if label == "none" else float(label)


def main(argv: list[str]) -> None:
    prefer = None
    if argv[:1] == ["--prefer"]:
        prefer, argv = argv[1], argv[2:]
    given = [arg.split("=", 1)[0] for arg in argv]
    runs = {}
    for arg in argv:
        label, paths = arg.split("=", 1)
        runs[label] = _load(paths.split(","))
    if prefer is None:
        labels = sorted(runs, key=_order)
        tie = {lb: -_order(lb) for lb in labels}
    else:
        labels = given
        tie = {lb: (1 if lb == prefer else 0) - given.index(lb) / 100 for lb in labels}
    keys = set.intersection(*(set(r) for r in runs.values()))
    folds = sorted({runs[labels[0]][k][0] for k in keys})
    for label in labels:
        per_set = defaultdict(list)
        for k in keys:
            per_set[k[0]].append(runs[label][k])
        cells = [
            f"{s} {sum(h for _, h, _ in v)}/{len(v)} "
            f"(judgments median {statistics.median(j for _, _, j in v)})"
            for s, v in sorted(per_set.items())
        ]
        print(f"{label:>5}: " + "; ".join(cells))
    held: dict[str, int] = defaultdict(int)
    total: dict[str, int] = defaultdict(int)
    chosen: dict[str, str] = {}
    for fold in folds:
        train = [k for k in keys if runs[labels[0]][k][0] != fold]
        best = max(labels, key=lambda lb: (sum(runs[lb][k][1] for k in train), tie[lb]))
        chosen[fold] = best
        for k in keys:
            if runs[labels[0]][k][0] == fold:
                held[k[0]] += runs[best][k][1]
                total[k[0]] += 1
    print("held out: " + "; ".join(f"{s} {held[s]}/{total[s]}" for s in sorted(held)))
    print("chosen by fold: " + ", ".join(f"{f}={c}" for f, c in chosen.items()))


if __name__ == "__main__":
    main(sys.argv[1:])
