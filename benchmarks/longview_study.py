"""The long-history View study (longmemeval.md): asks, captures under read settings, replays.

Subcommands (``PYTHONPATH=benchmarks``):

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
    warm = "--warm" in sets
    sets = [s for s in sets if s != "--warm"]
    overrides = {k: _value(v) for k, v in (s.split("=", 1) for s in sets)}
    caps = L.reask(asks, journal, L.embedder(), warm=warm, **overrides)
    L.save(caps, out)
    secs = [c["read_path_s"] for c in caps if c.get("read_path_s") is not None]
    rows = L.table(asks, caps)
    print(overrides, L.fmt(L.summary(rows)))
    print(f"read path excl. model calls: median {statistics.median(secs) * 1000:.1f} ms")


def cmd_report(asks_path: str, cap_path: str, sets: list[str]) -> None:
    asks, caps = L.load(asks_path), L.load(cap_path)
    opts = {k: _value(v) for k, v in (s.split("=", 1) for s in sets)}
    for b in BUDGETS:
        rows = L.table(asks, caps, view_chars=b, **opts)
        s_all = [r["s_all"] for r in rows if r["s_all"] is not None]
        s_any = [r["s_any"] for r in rows if r["s_any"] is not None]
        sessions = (
            f" | sessions all {sum(s_all) / len(s_all):.1%} any {sum(s_any) / len(s_any):.1%}"
            if s_all
            else ""
        )
        print(f"{b:>6}: {L.fmt(L.summary(rows))}{sessions}")
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
    """Each fold chooses the (capture, compose settings) with the most all-evidence hits on
    the other folds, summed over ``--choose-by`` budgets (default 12,000 and 2,000);
    every budget is then scored held out with that choice."""
    asks = L.load(asks_path)
    caps: dict[str, Any] = {}
    grid: dict[str, list[Any]] = {}
    choose_by = [12_000, 2_000]
    mode = "caps"
    for a in args:
        if a in ("--compose", "--choose-by"):
            mode = a
            continue
        if mode == "--choose-by":
            choose_by = [int(x) for x in a.split(",")]
            continue
        k, v = a.split("=", 1)
        if mode == "caps":
            caps[k] = L.load(v)
        else:
            grid[k] = [_value(x) for x in v.split(",")]
    keys: list[str] = []
    scored: dict[tuple[str, int], list[dict[str, Any]]] = {}
    for name, cap in caps.items():
        for opts in L.iter_settings(grid) if grid else [{}]:
            key = name + "".join(f" {k}={v}" for k, v in opts.items())
            keys.append(key)
            for b in BUDGETS:
                scored[(key, b)] = L.table(asks, cap, view_chars=b, **opts)
    fold = L.folds(asks)
    chosen: dict[int, str] = {}
    for f in sorted(set(fold)):
        train = [i for i in range(len(asks)) if fold[i] != f]

        def merit(key: str, train: list[int] = train) -> tuple[int, int]:
            hits = sum(scored[(key, b)][i]["all"] for b in choose_by for i in train)
            return hits, -keys.index(key)

        chosen[f] = max(keys, key=merit)
    print(f"chosen by fold (by all evidence summed over {choose_by}): {chosen}")
    for b in BUDGETS:
        held = [scored[(chosen[fold[i]], b)][i] for i in range(len(asks))]
        print(f"== {b:>6} held out: {L.fmt(L.summary(held))}")
        per = []
        for f in sorted(set(fold)):
            rows = [held[i] for i in range(len(asks)) if fold[i] == f]
            per.append(f"{sum(r['all'] for r in rows)}/{len(rows)}")
        print(f"         by fold: {' '.join(per)}")
        for key in keys:
            print(f"   {key:55} {L.fmt(L.summary(scored[(key, b)]))}")


def main(argv: list[str]) -> None:
    cmd, rest = argv[0], argv[1:]
    if cmd == "asks":
        cmd_asks(rest[0], rest[1], rest[2], rest[3:])
    elif cmd == "capture":
        cmd_capture(rest[0], rest[1], rest[2], rest[3:])
    elif cmd == "report":
        cmd_report(rest[0], rest[1], rest[2:])
    elif cmd == "cv":
        cmd_cv(rest[0], rest[1:])
    elif cmd == "history":
        cmd_history(rest[0], rest[1])
    else:
        raise SystemExit(__doc__)


def cmd_history(results: str, data: str) -> None:
    """What a long history looks like: pieces of long turns, repeated sessions, date spans,
    and the View's budget spent on pieces of long messages."""
    import collections
    import json
    from pathlib import Path

    from mnemon_langgraph.loaders.longmemeval import load_longmemeval

    rows = {
        r["question_id"]: r
        for r in map(json.loads, Path(results, "results.jsonl").read_text().splitlines())
    }
    qs = [q for q in load_longmemeval(data) if q.question_id in rows]
    pieces, spans, dup, gold_long, gold_total, sessions_total = [], [], 0, 0, 0, 0
    share = []
    for q in qs:
        by_session: dict[Any, list[str]] = collections.defaultdict(list)
        for m in q.messages:
            by_session[m.session].append(m.text)
            pieces.append(max(1, -(-len(m.text) // 600)))
        texts = ["\n".join(t) for t in by_session.values()]
        sessions_total += len(texts)
        dup += len(texts) - len(set(texts))
        dates = [m.timestamp for m in q.messages if m.timestamp]
        spans.append((max(dates) - min(dates)).days)
        size = {m.id: len(m.text) for m in q.messages}
        gold_total += len(q.gold_turns)
        gold_long += sum(size.get(g, 0) > 600 for g in q.gold_turns)
        shown = collections.Counter(rows[q.question_id]["view_message_ids"])
        n = sum(shown.values())
        share.append(sum(c for c in shown.values() if c > 1) / n if n else 0.0)
    split = sum(p > 1 for p in pieces)
    print(
        f"{len(qs)} histories; messages over one record (600 chars): {split} of "
        f"{len(pieces)} ({split / len(pieces):.1%}), their records "
        f"{sum(p for p in pieces if p > 1)} of {sum(pieces)}"
    )
    print(f"sessions repeated verbatim within a history: {dup} of {sessions_total}")
    print(
        f"date span of a history (days): median {statistics.median(spans)}, "
        f"min {min(spans)}, max {max(spans)}"
    )
    print(f"gold turns longer than one record: {gold_long} of {gold_total}")
    print(
        f"View records that are one of several pieces of one message: "
        f"median {statistics.median(share):.0%} of a View's records"
    )


if __name__ == "__main__":
    main(sys.argv[1:])
