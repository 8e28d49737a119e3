"""Benchmarks run by ``mnemon bench NAME`` (not tests: they report figures and ratios).

Each benchmark module in this package exposes:

* ``HELP`` — one line for ``mnemon bench --help``;
* ``add_arguments(parser)`` — its options;
* ``run(args) -> dict`` — runs it and returns JSON-ready results;
* ``render(result) -> str`` — a human-readable report.

:data:`BENCHMARKS` maps subcommand names to module names; add yours there.
"""

from __future__ import annotations

import resource
import sys

__all__ = ["BENCHMARKS", "peak_rss_mib"]

BENCHMARKS: dict[str, str] = {
    "ingest": "mnemon_langgraph.bench.ingest",
    "search": "mnemon_langgraph.bench.search",
    "scale": "mnemon_langgraph.bench.scale",
    "read": "mnemon_langgraph.bench.read",
    "load": "mnemon_langgraph.bench.load",
    "peers": "mnemon_langgraph.bench.peers",
    "backend": "mnemon_langgraph.bench.backend",
}
"""``mnemon bench`` subcommand → module implementing it."""


def peak_rss_mib() -> float:
    """Peak resident memory of this process so far, in MiB (``getrusage``)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (1024 * 1024) if sys.platform == "darwin" else peak / 1024
