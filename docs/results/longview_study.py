"""The long-history View study (longmemeval.md): asks, captures under read settings, replays.

Subcommands (``PYTHONPATH=docs/results``):

``asks KIND RESULTS_DIR OUT.pkl DATA...``
    the scored questions of an eval run (``longview_asks.asks_from_results``), with their
    turns + RRF rankings; ``KIND`` is ``longmemeval``, ``locomo`` or ``beam``.
``capture ASKS.pkl JOURNAL OUT.pkl [field=value ...]``
    every question asked again through the default read graph with those ``ReadSettings``
    fields changed; the compose inputs, read time and counts kept.
``report ASKS.pkl CAP.pkl``
    the View at 12k / 6k / 3k / 2k / 1k characters beside turns + RRF at its size, by
    category, misses by cause.
``cv ASKS.pkl NAME=CAP.pkl ... [--compose field=v1,v2 ...]``
    the choice among the captures (read settings) × compose settings, each fold choosing
    on the others by all evidence at 12,000 characters (ties: the earlier, so list the
    default first), held out by fold; the grid's own figures beside.
"""

from __future__ import annotations

import statistics
import sys
from typing import Any

import longview_asks as L

BUDGETS = (12_000, 6_000, 3_000, 2_000, 1_000)


def _value(text: str) -> Any:
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    return {"True": True, "False": False, "None": None}.get(text, text)


def cmd_asks(kind: str, results: str, out: str, data: list[str]) -> None:
    asks = L.asks_from_results(kind, results, data, L.embedder())
    L.save(asks, out)
    print(f"{len(asks)} asks, {sum(len(a['gold']) for a in asks)} gold turns")


def cmd_capture(asks_path: str, journal: str, out: str, sets: list[str]) -> None:
    asks = L.load(asks_path)
    overrides = {k: _value(v) for k, v in (s.split("=", 1) for s in sets)}
    caps = L.reask(asks, journal, L.embedder(), **overrides)
    L.save(caps, out)
    secs = [c["read_path_s"] for c in caps if c.get("read_path_s") is not None]
    rows = L.table(asks, caps)
    print(overrides, L.fmt(L.summary(rows)))
    print(f"read path excl. model calls: median {statistics.median(secs) * 1000:.1f} ms")


def cmd_report(asks_path: str, cap_path: str) -> None:
    asks, caps = L.load(asks_path), L.load(cap_path)
    for b in BUDGETS:
        rows = L.table(asks, caps, view_chars=b)
        print(f"{b:>6}: {L.fmt(L.summary(rows))}")
        if b == 12_000:
            for cat, s in L.by_category(asks, rows).items():
                print(f"    {cat:28} n={s['n']:3} {L.fmt(s)}")
    secs = [c["read_path_s"] for c in caps if c.get("read_path_s") is not None]
    print(f"read path excl. model calls: median {statistics.median(secs) * 1000:.1f} ms")
    counts: dict[str, list[float]] = {}
    for c in caps:
        for k, v in (c.get("counts") or {}).items():
            if v is not None:
                counts.setdefault(k, []).append(v)
    print({k: statistics.mean(v) for k, v in counts.items()})


def cmd_cv(asks_path: str, args: list[str]) -> None:
    asks = L.load(asks_path)
    caps: dict[str, Any] = {}
    grid: dict[str, list[Any]] = {}
    mode = "caps"
    for a in args:
        if a == "--compose":
            mode = "compose"
            continue
        k, v = a.split("=", 1)
        if mode == "caps":
            caps[k] = L.load(v)
        else:
            grid[k] = [_value(x) for x in v.split(",")]
    for budget in (12_000, 2_000):
        scored: dict[str, list[dict[str, Any]]] = {}
        for name, cap in caps.items():
            for opts in L.iter_settings(grid) if grid else [{}]:
                key = name + "".join(f" {k}={v}" for k, v in opts.items())
                scored[key] = L.table(asks, cap, view_chars=budget, **opts)
        cv = L.crossval(asks, scored)
        print(f"== {budget} chars: chosen by fold {cv['chosen']}")
        print(f"   held out: {L.fmt(cv['held'])}")
        for f, s in cv["per_fold"].items():
            print(f"     fold {f}: all {s['all']:.1%} (n={s['n']}) rrf@view {s['rrf_all']:.1%}")
        for key, rows in scored.items():
            print(f"   {key:50} {L.fmt(L.summary(rows))}")


def main(argv: list[str]) -> None:
    cmd, rest = argv[0], argv[1:]
    if cmd == "asks":
        cmd_asks(rest[0], rest[1], rest[2], rest[3:])
    elif cmd == "capture":
        cmd_capture(rest[0], rest[1], rest[2], rest[3:])
    elif cmd == "report":
        cmd_report(rest[0], rest[1])
    elif cmd == "cv":
        cmd_cv(rest[0], rest[1:])
    else:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
