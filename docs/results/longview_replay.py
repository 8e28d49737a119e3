"""Replay captured View inputs under View rules, beside turns + RRF at the View's size.

Input: the pickle of ``longview_capture.py``. Each question's View is composed again by the
package's own ``compose_view`` (pure), under

* ``old-stale``: every record judged no longer current left out (the rule before
  ``replaced_stale``), monkeypatched in for the replay only;
* ``shipped``: the package as it is.

Each View is scored on the question's ``has_answer`` turns (all / any), and turns + RRF is cut
to that View's own size (``budget_prefix``, as the eval's ``turns+rrf@view``). Misses are put
in buckets: not pooled, removed as no longer current, pooled and cut by the budget.

Usage::

    python docs/results/longview_replay.py CAPTURE.pkl [more.pkl ...]
"""

from __future__ import annotations

import collections
import dataclasses
import functools
import pickle
import sys
from collections.abc import Callable
from typing import Any

import mnemon_langgraph.read.view as view_module
from mnemon_langgraph.eval.baselines import budget_prefix
from mnemon_langgraph.read.settings import ReadSettings

SHIPPED_STALE = view_module.replaced_stale


def _old_stale(pool: Any, judged: Any, stale: set[str]) -> set[str]:
    return set(stale)


SHIPPED_CANDIDATES = view_module._candidates


def blended(weight: float, lead_too: bool = False) -> Callable[..., Any]:
    """``_candidates`` with its ranking blended with the pool's fused order.

    Weighted reciprocal rank fusion of two orders: the judge's (the candidates' own order)
    and the pool's fused search order, ``1/(60 + judge rank) + weight/(60 + pool rank)``.
    Only the records not judged needed are reordered, unless ``lead_too``. Orders only:
    calibration invariance holds.
    """

    def candidates(
        order: Any, judged: Any, skip: Any, needs_named: Any, placement: Any, *args: Any, **kw: Any
    ) -> Any:
        out = SHIPPED_CANDIDATES(order, judged, skip, needs_named, placement, *args, **kw)
        if weight <= 0 or not judged:
            return out
        lead = (
            0
            if lead_too
            else sum(1 for _, why in out if not why.startswith(("System 1 ranking", "fused order")))
        )
        head, tail = out[:lead], out[lead:]
        pos = {rid: i for i, rid in enumerate(order)}
        keyed = sorted(
            range(len(tail)),
            key=lambda i: -(1 / (60 + i) + weight / (60 + pos.get(tail[i][0], len(pos)))),
        )
        return head + [tail[i] for i in keyed]

    return candidates


def compose(
    q: dict[str, Any],
    *,
    old_stale: bool = False,
    blend: float = 0.0,
    lead_too: bool = False,
    **settings: Any,
) -> Any:
    """The question's View under the rule and settings given."""
    kw = dict(q["kw"])
    old = kw["settings"]  # a capture may predate a field: the field's default then
    kept = {f.name: getattr(old, f.name, f.default) for f in dataclasses.fields(ReadSettings)}
    kw["settings"] = ReadSettings(**{**kept, **settings})
    view_module.replaced_stale = _old_stale if old_stale else SHIPPED_STALE  # type: ignore[assignment]
    view_module._candidates = blended(blend, lead_too)  # type: ignore[assignment]
    try:
        return view_module.compose_view(q["pool"], q["judgments"], **kw)
    finally:
        view_module.replaced_stale = SHIPPED_STALE  # type: ignore[assignment]
        view_module._candidates = SHIPPED_CANDIDATES  # type: ignore[assignment]


def rrf_at(q: dict[str, Any], chars: int) -> set[str]:
    """Message ids of turns + RRF cut to ``chars``."""
    idx = budget_prefix(q["rrf"], q["turn_chars"], chars)
    return {m for i in idx for m in q["turn_mids"][i]}


def score(q: dict[str, Any], view: Any) -> dict[str, Any]:
    """All / any of the View and of turns + RRF at its size, and the View's miss buckets."""
    shown = set(view.message_ids)
    gold = q["gold"]
    base = rrf_at(q, len(view.text))
    pooled = {m for r in q["pool"] for m in r.get("message_ids") or ()}
    placement = view.trace.get("placement", {})
    by_mid = {m: r["id"] for r in q["pool"] for m in r.get("message_ids") or ()}
    buckets: collections.Counter[str] = collections.Counter()
    for m in gold - shown:
        if m not in pooled:
            buckets["not pooled"] += 1
        elif (
            "no longer current" in placement.get(by_mid[m], "")
            and "left out" in placement.get(by_mid[m], "")[:9]
        ):
            buckets["stale"] += 1
        else:
            buckets["pooled, cut"] += 1
    return {
        "all": gold <= shown,
        "any": bool(gold & shown),
        "rrf_all": gold <= base,
        "rrf_any": bool(gold & base),
        "chars": len(view.text),
        "buckets": buckets,
    }


def table(qs: list[dict[str, Any]], make: Callable[[dict[str, Any]], Any]) -> dict[str, Any]:
    """Overall and by-type figures of one rule over ``qs``."""
    rows = [dict(score(q, make(q)), qtype=q["qtype"]) for q in qs]
    n = len(rows)
    out: dict[str, Any] = {
        k: sum(r[k] for r in rows) / n for k in ("all", "any", "rrf_all", "rrf_any")
    }
    out["chars"] = sum(r["chars"] for r in rows) / n
    out["only_view"] = sum(r["all"] and not r["rrf_all"] for r in rows)
    out["only_rrf"] = sum(r["rrf_all"] and not r["all"] for r in rows)
    total: collections.Counter[str] = collections.Counter()
    for r in rows:
        total.update(r["buckets"])
    out["misses"] = dict(total)
    by: dict[str, list[dict[str, Any]]] = collections.defaultdict(list)
    for r in rows:
        by[r["qtype"]].append(r)
    out["by_type"] = {
        t: (sum(r["all"] for r in rs) / len(rs), sum(r["rrf_all"] for r in rs) / len(rs), len(rs))
        for t, rs in sorted(by.items())
    }
    return out


