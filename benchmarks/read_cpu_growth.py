"""Where the read path's CPU time grows from a 100K-token to a ~1M-token BEAM history.

Runs ``mnemon eval beam`` (offline defaults: local judge, rule planner, MiniLM) once, with
every read profiled: each thread that works on a read (the caller's and the read's worker
threads) gets its own ``cProfile`` on a CPU-time clock, and the profiles are summed per
tier. Prints, per question and tier, the CPU seconds of the read path's parts and which
functions grew the most; the profiles are saved as ``<out>/profile-<tier>.pstats``.

    MNEMON_CACHE_DIR=... python benchmarks/read_cpu_growth.py BEAM_DIR OUT \\
        --conversations 100K/1,...,100K/7 --concat 1M-cat=100K/1-7 --per-ability 1

Any ``mnemon eval beam`` option can follow the two positional arguments.
"""

from __future__ import annotations

import cProfile
import pstats
import sys
import threading
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from langchain_core.runnables.config import ContextThreadPoolExecutor

from mnemon_langgraph.cli import main
from mnemon_langgraph.eval import beam_eval

PARTS = {
    "whole read (graph.invoke)": "invoke@main.py",
    "node plan": "plan@nodes.py",
    "node retrieve": "retrieve@nodes_retrieve.py",
    "  store.search (embedded)": "_search@store.py",
    "    BM25": "search@maxscore.py",
    "    vectors": "search@vectors.py",
    "    record fetch": "get_records@journal.py",
    "node judge": "judge@nodes.py",
    "  judge features": "features@local.py",
    "  evidence (vectors, terms)": "build@evidence.py",
    "  term statistics": "term_statistics@base.py",
    "node act": "act@nodes.py",
    "node judge_items": "judge_items@nodes_items.py",
    "node compose": "compose@nodes.py",
}

_tier: list[str | None] = [None]
_profiles: dict[str, list[cProfile.Profile]] = defaultdict(list)
_questions: dict[str, int] = defaultdict(int)
_cpu: dict[str, float] = defaultdict(float)
_lock = threading.Lock()


def _profiled(fn: Any) -> Any:
    def run(*args: Any, **kwargs: Any) -> Any:
        tier = _tier[0]
        if tier is None:
            return fn(*args, **kwargs)
        prof = cProfile.Profile(time.thread_time)
        prof.enable()
        try:
            return fn(*args, **kwargs)
        finally:
            prof.disable()
            with _lock:
                _profiles[tier].append(prof)

    return run


_submit = ContextThreadPoolExecutor.submit


def _submit_profiled(self: Any, fn: Any, /, *args: Any, **kwargs: Any) -> Any:
    return _submit(self, _profiled(fn), *args, **kwargs)


_ask_row = beam_eval._ask_row


def _ask_row_profiled(graph: Any, prep: Any, q: Any, first: bool, tokens: Any) -> Any:
    tier = prep.conv.tier
    _tier[0] = tier
    c0 = time.process_time()
    try:
        return _profiled(_ask_row)(graph, prep, q, first, tokens)
    finally:
        _tier[0] = None
        _cpu[tier] += time.process_time() - c0
        _questions[tier] += 1


def _by_name(stats: pstats.Stats) -> dict[str, float]:
    """Cumulative seconds per ``name`` and per ``name@file`` (recursion counted once)."""
    out: dict[str, float] = defaultdict(float)
    for (path, _, name), (_, _, _, cumulative, _) in stats.stats.items():  # type: ignore[attr-defined]
        out[name] += cumulative
        out[f"{name}@{Path(path).name}"] += cumulative
    return out


def report(out: Path) -> None:
    tiers = list(_profiles)
    per_q: dict[str, dict[str, float]] = {}
    for tier in tiers:
        stats = pstats.Stats(_profiles[tier][0])
        for prof in _profiles[tier][1:]:
            stats.add(prof)
        stats.dump_stats(str(out / f"profile-{tier.replace('/', '_')}.pstats"))
        n = max(1, _questions[tier])
        per_q[tier] = {k: v / n * 1000 for k, v in _by_name(stats).items()}
        print(f"{tier}: {_questions[tier]} reads, process CPU {_cpu[tier] / n * 1000:.1f} ms/read")
    if len(tiers) < 2:
        return
    base, top = tiers[0], tiers[-1]
    print(f"\nCPU ms per read (profiled threads), {base} → {top}:")
    for label, key in PARTS.items():
        a, b = per_q[base].get(key, 0.0), per_q[top].get(key, 0.0)
        print(f"  {label:<34} {a:8.1f} {b:8.1f}  {b / a if a else 0:5.2f}×  +{b - a:.1f}")
    grown = sorted(
        ((per_q[top].get(k, 0.0) - per_q[base].get(k, 0.0), k) for k in per_q[top] if "@" in k),
        reverse=True,
    )
    print("\nfunctions whose cumulative CPU ms per read grew most:")
    for diff, key in grown[:30]:
        print(f"  {key:<60} {per_q[base].get(key, 0.0):8.1f} {per_q[top][key]:8.1f}  +{diff:.1f}")


if __name__ == "__main__":
    beam_dir, out_dir, *rest = sys.argv[1:]
    ContextThreadPoolExecutor.submit = _submit_profiled  # type: ignore[method-assign]
    beam_eval._ask_row = _ask_row_profiled
    code = main(["eval", "beam", beam_dir, "--out", out_dir, "--no-progress", "--no-plots", *rest])
    report(Path(out_dir))
    sys.exit(code)
