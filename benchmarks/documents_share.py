"""Compare eval runs of one history split across stores (issue 45 §4).

    python benchmarks/documents_share.py ONE_JOURNAL_RUN SPLIT_RUN [--distractors]

Both arguments are ``--out`` folders of ``mnemon eval longmemeval|locomo|beam`` (the first
without document flags, the second with ``--documents-share F`` or ``--distractors``).
Prints, on the questions both runs scored: the View's all-evidence rate, turns + RRF at the
View's size, the View's lead over it, the read path's median time excluding model calls,
and, from ``view_chars_by_source``, the share of the View's record characters each source
took (the distractor source's share with ``--distractors``).
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path
from typing import Any


def _rows(folder: str) -> dict[tuple[str, ...], dict[str, Any]]:
    rows = {}
    for line in (Path(folder) / "results.jsonl").read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        if row.get("kind", "row") != "row" or not row.get("scored", True):
            continue
        if row.get("category") == 5:  # LoCoMo's adversarial questions are not scored
            continue
        if row.get("all_hit") is None:
            continue
        key = tuple(
            str(row.get(f)) for f in ("conversation", "question_id", "question_index", "question")
        )
        rows[key] = row
    return rows


def _rate(rows: list[dict[str, Any]], get: Any) -> float:
    values = [get(r) for r in rows]
    values = [v for v in values if v is not None]
    return 100.0 * sum(bool(v) for v in values) / len(values) if values else float("nan")


def _rrf(row: dict[str, Any]) -> Any:
    return (row.get("baselines") or {}).get("turns+rrf@view", {}).get("all_hit")


def _figures(rows: list[dict[str, Any]]) -> dict[str, float]:
    view = _rate(rows, lambda r: r["all_hit"])
    rrf = _rate(rows, _rrf)
    seconds = [r["read_seconds"] for r in rows if r.get("read_seconds") is not None]
    return {
        "all": view,
        "rrf": rrf,
        "lead": view - rrf,
        "read_ms": 1000 * statistics.median(seconds) if seconds else float("nan"),
        "view_chars": statistics.mean(r.get("view_chars") or 0 for r in rows),
    }


def _shares(rows: list[dict[str, Any]]) -> dict[str, float]:
    totals: dict[str, int] = {}
    for row in rows:
        for name, chars in (row.get("view_chars_by_source") or {}).items():
            totals[name] = totals.get(name, 0) + chars
    every = sum(totals.values()) or 1
    return {name: 100.0 * chars / every for name, chars in sorted(totals.items())}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("one")
    parser.add_argument("split")
    parser.add_argument("--distractors", action="store_true")
    args = parser.parse_args()
    one, split = _rows(args.one), _rows(args.split)
    both = sorted(one.keys() & split.keys())
    a = _figures([one[k] for k in both])
    b = _figures([split[k] for k in both])
    label = "distractors" if args.distractors else "split"
    print(f"{len(both)} questions scored in both runs")
    print(f"{'':24}{'one journal':>14}{label:>14}{'change':>10}")
    for key, name in (
        ("all", "View all evidence %"),
        ("rrf", "turns+RRF@view %"),
        ("lead", "lead (points)"),
        ("read_ms", "read ms (median)"),
        ("view_chars", "View chars (mean)"),
    ):
        print(f"{name:24}{a[key]:14.1f}{b[key]:14.1f}{b[key] - a[key]:10.1f}")
    shares = _shares([split[k] for k in both])
    if shares:
        print("View record characters by source (%):", {k: round(v, 1) for k, v in shares.items()})


if __name__ == "__main__":
    main()
