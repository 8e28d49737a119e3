"""Leave-one-conversation-out choice of the View's neighbour rule (issue 12; misses.md).

Runs the default read graph once over LoCoMo-format files (``mnemon eval locomo`` with a
fresh store), keeps the inputs of every question's ``compose_view`` (pool, judgments,
budgets), then composes the View again for each variant of the rule and each budget. The
rule only reorders the View's candidates, and ``compose_view`` is pure: nothing before it
depends on the variant, so the replay gives exactly the View the read graph would give. The
gold evidence labels score the Views only; nothing reaches the memory.

Variants: off; the neighbours of the first 1 or 2 candidates; the next record only or both
sides; entering after the first 3 or 5 candidates. Each fold chooses the variant with the
highest all-evidence rate on the other conversations, summed over 12,000 and 2,000
characters (ties to the earlier variant), and is scored on its held-out conversation.

Usage::

    python benchmarks/view_neighbours_cv.py OUT_DIR conv-26.json conv-30.json ...
"""

from __future__ import annotations

import dataclasses
import json
import statistics
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import mnemon_langgraph.read._nodes as nodes
import mnemon_langgraph.read._view_order as order_module
import mnemon_langgraph.read.view as view_module
from mnemon_langgraph.cli._common import embeddings_for, judge
from mnemon_langgraph.eval.locomo import EvalConfig, run_locomo_eval
from mnemon_langgraph.read.graph import create_read_graph
from mnemon_langgraph.read.settings import ReadSettings
from mnemon_langgraph.store import MnemonStore

BUDGETS = (12_000, 2_000, 6_000, 3_000)
CHOOSE_BY = (12_000, 2_000)


def capture(files: Sequence[str], out: str) -> list[dict[str, Any]]:
    """Run the eval; return, per scored question, its compose inputs and gold turns."""
    calls: list[dict[str, Any]] = []
    original = nodes.compose_view

    def keep(pool: Any, judgments: Any, **kw: Any) -> Any:
        calls.append({"pool": list(pool), "judgments": list(judgments), "kw": kw})
        return original(pool, judgments, **kw)

    nodes.compose_view = keep
    emb = embeddings_for("minilm")
    with tempfile.TemporaryDirectory() as tmp:
        store = MnemonStore(Path(tmp) / "journal.sqlite", embeddings=emb)
        graph = create_read_graph(
            source=store, judge=judge("local", emb), planner=None, settings=ReadSettings()
        )
        run_locomo_eval(
            files, out, graph=graph, store=store, embeddings=emb, config=EvalConfig(plots=False)
        )
        store.close()
    nodes.compose_view = original
    lines = (Path(out) / "results.jsonl").read_text(encoding="utf-8").splitlines()
    rows = [json.loads(line) for line in lines]
    assert len(rows) == len(calls), (len(rows), len(calls))
    return [
        dict(c, conv=r["conversation"], gold=set(r["gold_evidence"]), hit=r["all_hit"])
        for r, c in zip(rows, calls, strict=True)
        if r.get("gold_evidence") and r.get("category") in (1, 2, 3, 4)
    ]


def variant(top: int, after: int, sides: tuple[int, ...]) -> Callable[..., Any]:
    """A candidate reordering like ``view_order._with_neighbours``, with its sides as a choice."""

    def reorder(candidates: Any, pool: Any, skip: Any, settings: Any) -> list[Any]:
        at = {
            (r.get("source"), r.get("session"), r["position"]): r["id"]
            for r in pool
            if "position" in r
        }
        where = {rid: key for key, rid in at.items()}
        ids = [rid for rid, _ in candidates]
        moved: list[str] = []
        for rid in ids[:top]:
            if rid not in where:
                continue
            source, session, position = where[rid]
            for step in sides:
                other = at.get((source, session, position + step))
                if other and other not in ids[:after] and other not in moved and other not in skip:
                    moved.append(other)
        head = list(candidates[:after])
        return (
            head
            + [(m, "neighbour") for m in moved]
            + [c for c in candidates[after:] if c[0] not in moved]
        )

    return reorder


SHIPPED_RULE = order_module._with_neighbours


def hits(q: dict[str, Any], budget: int, reorder: Callable[..., Any] | None) -> tuple[bool, bool]:
    """(all, any) evidence of the question's View at ``budget``; ``None``: the rule off."""
    on = 0 if reorder is None else 2
    kw = dict(q["kw"])
    kw["settings"] = dataclasses.replace(kw["settings"], view_chars=budget, view_neighbours=on)
    order_module._with_neighbours = reorder or SHIPPED_RULE  # type: ignore[assignment]
    try:
        shown = set(view_module.compose_view(q["pool"], q["judgments"], **kw).message_ids)
    finally:
        order_module._with_neighbours = SHIPPED_RULE  # type: ignore[assignment]
    return q["gold"] <= shown, bool(q["gold"] & shown)


def main(out: str, files: Sequence[str]) -> None:
    qs = capture(files, out)
    # the shipped rule (the package's own) composes the same Views as the both/top2/after3 replay
    shipped = variant(2, 3, (-1, 1))
    assert all(hits(q, 12_000, SHIPPED_RULE) == hits(q, 12_000, shipped) for q in qs)
    grid: dict[str, Callable[..., Any] | None] = {"off": None}
    for name, sides in (("next", (1,)), ("both", (-1, 1))):
        for top in (1, 2):
            for after in (3, 5):
                grid[f"{name}/top{top}/after{after}"] = variant(top, after, sides)
    convs = sorted({q["conv"] for q in qs})
    res = {
        n: {b: [(q["conv"], *hits(q, b, f)) for q in qs] for b in BUDGETS} for n, f in grid.items()
    }

    def rate(n: str, b: int, keep: Callable[[str], bool], col: int = 1) -> float:
        xs = [r[col] for r in res[n][b] if keep(r[0])]
        return sum(xs) / len(xs)

    for n in grid:
        print(n, " | ".join(f"{b} {rate(n, b, lambda c: True):.2%}" for b in BUDGETS))
    held: dict[int, list[tuple[float, float]]] = {b: [] for b in BUDGETS}
    names = list(grid)
    for c in convs:
        score = {n: sum(rate(n, b, lambda x, c=c: x != c) for b in CHOOSE_BY) for n in names}
        best = max(names, key=lambda n: (round(score[n], 12), -names.index(n)))
        for b in BUDGETS:
            held[b].append(
                (rate(best, b, lambda x, c=c: x == c), rate(best, b, lambda x, c=c: x == c, 2))
            )
        print(f"fold {c}: chooses {best}")
    for b in BUDGETS:
        a = statistics.mean(x for x, _ in held[b])
        y = statistics.mean(x for _, x in held[b])
        print(f"held-out {b} chars, mean over folds: all {a:.2%} any {y:.2%}")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
