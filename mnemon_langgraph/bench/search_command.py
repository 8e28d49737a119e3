"""``mnemon bench search``: the scaling table (:mod:`.search`) or, with ``--growth``, the
growth of ``store.search`` from a small to a large namespace (:mod:`.growth`).

A module of its own because :mod:`.growth` builds on :mod:`.search`'s corpora and queries:
the command that picks one of them imports both, and neither imports the other's caller.
"""

from __future__ import annotations

import argparse
import tempfile
from typing import Any

from mnemon_langgraph.bench import growth, search

__all__ = ["HELP", "add_arguments", "render", "run"]

HELP = search.HELP
add_arguments = search.add_arguments


def run(args: argparse.Namespace) -> dict[str, Any]:
    """``--growth``: :func:`~.growth.run_growth`, three calls per ``--queries`` per size;
    otherwise the scaling table of :func:`~.search.run`."""
    if not getattr(args, "growth", None):
        return search.run(args)
    pairs = growth.parse_pairs(args.growth)
    corpora = growth.parse_corpora(getattr(args, "growth_corpora", "zipf,narrow"))
    options: dict[str, Any] = {
        "calls": 3 * args.queries,
        "seed": args.seed,
        "corpora": corpora,
        "client_cache_mb": getattr(args, "client_cache_mb", None),
        "bulk_index": bool(getattr(args, "bulk_index", False)),
    }
    if args.db:
        return growth.run_growth(pairs, args.db, **options)
    with tempfile.TemporaryDirectory(prefix="mnemon-bench-growth-") as folder:
        return growth.run_growth(pairs, folder, **options)


def render(result: dict[str, Any]) -> str:
    """The growth table or the scaling table, whichever ``result`` holds."""
    if result.get("benchmark") == "search growth":
        return growth.render(result)
    return search.render(result)
