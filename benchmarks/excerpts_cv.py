"""Excerpts in a tight View: the grid replayed, and the setting chosen by conversation folds.

Input: the pickle of ``judge_capture.py`` (made with this commit, so each question's
``compose_view`` inputs include its ``focus``). The View is the read graph's last step and
reads nothing the excerpts change, so composing it again from the captured pool and
judgments gives exactly the View a real run with those settings gives.

For every ``excerpt_slots`` × ``excerpt_after`` of the grid, and ``None`` (records whole),
each question's View is composed at each budget of the curve and scored (all evidence).
Leave-one-conversation-out: each fold takes the setting with the most hits on the other
conversations, summed over the budgets of ``--criterion`` (default: the whole curve, since
a default serves every budget), and is scored on the held-out conversation. The gold
labels only score; nothing reaches the memory.

Usage::

    python benchmarks/judge_capture.py locomo cap.pkl ../shared/data/locomo-dev/conv-*.json
    python benchmarks/excerpts_cv.py cap.pkl [--criterion 1000,2000,...] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import pickle
from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from mnemon_langgraph.read.settings import ReadSettings
from mnemon_langgraph.read.view import compose_view

BUDGETS = (1000, 2000, 3000, 6000, 12000)
SLOTS = (4, 6, 8, 10, 12, 16)
AFTER = (1, 2, 3)
Hits = dict[tuple[str, int], dict[str, list[bool]]]


def grid() -> list[tuple[str, dict[str, Any]]]:
    out: list[tuple[str, dict[str, Any]]] = [("whole", {"excerpt_slots": None})]
    for s in SLOTS:
        for a in AFTER:
            out.append((f"slots={s} after={a}", {"excerpt_slots": s, "excerpt_after": a}))
    return out


def replay(qs: Sequence[Mapping[str, Any]]) -> Hits:
    hits: Hits = defaultdict(lambda: defaultdict(list))
    for q in qs:
        for name, over in grid():
            for budget in BUDGETS:
                kw = dict(q["kw"])
                kw["settings"] = ReadSettings(view_chars=budget, **over)
                shown = set(compose_view(q["pool"], q["judgments"], **kw).message_ids)
                hits[(name, budget)][q["conv"]].append(q["gold"] <= shown)
    return hits


def count(hits: Hits, name: str, budget: int, convs: Sequence[str]) -> int:
    return sum(sum(hits[(name, budget)][c]) for c in convs)


def cross_validate(hits: Hits, criterion: Sequence[int]) -> dict[str, Any]:
    convs = sorted(hits[("whole", BUDGETS[0])])
    names = [n for n, _ in grid()]
    folds = []
    held = {b: 0 for b in BUDGETS}
    for out in convs:
        train = [c for c in convs if c != out]
        best = max(
            names, key=lambda n: (sum(count(hits, n, b, train) for b in criterion), -names.index(n))
        )
        folds.append(
            {
                "held_out": out,
                "chosen": best,
                **{str(b): count(hits, best, b, [out]) for b in BUDGETS},
            }
        )
        for b in BUDGETS:
            held[b] += count(hits, best, b, [out])
    total = sum(len(hits[("whole", BUDGETS[0])][c]) for c in convs)
    overall = max(
        names, key=lambda n: (sum(count(hits, n, b, convs) for b in criterion), -names.index(n))
    )
    return {
        "questions": total,
        "folds": folds,
        "held_out": {str(b): held[b] / total for b in BUDGETS},
        "whole": {str(b): count(hits, "whole", b, convs) / total for b in BUDGETS},
        "chosen_on_all": overall,
        "grid": {n: {str(b): count(hits, n, b, convs) / total for b in BUDGETS} for n in names},
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("capture")
    ap.add_argument("--criterion", default=",".join(map(str, BUDGETS)))
    ap.add_argument("--json")
    args = ap.parse_args()
    with open(args.capture, "rb") as fh:
        qs = pickle.load(fh)
    res = cross_validate(replay(qs), [int(b) for b in args.criterion.split(",")])
    head = " | ".join(f"{b:,}" for b in BUDGETS)
    print(f"| | {head} |\n|---|" + "---|" * len(BUDGETS))
    for label, row in (("records whole", res["whole"]), ("held out by fold", res["held_out"])):
        print(f"| {label} | " + " | ".join(f"{100 * row[str(b)]:.1f}%" for b in BUDGETS) + " |")
    for f in res["folds"]:
        print(f"fold {f['held_out']}: {f['chosen']}")
    print(f"chosen on every conversation: {res['chosen_on_all']}")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(res, fh, indent=1)


if __name__ == "__main__":
    main()