def load(paths: list[str]) -> list[dict[str, Any]]:
    qs: list[dict[str, Any]] = []
    for p in paths:
        with open(p, "rb") as fh:
            qs.extend(pickle.load(fh))
    return qs


GRID: dict[str, dict[str, Any]] = {
    "judge order": {},
    **{f"blend rest {w:g}": {"blend": w} for w in (0.25, 0.5, 1.0, 2.0)},
    **{f"fused_weight {w:g}": {"fused_weight": w} for w in (0.25, 0.5, 1.0, 2.0)},
}
"""The View orderings the folds choose among: the judge's order (the package's default);
the records not judged needed blended with the pool's order (``blend rest``); every
candidate blended (``ReadSettings.fused_weight``, the package's own rule)."""


def folds(qs: list[dict[str, Any]], k: int = 5) -> list[int]:
    """Each question's fold: its rank among its type's questions in file order, mod ``k``."""
    seen: collections.Counter[str] = collections.Counter()
    out = []
    for q in qs:
        out.append(seen[q["qtype"]] % k)
        seen[q["qtype"]] += 1
    return out


BUDGETS = (12_000, 6_000, 3_000, 2_000)
"""View budgets scored; the folds choose by all evidence summed over them (at 12,000 the
dev questions leave little to choose by)."""


def crossval(qs: list[dict[str, Any]], k: int = 5) -> dict[str, Any]:
    """Choose the ordering on k-1 folds, score the held-out fold, at every budget."""
    fold = folds(qs, k)
    scored = {
        (name, b): [score(q, compose(q, view_chars=b, **opts)) for q in qs]
        for name, opts in GRID.items()
        for b in BUDGETS
    }
    names = list(GRID)
    chosen: list[str] = []
    held: dict[int, list[dict[str, Any]]] = {b: [] for b in BUDGETS}
    for f in range(k):
        train = [i for i in range(len(qs)) if fold[i] != f]

        def merit(name: str, train: list[int] = train) -> tuple[int, int]:
            wins = sum(scored[(name, b)][i]["all"] for b in BUDGETS for i in train)
            return wins, -names.index(name)

        best = max(names, key=merit)
        chosen.append(best)
        for b in BUDGETS:
            held[b].extend(scored[(best, b)][i] for i in range(len(qs)) if fold[i] == f)
    n = len(qs)

    def mean(rows: list[dict[str, Any]], key: str) -> float:
        return sum(r[key] for r in rows) / len(rows)

    return {
        "chosen": chosen,
        "held": {
            b: {
                **{k2: mean(rows, k2) for k2 in ("all", "any", "rrf_all", "rrf_any", "chars")},
                "only_view": sum(r["all"] and not r["rrf_all"] for r in rows),
                "only_rrf": sum(r["rrf_all"] and not r["all"] for r in rows),
            }
            for b, rows in held.items()
        },
        "grid": {
            key: (mean(rows, "all"), mean(rows, "rrf_all"), mean(rows, "chars"))
            for key, rows in scored.items()
        },
        "n": n,
    }


def main(paths: list[str]) -> None:
    qs = load(paths)
    print(f"{len(qs)} questions, {sum(len(q['gold']) for q in qs)} gold turns")
    for name, make in (
        ("old-stale", lambda q: compose(q, old_stale=True)),
        ("shipped", lambda q: compose(q)),
    ):
        t = table(qs, make)
        print(
            f"{name:10} all {t['all']:.1%} any {t['any']:.1%} | rrf@view all {t['rrf_all']:.1%} "
            f"any {t['rrf_any']:.1%} | {t['chars']:.0f} chars | only view {t['only_view']} "
            f"only rrf {t['only_rrf']} | misses {t['misses']}"
        )
        for ty, (a, b, n) in t["by_type"].items():
            print(f"    {ty:28} n={n:2} view {a:.0%} rrf {b:.0%}")
    for b in BUDGETS:
        changed = sum(
            compose(q, old_stale=True, view_chars=b).message_ids
            != compose(q, view_chars=b).message_ids
            for q in qs
        )
        judged = sum(
            1
            for q in qs
            for r in compose(q, view_chars=b).trace["placement"].values()
            if "'stale'" in r
        )
        print(f"stale rule @{b}: {changed} Views change; {judged} records judged stale")
        t = table(qs, functools.partial(compose, view_chars=b))
        print(
            f"shipped @{b}: all {t['all']:.1%} any {t['any']:.1%} | rrf@view all "
            f"{t['rrf_all']:.1%} any {t['rrf_any']:.1%} | {t['chars']:.0f} chars | only view "
            f"{t['only_view']}, only rrf {t['only_rrf']} | misses {t['misses']}"
        )
    cv = crossval(qs)
    print("cross-validation (5 folds, by rank within type), chosen:", cv["chosen"])
    for b, h in cv["held"].items():
        print(
            f"  held out @{b}: all {h['all']:.1%} any {h['any']:.1%} | rrf@view all "
            f"{h['rrf_all']:.1%} any {h['rrf_any']:.1%} | {h['chars']:.0f} chars | only view "
            f"{h['only_view']}, only rrf {h['only_rrf']}"
        )
    for (name, b), (a, r, c) in cv["grid"].items():
        print(f"  {name:22} @{b:>6}: all {a:.1%} (rrf@view {r:.1%}, {c:.0f} chars)")


if __name__ == "__main__":
    main(sys.argv[1:])
